#pragma once
/// The interface between objectives and the gradient passes: an objective Φ(q̃, p) of a
/// recorded run (paper eq. phi) that reports its partials ∂Φ/∂q^i (sparse in time: only the
/// steps it touches) and ∂Φ/∂p. The objectives module implements it; the adjoint, direct and
/// finite-difference passes consume it.

#include <vector>

#include "addsim/core/types.h"
#include "addsim/model/model.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Partial derivatives of Φ: ∂Φ/∂q^i (|q|) for the touched steps i ∈ [0, n], ∂Φ/∂p (|p|).
class ObjectiveGradient {
 public:
  ObjectiveGradient() = default;
  /// Empty gradient for |q| = num_dofs, |p| = num_params and steps 0 … num_steps.
  ObjectiveGradient(int num_dofs, int num_params, int num_steps);

  /// ∂Φ/∂q^step (|q|), zero-initialised on first use; throws InternalError if step ∉ [0, n].
  VecX& dphi_dq(int step);
  /// ∂Φ/∂q^step, or nullptr if no term touched that step.
  const VecX* find_dphi_dq(int step) const;
  /// ∂Φ/∂p (|p|).
  VecX& dphi_dp() { return dphi_dp_; }
  const VecX& dphi_dp() const { return dphi_dp_; }
  int num_steps() const { return static_cast<int>(dphi_dq_.size()) - 1; }

 private:
  int num_dofs_ = 0;
  std::vector<VecX> dphi_dq_;  // size 0 = untouched step
  VecX dphi_dp_;
};

/// A differentiable scalar objective Φ(q⁰ … qⁿ, p) of a completed trajectory (paper eq. phi).
class ObjectiveFunction {
 public:
  virtual ~ObjectiveFunction() = default;
  /// Returns Φ for `traj` (completed, steps 0 … n); when `grad` is non-null (sized for
  /// the model and n) adds ∂Φ/∂q^i and ∂Φ/∂p into it.
  virtual double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const = 0;
};

/// Throws SimulationError naming the failed step if `traj` did not complete, and
/// InputError if it does not match the model (parameter count, DOFs, number of steps).
/// `who` prefixes the message ("adjoint", "direct sensitivities").
void require_complete_trajectory(const Model& model, const Trajectory& traj, const char* who);

}  // namespace addsim
