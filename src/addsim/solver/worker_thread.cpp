#include "addsim/solver/worker_thread.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "addsim/core/error.h"

namespace addsim {

namespace {

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until `ready()` or kSpinMicroseconds have passed (the clock read every 64 rounds);
// true if ready. Pauses for the first kPauseRounds rounds, then yields the core.
template <class Ready>
bool spin_until(Ready ready) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(WorkerThread::kSpinMicroseconds);
  for (int round = 0;; ++round) {
    if (ready()) return true;
    if (round < WorkerThread::kPauseRounds)
      cpu_pause();
    else
      std::this_thread::yield();
    if ((round & 63) == 63 && Clock::now() >= deadline) return ready();
  }
}

}  // namespace

void WorkerThread::spin_until_at_least(const std::atomic<int>& counter, int value) {
  // Both sides of the fork–join are running, so the wait is short: spin rounds of
  // spin_until's schedule until the count is reached, never block.
  while (!spin_until([&] { return counter.load(std::memory_order_acquire) >= value; })) {
  }
}

double WorkerThread::thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

WorkerThread::WorkerThread() : thread_([this] { loop(); }) {}

WorkerThread::~WorkerThread() {
  stop_.store(true);
  wake_worker();
  thread_.join();
}

// Hand-over without the mutex on the hot path: a side that finds nothing to do after its
// spin marks itself asleep (under the mutex) and then tests the flag it waits for once more
// before blocking; the other side stores that flag and then, only if the waiter is marked
// asleep, takes the mutex and notifies. Both orders are sequentially consistent, so either
// the waiter sees the flag or the notifier sees the mark (no lost wake-up). (Taking the mutex
// on every hand-over made the caller block on it while the worker held it for its notify:
// a futex wake-up, ≈ 47 µs per fork–join on the shared VM.)
void WorkerThread::wake_worker() {
  if (worker_asleep_.load()) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_one();
  }
}

void WorkerThread::start(std::function<void()> task) {
  ADDSIM_CHECK(!pending_, "WorkerThread::start before the previous task was waited for");
  pending_ = true;
  task_ = std::move(task);
  error_ = nullptr;
  busy_.store(true, std::memory_order_relaxed);
  posted_.store(true);
  wake_worker();
}

void WorkerThread::wait() {
  const auto done = [this] { return !busy_.load(); };
  const double t0 = profiling_ ? thread_cpu_seconds() : 0.0;
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_asleep_.store(true);
    done_.wait(lock, done);
    caller_asleep_.store(false);
  }
  if (profiling_) {
    profile_.wait += thread_cpu_seconds() - t0;
    profile_.excess += std::max(0.0, last_task_.load() - last_own_);
    last_own_ = 0.0;
    ++profile_.forks;
  }
  pending_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void WorkerThread::loop() {
  const auto woken = [this] { return posted_.load() || stop_.load(); };
  while (true) {
    if (!spin_until(woken)) {
      std::unique_lock<std::mutex> lock(mutex_);
      worker_asleep_.store(true);
      wake_.wait(lock, woken);
      worker_asleep_.store(false);
    }
    if (stop_.load()) return;
    posted_.store(false, std::memory_order_relaxed);
    // task_ and error_ belong to the worker from the posted_ it acquired until the busy_ it releases.
    std::function<void()> task = std::move(task_);
    std::exception_ptr error;
    const bool profiling = profiling_.load();
    const double t0 = profiling ? thread_cpu_seconds() : 0.0;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    if (profiling) {
      const double seconds = thread_cpu_seconds() - t0;
      last_task_.store(seconds);
      task_seconds_.store(task_seconds_.load() + seconds);
    }
    task = nullptr;  // its captures die before the caller may return from wait()
    error_ = error;
    busy_.store(false);
    if (caller_asleep_.load()) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_.notify_one();
    }
  }
}

}  // namespace addsim
