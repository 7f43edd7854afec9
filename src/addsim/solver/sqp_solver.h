#pragma once
/// Forward step with hard contact constraints, the SQP comparison of paper §4.1 (forward
/// only; particles, FEM nodes and rigid proxy points against planar obstacles). KKT system
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
/// a check that changed no label, or within 2× the ‖r_c‖ at which the Newton step has
/// shrunk to a few ulps of q (round-off floor).
///
/// Rigid proxy points (RigidContactTerm with ContactModel::kSqp) obey the same constraints
/// on the point's gap g_k(q) and material velocity ẋ_k = Pv_k(θ) v, which are nonlinear in
/// the body's 6 DOFs and shared by all its points, so they are solved per body in null-space
/// form (docs/contact.md, "SQP model"): with B(θ) the stacked force maps of the active
/// points' multipliers (nᵀPv_k, and T̄ₖ Pv_k when sticking) and h̃ = (w_v g_k, T̄ₖ ẋ_k), the
/// body's six rows become r_c = (I − P)(r_body − f_slide) + B⁺ h̃, P = B⁺B, with the rank of B
/// fixed between label changes; r_c = 0 is the KKT system r_body = Bᵀλ + f_slide, h̃ = 0
/// (redundant constraints included), the multipliers are the minimum-norm λ = B⁺ᵀ(r_body − f_slide).
/// The same label rules apply per point, except that a body's λ < 0 releases wait while one
/// of its sticking points is outside the Coulomb cone or a lagged magnitude is still moving
/// (then the normal multipliers are not physical yet). Rigid sticking points are recorded in
/// ContactState::rigid_sticking (force: the minimum-norm tangential multiplier).

#include <array>
#include <vector>

#include "addsim/rigid/rigid_contact.h"
#include "addsim/solver/simulator.h"
#include "addsim/solver/step_common.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

namespace sqp_detail {
using Mat36 = Eigen::Matrix<double, 3, 6>;
using Vec6 = Eigen::Matrix<double, 6, 1>;

/// An active proxy point of a rigid body in the SQP KKT rows, at the current state.
struct BodyConstraint {
  double g = 0.0;            ///< gap g_k(q) to the obstacle plane, m
  Vec3 n = Vec3::UnitZ();    ///< unit plane normal
  Mat36 Pv = Mat36::Zero();  ///< ẋ_k = Pv v_body; for a plane ∂g_k/∂q_body = nᵀ Pv (RigidContactTerm::point_jacobian)
  std::array<Mat36, 3> dPv{Mat36::Zero(), Mat36::Zero(), Mat36::Zero()};  ///< ∂Pv/∂θ_j, 1/rad
  bool stick = false;        ///< sticking: normal and two tangential rows; sliding: normal row only
  Vec3 slide_force = Vec3::Zero();  ///< sliding: lagged friction force c_f λ t (world, N; constant in q)
};

/// KKT rows of one rigid body (SqpContact, null-space form; docs/contact.md, "SQP model").
/// With B (m × 6) the stacked force maps of the multipliers (nᵀPv per point; T̄ Pv for
/// sticking points, T̄ = tangent_basis(n)), h̃ = (w_v g_k; T̄ Pv v_body) and f_slide = Σ Pvᵀ
/// slide_force, the six residual rows become r_c = (I − P)(r_body − f_slide) + B⁺ h̃, P = B⁺B
/// over the top-`rank` eigenvectors of BᵀB. `cs`: the active points in order (non-empty);
/// r_body, v_body (6): the body's unconstrained residual rows (N, N·m) and BDF velocity;
/// wv = ∂v/∂q of the step. `rank` < 0 is determined (eigenvalues above 1e-8 of the largest)
/// and returned; otherwise kept. Outputs rc (6), `lambda` (m, optional) the minimum-norm
/// multipliers B⁺ᵀ(r_body − f_slide) in row order, and `sb` (optional) P and the θ-column
/// term D with ∂r_c/∂q^i = (I − P) ∂r_body/∂q^i + w_v P + D e_θᵀ (constant rank, f_slide's
/// force held fixed).
void body_kkt_rows(const std::vector<BodyConstraint>& cs, const Vec6& r_body, const Vec6& v_body, double wv,
                   int& rank, Vec6& rc, VecX* lambda, StickBody* sb);
}  // namespace sqp_detail

class SqpContact {
 public:
  /// Collects the SQP contact points of `model` (finalised); throws InputError for a
  /// non-planar obstacle of an SQP term.
  explicit SqpContact(const Model& model);
  /// True if the model has any SQP contact point.
  bool active() const { return !points_.empty() || !rpoints_.empty(); }
  /// Solves step `step` from the initial guess q (updated in place).
  StepReport solve_step(Simulator& sim, int step, const StateHistory& hist, const VecX& p, VecX& q);

  /// Maximum number of changes into a constrained state, per point and step.
  static constexpr int kMaxLabelChanges = 5;

 private:
  enum class Label { kFree, kStick, kSlip };
  using Point = step::ContactPoint;
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

  using RigidPoint = step::RigidContactPoint;
  using RigidBodyRows = step::ContactBody;  ///< rank: of B, kept between label changes
  // KKT rows of body b at ctx from the unconstrained residual r: the constrained rows r_c
  // (6), with `sb` its P and the θ-column Jacobian D (∂r_c/∂q^i = (I − P) ∂r/∂q^i + w_v P + D e_θᵀ),
  // with `forces` each point's multiplier force n λ + T̄ᵀμ (world, N; zero when free).
  // False (and r_c = r_body) if no point of the body is active.
  bool body_rows(const TermContext& ctx, const VecX& r, RigidBodyRows& b, Eigen::Matrix<double, 6, 1>& rc,
                 StickBody* sb, std::vector<Vec3>* forces) const;
  // Active-set update of the rigid points (same rules as update_labels); returns label changes.
  int update_rigid_labels(const TermContext& ctx, const VecX& r, ContactState* record);

  const Model& model_;
  std::vector<Point> points_;
  std::vector<State> states_;
  std::vector<RigidPoint> rpoints_;
  std::vector<State> rstates_;
  std::vector<RigidBodyRows> rbodies_;
  std::vector<StickBody> bodies_;  ///< P, D of the constrained bodies at the last Jacobian evaluation
  double wv_ = 0.0;                ///< ∂ẋ^i/∂q^i of the current step
  StickRows rows_;
  VecX v_hist_, a_hist_, v_, a_, r_, jac_, dq_, q_trial_, rhs_;
};

}  // namespace addsim
