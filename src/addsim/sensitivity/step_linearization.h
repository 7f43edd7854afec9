#pragma once
/// One step of a recorded trajectory linearised at its converged state (DESIGN.md §1, §6):
/// q^i, v^i, a^i from the BDF scheme, the terms' local partials, the step Jacobian
/// dr^i/dq^i, the history Jacobians dr^i/dq^{i-k} (k = 1 … K, zero for i − k < 0) and the
/// start-up Jacobian dr^i/dv⁰, all as value arrays over the model's fixed pattern. Shared by the adjoint and the direct pass; all buffers are
/// allocated once, so evaluating a step does not allocate.

#include <vector>

#include "addsim/integrators/bdf.h"
#include "addsim/math/sparse_assembly.h"
#include "addsim/model/model.h"
#include "addsim/solver/simulator.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

class StepLinearization {
 public:
  /// The model must be finalised and outlive this object.
  explicit StepLinearization(const Model& model);

  /// Evaluates step i ∈ [1, n] of `traj` (which must hold q⁰ … q^i, q0, v0 and p).
  void evaluate(const Trajectory& traj, int i);

  /// dr^i/dq^i = ∂r/∂q + (cv_i[0]/h) ∂r/∂v + (ca_i[0]/h²) ∂r/∂a (nnz values).
  const VecX& step_jacobian() const { return jac_; }
  /// dr^i/dq^{i-k} = (cv_i[k]/h) ∂r/∂v + (ca_i[k]/h²) ∂r/∂a for k ∈ [1, K] (nnz values;
  /// zero when i − k < 0).
  const VecX& history_jacobian(int k) const { return hist_jac_[k - 1]; }
  /// dr^i/dv⁰ = v0_v,i ∂r/∂v + (v0_a,i/h) ∂r/∂a (nnz values); only meaningful if
  /// depends_on_v0().
  const VecX& v0_jacobian() const { return v0_jac_; }
  /// True in the start-up steps whose rates read the initial velocity v⁰ directly.
  bool depends_on_v0() const { return depends_on_v0_; }
  /// Residual r^i at the stored state (|q|), for checks: ‖r‖ is the forward tolerance.
  const VecX& residual() const { return assembly_.r; }
  /// Adds ∂r^i/∂p through `sink` (every term's param_derivatives at the stored state).
  void param_derivatives(ParamSink& sink) const;
  int step() const { return step_; }
  /// P v: a right-hand side (e.g. ∂r^i/∂p) with the rows of stick-constrained points
  /// replaced as in the constrained step system (hybrid contact; no-op otherwise).
  void project_rows(VecX& v) const {
    StickRows::project(sticks_, v);
    StickRows::project_bodies(bodies_, v);
  }
  /// Pᵀ λ, the adjoint of project_rows().
  void project_rows_transpose(VecX& lambda) const {
    StickRows::project_transpose(sticks_, lambda);
    StickRows::project_bodies(bodies_, lambda);
  }

 private:
  // values (nnz) ← values with the body's block columns multiplied by G (chart switch).
  void apply_chart_jacobian(const Body& body, const MatX& G, VecX& values) const;

  const Model& model_;
  Assembly assembly_;
  StickRows stick_rows_;
  std::vector<StickPoint> sticks_;
  std::vector<StickBody> bodies_;  ///< rigid bodies with stick constraints in this step
  std::vector<SlipPoint> slips_;
  VecX q_, v_, a_, v_hist_, a_hist_, jac_, v0_jac_;
  std::vector<VecX> hist_jac_;
  const VecX* p_ = nullptr;
  int step_ = 0;
  bool depends_on_v0_ = false;
};

}  // namespace addsim
