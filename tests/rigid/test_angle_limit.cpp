// Hinge angle limits (RigidJoint::Kind::kAngleLimit): the unilateral penalty on
// α = atan2(n·(u × w), u·w) through the derivative harness above, below and inside the
// limits, between two bodies and against the world, its energy against the closed form, and
// a pendulum stopped by its limit.
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include <gtest/gtest.h>

#include "addsim/check/derivative_check.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/rigid/so3.h"
#include "addsim/solver/simulator.h"
#include "rigid_test_scene.h"

namespace addsim {
namespace {

using test::RigidScene;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Body a at a random orientation, body b (or the world frame) rotated from it by `angle`
// about the hinge axis, plus a small misalignment `tilt` (rad) of b's axis.
struct LimitCase {
  RigidScene s;
  VecX q, v, a;
  RigidJoint joint;
};

LimitCase make_case(bool world, double angle, double tilt, std::mt19937& rng) {
  std::normal_distribution<double> nd;
  auto rnd3 = [&](double sc) { return Vec3(sc * nd(rng), sc * nd(rng), sc * nd(rng)); };
  LimitCase c;
  c.s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.01, 3);
  ParameterTable& pt = c.s.model->params();
  const Vec3 axis_a = rnd3(1.0).normalized();
  const Vec3 helper = std::abs(axis_a.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
  const Vec3 ref_a = (helper - helper.dot(axis_a) * axis_a).normalized();
  const Vec3 theta_a = rnd3(0.8);
  const Mat3 Ra = rotation_from_vector(theta_a);
  // World frame of b's reference: a's reference turned by `angle` about a's axis, tilted.
  const Mat3 turn = Eigen::AngleAxisd(angle, axis_a).toRotationMatrix();
  const Mat3 tilt_R = rotation_from_vector(tilt * ref_a.cross(axis_a));
  const Mat3 Rb = Ra * tilt_R * turn;
  c.s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
  RigidJoint& j = c.joint;
  j.kind = RigidJoint::Kind::kAngleLimit;
  j.label = "joints.0";
  j.stiffness_param = pt.add("joints.0.stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 40.0), 1, 1);
  j.axis_a = axis_a;
  j.ref_a = ref_a;
  j.lower = -0.8;
  j.upper = 0.5;
  if (world) {
    j.ref_b = Rb * ref_a;  // a fixed world vector
  } else {
    c.s.add_body(RigidShape::box(Vec3(0.1, 0.2, 0.1)), 2.0, {}, {}, Vec3::Zero());
    j.ref_b = ref_a;  // in b's frame, whose world rotation is Rb
  }
  const int bodies = world ? 1 : 2;
  c.q = VecX::Zero(6 * bodies);
  c.q.segment<3>(0) = rnd3(0.2);
  c.q.segment<3>(3) = theta_a;
  if (!world) {
    c.q.segment<3>(6) = rnd3(0.2);
    const Eigen::AngleAxisd aa(Rb);
    c.q.segment<3>(9) = aa.angle() * aa.axis();
  }
  c.v = VecX::Zero(c.q.size());
  c.a = VecX::Zero(c.q.size());
  for (int k = 0; k < c.q.size(); ++k) {
    c.v[k] = nd(rng);
    c.a[k] = nd(rng);
  }
  return c;
}

TEST(AngleLimit, DerivativesAboveBelowAndInsideTheLimits) {
  std::mt19937 rng(11);
  for (const bool world : {false, true})
    for (const double angle : {0.9, -1.3, 0.1, 2.9})
      for (const double tilt : {0.0, 0.05}) {
        LimitCase c = make_case(world, angle, tilt, rng);
        const auto* b = world ? nullptr : &rigid_body(*c.s.model, 1);
        c.joint.body_a = &rigid_body(*c.s.model, 0);
        c.joint.body_b = b;
        c.s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{c.joint}));
        c.s.model->finalize();
        const bool active = angle > 0.5 || angle < -0.8;
        DerivativeCheckOptions opt;
        opt.expect_dq = opt.expect_dp = active;
        const VecX p = c.s.model->params().defaults();
        const DerivativeCheckResult res =
            check_term_derivatives(*c.s.model, c.s.term("rigid_joints"), c.q, c.v, c.a, p, 1, opt);
        EXPECT_TRUE(res.ok) << (world ? "world" : "two bodies") << " angle " << angle << " tilt " << tilt << "\n"
                            << res.report;
        // Aligned axes: E = (k/2) g² exactly, g the distance beyond the limit.
        if (tilt == 0.0) {
          TermContext ctx{c.q, c.v, c.a, p, 1, c.s.model->scheme()};
          const double g = angle > 0.5 ? angle - 0.5 : angle < -0.8 ? -0.8 - angle : 0.0;
          EXPECT_NEAR(c.s.term("rigid_joints").energy(ctx), 20.0 * g * g, 1e-12) << angle;
        }
      }
}

TEST(AngleLimit, BadLimitsAreInputErrors) {
  RigidScene s;
  s.model->params().add("k", "", ParamKind::kCoupling, VecX::Constant(1, 1.0), 1, 1);
  s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
  RigidJoint j;
  j.kind = RigidJoint::Kind::kAngleLimit;
  j.body_a = &rigid_body(*s.model, 0);
  j.stiffness_param = 0;
  for (const auto& [lo, hi] : {std::pair{0.5, 0.2}, std::pair{-4.0, 0.0}, std::pair{0.0, 3.5},
                               std::pair{-kInf, kInf}}) {
    j.lower = lo;
    j.upper = hi;
    EXPECT_THROW(RigidJointTerm({j}), InputError) << lo << " " << hi;
  }
  j.lower = -kInf;
  j.upper = 0.3;
  EXPECT_NO_THROW(RigidJointTerm({j}));
}

// A rod hinged to the world at its end about y, released horizontally under gravity, with
// an upper limit of 0.6 rad: it falls (overdamped by 2 N m s of hinge damping, I/c = 0.04 s)
// past 0.6 only by the penalty's static deflection and rests there.
TEST(AngleLimit, PendulumStopsAtItsLimit) {
  RigidScene s;
  const int steps = 300;
  s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.005, steps);
  ParameterTable& pt = s.model->params();
  const Vec3 g(0, 0, -9.81);
  RigidInit init;
  init.position = Vec3(0.25, 0, 0);
  s.add_body(RigidShape::box(Vec3(0.5, 0.04, 0.04)), 1.0, init, {}, g);
  const RigidBody* rod = &rigid_body(*s.model, 0);
  std::vector<RigidJoint> joints(3);
  for (RigidJoint& j : joints) {
    j.body_a = rod;
    j.point_a = Vec3(-0.25, 0, 0);
    j.point_b = Vec3::Zero();
    j.axis_a = -Vec3::UnitY();  // a = rod, b = world: axis flipped keeps α the rod's angle about +y
    j.axis_b = -Vec3::UnitY();
    j.ref_a = Vec3::UnitX();
    j.ref_b = Vec3::UnitX();
  }
  joints[0].kind = RigidJoint::Kind::kHinge;
  joints[0].stiffness_param = pt.add("k", "", ParamKind::kCoupling, VecX::Constant(1, 1e5), 1, 1);
  joints[0].axis_stiffness_param = pt.add("ka", "", ParamKind::kCoupling, VecX::Constant(1, 1e3), 1, 1);
  joints[1].kind = RigidJoint::Kind::kAngleLimit;
  joints[1].stiffness_param = pt.add("kl", "", ParamKind::kCoupling, VecX::Constant(1, 1e3), 1, 1);
  joints[1].upper = 0.6;
  joints[2].kind = RigidJoint::Kind::kMotorDamping;
  joints[2].damping_param = pt.add("kd", "", ParamKind::kCoupling, VecX::Constant(1, 2.0), 1, 1);
  s.model->add_term(std::make_unique<RigidJointTerm>(joints));
  s.model->finalize();
  Simulator sim(*s.model);
  const Trajectory t = sim.run(s.model->params().defaults());
  ASSERT_TRUE(t.completed()) << t.failure;
  // Rotation about +y by α takes the rod's +x end down (z = −0.5 sin α).
  double max_angle = 0.0;
  for (const VecX& q : t.q) {
    const Vec3 x = rod->rotation(q) * Vec3::UnitX();
    max_angle = std::max(max_angle, std::atan2(-x.z(), x.x()));
  }
  const Vec3 x_end = rod->rotation(t.q.back()) * Vec3::UnitX();
  const double final_angle = std::atan2(-x_end.z(), x_end.x());
  // Static overshoot: m g (L/2) cos α / k_l = 9.81 · 0.25 · 0.83 / 1e3 ≈ 2e-3 rad.
  EXPECT_LT(max_angle, 0.61);
  EXPECT_GT(max_angle, 0.6);
  EXPECT_NEAR(final_angle, 0.6 + 9.81 * 0.25 * std::cos(0.6) / 1e3, 5e-3);
}

}  // namespace
}  // namespace addsim
