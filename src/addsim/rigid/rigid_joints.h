#pragma once
/// Couplings between a rigid body and another rigid body, a particle / FEM node, a point
/// embedded in an FEM tet, a handle or the world (paper §5.3), as potentials (k/2)|c(q)|²
/// and a damping torque:
///   zero-length (ball joint):  c = x_a − x_b,  x = p_WB + R p̂ (or a fixed world point for b)
///   distance / unilateral:     c = |x_a − x_b| − l₀ (unilateral: only while c > 0)
///   hinge:                     zero-length, plus c_h = w(â_b) − w(â_a) with weight k_axis
///                              (w(û) = R û, world axis of a body-frame direction)
///   motor:                     hinge, plus c_m = w_a(R(α, â_a) b̂_a) − w_b(b̂_b) with weight k_m;
///                              α fixed or a per-step control
///   motor damping:             τ_md = k_md (ω_a − ω_b) applied as −τ_md to a and +τ_md
///                              to b through eq. rbMf (r_θa += J_aᵀ τ_md, r_θb −= J_bᵀ τ_md).
///   angle limit:               E = (k/2)(max(0, α − α_max)² + max(0, α_min − α)²) on the hinge
///                              angle α = atan2(n·(u × w), u·w), n = w_a(â_a), u = w_a(b̂_a),
///                              w = w_b(b̂_b) (α as for the motor; a unilateral limit).
///   prismatic (slider):        E = (k/2)‖(I − n nᵀ) d‖² (d = x_a − x_b, n = w_a(â_a): b moves
///                              only along the axis) + (k_axis/2)(‖w(â_a) − w(â_b)‖² +
///                              ‖w(b̂_a) − w(b̂_b)‖²) (no relative rotation), plus, when a motor
///                              stiffness is given, (k_m/2)(σ − σ*)² on the slide σ = −n·d
///                              (σ* fixed or per step, m).
///   slide limit:               E = (k/2)(max(0, σ − σ_max)² + max(0, σ_min − σ)²).
/// Residual r = ∂E/∂q = k Jcᵀ c with the exact Hessian k (Jcᵀ Jc + Σ_i c_i ∇²c_i) as ∂r/∂q.

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/model/term.h"
#include "addsim/rigid/rigid_body.h"

namespace addsim {

struct RigidJoint {
  /// kZeroLength: ball joint; kDistance: (k/2)(|x_a − x_b| − l₀)²; kUnilateral: the same while
  /// |x_a − x_b| > l₀ (cables); kHinge: ball + axis alignment; kMotor: hinge + the motor
  /// constraint c_m = w(R(α, â_a) b̂_a) − w(b̂_b) (paper §5.3); kMotorDamping: τ_md;
  /// kAngleLimit: a unilateral penalty on the hinge angle outside [lower, upper];
  /// kPrismatic: a slider along â_a (optionally driven to the slide target); kSlideLimit: a
  /// unilateral penalty on the slide σ outside [lower, upper] (m).
  enum class Kind { kZeroLength, kHinge, kMotorDamping, kDistance, kUnilateral, kMotor, kAngleLimit, kPrismatic, kSlideLimit };
  Kind kind = Kind::kZeroLength;
  const RigidBody* body_a = nullptr;  ///< required
  const RigidBody* body_b = nullptr;  ///< null: b is a particle, an embedded point, a handle or the world
  int particle_b = -1;                ///< global DOF (x) of a particle / FEM node b, or −1
  /// A point b embedded in an FEM tet: global DOFs (x) of the tet's 4 nodes (−1: none) and
  /// its barycentric coordinates, x_b = Σ_m bary_b[m] x_{tet_b[m]}.
  std::array<int, 4> tet_b{-1, -1, -1, -1};
  std::array<double, 4> bary_b{};
  int handle_b = -1;                  ///< index into Model::handles() for a handle b, or −1
  Vec3 point_a = Vec3::Zero();        ///< anchor p̂_a in a's body frame, m
  Vec3 point_b = Vec3::Zero();        ///< anchor p̂_b in b's body frame (or world), m
  Vec3 axis_a = Vec3::UnitZ();        ///< hinge: â_a in a's frame (unit)
  Vec3 axis_b = Vec3::UnitZ();        ///< hinge: â_b in b's frame (or world) (unit)
  Vec3 ref_a = Vec3::UnitX();         ///< motor: b̂_a ⊥ â_a in a's frame (unit)
  Vec3 ref_b = Vec3::UnitX();         ///< motor: b̂_b ⊥ â_b in b's frame (or world) (unit)
  double rest_length = 0.0;           ///< l₀ (m); distance, unilateral
  /// Angle limit: α_min, α_max (rad), −π < α_min < α_max < π (±∞: no limit on that side);
  /// stiffness_param is k (N m/rad); axis_a, ref_a, ref_b as for the motor. Slide limit:
  /// σ_min < σ_max (m, one side may be infinite), stiffness_param k (N/m).
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  int stiffness_param = -1;           ///< k (N/m); all kinds but motor damping
  int axis_stiffness_param = -1;      ///< k_axis (N m); hinge, motor
  int motor_stiffness_param = -1;     ///< k_m (N m); motor. Prismatic: N/m, optional (−1: no drive)
  int target_param = -1;              ///< motor: α (rad) / prismatic: σ* (m), p index of row 0
  bool per_step_target = false;       ///< motor: α^i = p[target_param + i] (control per step)
  int damping_param = -1;             ///< k_md (N m s); motor damping
  std::string label;                  ///< "joints.3", for errors
};

/// All rigid couplings of a model; one stencil (6, 9, 12 or 18 DOFs) per joint.
class RigidJointTerm final : public Term {
 public:
  /// Throws InputError naming the label for a missing body or parameter. `model` is needed
  /// only for handle anchors (may be null otherwise) and must outlive the term.
  explicit RigidJointTerm(std::vector<RigidJoint> joints, const Model* model = nullptr);
  std::string_view name() const override { return "rigid_joints"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;
  const std::vector<RigidJoint>& joints() const { return joints_; }

 private:
  std::vector<RigidJoint> joints_;
  std::vector<int> stencil_;
  const Model* model_;
  /// evaluate(): joints summed into one local and scattered once, in order of their first
  /// joint — those between the same two rigid bodies (b a body, not a handle) share a group.
  std::vector<std::vector<int>> groups_;
};

}  // namespace addsim
