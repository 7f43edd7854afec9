#pragma once
/// Rigid bodies in generalised coordinates (paper §3.1, §5.2): 6 DOFs per body, the
/// world position of the centre of mass p_WB (m) followed by the exponential-coordinate
/// rotation θ (rad) with R_WB = exp([θ]×). Generalised velocity v = (ṗ_WB, θ̇); the world
/// angular velocity is ω_W = J(θ) θ̇ and the body one ω_B = J(θ)ᵀ θ̇ (rigid/so3.h).
/// Mass m is a parameter; the body-frame inertia is I_B = m Î_B with Î_B fixed by the shape.

#include <string>
#include <vector>

#include "addsim/core/types.h"
#include "addsim/model/body.h"

namespace addsim {

/// Collision and mass shape of a rigid body, in its body frame (centre of mass at the
/// origin, principal axes along x, y, z except for kCustom).
struct RigidShape {
  enum class Kind { kSphere, kBox, kCylinder, kCapsule, kCustom };
  Kind kind = Kind::kSphere;
  double radius = 0.0;               ///< sphere, cylinder, capsule radius, m
  double length = 0.0;               ///< cylinder length / capsule cylinder part, along z, m
  Vec3 size = Vec3::Zero();          ///< box side lengths, m
  Mat3 inertia_per_mass = Mat3::Zero();  ///< kCustom: Î_B = I_B/m (m²), symmetric positive definite
  double custom_volume = 0.0;        ///< kCustom: volume (m³), for density-based masses

  static RigidShape sphere(double radius);
  static RigidShape box(const Vec3& size);
  static RigidShape cylinder(double radius, double length);
  static RigidShape capsule(double radius, double length);
  static RigidShape custom(const Mat3& inertia_per_mass, double volume);

  /// Volume (m³). Throws InputError for non-positive dimensions.
  double volume() const;
  /// Body-frame inertia per unit mass Î_B (3 × 3, m²) about the centre of mass.
  Mat3 unit_inertia() const;
};

/// Mass given directly (kg) or as a density (kg/m³) times the shape's volume.
struct RigidMassSpec {
  double mass = -1.0;     ///< kg, used when > 0
  double density = -1.0;  ///< kg/m³, used when mass ≤ 0
  static RigidMassSpec from_mass(double m) { return {m, -1.0}; }
  static RigidMassSpec from_density(double rho) { return {-1.0, rho}; }
  /// Mass (kg) for `shape`; throws InputError unless exactly one positive value is usable.
  double resolve(const RigidShape& shape) const;
};

/// Initial state of a rigid body (all world frame, SI units).
struct RigidInit {
  Vec3 position = Vec3::Zero();          ///< p_WB, m
  Vec3 orientation = Vec3::Zero();       ///< rotation vector θ⁰, rad
  Vec3 velocity = Vec3::Zero();          ///< ṗ_WB, m/s
  Vec3 angular_velocity = Vec3::Zero();  ///< ω_W, rad/s
};

/// A rigid body: parameters bodies.<i>.position / orientation / velocity /
/// angular_velocity (3 each, kInitialCondition) and bodies.<i>.mass (kMass, > 0, log scale).
/// Initial state: q⁰ = (p, θ⁰), v⁰ = (ṗ, J(θ⁰)⁻¹ ω_W) (paper §6.2).
class RigidBody final : public Body {
 public:
  /// Parameter offsets come from ParameterTable::add(); unit_inertia = Î_B (m²).
  RigidBody(std::string name, int dof_offset, const Mat3& unit_inertia, int position_param, int orientation_param,
            int velocity_param, int angular_velocity_param, int mass_param);

  /// Global DOF of p_WB.x; θ starts at dof() + 3.
  int dof() const { return dof_offset(); }
  int mass_param() const { return mass_param_; }
  int position_param() const { return position_param_; }
  int orientation_param() const { return orientation_param_; }
  int velocity_param() const { return velocity_param_; }
  int angular_velocity_param() const { return angular_velocity_param_; }
  const Mat3& unit_inertia() const { return unit_inertia_; }

  /// Makes the body kinematic: its pose (p_WB, θ) at step i is the control row
  /// p[poses_param + 6i … +6] (RigidPoseTerm enforces it); q⁰ = row 0, v⁰ = (row 1 − row 0)/h.
  void make_kinematic(int poses_param, double h) {
    poses_param_ = poses_param;
    h_ = h;
  }
  bool kinematic() const { return poses_param_ >= 0; }
  /// Offset of row 0 of the (n+1) × 6 pose controls, or −1 for a dynamic body.
  int poses_param() const { return poses_param_; }
  /// Mass m (kg) at p.
  double mass(const VecX& p) const { return p[mass_param_]; }
  /// I_B (3 × 3, kg m²) at p.
  Mat3 inertia_B(const VecX& p) const { return p[mass_param_] * unit_inertia_; }
  /// R_WB (3 × 3) at q.
  Mat3 rotation(const VecX& q) const;
  /// ω_W = J(θ) θ̇ (rad/s) at (q, v).
  Vec3 angular_velocity_W(const VecX& q, const VecX& v) const;
  /// World angular momentum about the world origin, m p × ṗ + R I_B ω_B (kg m²/s).
  Vec3 angular_momentum_W(const VecX& q, const VecX& v, const VecX& p) const;

  void initial_state(const VecX& p, VecX& q0, VecX& v0) const override;
  void initial_state_vjp(const VecX& p, const VecX& gq0, const VecX& gv0, VecX& grad) const override;
  void initial_state_jvp(const VecX& p, int j, VecX& dq0, VecX& dv0) const override;
  Vec3 center_of_mass(const VecX& q, const VecX& p) const override;
  double total_mass(const VecX& p) const override;
  /// ½ m |ṗ|² + ½ ω_Bᵀ I_B ω_B (J).
  double kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const override;
  /// "x", "y", "z", "theta.x", "theta.y", "theta.z".
  std::vector<std::string> dof_labels() const override;
  /// True when |θ| > kReparametrizeAngle (rad): the simulator then switches the chart.
  bool wants_rechart(const VecX& q) const override;
  /// θ ← θ (1 − 2π/|θ|) (reparametrize_rotation); the position is unchanged.
  void rechart(VecX& q) const override;
  /// 6 × 6: identity on the position, reparametrize_rotation_jacobian() on θ.
  MatX rechart_jacobian(const VecX& q) const override;

 private:
  Mat3 unit_inertia_;
  int position_param_, orientation_param_, velocity_param_, angular_velocity_param_, mass_param_;
  int poses_param_ = -1;
  double h_ = 0.0;
};

}  // namespace addsim
