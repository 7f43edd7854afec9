#include "addsim/solver/worker_thread.h"

#include <chrono>
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

WorkerThread::WorkerThread() : thread_([this] { loop(); }) {}

WorkerThread::~WorkerThread() {
  stop_.store(true, std::memory_order_release);
  { std::lock_guard<std::mutex> lock(mutex_); }
  wake_.notify_one();
  thread_.join();
}

// A flag is stored before the mutex is taken and released, and the notify follows: a side
// that tested the flag under the mutex and then blocks is either woken by the notify or
// saw the flag (no lost wake-up); a side that found the flag while spinning never blocks.
void WorkerThread::start(std::function<void()> task) {
  ADDSIM_CHECK(!pending_, "WorkerThread::start before the previous task was waited for");
  pending_ = true;
  task_ = std::move(task);
  error_ = nullptr;
  busy_.store(true, std::memory_order_relaxed);
  posted_.store(true, std::memory_order_release);
  { std::lock_guard<std::mutex> lock(mutex_); }
  wake_.notify_one();
}

void WorkerThread::wait() {
  const auto done = [this] { return !busy_.load(std::memory_order_acquire); };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, done);
  }
  pending_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void WorkerThread::loop() {
  const auto woken = [this] {
    return posted_.load(std::memory_order_acquire) || stop_.load(std::memory_order_acquire);
  };
  while (true) {
    if (!spin_until(woken)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, woken);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    posted_.store(false, std::memory_order_relaxed);
    // task_ and error_ belong to the worker from the posted_ it acquired until the busy_ it releases.
    std::function<void()> task = std::move(task_);
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    task = nullptr;  // its captures die before the caller may return from wait()
    error_ = error;
    busy_.store(false, std::memory_order_release);
    { std::lock_guard<std::mutex> lock(mutex_); }
    done_.notify_one();
  }
}

}  // namespace addsim
