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

void parallel_items(int count, int threads, const std::function<void(int)>& fn, const std::function<void(int)>& done) {
  if (count <= 0) return;
  const int workers = batch_threads(threads, count);
  std::atomic<int> next{0};
  std::mutex mutex;
  std::vector<std::exception_ptr> errors(count);
  auto work = [&]() {
    for (int k = next++; k < count; k = next++) {
      try {
        fn(k);
      } catch (...) {
        errors[k] = std::current_exception();
        next = count;
        return;
      }
      if (done) {
        std::lock_guard<std::mutex> lock(mutex);
        done(k);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (int t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<BatchItemResult> run_batch(const Model& model, std::span<const VecX> params,
                                       const ObjectiveFunction* objective, const BatchOptions& options) {
  if (options.gradients && !objective) throw InputError("batch: gradients need an objective");
  // Validate every item before the first rollout, so a bad vector fails the batch at once.
  for (std::size_t k = 0; k < params.size(); ++k) {
    try {
      model.params().check(params[k]);
    } catch (const InputError& e) {
      throw InputError("batch item " + std::to_string(options.first_index + static_cast<long>(k)) + ": " + e.what());
    }
  }
  const int total = static_cast<int>(params.size());
  std::vector<BatchItemResult> results(total);
  // Each result slot is written by exactly one thread. Simulation failures are results
  // (run_item); anything else (a broken invariant, bad_alloc) stops the batch.
  int finished = 0;
  parallel_items(
      total, options.threads, [&](int k) { run_item(model, params[k], objective, options, results[k]); },
      [&](int) {
        ++finished;
        if (options.progress) options.progress(finished, total);
      });
  return results;
}

}  // namespace addsim
