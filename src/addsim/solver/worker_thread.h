#pragma once
/// One persistent helper thread for fork–join work inside a time step (the second half of
/// the element loops of an evaluation, Simulator::evaluate). start() hands it a task, the
/// caller does its own share, wait() joins and rethrows what the task threw. A condition
/// variable hands over (no spinning: the machines are shared).

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace addsim {

class WorkerThread {
 public:
  WorkerThread();
  ~WorkerThread();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  /// Runs `task` on the worker; the previous task must have been waited for (InternalError
  /// otherwise).
  void start(std::function<void()> task);
  /// Blocks until the task has finished; rethrows its exception, if any.
  void wait();
  /// True once the task has finished (non-blocking); wait() then returns at once.
  bool finished();
  /// Fork–join: runs `task` on the worker and `own` on the calling thread, then waits. If
  /// `own` throws, the task is still waited for (it may use the caller's data) and own's
  /// exception propagates; otherwise the task's, if any.
  template <class F>
  void run_alongside(std::function<void()> task, F&& own) {
    start(std::move(task));
    try {
      own();
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

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void()> task_;
  std::exception_ptr error_;
  bool busy_ = false, stop_ = false;
  bool pending_ = false;  ///< started and not yet waited for (the caller's side)
  std::thread thread_;  ///< last: started after the state above is initialised
};

}  // namespace addsim
