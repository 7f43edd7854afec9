#pragma once
/// Forward step with hard contact constraints, the SQP comparison of paper §4.1 (forward
/// only, for particles and FEM nodes against planar obstacles). KKT system
///   r + n λ + T̄ᵀ μ = 0,  g(x) ≥ 0 (active set: g = 0),  T̄ ẋ = 0 (stick)
/// for the points of every PointContactTerm whose model is ContactModel::kSqp (the term
/// itself then adds no force). Both constraints are linear in one point's DOFs, so the
/// KKT system is solved by eliminating them like Dirichlet conditions: an active point's
/// normal row becomes g(x) = 0 and, when sticking, its tangential rows become T̄ ẋ^i = 0
/// (terms/stick_constraints.h). The multipliers are the replaced rows of the residual:
/// λ = n·r_point (normal force, N), μ = T̄ r_point (static friction, N).
///
/// Active set (checked whenever ‖r_c‖ < ε^{1/2}, as the hybrid solver): a free point with
/// g < 0 becomes active and sticking; an active point with λ < 0 is released; a sticking
/// point with ‖μ‖ > c_f λ slides with the lagged friction force f_t = c_f λ t, whose
/// direction t is that of the sticking force (kept, paper: "solve assuming sticking, then
/// update the friction force magnitude to the Coulomb limit keeping its direction") and
/// whose magnitude is updated to c_f λ of the current iterate at every check (f_t is
/// constant within a Newton solve, so convergence is linear in the sliding phase); a
/// sliding point whose tangential velocity turns along t sticks again. At most 5 changes
/// into a constrained state per point and step. The step ends when ‖r_c‖ < ε right after
/// a check that changed no label.

#include <vector>

#include "addsim/solver/simulator.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

class SqpContact {
 public:
  /// Collects the SQP contact points of `model` (finalised); throws InputError for a
  /// non-planar obstacle of an SQP term.
  explicit SqpContact(const Model& model);
  /// True if the model has any SQP contact point.
  bool active() const { return !points_.empty(); }
  /// Solves step `step` from the initial guess q (updated in place).
  StepReport solve_step(Simulator& sim, int step, const StateHistory& hist, const VecX& p, VecX& q);

  /// Maximum number of changes into a constrained state, per point and step.
  static constexpr int kMaxLabelChanges = 5;

 private:
  enum class Label { kFree, kStick, kSlip };
  struct Point {
    const PointContactTerm* term;
    int k;
    DofIndex dof;
  };
  struct State {
    Label label = Label::kFree;
    int obstacle = 0;
    Vec3 t = Vec3::Zero();  ///< sliding: unit direction of the friction force
    double fn = 0.0;        ///< sliding: lagged normal force λ, N
    double cf = 0.0;        ///< friction coefficient of the obstacle
    int changes = 0;
  };
  // Row frame of an active point: rows (t₁, t₂, n) sticking, (t, n × t, n) sliding.
  Mat3 frame(const Point& pt, const State& st) const;
  // r_c from the unconstrained residual r at (q, v).
  void constrain(const VecX& q, const VecX& v, VecX& r) const;
  // Active-set update at (q, v) with unconstrained residual r; returns label changes.
  int update_labels(const VecX& q, const VecX& v, const VecX& r, const VecX& p, double h, ContactState* record);

  const Model& model_;
  std::vector<Point> points_;
  std::vector<State> states_;
  StickRows rows_;
  VecX v_hist_, a_hist_, v_, a_, r_, jac_, jac_damped_, dq_, q_trial_, rhs_;
};

}  // namespace addsim
