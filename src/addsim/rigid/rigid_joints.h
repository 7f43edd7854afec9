#pragma once
/// Couplings between rigid bodies (paper §5.3), as potentials (k/2)|c(q)|² and a
/// damping torque:
///   zero-length (ball joint):  c = x_a − x_b,  x = p_WB + R p̂ (or a fixed world point for b)
///   hinge:                     zero-length, plus c_h = w(â_b) − w(â_a) with weight k_axis
///                              (w(û) = R û, world axis of a body-frame direction)
///   motor damping:             τ_md = k_md (ω_a − ω_b) applied as −τ_md to a and +τ_md
///                              to b through eq. rbMf (r_θa += J_aᵀ τ_md, r_θb −= J_bᵀ τ_md).
/// Residual r = ∂E/∂q = k Jcᵀ c with the exact Hessian k (Jcᵀ Jc + Σ_i c_i ∇²c_i) as ∂r/∂q.

#include <string>
#include <vector>

#include "addsim/model/term.h"
#include "addsim/rigid/rigid_body.h"

namespace addsim {

struct RigidJoint {
  enum class Kind { kZeroLength, kHinge, kMotorDamping };
  Kind kind = Kind::kZeroLength;
  const RigidBody* body_a = nullptr;  ///< required
  const RigidBody* body_b = nullptr;  ///< null: b is the world (point_b is then a world point, m)
  Vec3 point_a = Vec3::Zero();        ///< anchor p̂_a in a's body frame, m
  Vec3 point_b = Vec3::Zero();        ///< anchor p̂_b in b's body frame (or world), m
  Vec3 axis_a = Vec3::UnitZ();        ///< hinge: â_a in a's frame (unit)
  Vec3 axis_b = Vec3::UnitZ();        ///< hinge: â_b in b's frame (or world) (unit)
  int stiffness_param = -1;           ///< k (N/m); zero-length and hinge
  int axis_stiffness_param = -1;      ///< k_axis (N m); hinge
  int damping_param = -1;             ///< k_md (N m s); motor damping
  std::string label;                  ///< "couplings.3", for errors
};

/// All rigid couplings of a model; one stencil (6 or 12 DOFs) per joint.
class RigidJointTerm final : public Term {
 public:
  /// Throws InputError naming the label for a missing body or parameter.
  explicit RigidJointTerm(std::vector<RigidJoint> joints);
  std::string_view name() const override { return "rigid_joints"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;
  const std::vector<RigidJoint>& joints() const { return joints_; }

 private:
  std::vector<RigidJoint> joints_;
  std::vector<int> stencil_;
};

}  // namespace addsim
