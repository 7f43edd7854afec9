#pragma once
/// The general vector–Jacobian product of a rollout as an objective: given any upstream
/// gradient ∂L/∂q^i and ∂L/∂v^i (i = 0 … n) of a loss L written outside addsim (numpy,
/// PyTorch), the linear functional Φ = Σ_i (∂L/∂q^i · q^i + ∂L/∂v^i · v^i) has the same
/// total derivative dΦ/dp = dL/dp, so one adjoint sweep (gradient_adjoint) of Φ returns dL/dp.
/// v^i is not a free variable: v^i = (1/h) Σ_k cv_i[k] q^{i−k} + v0_v(i) v⁰ (time scheme,
/// docs/notation.md §Time), with q^{i−k} read in the chart of step i; so ∂L/∂v^i enters
/// ∂Φ/∂q^{i−k} through cv_i[k]/h and the rigid bodies' chart Jacobians, and ∂Φ/∂p through
/// (∂v⁰/∂p)ᵀ (Body::initial_state_vjp).

#include "addsim/core/types.h"
#include "addsim/model/model.h"
#include "addsim/sensitivity/objective_function.h"
#include "addsim/solver/simulator.h"

namespace addsim::python {

class TrajectoryCotangent final : public ObjectiveFunction {
 public:
  /// dl_dq: (n+1) × |q| (row i = ∂L/∂q^i, units of L per m or rad); dl_dv: the same shape for
  /// ∂L/∂v^i, or empty (0 × 0) for none.
  TrajectoryCotangent(MatX dl_dq, MatX dl_dv) : dl_dq_(std::move(dl_dq)), dl_dv_(std::move(dl_dv)) {}

  /// Φ = Σ_i ∂L/∂q^i · q^i + ∂L/∂v^i · v^i; adds ∂Φ/∂q^i and ∂Φ/∂p into grad. Throws
  /// InputError if the row count is not n + 1 or the column count not |q|.
  double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const override;

 private:
  MatX dl_dq_;
  MatX dl_dv_;
};

}  // namespace addsim::python
