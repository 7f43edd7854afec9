#pragma once
/// Penalty frictional contact between rigid-body collision proxies and the model's
/// obstacles (paper §4.2, §5.2). A proxy is a set of spheres (centre ĉ in the body
/// frame, common radius r ≥ 0; r = 0 gives a point set such as box corners or mesh
/// vertices). The contact point of a sphere against a plane with outward normal n is
///   x = p_WB + R ĉ − r n,   ẋ = ṗ_WB + ω_W × (x − p_WB)   (material velocity there),
/// so g(x) = n·(centre − plane point) − r. The force f = contact_force(x, ẋ) is mapped to
/// generalised forces by eq. rbMf: r_p −= f, r_θ −= Jᵀ ((x − p_WB) × f).

#include <array>
#include <memory>
#include <vector>

#include "addsim/model/term.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/terms/contact_term.h"

namespace addsim {

/// Collision proxy of a rigid body, in its body frame.
struct RigidProxy {
  std::vector<Vec3> centers_B;  ///< sphere centres / points ĉ, m
  double radius = 0.0;          ///< sphere radius r, m (0: points)

  static RigidProxy sphere(const Vec3& center_B, double radius) { return {{center_B}, radius}; }
  static RigidProxy points(std::vector<Vec3> points_B) { return {std::move(points_B), 0.0}; }
  /// The 8 corners of a box of side lengths `size` (m) centred at the body origin.
  static RigidProxy box_corners(const Vec3& size);
  bool empty() const { return centers_B.empty(); }
};

/// Contact of one rigid body's proxy against obstacles; exact 6 × 6 ∂r/∂q, ∂r/∂v and
/// parameter derivatives for k_n (including k_t = k_n h when derived), k_d, k_t, c_f.
class RigidContactTerm final : public Term {
 public:
  /// Throws InputError if the proxy has spheres (r > 0) and an obstacle is not a plane.
  RigidContactTerm(const RigidBody* body, RigidProxy proxy, std::vector<std::shared_ptr<const Obstacle>> obstacles,
                   ContactSettings settings);
  /// Throws InputError (naming body `body_name`) for a negative radius or for spheres
  /// (r > 0) against a non-plane obstacle.
  static void validate(const std::string& body_name, const RigidProxy& proxy,
                       const std::vector<std::shared_ptr<const Obstacle>>& obstacles);
  std::string_view name() const override { return "rigid_contact"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

  /// Force of obstacle o on proxy point k at ctx (world frame; for reports and tests).
  ContactForce force(const TermContext& ctx, int k, int o) const;
  /// Hybrid model: rows of the stick constraint of point k against plane o, ẋ_t = C v with
  /// C = T̄ [I X_v] (2 × 6, rows t₁ᵀ, t₂ᵀ) and dC[j] = ∂C/∂θ_j (1/rad).
  void stick_jacobian(const TermContext& ctx, int k, int o, const Vec3& t1, const Vec3& t2,
                      Eigen::Matrix<double, 2, 6>& C, std::array<Eigen::Matrix<double, 2, 6>, 3>& dC) const;
  /// SQP model: proxy point k against plane o at ctx. Returns the gap g (m); Pv = ∂ẋ/∂v =
  /// [I X_v] (3 × 6: ẋ = Pv v, the generalised force of a point force f is Pvᵀ f, eq. rbMf,
  /// and for a plane ∂g/∂q = nᵀ Pv) and dPv[j] = ∂Pv/∂θ_j (1/rad).
  double point_jacobian(const TermContext& ctx, int k, int o, Eigen::Matrix<double, 3, 6>& Pv,
                        std::array<Eigen::Matrix<double, 3, 6>, 3>& dPv) const;
  const RigidBody& body() const { return *body_; }
  const std::vector<std::shared_ptr<const Obstacle>>& obstacles() const { return obstacles_; }
  const ContactSettings& settings() const { return settings_; }
  int num_points() const { return static_cast<int>(proxy_.centers_B.size()); }
  int num_obstacles() const { return static_cast<int>(obstacles_.size()); }
  const RigidProxy& proxy() const { return proxy_; }
  /// Stencil of the body's 6 DOFs (rigid/rigid_slip.h adds to it).
  int stencil() const { return stencil_; }

 private:
  const RigidBody* body_;
  RigidProxy proxy_;
  std::vector<std::shared_ptr<const Obstacle>> obstacles_;
  ContactSettings settings_;
  int stencil_ = -1;
};

}  // namespace addsim
