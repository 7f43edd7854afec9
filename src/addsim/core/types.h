#pragma once
/// Basic numeric types shared by every addsim module (see docs/notation.md).

#include <Eigen/Core>

namespace addsim {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
using VecX = Eigen::VectorXd;
using MatX = Eigen::MatrixXd;

/// Global degree-of-freedom index into q (and v, a, r).
using DofIndex = int;

}  // namespace addsim
