#pragma once
/// An anchor is a point that couplings (springs, joints) attach to: a particle, a handle
/// (kinematic point driven by per-step controls) or a fixed world point.

#include <string>

#include "addsim/core/types.h"

namespace addsim {

struct Anchor {
  enum class Kind { kParticle, kHandle, kWorld };
  Kind kind = Kind::kWorld;
  int dof = -1;              ///< kParticle: global DOF of the x coordinate
  int handle = -1;           ///< kHandle: index into Model::handles()
  Vec3 world = Vec3::Zero(); ///< kWorld: fixed position, m
  std::string label;         ///< for error messages ("bodies.0.points.3")

  static Anchor particle(int dof, std::string label) { return {Kind::kParticle, dof, -1, Vec3::Zero(), std::move(label)}; }
  static Anchor handle_point(int handle, std::string label) { return {Kind::kHandle, -1, handle, Vec3::Zero(), std::move(label)}; }
  static Anchor world_point(const Vec3& x, std::string label) { return {Kind::kWorld, -1, -1, x, std::move(label)}; }
};

}  // namespace addsim
