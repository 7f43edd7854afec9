#pragma once
/// One persistent helper thread for fork–join work inside a time step (the second half of
/// the element loops of an evaluation, Simulator::evaluate; the independent subtrees of a
/// block LU, BlockSchurLu::factorize). start() hands it a task, the caller does its own
/// share, wait() joins and rethrows what the task threw.
///
/// Hand-over: both sides first spin on an atomic flag, for at most kSpinMicroseconds, and
/// only then block on a condition variable. A fork–join of a soft-feet Newton iteration
/// lasts 20–100 µs, while a futex wake-up of a sleeping thread costs tens of µs on the
/// shared VMs (docs/solver.md, "Two threads for the soft feet"): blocking alone ate the
/// gain. The bound keeps the worker hot between the fork–joins of a run (they follow each
/// other within tens of µs), yet a worker with nothing to do blocks after at most that long,
/// so an idle simulator never burns a core of the shared machines. While spinning, a side
/// pauses (_mm_pause) for the first kPauseRounds rounds and then yields its core
/// (std::this_thread::yield), so that on an oversubscribed machine the thread it waits for
/// can run.

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace addsim {

class WorkerThread {
 public:
  /// Longest time (µs) either side spins before it blocks (see the header comment).
  static constexpr int kSpinMicroseconds = 100;
  /// Spin rounds with a pause instruction before rounds that yield the core.
  static constexpr int kPauseRounds = 50;

  WorkerThread();
  ~WorkerThread();

  /// Thread CPU seconds of the fork–joins since profiling was switched on (bench_trajopt's
  /// estimate of the two-thread critical path on a machine too loaded to give both threads a
  /// core): the caller's own shares (run_alongside), its waits, the worker's tasks, and per
  /// fork–join by how much the task took longer than the caller's share (summed: what the
  /// caller would have waited with a core for each thread).
  struct Profile {
    double own = 0.0, wait = 0.0, task = 0.0, excess = 0.0;
    long forks = 0;
  };
  /// Off by default (four clock reads per fork–join). Switch on only between fork–joins.
  void set_profiling(bool on) {
    profiling_ = on;
    profile_ = Profile{};
    task_seconds_.store(0.0);
  }
  Profile profile() const {
    Profile p = profile_;
    p.task = task_seconds_.load();
    return p;
  }
  static double thread_cpu_seconds();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  /// Runs `task` on the worker; the previous task must have been waited for (InternalError
  /// otherwise).
  void start(std::function<void()> task);
  /// Blocks until the task has finished; rethrows its exception, if any.
  void wait();
  /// True once the task has finished (non-blocking); wait() then returns at once.
  bool finished() const { return !busy_.load(std::memory_order_acquire); }
  /// True if the calling thread may fork work to the worker now: it is not the worker
  /// itself and has no task started and not yet waited for (e.g. a background
  /// factorisation). Only the thread that starts tasks may ask.
  bool available() const { return std::this_thread::get_id() != thread_.get_id() && !pending_; }
  /// Spins until `counter` reaches at least `value`: pauses first, then yields the core
  /// each round (so that on an oversubscribed machine the thread waited for can run). For
  /// a barrier between the two sides of one fork–join (both are running, so the wait is
  /// short and never blocks); acquire ordering.
  static void spin_until_at_least(const std::atomic<int>& counter, int value);
  /// Fork–join: runs `task` on the worker and `own` on the calling thread, then waits. If
  /// `own` throws, the task is still waited for (it may use the caller's data) and own's
  /// exception propagates; otherwise the task's, if any.
  template <class F>
  void run_alongside(std::function<void()> task, F&& own) {
    start(std::move(task));
    try {
      if (profiling_) {
        const double t0 = thread_cpu_seconds();
        own();
        last_own_ = thread_cpu_seconds() - t0;
        profile_.own += last_own_;
      } else {
        own();
      }
    } catch (...) {
      try {
        wait();
      } catch (...) {
      }
      throw;
    }
    wait();
  }

 private:
  void loop();
  void wake_worker();

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void()> task_;
  std::exception_ptr error_;
  std::atomic<bool> posted_{false};  ///< a task waits for the worker (set by start, taken by the worker)
  std::atomic<bool> busy_{false};    ///< started and not yet finished
  std::atomic<bool> stop_{false};
  std::atomic<bool> worker_asleep_{false}, caller_asleep_{false};  ///< blocked (or about to) on wake_ / done_
  bool pending_ = false;  ///< started and not yet waited for (the caller's side)
  std::atomic<bool> profiling_{false};
  Profile profile_;                      ///< the caller's side
  std::atomic<double> task_seconds_{0.0};  ///< the worker's side
  std::atomic<double> last_task_{0.0};     ///< the worker's last task
  double last_own_ = 0.0;                  ///< the caller's share of the current fork–join
  std::thread thread_;  ///< last: started after the state above is initialised
};

}  // namespace addsim
