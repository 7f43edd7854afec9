#include "addsim/solver/worker_thread.h"

#include <utility>

#include "addsim/core/error.h"

namespace addsim {

WorkerThread::WorkerThread() : thread_([this] { loop(); }) {}

WorkerThread::~WorkerThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void WorkerThread::start(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ADDSIM_CHECK(!pending_, "WorkerThread::start before the previous task was waited for");
    pending_ = true;
    task_ = std::move(task);
    error_ = nullptr;
    busy_ = true;
  }
  wake_.notify_one();
}

void WorkerThread::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return !busy_; });
  pending_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

bool WorkerThread::finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !busy_;
}

void WorkerThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return busy_ || stop_; });
    if (stop_) return;
    std::function<void()> task = std::move(task_);
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    busy_ = false;
    done_.notify_one();
  }
}

}  // namespace addsim
