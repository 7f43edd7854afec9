#pragma once
/// Obstacles as signed distance functions g(x) (m, negative inside), with outward normal
/// n = (∂g/∂x)ᵀ and its derivative H = ∂²g/∂x² (paper §4, eq. gap). Every contact model
/// reads obstacles only through this interface, so later shapes reuse all of them.

#include <string>

#include "addsim/core/types.h"

namespace addsim {

class Obstacle {
 public:
  virtual ~Obstacle() = default;
  /// Signed distance g(x) (m); writes n = ∂g/∂x (unit, 3) and H = ∂n/∂x (3 × 3, 1/m).
  virtual double gap(const Vec3& x, Vec3& n, Mat3& H) const = 0;
  const std::string& name() const { return name_; }
  /// Index in p of this obstacle's friction coefficient c_f.
  int friction_param() const { return friction_param_; }

 protected:
  Obstacle(std::string name, int friction_param) : name_(std::move(name)), friction_param_(friction_param) {}

 private:
  std::string name_;
  int friction_param_;
};

/// Half-space bounded by the plane through `point` with unit outward `normal`:
/// g(x) = n · (x − point).
class PlaneObstacle final : public Obstacle {
 public:
  /// normal: any non-zero 3-vector (normalised here).
  PlaneObstacle(std::string name, int friction_param, const Vec3& point, const Vec3& normal);
  double gap(const Vec3& x, Vec3& n, Mat3& H) const override;
  /// g(x) alone, the same operations as gap(x, n, H) (so the same number): the contact
  /// terms test separation with it before forming a force record.
  double gap(const Vec3& x) const { return normal_.dot(x - point_); }
  const Vec3& normal() const { return normal_; }
  const Vec3& point() const { return point_; }

 private:
  Vec3 point_;
  Vec3 normal_;
};

}  // namespace addsim
