// Rigid-body terms (inertia/Coriolis, gravity, proxy contact) and the initial-state map
// through the shared derivative harness, at θ = 0, |θ| ~ 1e-6, generic θ and |θ| near π.
#include <cmath>
#include <numbers>
#include <random>

#include <gtest/gtest.h>

#include "addsim/check/derivative_check.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/rigid/so3.h"
#include "rigid_test_scene.h"

namespace addsim {
namespace {

using test::RigidScene;

Vec3 random_unit(std::mt19937& rng) {
  std::normal_distribution<double> nd;
  return Vec3(nd(rng), nd(rng), nd(rng)).normalized();
}

// θ samples: exactly 0, tiny, moderate, generic, just below and above π.
std::vector<Vec3> thetas() {
  std::mt19937 rng(11);
  std::vector<Vec3> out{Vec3::Zero()};
  for (double t : {1e-6, 0.4, 1.3, std::numbers::pi - 1e-4, 3.3}) out.push_back(t * random_unit(rng));
  return out;
}

VecX six(const Vec3& a, const Vec3& b) {
  VecX x(6);
  x << a, b;
  return x;
}

void expect_ok(const DerivativeCheckResult& res, const std::string& what) {
  EXPECT_TRUE(res.ok) << what << "\n" << res.report;
}

TEST(RigidInertiaTerm, DerivativesAtAllAngles) {
  std::mt19937 rng(5);
  std::normal_distribution<double> nd;
  for (bool custom : {false, true}) {
    RigidScene s;
    Mat3 Ic;
    Ic << 0.02, 0.003, -0.001, 0.003, 0.015, 0.002, -0.001, 0.002, 0.01;
    const RigidShape shape = custom ? RigidShape::custom(Ic, 1e-3) : RigidShape::box(Vec3(0.3, 0.2, 0.1));
    s.add_body(shape, 2.0, {}, {}, Vec3::Zero());
    s.model->finalize();
    const Term& term = s.term("rigid_inertia");
    for (const Vec3& th : thetas()) {
      const VecX q = six(Vec3(0.1, -0.2, 0.3), th);
      const VecX v = six(Vec3(nd(rng), nd(rng), nd(rng)), 3.0 * Vec3(nd(rng), nd(rng), nd(rng)));
      const VecX a = six(Vec3(nd(rng), nd(rng), nd(rng)), 5.0 * Vec3(nd(rng), nd(rng), nd(rng)));
      DerivativeCheckOptions opt;
      opt.expect_dq = opt.expect_dv = opt.expect_da = opt.expect_dp = true;
      expect_ok(check_term_derivatives(*s.model, term, q, v, a, s.model->params().defaults(), 1, opt),
                "theta = " + std::to_string(th.norm()) + (custom ? " custom inertia" : " box"));
    }
  }
}

TEST(RigidInertiaTerm, MatchesWorldFrameEulerEquation) {
  // r_θ = J_Wᵀ (I_W ω̇ + ω × I_W ω) with I_W = R I_B Rᵀ, ω = J θ̇, ω̇ = d/dt(J θ̇) by FD in time.
  RigidScene s;
  s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 2.0, {}, {}, Vec3::Zero());
  s.model->finalize();
  const RigidBody& b = rigid_body(*s.model, 0);
  const Vec3 th(0.7, -1.1, 0.4), thd(1.0, 2.0, -0.5), thdd(0.3, -0.2, 0.9);
  auto omega = [&](double t) {
    ExpJacobian j;
    exp_jacobian(th + t * thd + 0.5 * t * t * thdd, 0, j);
    return Vec3(j.J * (thd + t * thdd));
  };
  const double dt = 1e-6;
  const Vec3 w = omega(0.0), wdot = (omega(dt) - omega(-dt)) / (2 * dt);
  const Mat3 R = rotation_from_vector(th);
  const Mat3 Iw = R * b.inertia_B(s.model->params().defaults()) * R.transpose();
  ExpJacobian j;
  exp_jacobian(th, 0, j);
  const Vec3 expected = j.J.transpose() * (Iw * wdot + w.cross(Iw * w));
  Assembly out(&s.model->pattern(), &s.model->stencils());
  out.reset(EvalMode::kResidual);
  const VecX q = six(Vec3::Zero(), th), v = six(Vec3::Zero(), thd), a = six(Vec3::Zero(), thdd);
  const VecX& p = s.model->params().defaults();
  s.term("rigid_inertia").evaluate(TermContext{q, v, a, p, 1, s.model->scheme()}, out);
  EXPECT_LT((out.r.tail<3>() - expected).norm(), 1e-8 * expected.norm());
  // Kinetic energy agrees with the world-frame formula.
  const double ke = 0.5 * 2.0 * 0.0 + 0.5 * w.dot(Iw * w);
  EXPECT_NEAR(b.kinetic_energy(q, v, p), ke, 1e-14);
}

TEST(RigidGravityTerm, ResidualAndMassDerivative) {
  RigidScene s;
  s.add_body(RigidShape::sphere(0.1), 1.5, {}, {}, Vec3(0, 0, -9.81));
  s.model->finalize();
  const VecX q = six(Vec3(0.1, 0.2, 0.3), Vec3(0.3, 0.2, 0.1)), z = VecX::Zero(6);
  DerivativeCheckOptions opt;
  opt.expect_dp = true;
  expect_ok(check_term_derivatives(*s.model, s.term("rigid_gravity"), q, z, z, s.model->params().defaults(), 1, opt),
            "gravity");
}

// Body position that puts the lowest proxy point (or sphere surface) `depth` below z = 0.
Vec3 place_on_floor(const RigidProxy& proxy, const Vec3& theta, double depth) {
  const Mat3 R = rotation_from_vector(theta);
  double zmin = 1e300;
  for (const Vec3& c : proxy.centers_B) zmin = std::min(zmin, (R * c).z() - proxy.radius);
  return Vec3(0.1, -0.05, -zmin - depth);
}

struct ContactCase {
  std::string label;
  ContactModel model;
  bool kt_param;
  Vec3 velocity;
  Vec3 thetadot;
};

TEST(RigidContactTerm, BoxCornersAllRegimesAndAngles) {
  const std::vector<ContactCase> cases{
      {"linear slip", ContactModel::kLinear, false, Vec3(1.5, -0.7, -0.2), Vec3(0.3, -0.4, 0.8)},
      {"linear stick", ContactModel::kLinear, false, Vec3(0.01, -0.02, 0.01), Vec3(0.02, 0.01, -0.03)},
      {"linear slip, k_t parameter", ContactModel::kLinear, true, Vec3(1.5, -0.7, -0.2), Vec3(0.3, -0.4, 0.8)},
      {"tanh", ContactModel::kTanh, false, Vec3(0.3, -0.2, -0.1), Vec3(0.3, -0.4, 0.8)},
  };
  const RigidProxy proxy = RigidProxy::box_corners(Vec3(0.2, 0.2, 0.2));
  for (const ContactCase& c : cases) {
    RigidScene s;
    s.add_contact(c.model, 1e4, 50.0, c.kt_param ? 80.0 : -1.0);
    s.add_plane(Vec3::Zero(), Vec3::UnitZ(), 0.5);
    s.add_body(RigidShape::box(Vec3(0.2, 0.2, 0.2)), 1.0, {}, proxy, Vec3::Zero());
    s.model->finalize();
    const Term& term = s.term("rigid_contact");
    const auto& contact = static_cast<const RigidContactTerm&>(term);
    for (const Vec3& th : thetas()) {
      const VecX q = six(place_on_floor(proxy, th, 0.012), th);
      const VecX v = six(c.velocity, c.thetadot), a = VecX::Zero(6);
      const VecX& p = s.model->params().defaults();
      // Keep every proxy point well away from the kink at g = 0.
      int touching = 0;
      for (int k = 0; k < contact.num_points(); ++k) {
        const ContactForce f = contact.force(TermContext{q, v, a, p, 1, s.model->scheme()}, k, 0);
        ASSERT_GT(std::abs(f.gap), 1e-4) << c.label;
        touching += f.regime != ContactRegime::kSeparated;
        if (c.label == "linear stick" && f.regime != ContactRegime::kSeparated) {
          EXPECT_EQ(f.regime, ContactRegime::kStick);
        }
        if (c.label == "linear slip" && f.regime != ContactRegime::kSeparated) {
          EXPECT_EQ(f.regime, ContactRegime::kSlip);
        }
      }
      EXPECT_GT(touching, 0);
      DerivativeCheckOptions opt;
      opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
      expect_ok(check_term_derivatives(*s.model, term, q, v, a, p, 1, opt),
                c.label + ", theta = " + std::to_string(th.norm()));
    }
  }
}

TEST(RigidContactTerm, OffsetSphereOnTiltedPlane) {
  const RigidProxy proxy = RigidProxy::sphere(Vec3(0.05, 0.02, -0.03), 0.1);
  for (ContactModel model : {ContactModel::kLinear, ContactModel::kTanh}) {
    RigidScene s;
    s.add_contact(model, 1e4, 30.0);
    s.add_plane(Vec3(0.0, 0.0, -0.05), Vec3(0.2, -0.1, 1.0), 0.4);
    s.add_body(RigidShape::sphere(0.1), 1.0, {}, proxy, Vec3::Zero());
    s.model->finalize();
    const Term& term = s.term("rigid_contact");
    const auto& plane = static_cast<const PlaneObstacle&>(*s.obstacles[0]);
    for (const Vec3& th : thetas()) {
      // Sphere centre 0.09 above the plane: gap −0.01.
      const Vec3 centre = plane.point() + 0.09 * plane.normal();
      const VecX q = six(centre - rotation_from_vector(th) * proxy.centers_B[0], th);
      const VecX v = six(Vec3(1.2, 0.4, -0.3), Vec3(2.0, -1.0, 0.5)), a = VecX::Zero(6);
      const VecX& p = s.model->params().defaults();
      const ContactForce f =
          static_cast<const RigidContactTerm&>(term).force(TermContext{q, v, a, p, 1, s.model->scheme()}, 0, 0);
      EXPECT_NEAR(f.gap, -0.01, 1e-14);
      DerivativeCheckOptions opt;
      opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
      expect_ok(check_term_derivatives(*s.model, term, q, v, a, p, 1, opt),
                std::string("sphere ") + to_string(model) + ", theta = " + std::to_string(th.norm()));
    }
  }
}

// The C¹ smoothed normal penalty (contact.smoothing w as a parameter) on rigid proxies: box
// corners with gaps inside the blend (both signs) and below it, and an offset sphere inside
// the blend at a positive gap (the force starts at g = w/2).
TEST(RigidContactTerm, SmoothedPenaltyBoxCornersAndSphere) {
  const double w = 0.03;
  for (ContactModel model : {ContactModel::kLinear, ContactModel::kTanh}) {
    {
      const RigidProxy proxy = RigidProxy::box_corners(Vec3(0.2, 0.2, 0.2));
      RigidScene s;
      s.add_contact(model, 1e4, 50.0);
      s.contact.smoothing_param =
          s.model->params().add("contact.smoothing", "", ParamKind::kContact, VecX::Constant(1, w), 1, 1);
      s.add_plane(Vec3::Zero(), Vec3::UnitZ(), 0.5);
      s.add_body(RigidShape::box(Vec3(0.2, 0.2, 0.2)), 1.0, {}, proxy, Vec3::Zero());
      s.model->finalize();
      const Term& term = s.term("rigid_contact");
      const auto& contact = static_cast<const RigidContactTerm&>(term);
      for (const Vec3& th : thetas()) {
        const VecX q = six(place_on_floor(proxy, th, 0.012), th);
        const VecX v = six(Vec3(1.5, -0.7, -0.2), Vec3(0.3, -0.4, 0.8)), a = VecX::Zero(6);
        const VecX& p = s.model->params().defaults();
        int blended = 0;
        for (int k = 0; k < contact.num_points(); ++k) {
          const ContactForce f = contact.force(TermContext{q, v, a, p, 1, s.model->scheme()}, k, 0);
          blended += std::abs(f.gap) < 0.5 * w;
        }
        EXPECT_GT(blended, 0);
        DerivativeCheckOptions opt;
        opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
        expect_ok(check_term_derivatives(*s.model, term, q, v, a, p, 1, opt),
                  std::string("smoothed box ") + to_string(model) + ", theta = " + std::to_string(th.norm()));
      }
    }
    {
      const RigidProxy proxy = RigidProxy::sphere(Vec3(0.05, 0.02, -0.03), 0.1);
      RigidScene s;
      s.add_contact(model, 1e4, 30.0);
      s.contact.smoothing_param =
          s.model->params().add("contact.smoothing", "", ParamKind::kContact, VecX::Constant(1, w), 1, 1);
      s.add_plane(Vec3(0.0, 0.0, -0.05), Vec3(0.2, -0.1, 1.0), 0.4);
      s.add_body(RigidShape::sphere(0.1), 1.0, {}, proxy, Vec3::Zero());
      s.model->finalize();
      const Term& term = s.term("rigid_contact");
      const auto& plane = static_cast<const PlaneObstacle&>(*s.obstacles[0]);
      for (const Vec3& th : thetas()) {
        // Sphere centre 0.105 above the plane: gap +0.005, inside the blend.
        const Vec3 centre = plane.point() + 0.105 * plane.normal();
        const VecX q = six(centre - rotation_from_vector(th) * proxy.centers_B[0], th);
        const VecX v = six(Vec3(1.2, 0.4, -0.3), Vec3(2.0, -1.0, 0.5)), a = VecX::Zero(6);
        const VecX& p = s.model->params().defaults();
        const ContactForce f =
            static_cast<const RigidContactTerm&>(term).force(TermContext{q, v, a, p, 1, s.model->scheme()}, 0, 0);
        EXPECT_NEAR(f.gap, 0.005, 1e-14);
        EXPECT_GT(f.normal_force, 0.0);
        EXPECT_GT(f.df_dw.norm(), 0.0);
        DerivativeCheckOptions opt;
        opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
        expect_ok(check_term_derivatives(*s.model, term, q, v, a, p, 1, opt),
                  std::string("smoothed sphere ") + to_string(model) + ", theta = " + std::to_string(th.norm()));
      }
    }
  }
}

TEST(RigidContactTerm, SphereRejectsNonPlaneObstacles) {
  class Ball final : public Obstacle {
   public:
    Ball() : Obstacle("ball", 0) {}
    double gap(const Vec3& x, Vec3& n, Mat3& H) const override {
      n = x.normalized();
      H.setZero();
      return x.norm() - 1.0;
    }
  };
  EXPECT_THROW(RigidContactTerm::validate("b", RigidProxy::sphere(Vec3::Zero(), 0.1), {std::make_shared<Ball>()}),
               InputError);
  EXPECT_NO_THROW(RigidContactTerm::validate("b", RigidProxy::points({Vec3::Zero()}), {std::make_shared<Ball>()}));
}

TEST(RigidBody, InitialStateJvpAndVjpMatchFiniteDifferences) {
  std::mt19937 rng(9);
  std::normal_distribution<double> nd;
  for (double t : {0.0, 1e-6, 1.2, 3.0}) {
    RigidScene s;
    RigidInit init;
    init.position = Vec3(0.1, 0.2, 0.3);
    init.orientation = t * random_unit(rng);
    init.velocity = Vec3(1.0, -2.0, 0.5);
    init.angular_velocity = Vec3(3.0, -1.0, 2.0);
    s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 2.0, init, {}, Vec3::Zero());
    s.model->finalize();
    const Body& b = *s.model->bodies()[0];
    const VecX p = s.model->params().defaults();
    const int n = 6, np = static_cast<int>(p.size());
    VecX q0(n), v0(n);
    b.initial_state(p, q0, v0);
    // ω_W = J(θ⁰) θ̇⁰ round trip.
    EXPECT_LT((rigid_body(*s.model, 0).angular_velocity_W(q0, v0) - init.angular_velocity).norm(), 1e-13);
    const VecX gq = VecX::NullaryExpr(n, [&] { return nd(rng); });
    const VecX gv = VecX::NullaryExpr(n, [&] { return nd(rng); });
    VecX grad = VecX::Zero(np);
    b.initial_state_vjp(p, gq, gv, grad);
    double max_jvp = 0.0;
    for (int j = 0; j < np; ++j) {
      VecX dq = VecX::Zero(n), dv = VecX::Zero(n);
      b.initial_state_jvp(p, j, dq, dv);
      const double eps = 1e-6;
      VecX pp = p, pm = p, qp(n), vp(n), qm(n), vm(n);
      pp[j] += eps;
      pm[j] -= eps;
      b.initial_state(pp, qp, vp);
      b.initial_state(pm, qm, vm);
      EXPECT_LT((dq - (qp - qm) / (2 * eps)).norm(), 1e-8) << "param " << s.model->params().name_of(j);
      EXPECT_LT((dv - (vp - vm) / (2 * eps)).norm(), 1e-8) << "param " << s.model->params().name_of(j);
      EXPECT_NEAR(grad[j], gq.dot(dq) + gv.dot(dv), 1e-12 * (1 + std::abs(grad[j])));
      max_jvp = std::max(max_jvp, dv.tail<3>().norm());
    }
    EXPECT_GT(max_jvp, 0.1);
  }
}

TEST(RigidShape, InertiaAndVolume) {
  EXPECT_NEAR(RigidShape::sphere(0.1).unit_inertia()(0, 0), 0.004, 1e-15);
  const Mat3 Ib = RigidShape::box(Vec3(0.3, 0.2, 0.1)).unit_inertia();
  EXPECT_NEAR(Ib(0, 0), 0.05 / 12, 1e-15);
  EXPECT_NEAR(Ib(2, 2), 0.13 / 12, 1e-15);
  // A capsule of zero length is a sphere; a density-based mass uses the volume.
  EXPECT_NEAR(RigidShape::capsule(0.1, 0.0).unit_inertia()(0, 0), 0.004, 1e-15);
  EXPECT_NEAR(RigidShape::cylinder(0.1, 0.3).unit_inertia()(2, 2), 0.005, 1e-15);
  EXPECT_NEAR(RigidMassSpec::from_density(1000.0).resolve(RigidShape::box(Vec3(0.1, 0.1, 0.1))), 1.0, 1e-12);
  EXPECT_THROW(RigidMassSpec{}.resolve(RigidShape::sphere(0.1)), InputError);
  EXPECT_THROW(RigidShape::box(Vec3(0.1, -0.1, 0.1)).unit_inertia(), InputError);
}

}  // namespace
}  // namespace addsim
