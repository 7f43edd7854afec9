#pragma once
/// Penalty contact between a set of points with 3 DOFs each (particles now, FEM nodes
/// later) and the model's obstacles (paper §4.2: contact handled per point). Each point is
/// tested against every obstacle; forces come from contact_force().

#include <memory>
#include <vector>

#include "addsim/model/term.h"
#include "addsim/terms/contact_force.h"
#include "addsim/terms/obstacle.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

/// Where the contact coefficients live in p.
/// Force on a hybrid-contact point released from its stick constraint (paper §4.3):
/// kCoulomb — the sliding force −c_f f_n t, t = Tẋ/(‖Tẋ‖ + 1e-8), eq. slip (the paper's
/// earlier draft; default); kPenalty — back to the clamped linear penalty friction, eq.
/// linPenT (the final text). A point released at rest has a near-zero penalty friction, so
/// with kPenalty its load moves to its neighbours, which then exceed their limits in turn:
/// on the cylinder drop every resting step cascades through label changes (43 s vs 4.7 s
/// for 500 steps, docs/contact.md).
enum class HybridRelease { kCoulomb, kPenalty };

struct ContactSettings {
  ContactModel model = ContactModel::kLinear;
  HybridRelease hybrid_release = HybridRelease::kCoulomb;
  double slip_regularization = kDefaultSlipRegularization;  ///< ε, m/s (hybrid sliding direction)
  int kn_param = -1;
  int kd_param = -1;
  int kt_param = -1;  ///< −1: k_t = k_n h_t (paper: "we always choose k_t = k_n Δt")
  /// Without kt_param: h_t = kt_step_factor · h (contact.kt_rule): 1 ("h", the paper's text,
  /// default) or the step's velocity weight 1/cv[0] ("effective_step": 2/3 for BDF2, the
  /// authors' code; 1 for BDF1).
  double kt_step_factor = 1.0;
  double damping_ramp = kDefaultDampingRamp;  ///< δ, m: damping ramp depth (constant, not in p)
  int smoothing_param = -1;  ///< w, m: C¹ normal-penalty width in p (contact.smoothing); −1: w = 0
};

/// Contact coefficients for obstacle `o` at parameters p (h: the nominal time step).
ContactCoefficients coefficients(const ContactSettings& s, const Obstacle& o, const VecX& p, double h);
/// h_t of k_t = k_n h_t without contact.kt, so that ∂k_t/∂k_n = h_t.
inline double tangential_step(const ContactSettings& s, double h) { return h * s.kt_step_factor; }

class PointContactTerm final : public Term {
 public:
  /// dofs: global DOF of the x coordinate of each contact point.
  PointContactTerm(std::vector<DofIndex> dofs, std::vector<std::shared_ptr<const Obstacle>> obstacles,
                   ContactSettings settings);
  std::string_view name() const override { return "point_contact"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

  /// Force of obstacle o on point k at ctx (for reports and tests).
  ContactForce force(const TermContext& ctx, int k, int o) const;
  int num_points() const { return static_cast<int>(dofs_.size()); }
  int num_obstacles() const { return static_cast<int>(obstacles_.size()); }
  /// Global x-DOF of each contact point.
  const std::vector<DofIndex>& dofs() const { return dofs_; }
  const std::vector<std::shared_ptr<const Obstacle>>& obstacles() const { return obstacles_; }
  const ContactSettings& settings() const { return settings_; }
  /// Hybrid model: replaces the penalty friction of point k against obstacle o by the
  /// sliding force (FrictionMode::kCoulomb, or kLagged along `lagged_direction` if it is
  /// non-zero) in r, ∂r/∂q and ∂r/∂v.
  void add_slip_correction(const TermContext& ctx, int k, int o, Assembly& out,
                           const Vec3& lagged_direction = Vec3::Zero()) const;
  /// ∂/∂p of add_slip_correction() (kCoulomb mode).
  void slip_correction_param_derivatives(const TermContext& ctx, int k, int o, ParamSink& sink) const;

 private:
  std::vector<DofIndex> dofs_;
  std::vector<std::shared_ptr<const Obstacle>> obstacles_;
  ContactSettings settings_;
  std::vector<int> stencil_;
  /// Per obstacle: the plane, or null for other shapes. A point at g ≥ w/2 from a plane gets
  /// no force (contact_force's first test); evaluate() makes that test on the plane's gap
  /// alone, without the force record, normal and Hessian (most points of a lifted sheet).
  std::vector<const PlaneObstacle*> planes_;
};

/// add_slip_correction() for every recorded sliding point of a step.
void add_slip_corrections(const std::vector<SlipPoint>& sliding, const TermContext& ctx, Assembly& out);
/// slip_correction_param_derivatives() for every recorded sliding point of a step.
void slip_corrections_param_derivatives(const std::vector<SlipPoint>& sliding, const TermContext& ctx,
                                        ParamSink& sink);

}  // namespace addsim
