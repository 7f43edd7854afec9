#include "addsim/batch/batch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "addsim/core/error.h"
#include "addsim/sensitivity/adjoint.h"

namespace addsim {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One item on the calling thread. A fresh simulator per item: Simulator keeps its last LU
// and inexact-Newton estimates between runs, so a reused one would make an item's
// round-off depend on which item ran before it on the same thread.
void run_item(const Model& model, const VecX& p, const ObjectiveFunction* objective, const BatchOptions& options,
              BatchItemResult& out) {
  const auto t0 = Clock::now();
  out.phi = std::numeric_limits<double>::quiet_NaN();
  Trajectory traj;
  try {
    Simulator sim(model, 1);
    traj = sim.run(p);
  } catch (const SimulationError& e) {
    out.failure = e.what();
    out.failed_step = e.step();
  }
  out.forward_seconds = seconds_since(t0);
  if (out.failure.empty() && !traj.completed()) {
    out.failure = traj.failure;
    out.failed_step = traj.failed_step;
  }
  if (out.failure.empty() && objective) {
    const auto t1 = Clock::now();
    try {
      if (options.gradients) {
        GradientResult g = gradient_adjoint(model, traj, *objective);
        out.phi = g.phi;
        out.dphi_dp = std::move(g.dphi_dp);
      } else {
        out.phi = objective->evaluate(model, traj, nullptr);
      }
    } catch (const SimulationError& e) {
      out.failure = std::string("gradient: ") + e.what();
      out.failed_step = e.step();
    }
    out.gradient_seconds = seconds_since(t1);
  }
  out.completed = out.failure.empty();
  if (options.keep_trajectories) out.trajectory = std::move(traj);
}

}  // namespace

int batch_threads(int requested, int items) {
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, std::min(items, requested > 0 ? requested : hardware));
}

std::vector<BatchItemResult> run_batch(const Model& model, std::span<const VecX> params,
                                       const ObjectiveFunction* objective, const BatchOptions& options) {
  if (options.gradients && !objective) throw InputError("batch: gradients need an objective");
  // Validate every item before the first rollout, so a bad vector fails the batch at once.
  for (std::size_t k = 0; k < params.size(); ++k) {
    try {
      model.params().check(params[k]);
    } catch (const InputError& e) {
      throw InputError("batch item " + std::to_string(k) + ": " + e.what());
    }
  }
  const int total = static_cast<int>(params.size());
  std::vector<BatchItemResult> results(total);
  if (total == 0) return results;
  const int threads = batch_threads(options.threads, total);

  // Items are handed out by an atomic counter; each result slot is written by exactly one
  // thread. Anything other than a simulation failure (a broken invariant, bad_alloc) stops
  // the hand-out and is rethrown on the calling thread after all workers have joined.
  std::atomic<int> next{0};
  int done = 0;
  std::mutex progress_mutex;
  std::exception_ptr error;
  auto worker = [&]() {
    for (int k = next++; k < total; k = next++) {
      try {
        run_item(model, params[k], objective, options, results[k]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        if (!error) error = std::current_exception();
        next = total;
        return;
      }
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      if (options.progress) options.progress(done, total);
    }
  };
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
  return results;
}

}  // namespace addsim
