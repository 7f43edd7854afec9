#pragma once
/// Many independent rollouts of one model — optimiser populations, landscapes, parameter
/// sweeps, mini-batches — and, on request, their adjoint gradients, scheduled over a pool
/// of threads (DESIGN.md §7). The model (terms, pattern, meshes) is shared read-only; each
/// item runs on a simulator of its own that no other item has used, so an item's result
/// depends only on its parameter vector: the same batch gives bit-identical results for
/// any thread count and any order in which the threads pick items up.

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "addsim/core/types.h"
#include "addsim/model/model.h"
#include "addsim/sensitivity/objective_function.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// What a batch computes and how.
struct BatchOptions {
  /// Worker threads; 0 = one per hardware thread. Never more than the number of items.
  int threads = 0;
  /// Also compute dΦ/dp by the adjoint for every completed rollout (needs an objective).
  bool gradients = false;
  /// Keep each item's Trajectory in its result (memory: (steps+1)·|q|·8 bytes per item).
  bool keep_trajectories = false;
  /// Called after every finished item with (items done, items in all), from the worker
  /// thread that finished it, one call at a time (serialised by the batch).
  std::function<void(int done, int total)> progress;
  /// The number of the first item in messages: a chunk of a larger batch (addsim.dask sends
  /// rows start … start + n − 1 to one worker) sets it to `start`, so that an invalid vector is
  /// named by its row in the whole batch ("batch item 2"), not its place in the chunk.
  long first_index = 0;
};

/// The outcome of one item. A rollout that fails (a step that does not converge, an
/// inverted element) or whose gradient fails is a result, never an exception of the batch.
struct BatchItemResult {
  bool completed = false;        ///< every step converged (and the gradient, if asked, exists)
  std::string failure;           ///< why not, naming the step; empty when completed
  int failed_step = -1;          ///< the step that did not converge, −1 if none
  double phi = 0.0;              ///< Φ of the rollout (NaN when there is no objective or it failed)
  VecX dphi_dp;                  ///< dΦ/dp (|p|) when BatchOptions::gradients and completed, else empty
  Trajectory trajectory;         ///< the rollout when BatchOptions::keep_trajectories
  double forward_seconds = 0.0;  ///< wall time of the rollout
  double gradient_seconds = 0.0; ///< wall time of the adjoint pass
};

/// Runs one rollout per parameter vector (each |p|, checked against the model's parameter
/// table) and evaluates `objective` (may be null: rollouts only) on each; returns the
/// results in the order of `params`. Throws InputError before any rollout if a parameter
/// vector is invalid (naming its index plus BatchOptions::first_index), or if gradients are
/// asked without an objective.
std::vector<BatchItemResult> run_batch(const Model& model, std::span<const VecX> params,
                                       const ObjectiveFunction* objective, const BatchOptions& options = {});

/// Threads a batch of `items` items would use for BatchOptions::threads = `requested`.
int batch_threads(int requested, int items);

/// The scheduler under run_batch, for batches of other work (the Python module's batched
/// rollouts and vector–Jacobian products): runs fn(k) for k = 0 … count − 1 on
/// batch_threads(threads, count) threads — the calling thread is one of them — handing out
/// indices by an atomic counter. If fn throws, no further indices are handed out and the
/// exception of the lowest index that threw is rethrown once every thread has joined.
/// `done(k)` (optional) is called after fn(k) returned, one call at a time.
void parallel_items(int count, int threads, const std::function<void(int)>& fn,
                    const std::function<void(int)>& done = {});

}  // namespace addsim
