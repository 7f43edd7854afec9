// Rigid couplings (paper §5.3): zero-length springs, hinges and motor damping between two
// rigid bodies or a body and the world, through the derivative harness at several angles.
#include <array>
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

TEST(RigidJointTerm, DerivativesForAllKindsAndAngles) {
  std::mt19937 rng(21);
  std::normal_distribution<double> nd;
  auto rnd3 = [&](double s) { return Vec3(s * nd(rng), s * nd(rng), s * nd(rng)); };
  for (RigidJoint::Kind kind : {RigidJoint::Kind::kZeroLength, RigidJoint::Kind::kHinge, RigidJoint::Kind::kMotorDamping}) {
    for (bool to_world : {false, true}) {
      for (double t : {0.0, 1e-6, 1.1, std::numbers::pi - 1e-4}) {
        RigidScene s;
        ParameterTable& pt = s.model->params();
        RigidJoint j;
        j.kind = kind;
        j.label = "couplings.0";
        j.stiffness_param = pt.add("couplings.0.stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 300.0), 1, 1);
        j.axis_stiffness_param = pt.add("couplings.0.axis_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 20.0), 1, 1);
        j.damping_param = pt.add("couplings.0.damping", "", ParamKind::kCoupling, VecX::Constant(1, 0.7), 1, 1);
        s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
        if (!to_world) s.add_body(RigidShape::box(Vec3(0.1, 0.2, 0.1)), 2.0, {}, {}, Vec3::Zero());
        j.body_a = &rigid_body(*s.model, 0);
        j.body_b = to_world ? nullptr : &rigid_body(*s.model, 1);
        j.point_a = Vec3(0.15, 0.05, -0.02);
        j.point_b = Vec3(-0.05, 0.1, 0.03);
        j.axis_a = Vec3(0.0, 0.6, 0.8);
        j.axis_b = Vec3(1.0, 0.0, 0.0);
        s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{j}));
        s.model->finalize();
        const int n = s.model->num_dofs();
        VecX q(n), v(n), a = VecX::Zero(n);
        for (int b = 0; b < n / 6; ++b) {
          const Vec3 dir = rnd3(1.0).normalized();
          q.segment<6>(6 * b) << rnd3(0.1), t * dir;
          v.segment<6>(6 * b) << rnd3(1.0), rnd3(2.0);
        }
        DerivativeCheckOptions opt;
        opt.expect_dq = opt.expect_dp = true;
        opt.expect_dv = kind == RigidJoint::Kind::kMotorDamping;
        if (kind == RigidJoint::Kind::kMotorDamping && to_world && t < 1e-3) {
          // r_θ = k_md Jᵀ J θ̇ has ∂r/∂θ = O(|θ|) at θ → 0 (exactly 0 at θ = 0), so only
          // round-off (~1e-10 of ‖r‖ ≈ 1) is left to compare: judge it against ‖r‖.
          opt.expect_dq = false;
          opt.abs_floor = 1e-3;
        }
        const DerivativeCheckResult res =
            check_term_derivatives(*s.model, s.term("rigid_joints"), q, v, a, pt.defaults(), 1, opt);
        EXPECT_TRUE(res.ok) << "kind " << static_cast<int>(kind) << (to_world ? " world" : " two bodies")
                            << " theta = " << t << "\n"
                            << res.report;
      }
    }
  }
}

// The term builds one frame per body and evaluation, shared by every joint on that body:
// several joints on shared bodies in one term must give what one term per joint gives
// (each building its own frames), and pass the derivative harness together.
TEST(RigidJointTerm, JointsSharingBodiesMatchOneTermPerJoint) {
  using K = RigidJoint::Kind;
  const std::vector<std::pair<K, std::array<int, 2>>> layout = {
      {K::kHinge, {0, 1}}, {K::kMotorDamping, {0, 1}}, {K::kZeroLength, {1, 2}}, {K::kMotorDamping, {2, -1}},
      {K::kHinge, {2, -1}}, {K::kDistance, {0, 2}}};
  std::mt19937 rng(5);
  std::normal_distribution<double> nd;
  auto rnd3 = [&](double s) { return Vec3(s * nd(rng), s * nd(rng), s * nd(rng)); };
  auto build = [&](RigidScene& s, bool one_term) {
    ParameterTable& pt = s.model->params();
    for (int b = 0; b < 3; ++b) s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1 + 0.05 * b)), 1.0 + b, {}, {}, Vec3::Zero());
    std::vector<RigidJoint> joints;
    for (size_t i = 0; i < layout.size(); ++i) {
      const std::string label = "couplings." + std::to_string(i);
      RigidJoint j;
      j.kind = layout[i].first;
      j.label = label;
      j.stiffness_param = pt.add(label + ".stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 300.0 + i), 1, 1);
      j.axis_stiffness_param = pt.add(label + ".axis_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 20.0), 1, 1);
      j.damping_param = pt.add(label + ".damping", "", ParamKind::kCoupling, VecX::Constant(1, 0.7), 1, 1);
      j.body_a = &rigid_body(*s.model, layout[i].second[0]);
      j.body_b = layout[i].second[1] >= 0 ? &rigid_body(*s.model, layout[i].second[1]) : nullptr;
      j.point_a = Vec3(0.15, 0.05, -0.02);
      j.point_b = Vec3(-0.05, 0.1, 0.03);
      j.axis_a = Vec3(0.0, 0.6, 0.8);
      j.axis_b = Vec3(1.0, 0.0, 0.0);
      j.rest_length = 0.2;
      joints.push_back(j);
    }
    if (one_term) {
      s.model->add_term(std::make_unique<RigidJointTerm>(joints));
    } else {
      for (const RigidJoint& j : joints) s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{j}));
    }
    s.model->finalize();
  };
  RigidScene shared, separate;
  build(shared, true);
  build(separate, false);
  const int n = shared.model->num_dofs();
  VecX q(n), v(n), a = VecX::Zero(n);
  for (int b = 0; b < n / 6; ++b) {
    q.segment<6>(6 * b) << rnd3(0.1), rnd3(0.8);
    v.segment<6>(6 * b) << rnd3(1.0), rnd3(2.0);
  }
  const VecX p = shared.model->params().defaults();
  auto assemble = [&](const RigidScene& s, EvalMode mode, double& energy) {
    const TermContext ctx{q, v, a, p, 1, s.model->scheme()};
    Assembly out(&s.model->pattern(), &s.model->stencils());
    out.reset(mode);
    energy = 0.0;
    for (const auto& t : s.model->terms())
      if (t->name() == "rigid_joints") {
        t->evaluate(ctx, out);
        energy += t->energy(ctx);
      }
    return out;
  };
  for (EvalMode mode : {EvalMode::kResidual, EvalMode::kResidualAndJacobians}) {
    double e1, e2;
    const Assembly x = assemble(shared, mode, e1), y = assemble(separate, mode, e2);
    ASSERT_EQ(x.kq.size(), y.kq.size());  // same stencils in the same order: same pattern
    EXPECT_GT(x.r.norm(), 1.0);           // non-vacuous: the joints are loaded
    EXPECT_LE((x.r - y.r).norm(), 1e-13 * x.r.norm());
    EXPECT_NEAR(e1, e2, 1e-13 * std::abs(e1));
    if (mode == EvalMode::kResidualAndJacobians) {
      EXPECT_GT(x.kv.norm(), 0.0);
      EXPECT_LE((x.kq - y.kq).norm(), 1e-13 * x.kq.norm());
      EXPECT_LE((x.kv - y.kv).norm(), 1e-13 * x.kv.norm());
    }
  }
  DerivativeCheckOptions opt;
  opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
  const DerivativeCheckResult res =
      check_term_derivatives(*shared.model, shared.term("rigid_joints"), q, v, a, p, 1, opt);
  EXPECT_TRUE(res.ok) << res.report;
}

TEST(RigidJointTerm, AlignedHingeHasNoForce) {
  RigidScene s;
  ParameterTable& pt = s.model->params();
  RigidJoint j;
  j.kind = RigidJoint::Kind::kHinge;
  j.stiffness_param = pt.add("couplings.0.stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 300.0), 1, 1);
  j.axis_stiffness_param = pt.add("couplings.0.axis_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 20.0), 1, 1);
  s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
  s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, {}, {}, Vec3::Zero());
  j.body_a = &rigid_body(*s.model, 0);
  j.body_b = &rigid_body(*s.model, 1);
  // Body b is body a rotated by 0.8 rad about a's hinge axis through the shared anchor.
  const Vec3 axis = Vec3(0, 0.6, 0.8), anchor_a(0.15, 0, 0), theta_a(0.3, -0.2, 0.5);
  const Mat3 Ra = rotation_from_vector(theta_a);
  const Mat3 Rb = Eigen::AngleAxisd(0.8, Ra * axis).toRotationMatrix() * Ra;
  const Eigen::AngleAxisd aa(Rb);
  j.point_a = anchor_a;
  j.point_b = Vec3(-0.1, 0.05, 0.0);
  j.axis_a = axis;
  j.axis_b = Rb.transpose() * Ra * axis;
  s.model->add_term(std::make_unique<RigidJointTerm>(std::vector<RigidJoint>{j}));
  s.model->finalize();
  VecX q(12), z = VecX::Zero(12);
  const Vec3 pa(0.2, 0.1, 0.3);
  q << pa, theta_a, pa + Ra * anchor_a - Rb * j.point_b, aa.angle() * aa.axis();
  Assembly out(&s.model->pattern(), &s.model->stencils());
  out.reset(EvalMode::kResidual);
  s.term("rigid_joints").evaluate(TermContext{q, z, z, pt.defaults(), 1, s.model->scheme()}, out);
  EXPECT_LT(out.r.norm(), 1e-12);
}

}  // namespace
}  // namespace addsim
