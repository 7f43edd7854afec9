#pragma once
/// An anchor is a point that couplings (springs, joints) attach to: a particle, a point
/// embedded in a tet of an FEM body (x = Σ_k b_k x_k over the tet's 4 nodes, barycentric
/// coordinates b fixed at scene build), a handle (kinematic point driven by per-step
/// controls) or a fixed world point.

#include <array>
#include <string>

#include "addsim/core/types.h"

namespace addsim {

struct Anchor {
  enum class Kind { kParticle, kHandle, kWorld, kEmbedded };
  Kind kind = Kind::kWorld;
  int dof = -1;              ///< kParticle: global DOF of the x coordinate
  int handle = -1;           ///< kHandle: index into Model::handles()
  Vec3 world = Vec3::Zero(); ///< kWorld: fixed position, m
  std::string label;         ///< for error messages ("bodies.0.points.3")
  std::array<int, 4> nodes{-1, -1, -1, -1};  ///< kEmbedded: global DOF (x) of each tet node
  std::array<double, 4> weights{};           ///< kEmbedded: barycentric coordinates b_k (Σ b_k = 1)

  static Anchor particle(int dof, std::string label) { return {Kind::kParticle, dof, -1, Vec3::Zero(), std::move(label)}; }
  static Anchor handle_point(int handle, std::string label) { return {Kind::kHandle, -1, handle, Vec3::Zero(), std::move(label)}; }
  static Anchor world_point(const Vec3& x, std::string label) { return {Kind::kWorld, -1, -1, x, std::move(label)}; }
  static Anchor embedded(const std::array<int, 4>& nodes, const std::array<double, 4>& weights, std::string label) {
    return {Kind::kEmbedded, -1, -1, Vec3::Zero(), std::move(label), nodes, weights};
  }

  /// Number of DOF points the anchor moves with (1 particle, 4 tet nodes, else 0).
  int num_nodes() const { return kind == Kind::kParticle ? 1 : kind == Kind::kEmbedded ? 4 : 0; }
  /// Global DOF (x) of node m < num_nodes() and its weight in x = Σ_m w_m x_m.
  int node_dof(int m) const { return kind == Kind::kParticle ? dof : nodes[m]; }
  double node_weight(int m) const { return kind == Kind::kParticle ? 1.0 : weights[m]; }
};

}  // namespace addsim
