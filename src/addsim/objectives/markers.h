#pragma once
/// Markers: material points of a body whose world position is a function of q, used by
/// marker-trajectory, feature-point and pose objectives. A marker is either embedded with
/// fixed weights in up to four 3-DOF points (a particle, or a tet of an FEM body with
/// barycentric weights: x = Σ_a w_a x_a) or fixed in a rigid body's frame
/// (x = p_WB + R(θ) x̂_B, ∂x/∂θ = −[R x̂_B]× J(θ), rigid/so3.h).

#include <array>
#include <memory>
#include <vector>

#include "addsim/core/types.h"
#include "addsim/model/model.h"

namespace addsim {

struct Marker {
  int body = -1;                             ///< body index in the model
  int count = 0;                             ///< embedded: number of points used (1 … 4); 0 for rigid
  std::array<DofIndex, 4> dofs{};            ///< embedded: global DOF of each point's x coordinate
  std::array<double, 4> weights{};           ///< embedded: weights (sum to 1)
  DofIndex rigid_dof = -1;                   ///< rigid: DOF of p_WB.x (θ follows at +3)
  Vec3 local = Vec3::Zero();                 ///< rigid: x̂_B, m (body frame, from the centre of mass)

  /// World position (m) at q (|q|).
  Vec3 position(const VecX& q) const;
  /// dphi_dq (|q|) += (∂x/∂q)ᵀ g for g (3 × 1).
  void vjp(const VecX& q, const Vec3& g, VecX& dphi_dq) const;
  /// The directional derivative (∂x/∂q) dq (3 × 1) for dq (|q|).
  Vec3 jvp(const VecX& q, const VecX& dq) const;
};

/// The marker of `body` at world point x (m) in configuration q (|q|): FEM bodies embed
/// it in the tet containing x (or, outside the mesh, the tet whose smallest barycentric
/// coordinate is largest; weights then extrapolate), rigid bodies fix it in the body
/// frame, particle bodies use the nearest particle. Throws InputError for a bad body index.
Marker embed_marker(const Model& model, int body, const VecX& q, const Vec3& x);

/// embed_marker for many points of one configuration: the first FEM point of a body builds a
/// uniform grid over that body's tet bounding boxes at q (once per body), and each point then
/// solves for barycentric coordinates only in the tets near it. The result is the Marker
/// embed_marker gives, bit for bit, inside and outside the mesh: the tets of the point's cell
/// give a bound on the best smallest coordinate, only tets farther than that bound allows are
/// skipped (markers.cpp, TetGrid), and the rest are tried in index order with the scan's strict
/// comparison. A point so far outside that every tet could reach the bound is left to the scan.
/// Holds references to model and q: both must outlive it.
class MarkerEmbedder {
 public:
  MarkerEmbedder(const Model& model, const VecX& q);
  ~MarkerEmbedder();
  MarkerEmbedder(const MarkerEmbedder&) = delete;
  MarkerEmbedder& operator=(const MarkerEmbedder&) = delete;

  /// The marker of `body` at world point x (m), as embed_marker(model, body, q, x).
  Marker embed(int body, const Vec3& x);

 private:
  struct TetGrid;
  const TetGrid& grid(int body);

  const Model& model_;
  const VecX& q_;
  std::vector<std::unique_ptr<TetGrid>> grids_;  // per body index, built on first use
};

/// Marker at node/particle k of a particle or FEM body. Throws InputError if out of range
/// or the body is rigid.
Marker node_marker(const Model& model, int body, int k);

/// Marker in tet `tet` of an FEM body with barycentric weights w (4, sum 1). Throws
/// InputError for a bad tet or weights that do not sum to 1 (within 1e-9).
Marker tet_marker(const Model& model, int body, int tet, const std::array<double, 4>& w);

/// Marker fixed in a rigid body's frame at x̂_B (m, from the centre of mass).
Marker rigid_marker(const Model& model, int body, const Vec3& local);

}  // namespace addsim
