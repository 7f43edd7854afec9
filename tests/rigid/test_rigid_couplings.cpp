// Rigid couplings added for the scene loader (paper §5.3): motors (fixed and per-step target
// angles), distance and unilateral springs, and rigid anchors coupled to particles and
// handles, through the derivative harness at several angles.
#include <numbers>
#include <random>

#include <gtest/gtest.h>

#include "addsim/check/derivative_check.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/rigid/so3.h"
#include "rigid_test_scene.h"

namespace addsim {
namespace {

using test::RigidScene;
using K = RigidJoint::Kind;

enum class Other { kRigid, kWorld, kParticle, kHandle };

TEST(RigidCouplings, DerivativesForMotorsSpringsAndMixedAnchors) {
  std::mt19937 rng(5);
  std::normal_distribution<double> nd;
  auto rnd3 = [&](double s) { return Vec3(s * nd(rng), s * nd(rng), s * nd(rng)); };
  const int steps = 4;
  struct Case {
    K kind;
    Other other;
    bool per_step = false;
  };
  const Case cases[] = {{K::kMotor, Other::kRigid, false},       {K::kMotor, Other::kRigid, true},
                        {K::kMotor, Other::kWorld, true},        {K::kDistance, Other::kRigid},
                        {K::kDistance, Other::kParticle},        {K::kUnilateral, Other::kRigid},
                        {K::kUnilateral, Other::kWorld},         {K::kZeroLength, Other::kParticle},
                        {K::kZeroLength, Other::kHandle},        {K::kDistance, Other::kHandle}};
  for (const Case& c : cases) {
    for (double t : {0.0, 1e-6, 1.1, std::numbers::pi - 1e-4}) {
      RigidScene s;
      s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.01, steps);
      ParameterTable& pt = s.model->params();
      RigidJoint j;
      j.kind = c.kind;
      j.label = "joints.0";
      j.stiffness_param = pt.add("joints.0.stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 300.0), 1, 1);
      j.axis_stiffness_param = pt.add("joints.0.axis_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 20.0), 1, 1);
      j.motor_stiffness_param = pt.add("joints.0.motor_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 7.0), 1, 1);
      VecX angles(steps + 1);
      for (int i = 0; i <= steps; ++i) angles[i] = 0.3 + 0.2 * i;
      j.target_param = c.per_step ? pt.add("joints.0.target_angles", "", ParamKind::kControl, angles, steps + 1, 1)
                                  : pt.add("joints.0.target_angle", "", ParamKind::kControl, VecX::Constant(1, 0.7), 1, 1);
      j.per_step_target = c.per_step;
      s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
      if (c.other == Other::kRigid) s.add_body(RigidShape::box(Vec3(0.1, 0.2, 0.1)), 2.0, {}, {}, Vec3::Zero());
      if (c.other == Other::kParticle) s.model->add_particles("p", {Vec3(0.4, 0.1, 0.2)}, {Vec3::Zero()}, {0.5});
      if (c.other == Other::kHandle) {
        std::vector<Vec3> xs;
        for (int i = 0; i <= steps; ++i) xs.push_back(Vec3(0.5, -0.1 + 0.02 * i, 0.3));
        s.model->add_handle("h", xs);
      }
      j.body_a = &rigid_body(*s.model, 0);
      j.body_b = c.other == Other::kRigid ? &rigid_body(*s.model, 1) : nullptr;
      j.particle_b = c.other == Other::kParticle ? 6 : -1;
      j.handle_b = c.other == Other::kHandle ? 0 : -1;
      j.point_a = Vec3(0.15, 0.05, -0.02);
      j.point_b = Vec3(-0.05, 0.1, 0.03);
      j.axis_a = Vec3(0.0, 0.6, 0.8);
      j.axis_b = Vec3(1.0, 0.0, 0.0);
      j.ref_a = Vec3(1.0, 0.0, 0.0);
      j.ref_b = Vec3(0.0, 0.0, 1.0);
      j.rest_length = 0.05;  // the anchors start ~0.3–0.5 m apart: unilateral springs are taut
      s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{j}, s.model.get()));
      s.model->finalize();
      const int n = s.model->num_dofs();
      VecX q(n), v(n), a = VecX::Zero(n);
      for (int b = 0; b < n / 6; ++b) {
        const Vec3 dir = rnd3(1.0).normalized();
        q.segment<6>(6 * b) << rnd3(0.1), t * dir;
        v.segment<6>(6 * b) << rnd3(1.0), rnd3(2.0);
      }
      if (c.other == Other::kParticle) {
        q.tail<3>() = Vec3(0.4, 0.1, 0.2) + rnd3(0.05);
        v.tail<3>() = rnd3(1.0);
      }
      DerivativeCheckOptions opt;
      opt.expect_dq = opt.expect_dp = true;
      const DerivativeCheckResult res =
          check_term_derivatives(*s.model, s.term("rigid_joints"), q, v, a, pt.defaults(), 2, opt);
      EXPECT_TRUE(res.ok) << "kind " << static_cast<int>(c.kind) << " other " << static_cast<int>(c.other)
                          << " per-step " << c.per_step << " theta = " << t << "\n"
                          << res.report;
    }
  }
}

TEST(RigidCouplings, MotorAtItsTargetHasNoForce) {
  RigidScene s;
  ParameterTable& pt = s.model->params();
  RigidJoint j;
  j.kind = K::kMotor;
  j.stiffness_param = pt.add("joints.0.stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 300.0), 1, 1);
  j.axis_stiffness_param = pt.add("joints.0.axis_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 20.0), 1, 1);
  j.motor_stiffness_param = pt.add("joints.0.motor_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 9.0), 1, 1);
  const double alpha = 0.8;
  j.target_param = pt.add("joints.0.target_angle", "", ParamKind::kControl, VecX::Constant(1, alpha), 1, 1);
  s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
  s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
  j.body_a = &rigid_body(*s.model, 0);
  j.body_b = &rigid_body(*s.model, 1);
  // Body b is a rotated by α about a's hinge axis; the references coincide at α = 0.
  const Vec3 axis = Vec3(0, 0.6, 0.8), theta_a(0.3, -0.2, 0.5);
  const Mat3 Ra = rotation_from_vector(theta_a);
  const Mat3 Rb = Ra * Eigen::AngleAxisd(alpha, axis).toRotationMatrix();
  const Eigen::AngleAxisd aa(Rb);
  j.point_a = Vec3(0.15, 0, 0);
  j.point_b = Vec3(-0.1, 0.05, 0.0);
  j.axis_a = axis;
  j.axis_b = axis;
  j.ref_a = Vec3(1.0, 0.0, 0.0);
  j.ref_b = Vec3(1.0, 0.0, 0.0);
  s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{j}));
  s.model->finalize();
  VecX q(12), z = VecX::Zero(12);
  const Vec3 pa(0.2, 0.1, 0.3);
  q << pa, theta_a, pa + Ra * j.point_a - Rb * j.point_b, aa.angle() * aa.axis();
  Assembly out(&s.model->pattern(), &s.model->stencils());
  out.reset(EvalMode::kResidual);
  s.term("rigid_joints").evaluate(TermContext{q, z, z, pt.defaults(), 1, s.model->scheme()}, out);
  EXPECT_LT(out.r.norm(), 1e-12);
  // Off target the motor pulls: the same pose at α + 0.1 has a restoring torque.
  VecX p = pt.defaults();
  p[j.target_param] += 0.1;
  out.reset(EvalMode::kResidual);
  s.term("rigid_joints").evaluate(TermContext{q, z, z, p, 1, s.model->scheme()}, out);
  EXPECT_GT(out.r.norm(), 1e-3);
}

}  // namespace
}  // namespace addsim
