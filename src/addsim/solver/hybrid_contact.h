#pragma once
/// Forward step of the hybrid contact model (paper §4.3): linear penalty normal and
/// friction forces (eqs. linPenN, linPenT) plus hard static-friction constraints
/// T̄ ẋ^i = 0 (eq. stick; T̄ (x^i − x^{i−1}) = 0 for BDF1) for contact points whose friction stays under the Coulomb limit.
///
/// Active set per step, on the contact points of every PointContactTerm whose model is
/// ContactModel::kHybrid (particles, FEM nodes; planar obstacles):
///  1. Newton on the penalty residual until ‖r‖ < ε^{1/2} (ε = solver tolerance).
///  2. Label check (only at iterates with ‖r_c‖ < ε^{1/2}): a point in contact whose
///     penalty friction is below the limit (k_t ‖Tẋ‖ ≤ c_f f_n) is labelled sticking and
///     its tangential rows are replaced by the constraint (terms/stick_constraints.h);
///     a sticking point whose constraint force f_c = T (r_point + f_t) exceeds c_f f_n is
///     released: with HybridRelease::kPenalty (the final paper) back to the clamped linear
///     penalty friction for the rest of the step (it may stick again from the next step
///     on: re-sticking within the step makes points at the edge of the friction cone flip
///     between the labels until the change limit); with kCoulomb (the earlier draft, the
///     default) to the sliding force −c_f f_n t,
///     t = Tẋ/(‖Tẋ‖ + 1e-8) (eq. slip; for the first iteration after the release t is the
///     direction of the constraint force, as Tẋ is still zero), and such a point whose
///     penalty friction would be under the limit again (it stopped) sticks again; a
///     separated point is released to the penalty.
///  Each step starts from the previous step's final labels (the first step of a run from
///  all-penalty labels).
///  3. Newton on the constrained residual r_c, with the same line search and LM-damped
///     fallback as the penalty solver.
/// At most 5 label changes per point and step turn a point to sticking (paper draft §4.3);
/// releasing is always allowed, so a point that exhausted its changes ends on the
/// penalty force: the Coulomb limit is never exceeded by a sticking point. The step ends
/// when ‖r_c‖ < ε and a label check changes nothing. The final labels, constraint forces
/// and limits are recorded in StepReport::contact (hence in the Trajectory).
///
/// Rigid proxy points (RigidContactTerm with ContactModel::kHybrid) use the same labels on
/// the material velocity ẋ = ṗ + X_v(θ) θ̇; a body's sticking points are enforced together
/// through the projector P(θ) of terms/stick_constraints.h (StickBody), whose rank is fixed
/// with the labels; the per-point static friction is the multiplier of least Σ‖f_k‖²/L_k
/// (L_k the point's Coulomb limit: each point loaded in proportion to its limit). A body's
/// touching points are proposed together (when any of them would stick under the penalty
/// law), and a check that releases points of a body proposes none of it. A released rigid
/// point gets the sliding force (rigid/rigid_slip.h) or, with HybridRelease::kPenalty, the
/// penalty friction (docs/contact.md, "Rigid bodies").

#include <memory>
#include <vector>

#include "addsim/rigid/rigid_contact.h"
#include "addsim/solver/simulator.h"
#include "addsim/solver/step_common.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

class HybridContact {
 public:
  /// Collects the hybrid contact points of `model` (finalised); throws InputError for a
  /// non-planar obstacle of a hybrid term.
  explicit HybridContact(const Model& model);
  /// True if the model has any hybrid contact point.
  bool active() const { return !points_.empty() || !rpoints_.empty(); }
  /// Solves step `step` from the initial guess q (updated in place) as described above.
  StepReport solve_step(Simulator& sim, int step, const StateHistory& hist, const VecX& p, VecX& q);

  /// Maximum number of label changes that turn a point to sticking, per point and step.
  static constexpr int kMaxLabelChanges = 5;

 private:
  using Point = step::ContactPoint;
  /// Applies the label rules at a state with unconstrained residual r; returns the number
  /// of changes. With `record`, also writes the touching points and the sticking points'
  /// constraint forces and limits.
  int update_labels(const TermContext& ctx, const VecX& r, ContactState* record);
  void rebuild_sticks();

  using RigidPoint = step::RigidContactPoint;
  using RigidBodyLabels = step::ContactBody;
  /// Stick projector of body b at (ctx, unconstrained r): fills `out` (P, D) and, if
  /// `forces`, the limit-weighted static friction force of each of its sticking points (world,
  /// N; indexed like RigidBodyLabels::points, zero for non-sticking ones). Returns false
  /// when the body has no sticking point.
  bool body_projector(const TermContext& ctx, const VecX& r, RigidBodyLabels& b, StickBody& out,
                      std::vector<Vec3>* forces);
  /// Label rules for rigid points (release as update_labels; proposal per body).
  int update_rigid_labels(const TermContext& ctx, const VecX& r, ContactState* record);
  /// Projectors of every body with sticking points at ctx into bodies_.
  void rebuild_bodies(const TermContext& ctx, const VecX& r);

  const Model& model_;
  std::vector<Point> points_;
  StickRows rows_;
  std::vector<int> stuck_on_;     ///< obstacle index per point, −1 when not sticking
  std::vector<int> released_on_;  ///< obstacle index per point on the sliding force, else −1
  std::vector<Vec3> lagged_;      ///< sliding direction for the first iteration after release (or 0)
  std::vector<int> changes_;
  std::vector<char> on_penalty_;  ///< released to the penalty friction in this step (kPenalty): no re-stick until the next
  std::vector<SlipPoint> slips_;
  std::vector<StickPoint> sticks_;
  std::vector<RigidPoint> rpoints_;
  std::vector<RigidBodyLabels> rbodies_;
  std::vector<int> rstuck_on_;   ///< obstacle index per rigid point, −1 when not sticking
  std::vector<int> rchanges_;
  std::vector<int> rreleased_on_;  ///< obstacle index per rigid point on the sliding force, else −1
  std::vector<Vec3> rlagged_;      ///< its sliding direction for the first iteration after release (or 0)
  std::vector<char> ron_penalty_;  ///< rigid point released to the penalty friction in this step (kPenalty)
  std::vector<StickBody> bodies_;
  VecX v_hist_, a_hist_, v_, a_, r_, jac_, rhs_;
  step::NewtonWorkspace newton_;  ///< scratch of step::newton_step
};

}  // namespace addsim
