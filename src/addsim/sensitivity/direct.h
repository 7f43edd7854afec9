#pragma once
/// Direct (forward) sensitivities s^i_j = dq^i/dp_j for a list of parameters (paper §3.2,
/// eq. for s^i_j generalised to any BDF window K):
///   s^i_j = −(dr^i/dq^i)⁻¹ (∂r^i/∂p_j + Σ_{k=1..min(K,i)} dr^i/dq^{i-k} s^{i-k}_j + dr^i/dv⁰ ∂v⁰/∂p_j),
/// with s^0_j = ∂q⁰/∂p_j and ∂v⁰/∂p_j from the initial-state jvp (paper §6 "Throwing").
/// One factorisation per step, shared by all listed parameters. Cost: one solve per step
/// and parameter; memory O(K·m·|q|) (plus n·|q| when one parameter's s^i are kept).

#include <functional>
#include <span>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/sensitivity/objective_function.h"
#include "addsim/solver/simulator.h"

namespace addsim {

struct DirectOptions {
  /// Index in p of a parameter (one of the listed ones) whose full sensitivities
  /// s^0 … s^n are returned in DirectResult::sensitivities; −1 = none.
  int keep_sensitivities_of = -1;
  /// Weights w_c, one per listed parameter, of a direction in parameter space; when
  /// non-empty DirectResult::directional holds Σ_c w_c s^i_c for i = 0 … n (a Jacobian–vector
  /// product dq^i/dp · w, e.g. for the Python module's jvp). Empty = none.
  VecX direction;
  /// Called on the calling thread after each step i = 1 … n with (i, n), for progress
  /// reports (optional; must not throw).
  std::function<void(int done, int total)> progress;
};

struct DirectResult {
  double phi = 0.0;
  /// dΦ/dp_j = ∂Φ/∂p_j + Σ_i ∂Φ/∂q^i s^i_j (paper eq. dPhi), one entry per listed parameter.
  VecX dphi_dp;
  /// s^0 … s^n (each |q|) of DirectOptions::keep_sensitivities_of, else empty.
  std::vector<VecX> sensitivities;
  /// Σ_c w_c s^i_c (each |q|) for i = 0 … n with the weights of DirectOptions::direction, else empty.
  std::vector<VecX> directional;
  double wall_seconds = 0.0;
  long factorizations = 0;     ///< LU factorisations of step Jacobians
  long krylov_iterations = 0;  ///< GMRES iterations on a reused LU
};

/// Direct sensitivities of `traj` for the parameters `params` (indices into p) and the
/// gradient of `objective` with respect to them. Throws SimulationError (naming the step)
/// if `traj` did not complete or a step Jacobian is singular; InputError for a parameter
/// index out of range or a `keep_sensitivities_of` that is not listed.
DirectResult gradient_direct(const Model& model, const Trajectory& traj, const ObjectiveFunction& objective,
                             std::span<const int> params, const DirectOptions& options = {});

}  // namespace addsim
