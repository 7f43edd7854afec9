#include "addsim/fem/rotation_vector.h"

#include <cmath>

namespace addsim {

namespace {
// Cross-product matrix [a]× (internal: rigid/so3.h exports addsim::skew, and both modules link into one program).
Mat3 skew(const Vec3& a) {
  Mat3 S;
  S << 0.0, -a[2], a[1], a[2], 0.0, -a[0], -a[1], a[0], 0.0;
  return S;
}
}  // namespace

void rotation_and_jacobian(const Vec3& theta, Mat3& R, Mat3& J_left) {
  const double t2 = theta.squaredNorm();
  const double t = std::sqrt(t2);
  double a, b, c;  // sin t / t, (1 − cos t) / t², (t − sin t) / t³
  // Series switch point: see the header for the error budget on both sides.
  if (t < 0.2) {
    const double t4 = t2 * t2, t6 = t4 * t2, t8 = t4 * t4;
    a = 1.0 - t2 / 6.0 + t4 / 120.0 - t6 / 5040.0 + t8 / 362880.0;
    b = 0.5 - t2 / 24.0 + t4 / 720.0 - t6 / 40320.0 + t8 / 3628800.0;
    c = 1.0 / 6.0 - t2 / 120.0 + t4 / 5040.0 - t6 / 362880.0 + t8 / 39916800.0;
  } else {
    a = std::sin(t) / t;
    b = (1.0 - std::cos(t)) / t2;
    c = (t - std::sin(t)) / (t2 * t);
  }
  const Mat3 K = skew(theta);
  const Mat3 K2 = K * K;
  R = Mat3::Identity() + a * K + b * K2;
  J_left = Mat3::Identity() + b * K + c * K2;
}

}  // namespace addsim
