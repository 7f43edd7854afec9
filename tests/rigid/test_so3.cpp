// Exponential map, its world-frame Jacobian J(θ) and the derivatives of J against
// central differences, in every regime of the series/closed-form switch.
#include <cmath>
#include <numbers>
#include <random>

#include <Eigen/Geometry>
#include <gtest/gtest.h>

#include "addsim/rigid/body_frame_cache.h"
#include "addsim/rigid/so3.h"

namespace addsim {
namespace {

// Rotation vectors covering θ = 0, the small-angle series (|θ| ~ 1e-6, 0.3), both sides
// of the series switch at |θ| = 1, generic angles and |θ| near π.
std::vector<Vec3> sample_thetas() {
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  std::vector<Vec3> out{Vec3::Zero()};
  for (double t : {1e-6, 0.3, 1.0 - 1e-9, 1.0 + 1e-9, 1.7, 2.6, std::numbers::pi - 1e-3, 3.5}) {
    for (int rep = 0; rep < 2; ++rep) {
      Vec3 d(nd(rng), nd(rng), nd(rng));
      out.push_back(t * d.normalized());
    }
  }
  return out;
}

TEST(So3, RotationMatchesAngleAxis) {
  for (const Vec3& th : sample_thetas()) {
    const Mat3 R = rotation_from_vector(th);
    const double t = th.norm();
    const Mat3 ref = t > 0 ? Eigen::AngleAxisd(t, th / t).toRotationMatrix() : Mat3::Identity();
    EXPECT_LT((R - ref).norm(), 1e-14) << th.transpose();
  }
}

TEST(So3, CoefficientsContinuousAtSeriesSwitch) {
  const ExpCoefficients lo = exp_coefficients(1.0 - 1e-13), hi = exp_coefficients(1.0);
  for (auto [x, y] : {std::pair{lo.a, hi.a}, {lo.b, hi.b}, {lo.c, hi.c}, {lo.A1, hi.A1}, {lo.A2, hi.A2},
                      {lo.B1, hi.B1}, {lo.B2, hi.B2}})
    EXPECT_NEAR(x, y, 1e-12 * std::abs(y));
  // Values at 0: a = 1/2, b = 1/6, A1 = −1/12, B1 = −1/60, A2 = 1/90, B2 = 1/630.
  const ExpCoefficients z = exp_coefficients(0.0);
  EXPECT_DOUBLE_EQ(z.A1, -1.0 / 12.0);
  EXPECT_DOUBLE_EQ(z.B1, -1.0 / 60.0);
  EXPECT_NEAR(z.A2, 1.0 / 90.0, 1e-17);
  EXPECT_NEAR(z.B2, 1.0 / 630.0, 1e-17);
}

TEST(So3, JacobianMapsRateToWorldAngularVelocity) {
  // Ṙ Rᵀ = [J θ̇]×, checked column by column with central differences of R.
  for (const Vec3& th : sample_thetas()) {
    ExpJacobian jac;
    exp_jacobian(th, 0, jac);
    const Mat3 R = rotation_from_vector(th);
    const double eps = 1e-6;
    for (int k = 0; k < 3; ++k) {
      const Mat3 dR = (rotation_from_vector(th + eps * Vec3::Unit(k)) - rotation_from_vector(th - eps * Vec3::Unit(k))) /
                      (2 * eps);
      const Mat3 W = dR * R.transpose();
      const Vec3 w(W(2, 1), W(0, 2), W(1, 0));
      EXPECT_LT((w - jac.J.col(k)).norm(), 1e-9) << "theta = " << th.transpose() << " k = " << k;
    }
  }
}

TEST(So3, JacobianDerivativesMatchFiniteDifferences) {
  for (const Vec3& th : sample_thetas()) {
    ExpJacobian jac;
    exp_jacobian(th, 2, jac);
    const double eps = 1e-6;
    double max_dd = 0.0;
    for (int k = 0; k < 3; ++k) {
      ExpJacobian jp, jm;
      exp_jacobian(th + eps * Vec3::Unit(k), 1, jp);
      exp_jacobian(th - eps * Vec3::Unit(k), 1, jm);
      const Mat3 dJ_fd = (jp.J - jm.J) / (2 * eps);
      EXPECT_LT((dJ_fd - jac.dJ[k]).norm(), 1e-9) << "theta = " << th.transpose();
      for (int j = 0; j < 3; ++j) {
        const Mat3 ddJ_fd = (jp.dJ[j] - jm.dJ[j]) / (2 * eps);
        EXPECT_LT((ddJ_fd - jac.ddJ[k][j]).norm(), 1e-8) << "theta = " << th.transpose() << " k,j = " << k << j;
        max_dd = std::max(max_dd, jac.ddJ[k][j].norm());
      }
    }
    EXPECT_GT(max_dd, 1e-3);  // non-vacuous: the second derivatives are not all zero
  }
}

TEST(So3, SharedCoefficientsGiveTheSameRotationAndJacobians) {
  // exp_rotation_and_jacobian() (one coefficient evaluation, used once per body and term
  // evaluation) must reproduce rotation_from_vector() and exp_jacobian() exactly, and a
  // lower order (which skips the second-derivative coefficients) the same J and ∂J/∂θ.
  for (const Vec3& th : sample_thetas()) {
    ExpJacobian j2;
    exp_jacobian(th, 2, j2);
    for (int order = 0; order <= 2; ++order) {
      Mat3 R;
      ExpJacobian shared, alone;
      exp_rotation_and_jacobian(th, order, R, shared);
      exp_jacobian(th, order, alone);
      EXPECT_EQ(R, rotation_from_vector(th)) << th.transpose();
      EXPECT_EQ(shared.J, alone.J) << th.transpose();
      EXPECT_EQ(alone.J, j2.J) << th.transpose();
      for (int k = 0; order >= 1 && k < 3; ++k) {
        EXPECT_EQ(shared.dJ[k], alone.dJ[k]) << th.transpose();
        EXPECT_EQ(alone.dJ[k], j2.dJ[k]) << th.transpose();
        for (int j = 0; order == 2 && j < 3; ++j) EXPECT_EQ(shared.ddJ[k][j], j2.ddJ[k][j]) << th.transpose();
      }
    }
  }
}

TEST(So3, SecondDerivativeContractionMatchesTheFullTensor) {
  // exp_jacobian_and_contraction()'s closed form against Σ_k v_k (∂²J/∂θ_k∂θ_j)ᵀ v from the
  // finite-difference-checked ∂²J/∂θ² (above), and the same J and ∂J/∂θ as exp_jacobian().
  std::mt19937 rng(11);
  std::normal_distribution<double> nd;
  for (const Vec3& th : sample_thetas()) {
    const Vec3 v(nd(rng), nd(rng), nd(rng));
    ExpJacobian full, part;
    exp_jacobian(th, 2, full);
    Mat3 K;
    exp_jacobian_and_contraction(th, v, part, K);
    EXPECT_EQ(part.J, full.J) << th.transpose();
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(part.dJ[j], full.dJ[j]) << th.transpose();
      Vec3 ref = Vec3::Zero();
      for (int k = 0; k < 3; ++k) ref += v[k] * (full.ddJ[k][j].transpose() * v);
      EXPECT_LT((K.col(j) - ref).norm(), 1e-13 * (1.0 + ref.norm())) << th.transpose() << " j = " << j;
    }
  }
}

TEST(So3, RotationFrameIsTheSeparateFunctionsBitForBit) {
  // rotation_frame() (what the per-thread body frame cache keeps) must give the numbers the
  // separate functions give, so that a term reads the same values from the cache as it
  // computed before; exp_contraction() from its coefficients the same K.
  std::mt19937 rng(13);
  std::normal_distribution<double> nd;
  for (const Vec3& th : sample_thetas()) {
    const Vec3 v(nd(rng), nd(rng), nd(rng));
    ExpJacobian j1, part;
    exp_jacobian(th, 1, j1);
    Mat3 K;
    exp_jacobian_and_contraction(th, v, part, K);
    for (int order = 0; order <= 1; ++order) {
      RotationFrame f;
      rotation_frame(th, order, f);
      EXPECT_EQ(f.order, order);
      EXPECT_EQ(f.theta, th);
      EXPECT_EQ(f.R, rotation_from_vector(th)) << th.transpose();
      EXPECT_EQ(f.J, j1.J) << th.transpose();
      if (order == 0) continue;
      for (int k = 0; k < 3; ++k) EXPECT_EQ(f.dJ[k], j1.dJ[k]) << th.transpose();
      EXPECT_EQ(f.JtJ, Mat3(j1.J.transpose() * j1.J)) << th.transpose();
      Mat3 Kf;
      exp_contraction(th, f.e, v, Kf);
      EXPECT_EQ(Kf, K) << th.transpose();
    }
  }
}

TEST(So3, BodyFrameCacheFollowsThetaAndKeepsBodiesOnOneSlotApart) {
  // Bodies at DOF offsets 0 and 6 kBodyFrameSlots share a cache slot.
  const int n = 6 * (kBodyFrameSlots + 1);
  const RigidBody a("a", 0, Mat3::Identity(), 0, 1, 2, 3, 4);
  const RigidBody b("b", 6 * kBodyFrameSlots, Mat3::Identity(), 0, 1, 2, 3, 4);
  VecX q = VecX::Zero(n);
  q.segment<3>(3) = Vec3(0.3, -0.2, 0.1);
  q.segment<3>(b.dof() + 3) = Vec3(-1.2, 0.4, 0.9);
  auto expect_frame = [](const RotationFrame& f, const Vec3& th, int order) {
    RotationFrame ref;
    rotation_frame(th, order, ref);
    EXPECT_EQ(f.theta, th);
    EXPECT_GE(f.order, order);
    EXPECT_EQ(f.R, ref.R);
    EXPECT_EQ(f.J, ref.J);
    for (int k = 0; order >= 1 && k < 3; ++k) EXPECT_EQ(f.dJ[k], ref.dJ[k]);
  };
  const RotationFrame& fa = body_frame(a, q, 0);
  expect_frame(fa, q.segment<3>(3), 0);
  const RotationFrame& fb = body_frame_beside(b, q, 1, fa);
  EXPECT_NE(&fb, &fa);
  expect_frame(fb, q.segment<3>(b.dof() + 3), 1);
  expect_frame(fa, q.segment<3>(3), 0);  // a's entry untouched
  // A higher order, then a new θ, rebuild the entry.
  expect_frame(body_frame(a, q, 1), q.segment<3>(3), 1);
  q[4] += 1e-3;
  expect_frame(body_frame(a, q, 1), q.segment<3>(3), 1);
  // The same bits hit the entry; θ = −0.0 is not θ = 0.0.
  q.segment<3>(3).setZero();
  const RotationFrame& z = body_frame(a, q, 1);
  q[3] = -0.0;
  EXPECT_TRUE(std::signbit(body_frame(a, q, 1).theta[0]));
  EXPECT_EQ(&z, &body_frame(a, q, 1));
}

TEST(So3, ReparametrizationKeepsRotationAndHasExactJacobian) {
  std::mt19937 rng(3);
  std::normal_distribution<double> nd;
  for (double t : {3.3, 4.0, 5.5}) {
    const Vec3 th = t * Vec3(nd(rng), nd(rng), nd(rng)).normalized();
    const Vec3 th2 = reparametrize_rotation(th);
    EXPECT_NEAR(th2.norm(), 2 * std::numbers::pi - t, 1e-14);
    EXPECT_LT((rotation_from_vector(th2) - rotation_from_vector(th)).norm(), 1e-13);
    const Mat3 D = reparametrize_rotation_jacobian(th);
    for (int k = 0; k < 3; ++k) {
      const double eps = 1e-6;
      const Vec3 fd = (reparametrize_rotation(th + eps * Vec3::Unit(k)) - reparametrize_rotation(th - eps * Vec3::Unit(k))) /
                      (2 * eps);
      EXPECT_LT((fd - D.col(k)).norm(), 1e-8);
    }
  }
}

}  // namespace
}  // namespace addsim
