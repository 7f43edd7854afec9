#include "addsim/terms/obstacle.h"

#include "addsim/core/error.h"

namespace addsim {

PlaneObstacle::PlaneObstacle(std::string name, int friction_param, const Vec3& point, const Vec3& normal)
    : Obstacle(std::move(name), friction_param), point_(point), normal_(normal.normalized()) {
  ADDSIM_CHECK(normal.norm() > 0.0, "plane normal must be non-zero");
}

double PlaneObstacle::gap(const Vec3& x, Vec3& n, Mat3& H) const {
  n = normal_;
  H.setZero();
  return gap(x);
}

}  // namespace addsim
