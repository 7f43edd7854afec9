#pragma once
/// FEM soft bodies (paper §5.1): linear tetrahedra with 3 DOFs per node (world position,
/// m; node k's x coordinate is global DOF dof_offset + 3k). The initial state is a rigid
/// motion of the rest mesh, so that initial conditions are differentiable parameters
/// (paper §6.2):  q⁰_k = c + R(θ)(X_k − X_c),  v⁰_k = v + ω × (q⁰_k − c),
/// with X_c the volume centroid of the rest mesh, c the position, θ the rotation vector,
/// v the velocity and ω the angular velocity (world frame).

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "addsim/fem/fem_kernels.h"
#include "addsim/mesh/tet_mesh.h"
#include "addsim/model/body.h"

namespace addsim {

/// Homogeneous material of a soft body (paper Table 1 units).
struct FemMaterial {
  double youngs_modulus = 2.0e4;  ///< E, Pa (> 0)
  double poisson_ratio = 0.3;     ///< ν, 1 (in (−1, 0.5))
  double density = 150.0;         ///< ρ, kg/m³ (> 0)
  double viscosity = 0.0;         ///< ν_visc, Pa s (≥ 0); meaning set by ViscosityModel
};

/// Rigid initial motion of a soft body (all world frame).
struct FemInit {
  std::optional<Vec3> position;          ///< c, m: where the rest centroid goes (default: stays)
  Vec3 orientation = Vec3::Zero();       ///< θ, rad: rotation vector about the centroid
  Vec3 velocity = Vec3::Zero();          ///< v, m/s
  Vec3 angular_velocity = Vec3::Zero();  ///< ω, rad/s
};

/// Consistent (m_e/10 diagonal, m_e/20 off-diagonal per component) or lumped (m_e/4 per
/// node) element mass matrix.
enum class MassMatrixKind { kConsistent, kLumped };

/// Offsets in p of a soft body's parameters (each entry is one row of 3 or a scalar).
struct FemParamIndices {
  int position = -1;          ///< "bodies.<i>.position" (3)
  int orientation = -1;       ///< "bodies.<i>.orientation" (3)
  int velocity = -1;          ///< "bodies.<i>.velocity" (3)
  int angular_velocity = -1;  ///< "bodies.<i>.angular_velocity" (3)
  int youngs_modulus = -1;    ///< "bodies.<i>.material.youngs_modulus"
  int poisson_ratio = -1;     ///< "bodies.<i>.material.poisson_ratio"
  int density = -1;           ///< "bodies.<i>.material.density"
  int viscosity = -1;         ///< "bodies.<i>.material.viscosity"
};

class FemBody final : public Body {
 public:
  /// Precomputes rest volumes and D_m⁻¹. `label` names the body in errors ("bodies.0").
  /// Throws InputError naming the element for inverted or degenerate rest tets
  /// (6V < 1e-12 · longest edge³) and for invalid meshes.
  FemBody(std::string name, std::string label, int dof_offset, const TetMesh& mesh, const FemParamIndices& params,
          MassMatrixKind mass = MassMatrixKind::kConsistent);

  const std::string& label() const { return label_; }
  const TetMesh& mesh() const { return mesh_; }
  int num_nodes() const { return mesh_.num_nodes(); }
  int num_tets() const { return mesh_.num_tets(); }
  const FemParamIndices& params() const { return params_; }
  MassMatrixKind mass_kind() const { return mass_kind_; }
  /// Global DOF of the x coordinate of node k.
  int dof(int k) const { return dof_offset() + 3 * k; }
  /// The 12 global DOFs of tet e (node-major: x, y, z of each of its 4 nodes).
  std::vector<DofIndex> element_dofs(int e) const;
  /// Rest volume V_e (m³) of tet e.
  double rest_volume(int e) const { return volume_[e]; }
  /// D_m⁻¹ (3 × 3, 1/m) of tet e, D_m = [X_1 − X_0, X_2 − X_0, X_3 − X_0].
  const Mat3& dm_inv(int e) const { return dm_inv_[e]; }
  /// Rest shape-function gradients g_k (rows, 4 × 3, 1/m) of tet e: F = Σ_k x_k g_kᵀ.
  const Mat43& shape_gradients(int e) const { return grad_[e]; }
  /// G Gᵀ (4 × 4, 1/m²: g_k·g_l) of tet e, formed once from shape_gradients(e) as
  /// `grad * grad.transpose()` (the viscous stiffness kernels take it instead of forming it
  /// per evaluation: the same numbers).
  const Eigen::Matrix4d& shape_gram(int e) const { return gram_[e]; }
  /// Node positions of tet e at q (3 × 4, m).
  Eigen::Matrix<double, 3, 4> element_positions(const VecX& q, int e) const;
  /// Deformation gradient F (3 × 3) of tet e at q.
  Mat3 deformation_gradient(const VecX& q, int e) const;
  /// Volume centroid X_c of the rest mesh (m).
  const Vec3& rest_center() const { return rest_center_; }
  /// Boundary triangles (outward) and their sorted node ids (contact and output).
  const std::vector<std::array<int, 3>>& surface_faces() const { return surface_faces_; }
  const std::vector<int>& surface_nodes() const { return surface_nodes_; }

  void initial_state(const VecX& p, VecX& q0, VecX& v0) const override;
  void initial_state_vjp(const VecX& p, const VecX& gq0, const VecX& gv0, VecX& grad) const override;
  void initial_state_jvp(const VecX& p, int j, VecX& dq0, VecX& dv0) const override;
  Vec3 center_of_mass(const VecX& q, const VecX& p) const override;
  double total_mass(const VecX& p) const override;
  /// ½ vᵀ M v with this body's mass matrix kind (J).
  double kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const override;
  std::vector<std::string> dof_labels() const override;
  /// Linear momentum Σ M v (kg m/s) and angular momentum about the origin
  /// Σ_e Σ_kl M_e,kl x_k × v_l (kg m²/s) with this body's mass matrix.
  Vec3 linear_momentum(const VecX& v, const VecX& p) const;
  Vec3 angular_momentum(const VecX& q, const VecX& v, const VecX& p) const;

 private:
  std::string label_;
  TetMesh mesh_;
  FemParamIndices params_;
  MassMatrixKind mass_kind_;
  std::vector<double> volume_;
  std::vector<Mat3> dm_inv_;
  std::vector<Mat43> grad_;
  std::vector<Eigen::Matrix4d> gram_;
  Vec3 rest_center_ = Vec3::Zero();
  double total_volume_ = 0.0;
  std::vector<std::array<int, 3>> surface_faces_;
  std::vector<int> surface_nodes_;
};

}  // namespace addsim
