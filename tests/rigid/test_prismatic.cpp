// Prismatic joints and slide limits (RigidJoint::kPrismatic, kSlideLimit): the derivative
// harness between two bodies and against the world, with and without a per-step drive,
// limits above, below and inside; a free slider under gravity falls like a free body along
// its axis and keeps its orientation.
#include <cmath>
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
using K = RigidJoint::Kind;

TEST(Prismatic, DerivativesForSlidersDrivesAndLimits) {
  std::mt19937 rng(23);
  std::normal_distribution<double> nd;
  auto rnd3 = [&](double sc) { return Vec3(sc * nd(rng), sc * nd(rng), sc * nd(rng)); };
  const int steps = 3;
  // Limits relative to the slide σ at the sampled state: exceeded (+1: σ above the upper
  // limit, −1: below the lower one, the other side open or closed) or inside (0).
  struct Case {
    K kind;
    bool world;
    bool drive;
    int side = 0;
    bool both = false;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {{K::kPrismatic, false, false},        {K::kPrismatic, false, true},
                        {K::kPrismatic, true, true},          {K::kPrismatic, true, false},
                        {K::kSlideLimit, false, false, 1, true}, {K::kSlideLimit, false, false, -1, false},
                        {K::kSlideLimit, true, false, 1, false},  {K::kSlideLimit, true, false, -1, true},
                        {K::kSlideLimit, false, false, 0, true}};
  for (const Case& c : cases) {
    RigidScene s;
    s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.01, steps);
    ParameterTable& pt = s.model->params();
    RigidJoint j;
    j.kind = c.kind;
    j.label = "joints.0";
    j.stiffness_param = pt.add("k", "", ParamKind::kCoupling, VecX::Constant(1, 300.0), 1, 1);
    j.axis_stiffness_param = pt.add("ka", "", ParamKind::kCoupling, VecX::Constant(1, 20.0), 1, 1);
    if (c.drive) {
      j.motor_stiffness_param = pt.add("km", "", ParamKind::kCoupling, VecX::Constant(1, 50.0), 1, 1);
      VecX targets(steps + 1);
      for (int i = 0; i <= steps; ++i) targets[i] = 0.1 - 0.07 * i;
      j.target_param = pt.add("targets", "", ParamKind::kControl, targets, steps + 1, 1);
      j.per_step_target = true;
    }
    j.axis_a = rnd3(1.0).normalized();
    j.ref_a = j.axis_a.unitOrthogonal();
    j.point_a = rnd3(0.1);
    s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
    j.body_a = &rigid_body(*s.model, 0);
    if (c.world) {
      j.point_b = rnd3(0.3);
      j.axis_b = rnd3(1.0).normalized();
      j.ref_b = j.axis_b.unitOrthogonal();
    } else {
      s.add_body(RigidShape::box(Vec3(0.1, 0.2, 0.1)), 2.0, {}, {}, Vec3::Zero());
      j.body_b = &rigid_body(*s.model, 1);
      j.point_b = rnd3(0.1);
      j.axis_b = rnd3(1.0).normalized();
      j.ref_b = j.axis_b.unitOrthogonal();
    }
    const int n = 6 * (c.world ? 1 : 2);
    VecX q(n), v(n), a(n);
    for (int k = 0; k < n; ++k) {
      q[k] = 0.5 * nd(rng);
      v[k] = nd(rng);
      a[k] = nd(rng);
    }
    // The slide σ at q, to know whether a limit is active.
    const Mat3 Ra = rotation_from_vector(q.segment<3>(3));
    const Vec3 xa = q.segment<3>(0) + Ra * j.point_a;
    const Vec3 xb = c.world ? j.point_b : Vec3(q.segment<3>(6) + rotation_from_vector(q.segment<3>(9)) * j.point_b);
    const double sigma = (Ra * j.axis_a).dot(xb - xa);
    if (c.side == 1) {
      j.upper = sigma - 0.05;
      j.lower = c.both ? sigma - 1.0 : -inf;
    } else if (c.side == -1) {
      j.lower = sigma + 0.05;
      j.upper = c.both ? sigma + 1.0 : inf;
    } else {
      j.lower = sigma - 0.05;
      j.upper = sigma + 0.05;
    }
    s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{j}));
    s.model->finalize();
    const bool active = c.kind == K::kPrismatic || c.side != 0;
    DerivativeCheckOptions opt;
    opt.expect_dq = opt.expect_dp = active;
    const DerivativeCheckResult res =
        check_term_derivatives(*s.model, s.term("rigid_joints"), q, v, a, s.model->params().defaults(), 2, opt);
    EXPECT_TRUE(res.ok) << "kind " << static_cast<int>(c.kind) << (c.world ? " world" : " two bodies")
                        << (c.drive ? " drive" : "") << " sigma " << sigma << "\n"
                        << res.report;
  }
}

// A box on a vertical slider to the world, released at rest with a small tilt-free offset
// along the axis: it falls with g along the axis (z = z0 − g t²/2 up to the BDF2 error) and
// its orientation and lateral position do not change.
TEST(Prismatic, FreeSliderFallsAlongItsAxis) {
  RigidScene s;
  const int steps = 50;
  const double h = 0.01;
  s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, h, steps);
  ParameterTable& pt = s.model->params();
  s.add_body(RigidShape::box(Vec3(0.1, 0.2, 0.3)), 1.5, {}, {}, Vec3(0, 0, -9.81));
  RigidJoint j;
  j.kind = K::kPrismatic;
  j.label = "slider";
  j.body_a = &rigid_body(*s.model, 0);
  j.stiffness_param = pt.add("k", "", ParamKind::kCoupling, VecX::Constant(1, 1e5), 1, 1);
  j.axis_stiffness_param = pt.add("ka", "", ParamKind::kCoupling, VecX::Constant(1, 1e3), 1, 1);
  j.axis_a = j.axis_b = Vec3::UnitZ();
  j.ref_a = j.ref_b = Vec3::UnitX();
  s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{j}));
  s.model->finalize();
  Simulator sim(*s.model);
  const Trajectory t = sim.run(s.model->params().defaults());
  ASSERT_TRUE(t.completed()) << t.failure;
  const double T = steps * h;
  EXPECT_NEAR(t.q.back()[2], -0.5 * 9.81 * T * T, 2e-3);
  EXPECT_LT(t.q.back().segment<2>(0).norm(), 1e-12);
  EXPECT_LT(t.q.back().segment<3>(3).norm(), 1e-12);
}

}  // namespace
}  // namespace addsim
