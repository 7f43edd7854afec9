// Every particle-level term through the derivative harness, in each regime: free,
// sliding, sticking, tanh near zero tangential velocity, unilateral spring slack/taut.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <Eigen/Eigenvalues>

#include "addsim/check/derivative_check.h"
#include "addsim/terms/spring_pair_forces.h"
#include "../support/particle_fixture.h"

namespace addsim {
namespace {

using testing::ParticleFixture;

struct Probe {
  VecX q, v, a;
};

// Evaluates the derivative harness on every term of the fixture's model.
void expect_term_ok(const Model& m, const Term& t, const Probe& s, const DerivativeCheckOptions& opt) {
  const auto res = check_term_derivatives(m, t, s.q, s.v, s.a, m.params().defaults(), 3, opt);
  EXPECT_TRUE(res.ok) << "term " << t.name() << "\n" << res.report;
}

// One particle against the plane z = 0 with state (x, xdot).
struct ContactCase {
  const char* label;
  ContactModel model;
  Vec3 x, xdot;
  ContactRegime regime;
};

class ContactRegimes : public ::testing::TestWithParam<ContactCase> {};

TEST_P(ContactRegimes, PartialsMatchFiniteDifferences) {
  const ContactCase c = GetParam();
  ParticleFixture f(Integrator::kBdf2, 0.01, 10);
  f.particles({c.x}, {Vec3::Zero()}, {1.0});
  f.contact_params(c.model, 1e3, 3.0);
  f.plane(Vec3::Zero(), Vec3(0.1, -0.2, 1.0), 0.4);
  f.standard_terms(Vec3(0, 0, -9.81));
  f.model->finalize();
  const Term& contact = *f.model->terms().back();
  const auto& ct = static_cast<const PointContactTerm&>(contact);
  Probe s{c.x, c.xdot, Vec3(0.3, -0.1, 0.2)};
  const TermContext ctx{s.q, s.v, s.a, f.model->params().defaults(), 3, f.model->scheme()};
  ASSERT_EQ(ct.force(ctx, 0, 0).regime, c.regime) << c.label;

  DerivativeCheckOptions opt;
  opt.rel_tol = 1e-6;
  const bool touching = c.regime != ContactRegime::kSeparated;
  opt.expect_dq = touching;
  opt.expect_dv = touching;
  opt.expect_dp = touching;
  const auto res = check_term_derivatives(*f.model, contact, s.q, s.v, s.a, f.model->params().defaults(), 3, opt);
  EXPECT_TRUE(res.ok) << c.label << "\n" << res.report;
  if (!touching) {
    EXPECT_EQ(res.dq.analytic_scale, 0.0);
    EXPECT_EQ(res.dv.analytic_scale, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllRegimes, ContactRegimes,
    ::testing::Values(
        ContactCase{"linear separated", ContactModel::kLinear, Vec3(0, 0, 0.05), Vec3(1, 0, -1), ContactRegime::kSeparated},
        ContactCase{"linear sliding", ContactModel::kLinear, Vec3(0.2, 0.1, -0.01), Vec3(1.0, 0.5, -0.3), ContactRegime::kSlip},
        ContactCase{"linear sticking", ContactModel::kLinear, Vec3(0.2, 0.1, -0.01), Vec3(0.02, -0.01, 0.1), ContactRegime::kStick},
        ContactCase{"tanh sliding", ContactModel::kTanh, Vec3(0.2, 0.1, -0.01), Vec3(1.0, 0.5, -0.3), ContactRegime::kSlip},
        ContactCase{"tanh sticking", ContactModel::kTanh, Vec3(0.2, 0.1, -0.01), Vec3(0.02, -0.01, 0.1), ContactRegime::kStick},
        // Tangential speed ~1e-6 m/s: σ = k_t‖u‖/(c_f f_n) ≪ 1e-2, inside the series branch.
        ContactCase{"tanh near zero tangential velocity", ContactModel::kTanh, Vec3(0.2, 0.1, -0.01),
                    Vec3(1e-6, 2e-6, 0.05), ContactRegime::kStick}),
    [](const ::testing::TestParamInfo<ContactCase>& info) {
      std::string name = info.param.label;
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(ContactForce, ExplicitTangentialStiffnessParameter) {
  ParticleFixture f(Integrator::kBdf1, 0.01, 10);
  f.particles({Vec3(0, 0, -0.02)}, {Vec3::Zero()}, {1.0});
  f.contact_params(ContactModel::kTanh, 500.0, 1.0, 7.0);
  f.plane(Vec3::Zero(), Vec3(0, 0, 1), 0.6);
  f.standard_terms(Vec3(0, 0, -9.81));
  f.model->finalize();
  DerivativeCheckOptions opt;
  opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
  expect_term_ok(*f.model, *f.model->terms().back(), {Vec3(0, 0, -0.02), Vec3(0.3, 0.1, -0.2), Vec3::Zero()}, opt);
}

// Inside the damping ramp (0 < −g < δ, s'(g) ≠ 0), approaching and leaving, both friction laws.
TEST(ContactForce, DerivativesInsideTheDampingRamp) {
  for (ContactModel cm : {ContactModel::kLinear, ContactModel::kTanh}) {
    for (const Vec3& xdot : {Vec3(1.0, 0.5, -0.3), Vec3(0.02, -0.01, 0.4)}) {
      ParticleFixture f(Integrator::kBdf2, 0.01, 10);
      const Vec3 x(0.2, 0.1, -0.01);
      f.particles({x}, {Vec3::Zero()}, {1.0});
      f.contact_params(cm, 1e3, 3.0);
      f.contact.damping_ramp = 0.02;
      f.plane(Vec3::Zero(), Vec3(0.1, -0.2, 1.0), 0.4);
      f.standard_terms(Vec3(0, 0, -9.81));
      f.model->finalize();
      DerivativeCheckOptions opt;
      opt.rel_tol = 1e-6;
      opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
      expect_term_ok(*f.model, *f.model->terms().back(), {x, xdot, Vec3(0.3, -0.1, 0.2)}, opt);
    }
  }
}

// A plane that PointContactTerm does not recognise as one: every point goes through
// contact_force(), as before the term's separation test on PlaneObstacle::gap(x).
class OpaquePlaneForSeparationTest final : public Obstacle {
 public:
  OpaquePlaneForSeparationTest(int friction_param, const Vec3& point, const Vec3& normal)
      : Obstacle("opaque", friction_param), plane_("inner", friction_param, point, normal) {}
  double gap(const Vec3& x, Vec3& n, Mat3& H) const override { return plane_.gap(x, n, H); }

 private:
  PlaneObstacle plane_;
};

// PointContactTerm skips a point at g ≥ w/2 from a plane on PlaneObstacle::gap(x) alone
// (docs/solver.md, "Sheet flip, seventh round"): that gap is the same number as the full
// gap(x, n, H), and the term's r, r_abs and step Jacobian are bit for bit those of the same
// term on an obstacle it cannot test that way — points separated, inside the smoothing band
// above the plane (w/2 > g > 0), at its edge g = w/2 and in contact; w = 0 and w > 0.
TEST(ContactForce, PlaneSeparationTestMatchesTheFullForceBitForBit) {
  const Vec3 n = Vec3(0.1, -0.2, 1.0).normalized();
  const PlaneObstacle probe("floor", -1, Vec3(0.3, -0.1, 0.02), n);
  std::mt19937 rng(15);
  std::uniform_real_distribution<double> coord(-1.0, 1.0);
  for (int t = 0; t < 1000; ++t) {
    const Vec3 x(coord(rng), coord(rng), 1e-3 * coord(rng));
    Vec3 nn;
    Mat3 H;
    const double full = probe.gap(x, nn, H);
    const double alone = probe.gap(x);
    EXPECT_EQ(std::memcmp(&full, &alone, sizeof full), 0) << x.transpose();
  }
  for (const double w : {0.0, 0.01}) {
    const Vec3 base = Vec3(0.2, 0.1, 0.0) - n.dot(Vec3(0.2, 0.1, 0.0)) * n;  // on the plane
    const Vec3 along = (Vec3::UnitX() - n.x() * n).normalized();                // in the plane
    const std::vector<double> gaps{0.05, 0.5 * w, 0.3 * w, 1e-4, -0.002, -0.03};
    std::vector<Vec3> xs, vs;
    for (std::size_t k = 0; k < gaps.size(); ++k) {
      xs.push_back(base + gaps[k] * n + 0.01 * static_cast<double>(k) * along);
      vs.push_back(Vec3(0.5 - 0.2 * k, 0.1 * k, -0.3));
    }
    const int dofs = static_cast<int>(3 * xs.size());
    VecX q(dofs), v(dofs), a = VecX::Zero(dofs);
    for (std::size_t k = 0; k < xs.size(); ++k) q.segment<3>(3 * k) = xs[k], v.segment<3>(3 * k) = vs[k];
    ParticleFixture fixtures[2] = {ParticleFixture(Integrator::kBdf2, 0.01, 10), ParticleFixture(Integrator::kBdf2, 0.01, 10)};
    for (int opaque = 0; opaque < 2; ++opaque) {
      ParticleFixture& f = fixtures[opaque];
      f.particles(xs, std::vector<Vec3>(xs.size(), Vec3::Zero()), std::vector<double>(xs.size(), 1.0));
      f.contact_params(ContactModel::kLinear, 1e3, 3.0);
      if (w > 0.0)
        f.contact.smoothing_param =
            f.model->params().add("contact.smoothing", "", ParamKind::kContact, VecX::Constant(1, w), 1, 1, 0.0);
      f.plane(Vec3::Zero(), n, 0.4);
      if (opaque)
        f.obstacles.back() =
            std::make_shared<OpaquePlaneForSeparationTest>(f.obstacles.back()->friction_param(), Vec3::Zero(), n);
      f.standard_terms(Vec3(0, 0, -9.81));
      f.model->finalize();
    }
    const Model& m = *fixtures[0].model;
    const Model& mo = *fixtures[1].model;
    const auto& contact = static_cast<const PointContactTerm&>(*m.terms().back());
    const TermContext ctx{q, v, a, m.params().defaults(), 3, m.scheme()};
    const TermContext ctx_o{q, v, a, mo.params().defaults(), 3, mo.scheme()};
    int touching = 0;
    for (int k = 0; k < contact.num_points(); ++k) touching += contact.force(ctx, k, 0).regime != ContactRegime::kSeparated;
    // In contact: g = −0.002 and −0.03; with w > 0 also 0.3 w (and 1e-4) inside the band.
    EXPECT_GE(touching, w > 0.0 ? 4 : 2) << "w " << w;
    for (const EvalMode mode : {EvalMode::kResidual, EvalMode::kResidualAndStepJacobian}) {
      Assembly fast(&m.pattern(), &m.stencils()), full(&mo.pattern(), &mo.stencils());
      fast.reset(mode, {1.0, 0.5, 0.0});
      full.reset(mode, {1.0, 0.5, 0.0});
      contact.evaluate(ctx, fast);
      mo.terms().back()->evaluate(ctx_o, full);
      ASSERT_EQ(fast.jac.size(), full.jac.size());
      EXPECT_GT(full.r.norm(), 0.0);
      EXPECT_EQ(std::memcmp(fast.r.data(), full.r.data(), sizeof(double) * dofs), 0) << "w " << w;
      EXPECT_EQ(std::memcmp(fast.r_abs.data(), full.r_abs.data(), sizeof(double) * dofs), 0) << "w " << w;
      if (mode == EvalMode::kResidualAndStepJacobian) {
        EXPECT_EQ(std::memcmp(fast.jac.data(), full.jac.data(), sizeof(double) * full.jac.size()), 0) << "w " << w;
      }
    }
  }
}

// The damping force vanishes continuously at g = 0 and reaches k_d N ẋ at depth δ.
TEST(ContactForce, DampingRampIsContinuous) {
  PlaneObstacle plane("floor", -1, Vec3::Zero(), Vec3(0, 0, 1));
  ContactCoefficients c;
  c.kn = 0.0;
  c.kd = 10.0;
  c.cf = 0.0;
  const Vec3 xdot(0, 0, -2.0);
  EXPECT_NEAR(contact_force(Vec3(0, 0, -1e-12), xdot, plane, c).f.z(), 0.0, 1e-9);
  EXPECT_NEAR(contact_force(Vec3(0, 0, -0.5 * c.damping_ramp), xdot, plane, c).f.z(), 10.0, 1e-12);
  EXPECT_NEAR(contact_force(Vec3(0, 0, -c.damping_ramp), xdot, plane, c).f.z(), 20.0, 1e-12);
  c.damping_ramp = 0.0;
  EXPECT_NEAR(contact_force(Vec3(0, 0, -1e-12), xdot, plane, c).f.z(), 20.0, 1e-12);
}

// The stick predictor (contact_force's stick_predictor_ratio, docs/solver.md "Stick
// predictor"): near the cone's edge a slipping point keeps its exact force f but reports the
// partials of the stick-law model f + predictor_shift (normal, damping and −k_t Tẋ), checked
// here against central differences of that model; away from the edge nothing changes.
TEST(ContactForce, StickPredictorPartialsAreTheStickModels) {
  PlaneObstacle plane("floor", -1, Vec3::Zero(), Vec3(0.1, -0.2, 1.0).normalized());
  ContactCoefficients c;
  c.kn = 1e3;
  c.kd = 3.0;
  c.kt = 10.0;
  c.cf = 0.4;
  const Vec3 x(0.2, 0.1, -0.01);
  // Tangential speeds 0.8 and 8 m/s against the Coulomb limit c_f f_n ≈ 4 N: k_t‖u‖/(c_f f_n) ≈ 2 and 20.
  for (const double speed : {0.8, 8.0}) {
    const Vec3 xdot = speed * Vec3(0.8, -0.6, 0.0) + Vec3(0, 0, -0.3);
    const ContactForce exact = contact_force(x, xdot, plane, c);
    const ContactForce pred = contact_force(x, xdot, plane, c, 5.0);
    ASSERT_EQ(exact.regime, ContactRegime::kSlip);
    EXPECT_EQ(pred.regime, ContactRegime::kSlip);
    EXPECT_EQ(pred.f, exact.f);
    EXPECT_EQ(pred.df_dcf, exact.df_dcf);
    EXPECT_EQ(pred.df_dkn, exact.df_dkn);
    EXPECT_EQ(contact_force(x, xdot, plane, c, 0.0).df_dxdot, exact.df_dxdot);
    const double ratio = c.kt * (xdot - plane.normal() * plane.normal().dot(xdot)).norm() / (c.cf * exact.normal_force);
    if (ratio > 5.0) {  // beyond β: the exact slip branch
      EXPECT_EQ(pred.predictor_shift, Vec3::Zero());
      EXPECT_EQ(pred.df_dx, exact.df_dx);
      EXPECT_EQ(pred.df_dxdot, exact.df_dxdot);
      continue;
    }
    ASSERT_GT(pred.predictor_shift.norm(), 1.0) << "ratio " << ratio;
    // The model force f + shift and its central differences in x and ẋ.
    auto model = [&](const Vec3& xs, const Vec3& vs) {
      const ContactForce f = contact_force(xs, vs, plane, c, 5.0);
      return Vec3(f.f + f.predictor_shift);
    };
    const double eps = 1e-6;
    Mat3 fd_x, fd_v;
    for (int j = 0; j < 3; ++j) {
      const Vec3 e = eps * Vec3::Unit(j);
      fd_x.col(j) = (model(x + e, xdot) - model(x - e, xdot)) / (2 * eps);
      fd_v.col(j) = (model(x, xdot + e) - model(x, xdot - e)) / (2 * eps);
    }
    EXPECT_GT(pred.df_dxdot.norm(), 1.0);
    EXPECT_LT((pred.df_dx - fd_x).norm(), 1e-6 * (1.0 + fd_x.norm())) << pred.df_dx << "\n" << fd_x;
    EXPECT_LT((pred.df_dxdot - fd_v).norm(), 1e-6 * (1.0 + fd_v.norm())) << pred.df_dxdot << "\n" << fd_v;
    // The stick law: the tangential part of the model force is −k_t Tẋ.
    const Vec3 n = plane.normal();
    const Vec3 ft = (Mat3::Identity() - n * n.transpose()) * model(x, xdot);
    EXPECT_LT((ft + c.kt * (xdot - n * n.dot(xdot))).norm(), 1e-12 * c.kt * speed);
  }
}

TEST(TanhFriction, SeriesAndClosedFormAgreeAtTheSwitch) {
  // Both branches of φ(σ) = tanh σ/σ and ψ = φ'/σ at σ = 1e-2 ± δ.
  const double s = 1e-2;
  EXPECT_NEAR(tanh_over_s(s * (1 - 1e-12)), std::tanh(s) / s, 1e-14);
  const double t = std::tanh(s), closed = (s * (1 - t * t) - t) / (s * s * s);
  EXPECT_NEAR(tanh_over_s_deriv_over_s(s * (1 - 1e-12)), closed, 1e-9);
  EXPECT_NEAR(tanh_over_s_deriv_over_s(0.0), -2.0 / 3.0, 1e-15);
}

// The smoothed depth φ_w(g) of the normal penalty (docs/contact.md): eq. linPenN for w = 0;
// for w > 0 equal to −g below −w/2 and 0 above w/2, C¹ across both ends, ∂φ/∂g and ∂φ/∂w exact.
TEST(SmoothedNormalPenalty, IsC1AndExactOutsideTheBlend) {
  double dg = 0.0, dw = 0.0;
  for (double g : {-0.3, -1e-9, 0.0, 1e-9, 0.2}) {
    EXPECT_EQ(smoothed_depth(g, 0.0, dg, dw), std::max(-g, 0.0));
    EXPECT_EQ(dg, g < 0.0 ? -1.0 : 0.0);
    EXPECT_EQ(dw, 0.0);
  }
  const double w = 0.004;
  EXPECT_EQ(smoothed_depth(-0.01, w, dg, dw), 0.01);
  EXPECT_EQ(dg, -1.0);
  EXPECT_EQ(smoothed_depth(0.003, w, dg, dw), 0.0);
  EXPECT_EQ(dg, 0.0);
  // Value and slope continuous at g = ∓w/2.
  const double e = 1e-12;
  for (double end : {-0.5 * w, 0.5 * w}) {
    double dg_in = 0.0, dg_out = 0.0;
    const double in = smoothed_depth(end + (end < 0 ? e : -e), w, dg_in, dw);
    const double out = smoothed_depth(end + (end < 0 ? -e : e), w, dg_out, dw);
    EXPECT_NEAR(in, out, 3e-12);
    EXPECT_NEAR(dg_in, dg_out, 1e-8);
  }
  // Inside: derivatives against central differences, and φ > 0 at a positive gap.
  for (double g : {-0.0015, -0.0002, 0.0, 0.0011, 0.0019}) {
    const double phi = smoothed_depth(g, w, dg, dw);
    EXPECT_GT(phi, 0.0);
    const double h = 1e-7;
    double a = 0.0, b = 0.0;
    const double fd_g = (smoothed_depth(g + h, w, a, b) - smoothed_depth(g - h, w, a, b)) / (2 * h);
    const double fd_w = (smoothed_depth(g, w + h, a, b) - smoothed_depth(g, w - h, a, b)) / (2 * h);
    EXPECT_NEAR(dg, fd_g, 1e-7);
    EXPECT_NEAR(dw, fd_w, 1e-7);
    EXPECT_NE(dw, 0.0);
  }
}

// The smoothed penalty through the derivative harness, with the width w a parameter: inside
// the blend at a positive and a negative gap, and below it; sliding and sticking; linear
// and tanh friction (the friction laws see f_n = k_n φ_w(g)).
TEST(SmoothedNormalPenalty, PartialsMatchFiniteDifferences) {
  const double w = 0.01;
  const Vec3 n = Vec3(0.1, -0.2, 1.0).normalized();
  const Vec3 base = Vec3(0.2, 0.1, 0.0) - n.dot(Vec3(0.2, 0.1, 0.0)) * n;  // on the plane
  for (ContactModel cm : {ContactModel::kLinear, ContactModel::kTanh}) {
    for (double gap : {0.3 * w, -0.2 * w, -2.0 * w}) {
      for (const Vec3& xdot : {Vec3(1.0, 0.5, -0.3), Vec3(0.002, -0.001, 0.1)}) {
        ParticleFixture f(Integrator::kBdf2, 0.01, 10);
        const Vec3 x = base + gap * n;
        f.particles({x}, {Vec3::Zero()}, {1.0});
        f.contact_params(cm, 1e3, 3.0);
        f.contact.smoothing_param =
            f.model->params().add("contact.smoothing", "", ParamKind::kContact, VecX::Constant(1, w), 1, 1, 0.0);
        f.plane(Vec3::Zero(), n, 0.4);
        f.standard_terms(Vec3(0, 0, -9.81));
        f.model->finalize();
        const Term& contact = *f.model->terms().back();
        Probe s{x, xdot, Vec3(0.3, -0.1, 0.2)};
        const TermContext ctx{s.q, s.v, s.a, f.model->params().defaults(), 3, f.model->scheme()};
        const ContactForce force = static_cast<const PointContactTerm&>(contact).force(ctx, 0, 0);
        const std::string label = std::string(to_string(cm)) + ", gap " + std::to_string(gap) + ", speed " +
                                  std::to_string(xdot.norm());
        ASSERT_NE(force.regime, ContactRegime::kSeparated) << label;
        EXPECT_NEAR(force.gap, gap, 1e-15) << label;
        if (gap > -0.5 * w) {
          EXPECT_GT(force.df_dw.norm(), 0.0) << label;
        } else {
          EXPECT_EQ(force.df_dw.norm(), 0.0) << label;
          EXPECT_NEAR(force.normal_force, 1e3 * (-gap), 1e-12) << label;
        }
        DerivativeCheckOptions opt;
        opt.rel_tol = 1e-6;
        opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
        expect_term_ok(*f.model, contact, s, opt);
      }
    }
  }
}

// Two particles and a handle: every spring kind, with damping, in each regime.
struct SpringCase {
  const char* label;
  SpringKind kind;
  double rest;
  bool expect_active;
};

class SpringRegimes : public ::testing::TestWithParam<SpringCase> {};

TEST_P(SpringRegimes, PartialsMatchFiniteDifferences) {
  const SpringCase c = GetParam();
  ParticleFixture f(Integrator::kBdf2, 0.02, 10);
  f.particles({Vec3(0, 0, 0), Vec3(0.3, 0.1, -0.2)}, {Vec3::Zero(), Vec3::Zero()}, {1.0, 2.0});
  std::vector<Vec3> handle_path;
  for (int i = 0; i <= 10; ++i) handle_path.push_back(Vec3(0.5 + 0.01 * i * i, -0.2, 0.4 + 0.02 * i));
  const int h = f.model->add_handle("h", handle_path);
  std::vector<Spring> springs;
  springs.push_back(f.spring(c.kind, f.point(0), f.point(1), 50.0, 2.0, c.rest));
  springs.push_back(f.spring(c.kind, f.point(1), Anchor::handle_point(h, "h"), 80.0, 1.5, c.rest));
  springs.push_back(f.spring(c.kind, Anchor::world_point(Vec3(0, 0, 1), "w"), f.point(0), 30.0, 0.5, c.rest));
  f.model->add_term(std::make_unique<SpringTerm>(f.model.get(), springs));
  f.model->finalize();
  const Term& term = *f.model->terms().back();
  const auto& st = static_cast<const SpringTerm&>(term);

  VecX q(6), v(6), a = VecX::Zero(6);
  q << 0, 0, 0, 0.3, 0.1, -0.2;
  v << 0.1, -0.2, 0.3, -0.4, 0.2, 0.1;
  const TermContext ctx{q, v, a, f.model->params().defaults(), 3, f.model->scheme()};
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(st.regime(ctx, k) == SpringRegime::kActive, c.expect_active) << c.label << " spring " << k;

  DerivativeCheckOptions opt;
  opt.expect_dq = opt.expect_dv = opt.expect_dp = c.expect_active;
  const auto res = check_term_derivatives(*f.model, term, q, v, a, f.model->params().defaults(), 3, opt);
  EXPECT_TRUE(res.ok) << c.label << "\n" << res.report;
  if (!c.expect_active) {
    EXPECT_EQ(res.dq.analytic_scale, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, SpringRegimes,
                         ::testing::Values(SpringCase{"distance", SpringKind::kDistance, 0.2, true},
                                           SpringCase{"zero_length", SpringKind::kZeroLength, 0.0, true},
                                           SpringCase{"unilateral_taut", SpringKind::kUnilateral, 0.1, true},
                                           SpringCase{"unilateral_slack", SpringKind::kUnilateral, 5.0, false}),
                         [](const ::testing::TestParamInfo<SpringCase>& info) { return std::string(info.param.label); });

// The Newton-matrix fallback (Assembly::clamp_compressed_springs, docs/solver.md): a
// compressed distance spring's step-Jacobian block loses its negative transverse part (the
// exact block has a negative eigenvalue, the clamped one none), a stretched one is unchanged,
// the residual is the same, and the sensitivity mode ignores the flag.
TEST(SpringTerm, ClampedNewtonMatrixIsPositiveSemiDefinite) {
  for (const double rest : {1.0, 0.1}) {  // compressed (length 0.37 m), stretched
    ParticleFixture f(Integrator::kBdf2, 0.02, 10);
    f.particles({Vec3(0, 0, 0), Vec3(0.3, 0.1, -0.2)}, {Vec3::Zero(), Vec3::Zero()}, {1.0, 2.0});
    f.model->add_term(std::make_unique<SpringTerm>(
        f.model.get(), std::vector<Spring>{f.spring(SpringKind::kDistance, f.point(0), f.point(1), 50.0, 0.0, rest)}));
    f.model->finalize();
    const Model& m = *f.model;
    VecX q(6), v = VecX::Zero(6), a = VecX::Zero(6);
    q << 0, 0, 0, 0.3, 0.1, -0.2;
    const TermContext ctx{q, v, a, m.params().defaults(), 3, m.scheme()};
    auto assemble = [&](EvalMode mode, bool clamp) {
      Assembly out(&m.pattern(), &m.stencils());
      out.clamp_compressed_springs = clamp;
      out.reset(mode, {1.0, 0.0, 0.0});
      m.terms().back()->evaluate(ctx, out);
      const VecX& values = mode == EvalMode::kResidualAndStepJacobian ? out.jac : out.kq;
      MatX dense = MatX::Zero(6, 6);
      for (int c = 0; c < 6; ++c)
        for (int k = m.pattern().outer()[c]; k < m.pattern().outer()[c + 1]; ++k) dense(m.pattern().inner()[k], c) += values[k];
      return std::pair{VecX(out.r), dense};
    };
    const auto [r_exact, j_exact] = assemble(EvalMode::kResidualAndStepJacobian, false);
    const auto [r_clamped, j_clamped] = assemble(EvalMode::kResidualAndStepJacobian, true);
    EXPECT_EQ(r_exact, r_clamped);
    EXPECT_GT(r_exact.norm(), 1.0);
    const double min_exact = Eigen::SelfAdjointEigenSolver<MatX>(j_exact).eigenvalues()[0];
    const double min_clamped = Eigen::SelfAdjointEigenSolver<MatX>(j_clamped).eigenvalues()[0];
    EXPECT_GT(min_clamped, -1e-12) << "rest " << rest;
    if (rest > 0.5) {
      EXPECT_LT(min_exact, -50.0) << "2 k (l - l0)/l = 2 · 50 (0.374 - 1)/0.374 ≈ -167";
      EXPECT_GT((j_exact - j_clamped).norm(), 1.0);
    } else {
      EXPECT_EQ(j_exact, j_clamped);
    }
    // The sensitivity passes' partials stay exact whatever the flag.
    EXPECT_EQ(assemble(EvalMode::kResidualAndJacobians, true).second, assemble(EvalMode::kResidualAndJacobians, false).second);
  }
}

// Springs between two particles take a direct path in SpringTerm::evaluate (docs/solver.md,
// "Sheet flip, third round"): its residual equals the sensitivity mode's (the general path) bit
// for bit, its step-Jacobian block is wq ∂r/∂q + wv ∂r/∂v of that mode, and it matches central
// differences of r along q with v moving as the BDF rates do (v = v₀ + wv (q − q₀)), stretched
// and compressed, with damping.
TEST(SpringTerm, ParticlePairStepJacobianMatchesPartialsAndDifferences) {
  for (const double rest : {1.0, 0.1}) {
    ParticleFixture f(Integrator::kBdf2, 0.02, 10);
    f.particles({Vec3(0, 0, 0), Vec3(0.3, 0.1, -0.2)}, {Vec3::Zero(), Vec3::Zero()}, {1.0, 2.0});
    f.model->add_term(std::make_unique<SpringTerm>(
        f.model.get(), std::vector<Spring>{f.spring(SpringKind::kDistance, f.point(0), f.point(1), 50.0, 0.7, rest)}));
    f.model->finalize();
    const Model& m = *f.model;
    VecX q0(6), v0(6), a = VecX::Zero(6);
    q0 << 0.01, -0.02, 0.03, 0.3, 0.1, -0.2;
    v0 << 0.4, -0.1, 0.2, -0.3, 0.5, 0.1;
    const double wq = 1.0, wv = 75.0;  // (c_v/h) of a BDF step with h = 0.02
    const VecX p = m.params().defaults();
    auto dense = [&](const VecX& values) {
      MatX d = MatX::Zero(6, 6);
      for (int c = 0; c < 6; ++c)
        for (int k = m.pattern().outer()[c]; k < m.pattern().outer()[c + 1]; ++k) d(m.pattern().inner()[k], c) += values[k];
      return d;
    };
    auto evaluate = [&](const VecX& q, EvalMode mode) {
      const VecX v = v0 + wv * (q - q0);
      const TermContext ctx{q, v, a, p, 3, m.scheme()};
      Assembly out(&m.pattern(), &m.stencils());
      out.reset(mode, {wq, wv, 0.0});
      m.terms().back()->evaluate(ctx, out);
      return out;
    };
    const Assembly step = evaluate(q0, EvalMode::kResidualAndStepJacobian);
    const Assembly partials = evaluate(q0, EvalMode::kResidualAndJacobians);
    const Assembly residual = evaluate(q0, EvalMode::kResidual);
    EXPECT_EQ(step.r, partials.r);
    EXPECT_EQ(step.r_abs, partials.r_abs);
    EXPECT_EQ(residual.r, partials.r);
    EXPECT_GT(step.r.norm(), 1.0);
    const MatX j_step = dense(step.jac);
    const MatX j_parts = wq * dense(partials.kq) + wv * dense(partials.kv);
    EXPECT_LE((j_step - j_parts).cwiseAbs().maxCoeff(), 1e-13 * j_parts.cwiseAbs().maxCoeff()) << "rest " << rest;
    MatX fd(6, 6);
    const double eps = 1e-6;
    for (int c = 0; c < 6; ++c) {
      VecX qp = q0, qm = q0;
      qp[c] += eps;
      qm[c] -= eps;
      fd.col(c) = (evaluate(qp, EvalMode::kResidual).r - evaluate(qm, EvalMode::kResidual).r) / (2.0 * eps);
    }
    EXPECT_LE((j_step - fd).cwiseAbs().maxCoeff(), 1e-6 * j_step.cwiseAbs().maxCoeff()) << "rest " << rest;
  }
}

// Every array of two assemblies (r, r_abs, jac, kq, kv, ka) equal to the bit.
void expect_same_assembly_bits(const Assembly& x, const Assembly& y, const std::string& what) {
  const auto same_bits = [](const VecX& x1, const VecX& x2) {
    // (memcmp of an empty vector's null data would be undefined even for zero bytes.)
    return x1.size() == x2.size() &&
           (x1.size() == 0 || std::memcmp(x1.data(), x2.data(), sizeof(double) * x1.size()) == 0);
  };
  EXPECT_TRUE(same_bits(x.r, y.r)) << what << ": r";
  EXPECT_TRUE(same_bits(x.r_abs, y.r_abs)) << what << ": r_abs";
  EXPECT_TRUE(same_bits(x.jac, y.jac)) << what << ": jac";
  EXPECT_TRUE(same_bits(x.kq, y.kq)) << what << ": kq";
  EXPECT_TRUE(same_bits(x.kv, y.kv)) << what << ": kv";
  EXPECT_TRUE(same_bits(x.ka, y.ka)) << what << ": ka";
}

// Particle-pair springs of the distance and unilateral kinds go through the lane kernel
// (terms/spring_pair_forces.h) several at a time. 13 of them between 7 particles (two batches,
// the second padded), interleaved with a zero-length pair, a world-anchored spring and a spring
// without damping: stretched, compressed and slack ones, each mode and weight set. The kernel
// must give the one-spring path's r, r_abs and Jacobian values bit for bit, and its step
// Jacobian must match central differences of r.
TEST(SpringTerm, PairKernelMatchesOneSpringPathBitForBit) {
  ParticleFixture f(Integrator::kBdf2, 0.02, 10);
  const std::vector<Vec3> x = {Vec3(0, 0, 0),      Vec3(0.31, 0.02, -0.05), Vec3(0.6, 0.1, 0.02), Vec3(0.05, 0.29, 0.01),
                               Vec3(0.33, 0.3, 0.04), Vec3(0.62, 0.33, -0.03), Vec3(0.3, 0.6, 0.1)};
  f.particles(x, std::vector<Vec3>(7, Vec3::Zero()), {0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.4});
  std::vector<Spring> springs;
  const int ends[13][2] = {{0, 1}, {1, 2}, {0, 3}, {1, 4}, {2, 5}, {3, 4}, {4, 5}, {3, 6}, {4, 6}, {0, 4}, {1, 5}, {2, 4}, {5, 6}};
  for (int k = 0; k < 13; ++k) {
    const int a = ends[k][0], b = ends[k][1];
    const double l = (x[a] - x[b]).norm();
    // Rest lengths 0.9 l … 1.1 l: stretched and compressed springs (and slack unilateral ones).
    const double rest = l * (0.9 + 0.2 * ((k * 7) % 5) / 4.0);
    const SpringKind kind = k % 3 == 2 ? SpringKind::kUnilateral : SpringKind::kDistance;
    springs.push_back(f.spring(kind, f.point(a), f.point(b), 800.0 + 37.0 * k, 0.1 + 0.05 * k, rest));
    if (k == 4) springs.back().damping_param = -1;
    if (k == 5) springs.push_back(f.spring(SpringKind::kZeroLength, f.point(6), f.point(2), 300.0, 0.2, 0.0));
    if (k == 8) springs.push_back(f.spring(SpringKind::kDistance, f.point(1), Anchor::world_point(Vec3(0.3, 0.0, 0.5), "w"),
                                           500.0, 0.3, 0.4));
  }
  auto term = std::make_unique<SpringTerm>(f.model.get(), springs);
  SpringTerm* spring_term = term.get();
  f.model->add_term(std::move(term));
  f.model->finalize();
  const Model& m = *f.model;
  const int n = m.num_dofs();
  VecX q0(n), v0(n), a = VecX::Zero(n);
  for (int k = 0; k < 7; ++k) {
    q0.segment<3>(3 * k) = x[k] + 0.01 * Vec3(std::sin(3.0 * k), std::cos(5.0 * k), std::sin(7.0 * k + 1.0));
    v0.segment<3>(3 * k) = Vec3(std::cos(2.0 * k), std::sin(4.0 * k), 0.5 * std::cos(k + 0.3));
  }
  const VecX p = m.params().defaults();
  auto evaluate = [&](const VecX& q, EvalMode mode, JacobianWeights w, bool clamp, bool batched,
                      bool float_blocks = false) {
    const VecX v = v0 + w.wv * (q - q0);
    const TermContext ctx{q, v, a, p, 3, m.scheme()};
    Assembly out(&m.pattern(), &m.stencils());
    out.clamp_compressed_springs = clamp;
    out.float_step_blocks = float_blocks;
    out.reset(mode, w);
    spring_term->set_batched_pairs(batched);
    spring_term->evaluate(ctx, out);
    spring_term->set_batched_pairs(true);
    return out;
  };
  struct ModeCase {
    EvalMode mode;
    JacobianWeights w;
    bool clamp;
  };
  auto compare_modes = [&](const std::string& state) {
    for (const ModeCase c : {ModeCase{EvalMode::kResidual, {1.0, 0.0, 0.0}, false},
                             ModeCase{EvalMode::kResidualAndJacobians, {1.0, 0.0, 0.0}, false},
                             ModeCase{EvalMode::kResidualAndStepJacobian, {1.0, 75.0, 0.0}, false},
                             ModeCase{EvalMode::kResidualAndStepJacobian, {1.0, 75.0, 0.0}, true},
                             ModeCase{EvalMode::kResidualAndStepJacobian, {1.0, 0.0, 0.0}, false},
                             ModeCase{EvalMode::kResidualAndStepJacobian, {0.0, 75.0, 0.0}, false}}) {
      const Assembly lanes = evaluate(q0, c.mode, c.w, c.clamp, true);
      const Assembly one = evaluate(q0, c.mode, c.w, c.clamp, false);
      const std::string what = state + ": mode " + std::to_string(static_cast<int>(c.mode)) + ", wq " +
                               std::to_string(c.w.wq) + ", wv " + std::to_string(c.w.wv) + ", clamp " +
                               std::to_string(c.clamp);
      EXPECT_GT(lanes.r.norm(), 1.0) << what;
      expect_same_assembly_bits(lanes, one, what);
      // Assembly::float_step_blocks: r, r_abs and the sensitivity partials the same bits, the
      // step Jacobian equal to float accuracy (the pairs' blocks in closed form).
      const Assembly cheap = evaluate(q0, c.mode, c.w, c.clamp, true, true);
      if (c.mode != EvalMode::kResidualAndStepJacobian) {
        expect_same_assembly_bits(cheap, lanes, what + ", float blocks");
      } else {
        Assembly same_jac = cheap;
        same_jac.jac = lanes.jac;
        expect_same_assembly_bits(same_jac, lanes, what + ", float blocks");
        EXPECT_LE((cheap.jac - lanes.jac).cwiseAbs().maxCoeff(), 1e-12 * lanes.jac.cwiseAbs().maxCoeff())
            << what << ", float blocks";
      }
    }
  };
  compare_modes("moving");
  // A flat sheet (every z equal) at rest: exact zeros in d, w and the blocks, whose signs the
  // kernel must reproduce too.
  const VecX q_moving = q0, v_moving = v0;
  for (int k = 0; k < 7; ++k) q0[3 * k + 2] = 0.0;
  v0.setZero();
  compare_modes("flat at rest");
  // Nearly axis-aligned springs, tiny transverse offsets and velocities of mixed scales (a sheet
  // lying on the floor): the 3 × 3 product's sums round differently in different orders here.
  std::mt19937 rng(15);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int trial = 0; trial < 40; ++trial) {
    for (int k = 0; k < 7; ++k)
      for (int c = 0; c < 3; ++c) {
        const double scale = std::pow(10.0, -2.0 - 18.0 * (0.5 + 0.5 * unit(rng)));
        q0[3 * k + c] = (c == 2 ? 0.0 : x[k][c]) + scale * unit(rng);
        v0[3 * k + c] = std::pow(10.0, -6.0 * (0.5 + 0.5 * unit(rng))) * unit(rng);
      }
    compare_modes("axis-aligned trial " + std::to_string(trial));
  }
  q0 = q_moving;
  v0 = v_moving;
  // The kernel's step Jacobian against central differences of its residual (v follows q
  // with the step's weight c_v/h = 75, as in a BDF step).
  const JacobianWeights w{1.0, 75.0, 0.0};
  const Assembly step = evaluate(q0, EvalMode::kResidualAndStepJacobian, w, false, true);
  MatX j_step = MatX::Zero(n, n);
  for (int col = 0; col < n; ++col)
    for (int k = m.pattern().outer()[col]; k < m.pattern().outer()[col + 1]; ++k)
      j_step(m.pattern().inner()[k], col) += step.jac[k];
  MatX fd(n, n);
  const double eps = 1e-7;
  for (int col = 0; col < n; ++col) {
    VecX qp = q0, qm = q0;
    qp[col] += eps;
    qm[col] -= eps;
    fd.col(col) = (evaluate(qp, EvalMode::kResidual, w, false, true).r - evaluate(qm, EvalMode::kResidual, w, false, true).r) /
                  (2.0 * eps);
  }
  EXPECT_LE((j_step - fd).cwiseAbs().maxCoeff(), 1e-6 * j_step.cwiseAbs().maxCoeff());
  // The same check for the float-accuracy step blocks (Assembly::float_step_blocks).
  const Assembly cheap = evaluate(q0, EvalMode::kResidualAndStepJacobian, w, false, true, true);
  MatX j_cheap = MatX::Zero(n, n);
  for (int col = 0; col < n; ++col)
    for (int k = m.pattern().outer()[col]; k < m.pattern().outer()[col + 1]; ++k)
      j_cheap(m.pattern().inner()[k], col) += cheap.jac[k];
  EXPECT_LE((j_cheap - fd).cwiseAbs().maxCoeff(), 1e-6 * j_cheap.cwiseAbs().maxCoeff());
}

// The lane kernel's float-accuracy step blocks (spring_pairs::forces with float_blocks: the
// closed form α I + u (β u + γ w)ᵀ) against its exact ones, on random springs: stretched and
// compressed, with and without the clamp, with and without damping, for the step weights of a
// BDF step, positions only and velocities only. len and r stay the same bits; each lane's step
// block agrees to 1e-6 of its largest entry (float accuracy; in practice ≈ 1e-15).
TEST(SpringTerm, PairKernelFloatBlocksMatchExactOnes) {
  std::mt19937 rng(19);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  using spring_pairs::kLanes;
  double worst = 0.0;
  for (int trial = 0; trial < 200; ++trial) {
    spring_pairs::Input in;
    for (int i = 0; i < kLanes; ++i) {
      double len2 = 0.0;
      for (int c = 0; c < 3; ++c) {
        in.d[c][i] = unit(rng) * std::pow(10.0, unit(rng));
        in.w[c][i] = unit(rng) * std::pow(10.0, 2.0 * unit(rng));
        len2 += in.d[c][i] * in.d[c][i];
      }
      in.k[i] = std::pow(10.0, 1.0 + 3.0 * (0.5 + 0.5 * unit(rng)));
      // Every other lane of every other trial without damping; rest lengths 0.5 … 1.5 × ‖d‖.
      in.kd[i] = (trial % 2 == 0 && i % 2 == 0) ? 0.0 : std::pow(10.0, 2.0 * unit(rng));
      in.rest[i] = std::sqrt(len2) * (1.0 + 0.5 * unit(rng));
    }
    for (const bool clamp : {false, true})
      for (const spring_pairs::StepWeights w :
           {spring_pairs::StepWeights{true, 1.0, 75.0}, spring_pairs::StepWeights{true, 1.0, 0.0},
            spring_pairs::StepWeights{true, 0.0, 75.0}}) {
        spring_pairs::Output exact, cheap;
        spring_pairs::forces(in, exact, clamp, true, w, false);
        spring_pairs::forces(in, cheap, clamp, true, w, true);
        EXPECT_EQ(std::memcmp(exact.len, cheap.len, sizeof exact.len), 0);
        EXPECT_EQ(std::memcmp(exact.r, cheap.r, sizeof exact.r), 0);
        for (int i = 0; i < kLanes; ++i) {
          double scale = 0.0, diff = 0.0;
          for (int e = 0; e < 9; ++e) {
            scale = std::max(scale, std::abs(exact.step[e][i]));
            diff = std::max(diff, std::abs(exact.step[e][i] - cheap.step[e][i]));
          }
          // (Velocity weight only on an undamped lane: both blocks zero.)
          EXPECT_LE(diff, 1e-6 * scale) << "trial " << trial << " lane " << i << " clamp " << clamp;
          if (scale > 0.0) worst = std::max(worst, diff / scale);
        }
      }
  }
  EXPECT_LT(worst, 1e-12) << "the closed form should agree to round-off";
}

TEST(SpringTerm, CollapsedSpringsAreInadmissible) {
  // Distance springs of rest length 1 m and 0.5 m (both collapsed below 1e-9 m: max(l0, 1)
  // times 1e-9), and a unilateral one, which is slack (admissible) at any length ≤ l0.
  struct Case {
    SpringKind kind;
    double rest;
  };
  for (const double sep : {0.0, 5e-10, 2e-9, 0.3})
    for (const Case c : {Case{SpringKind::kDistance, 1.0}, Case{SpringKind::kDistance, 0.5},
                         Case{SpringKind::kUnilateral, 0.5}}) {
      ParticleFixture f(Integrator::kBdf2, 0.02, 10);
      f.particles({Vec3(0, 0, 0), Vec3(sep, 0, 0)}, {Vec3::Zero(), Vec3::Zero()}, {1.0, 2.0});
      const Spring spring = f.spring(c.kind, f.point(0), f.point(1), 50.0, 0.0, c.rest);
      f.model->add_term(std::make_unique<SpringTerm>(f.model.get(), std::vector<Spring>{spring}));
      f.model->finalize();
      VecX q(6), v = VecX::Zero(6), a = VecX::Zero(6);
      q << 0, 0, 0, sep, 0, 0;
      const TermContext ctx{q, v, a, f.model->params().defaults(), 3, f.model->scheme()};
      std::string why;
      const bool collapsed = c.kind == SpringKind::kDistance && sep <= 1e-9;
      EXPECT_EQ(f.model->terms().back()->admissible(ctx, &why), !collapsed) << "separation " << sep << ", rest " << c.rest;
      if (collapsed) {
        EXPECT_NE(why.find(spring.label), std::string::npos) << why;
      }
    }
}

namespace sheet8_plane_force_test {
// Every field of two force records, byte for byte (signed zeros count).
void expect_same_force_bits(const ContactForce& a, const ContactForce& b, const std::string& where) {
  EXPECT_EQ(a.regime, b.regime) << where;
  const auto same = [](const auto& u, const auto& v) { return std::memcmp(u.data(), v.data(), sizeof(double) * u.size()) == 0; };
  EXPECT_TRUE(same(a.f, b.f)) << where;
  EXPECT_TRUE(same(a.df_dx, b.df_dx)) << where << "\n" << a.df_dx << "\n" << b.df_dx;
  EXPECT_TRUE(same(a.df_dxdot, b.df_dxdot)) << where;
  EXPECT_TRUE(same(a.df_dkn, b.df_dkn)) << where;
  EXPECT_TRUE(same(a.df_dkd, b.df_dkd)) << where;
  EXPECT_TRUE(same(a.df_dkt, b.df_dkt)) << where;
  EXPECT_TRUE(same(a.df_dcf, b.df_dcf)) << where;
  EXPECT_TRUE(same(a.df_dw, b.df_dw)) << where;
  EXPECT_TRUE(same(a.predictor_shift, b.predictor_shift)) << where;
  for (const auto& [u, v] : {std::pair{a.gap, b.gap}, std::pair{a.normal_force, b.normal_force},
                             std::pair{a.friction_force, b.friction_force}})
    EXPECT_EQ(std::memcmp(&u, &v, sizeof u), 0) << where;
}
}  // namespace sheet8_plane_force_test

// contact_force()'s PlaneObstacle overload skips the products with the plane's zero Hessian
// (docs/solver.md, "Sheet flip, eighth round"): every field of its record is the general
// path's byte for byte, zero entries' signs included, for an axis-aligned plane (exact zeros
// in n nᵀ) and a tilted one; velocities with ±0 components; linear (with and without the stick
// predictor) and tanh friction; w = 0 and w > 0; a damping ramp or the switch.
TEST(ContactForce, PlaneOverloadMatchesTheGeneralPathBitForBit) {
  using sheet8_plane_force_test::expect_same_force_bits;
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  int touching = 0;
  for (const Vec3& normal : {Vec3(0, 0, 1), Vec3(0.1, -0.2, 1.0), Vec3(0, 1, 0)}) {
    const PlaneObstacle plane("floor", -1, Vec3(0.3, -0.1, 0.02), normal);
    const Obstacle& general = plane;
    for (const ContactModel model : {ContactModel::kLinear, ContactModel::kTanh})
      for (const double w : {0.0, 0.01})
        for (const double ramp : {0.0, 0.02})
          for (const double ratio : {0.0, 5.0}) {
            if (model == ContactModel::kTanh && ratio > 0.0) continue;
            ContactCoefficients c;
            c.model = model;
            c.kn = 1e3;
            c.kd = 3.0;
            c.kt = 10.0;
            c.cf = 0.4;
            c.smoothing = w;
            c.damping_ramp = ramp;
            for (int t = 0; t < 200; ++t) {
              // A point at gap ∈ (−0.02, 0.02) m: separated, in the smoothing band and in contact.
              const Vec3 x = plane.point() + Vec3(unit(rng), unit(rng), unit(rng));
              const Vec3 on = x - plane.normal().dot(x - plane.point()) * plane.normal() + 0.02 * unit(rng) * plane.normal();
              Vec3 xdot;
              for (int i = 0; i < 3; ++i) {
                const int pick = static_cast<int>(rng() % 4);
                xdot[i] = pick == 0 ? 0.0 : pick == 1 ? -0.0 : (pick == 2 ? 1e-3 : 2.0) * unit(rng);
              }
              const ContactForce fast = contact_force(on, xdot, plane, c, ratio);
              touching += fast.regime != ContactRegime::kSeparated;
              expect_same_force_bits(fast, contact_force(on, xdot, general, c, ratio),
                                     "trial " + std::to_string(t) + " w " + std::to_string(w));
            }
          }
  }
  EXPECT_GT(touching, 1000);
}

// SpringTerm::admissible() tests the particle pairs over pairs_ and then the other springs, and
// names a collapsed spring only from the ordered loop: the first collapsed spring in spring order
// is named even when a later particle pair collapses too (docs/solver.md, "Sheet flip, eighth
// round").
TEST(SpringTerm, AdmissibleNamesTheFirstCollapsedSpringInOrder) {
  const Vec3 world(0, 2, 0);
  for (const bool other_collapsed : {false, true})
    for (const bool pair_collapsed : {false, true}) {
      ParticleFixture f(Integrator::kBdf2, 0.02, 10);
      const Vec3 p2 = other_collapsed ? world : world + Vec3(0.5, 0, 0);
      const Vec3 p3 = pair_collapsed ? p2 : p2 + Vec3(0, 0, 0.5);
      const std::vector<Vec3> xs{Vec3(0, 0, 0), Vec3(1, 0, 0), p2, p3};
      f.particles(xs, std::vector<Vec3>(4, Vec3::Zero()), std::vector<double>(4, 1.0));
      std::vector<Spring> springs{
          f.spring(SpringKind::kDistance, f.point(0), f.point(1), 50.0, 0.0, 1.0),
          f.spring(SpringKind::kDistance, Anchor::world_point(world, "w"), f.point(2), 50.0, 0.0, 1.0),
          f.spring(SpringKind::kDistance, f.point(2), f.point(3), 50.0, 0.0, 0.5),
          f.spring(SpringKind::kZeroLength, f.point(0), f.point(3), 50.0, 0.0, 0.0),
          f.spring(SpringKind::kUnilateral, f.point(3), f.point(2), 50.0, 0.0, 0.5)};
      const std::string other_label = springs[1].label, pair_label = springs[2].label;
      f.model->add_term(std::make_unique<SpringTerm>(f.model.get(), std::move(springs)));
      f.model->finalize();
      VecX q(12), v = VecX::Zero(12), a = VecX::Zero(12);
      for (int k = 0; k < 4; ++k) q.segment<3>(3 * k) = xs[k];
      const TermContext ctx{q, v, a, f.model->params().defaults(), 3, f.model->scheme()};
      const Term& term = *f.model->terms().back();
      std::string why;
      const bool expect_ok = !other_collapsed && !pair_collapsed;
      EXPECT_EQ(term.admissible(ctx, &why), expect_ok);
      EXPECT_EQ(term.admissible(ctx, nullptr), expect_ok);
      if (expect_ok) {
        EXPECT_TRUE(why.empty()) << why;
      } else {
        const std::string& first = other_collapsed ? other_label : pair_label;
        EXPECT_EQ(why, "spring " + first + " has collapsed to zero length (direction undefined)");
      }
    }
}

// Assembly's pair scatter (add_point_pair_lane, add_point_pair_step) adds components and rows 0
// and 1 as one two-double vector (docs/solver.md, "Sheet flip, ninth round"): every entry of r,
// r_abs and jac must be the scalar loop's r + a, r_abs + |a|, r − a, jac ± s to the bit (two
// NaNs count as equal), also for ±0, subnormals, infinities and NaNs in the arrays and in the
// added values. Four particles, pair stencils (0, 1), (2, 1), (3, 0) and (1, 3) with point maps,
// lane stride 8.
TEST(Assembly, PairScatterAddsEachEntryLikeTheScalarLoop) {
  const int n = 12;
  StencilSet stencils;
  const int pairs[4][2] = {{0, 1}, {2, 1}, {3, 0}, {1, 3}};
  for (const auto& pr : pairs) {
    const int a = 3 * pr[0], b = 3 * pr[1];
    stencils.add({a, a + 1, a + 2, b, b + 1, b + 2});
  }
  const SparsePattern pattern(n, stencils);
  std::mt19937 rng(91);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const double specials[] = {0.0, -0.0, 5e-324, -5e-324, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                             -std::numeric_limits<double>::quiet_NaN(), 1e308, -1e-310};
  auto value = [&]() {
    const double u = 0.5 + 0.5 * unit(rng);
    return u < 0.4 ? specials[static_cast<int>(20.0 * u) % 10] : unit(rng) * std::pow(10.0, 6.0 * unit(rng));
  };
  // Bit for bit, except that two NaNs count as the same: which operand's payload (and sign) a
  // sum of two NaNs carries is not fixed by IEEE 754, and compilers may swap the operands of a
  // commutative addition (clang-14 and GCC 12 differ here).
  auto same = [](const VecX& x, const VecX& y) {
    if (x.size() != y.size()) return false;
    for (Eigen::Index k = 0; k < x.size(); ++k)
      if (!(std::isnan(x[k]) && std::isnan(y[k])) && std::memcmp(&x[k], &y[k], sizeof(double)) != 0) return false;
    return true;
  };
  for (int trial = 0; trial < 200; ++trial) {
    const bool step = trial % 2 == 1;
    Assembly lane(&pattern, &stencils), matrix(&pattern, &stencils), scalar(&pattern, &stencils);
    for (Assembly* out : {&lane, &matrix, &scalar})
      out->reset(step ? EvalMode::kResidualAndStepJacobian : EvalMode::kResidual, {1.0, 75.0, 0.0});
    for (int k = 0; k < n; ++k) {
      lane.r[k] = value();
      lane.r_abs[k] = std::abs(value());
    }
    if (step)
      for (int k = 0; k < pattern.nnz(); ++k) lane.jac[k] = value();
    matrix.r = scalar.r = lane.r;
    matrix.r_abs = scalar.r_abs = lane.r_abs;
    matrix.jac = scalar.jac = lane.jac;
    for (int id = 0; id < 4; ++id) {
      // r_a and the step block in lanes of stride 8 (lane 3), as spring_pairs::Output holds them.
      double ra_lanes[3][8], s_lanes[9][8];
      Vec3 ra;
      Mat3 s;
      for (int c = 0; c < 3; ++c) ra[c] = ra_lanes[c][3] = value();
      for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 3; ++i) s(i, j) = s_lanes[i + 3 * j][3] = value();
      const int da = 3 * pairs[id][0], db = 3 * pairs[id][1];
      ASSERT_TRUE(lane.add_point_pair_lane(id, da, db, &ra_lanes[0][3], step ? &s_lanes[0][3] : nullptr, 8));
      matrix.add_point_pair_step(id, ra, step ? &s : nullptr);
      // The scalar loops the vectors replace.
      for (int c = 0; c < 3; ++c) {
        const double a = ra[c], b = -a;
        scalar.r[da + c] += a;
        scalar.r_abs[da + c] += std::abs(a);
        scalar.r[db + c] += b;
        scalar.r_abs[db + c] += std::abs(b);
      }
      if (!step) continue;
      const int* pm = pattern.point_map(id);
      ASSERT_NE(pm, nullptr);
      for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 3; ++i) {
          const double v = s(i, j);
          scalar.jac[pm[j * 2] + i] += v;
          scalar.jac[pm[1 + j * 2] + i] += -v;
          scalar.jac[pm[(3 + j) * 2] + i] += -v;
          scalar.jac[pm[1 + (3 + j) * 2] + i] += v;
        }
    }
    for (const Assembly* out : {&lane, &matrix}) {
      const char* what = out == &lane ? "lane" : "matrix";
      EXPECT_TRUE(same(out->r, scalar.r)) << what << " r, trial " << trial;
      EXPECT_TRUE(same(out->r_abs, scalar.r_abs)) << what << " r_abs, trial " << trial;
      if (step) {
        EXPECT_TRUE(same(out->jac, scalar.jac)) << what << " jac, trial " << trial;
      }
    }
  }
}

TEST(ParticleTerms, InertiaAndGravity) {
  ParticleFixture f(Integrator::kBdf1, 0.01, 10);
  f.particles({Vec3(0, 0, 1), Vec3(1, 0, 1)}, {Vec3::Zero(), Vec3::Zero()}, {0.5, 1.5});
  f.standard_terms(Vec3(0.3, 0, -9.81));
  f.model->finalize();
  VecX q(6), v(6), a(6);
  q << 0, 0, 1, 1, 0, 1;
  v << 1, 2, 3, 4, 5, 6;
  a << -1, 2, -3, 4, -5, 6;
  DerivativeCheckOptions inertia;
  inertia.expect_da = inertia.expect_dp = true;
  expect_term_ok(*f.model, *f.model->terms()[0], {q, v, a}, inertia);
  DerivativeCheckOptions gravity;
  gravity.expect_dp = true;
  expect_term_ok(*f.model, *f.model->terms()[1], {q, v, a}, gravity);
}

namespace inertia_block_test {
// ParticleInertiaTerm::evaluate as it was before it added m I by its diagonal: the full 3 × 3
// block through Assembly::add<3>.
class FullBlockInertia final : public Term {
 public:
  explicit FullBlockInertia(const ParticleBody* body) : body_(body) {}
  std::string_view name() const override { return "full_block_inertia"; }
  void declare(StencilSet& stencils) override {
    for (int k = 0; k < body_->count(); ++k) {
      const int d = body_->dof(k);
      stencil_.push_back(stencils.add({d, d + 1, d + 2}));
    }
  }
  void evaluate(const TermContext& ctx, Assembly& out) const override {
    for (int k = 0; k < body_->count(); ++k) {
      const double m = ctx.p[body_->mass_param() + k];
      const Vec3 r = m * ctx.a.segment<3>(body_->dof(k));
      const Mat3 dr_da = m * Mat3::Identity();
      out.add<3>(stencil_[k], r, nullptr, nullptr, &dr_da);
    }
  }
  void param_derivatives(const TermContext&, ParamSink&) const override {}

 private:
  const ParticleBody* body_;
  std::vector<int> stencil_;
};
}  // namespace inertia_block_test

// ParticleInertiaTerm adds ∂r/∂a = m I as its diagonal only (Assembly::add_isotropic_a): r,
// r_abs, ka and the step Jacobian must be those of scattering the full block m I, bit for bit
// (its off-diagonal entries are +0), on particles coupled by springs.
TEST(ParticleTerms, InertiaDiagonalMatchesTheFullBlockBitForBit) {
  const std::vector<Vec3> x = {Vec3(0, 0, 1), Vec3(1, 0, 1), Vec3(0.3, 0.7, 1.2)};
  ParticleFixture f(Integrator::kBdf2, 0.01, 10);
  f.particles(x, std::vector<Vec3>(3, Vec3::Zero()), {0.5, 1.5, 0.37});
  f.model->add_term(std::make_unique<ParticleInertiaTerm>(f.body));
  const Spring s01 = f.spring(SpringKind::kDistance, f.point(0), f.point(1), 50.0, 0.1, 0.9);
  const Spring s12 = f.spring(SpringKind::kDistance, f.point(1), f.point(2), 60.0, 0.2, 0.8);
  f.model->add_term(std::make_unique<SpringTerm>(f.model.get(), std::vector<Spring>{s01, s12}));
  f.model->add_term(std::make_unique<inertia_block_test::FullBlockInertia>(f.body));
  f.model->finalize();
  const Model& m = *f.model;
  const int n = m.num_dofs();
  VecX q(n), v(n), a(n);
  q << 0, 0, 1, 1, 0, 1, 0.3, 0.7, 1.2;
  v << 1, 2, 3, 4, 5, 6, 7, 8, 9;
  a << -1.1, 2.3, -3.7, 4.1, -5.3, 6.7, 0.1, -0.2, 1e-3;
  const VecX p = m.params().defaults();
  const TermContext ctx{q, v, a, p, 3, m.scheme()};
  for (const auto& [mode, w] : {std::pair{EvalMode::kResidual, JacobianWeights{1.0, 0.0, 0.0}},
                                std::pair{EvalMode::kResidualAndJacobians, JacobianWeights{1.0, 0.0, 0.0}},
                                std::pair{EvalMode::kResidualAndStepJacobian, JacobianWeights{1.0, 150.0, 22500.0}},
                                std::pair{EvalMode::kResidualAndStepJacobian, JacobianWeights{1.0, 150.0, 0.0}}}) {
    // Each inertia after the springs' blocks, so that its diagonal lands on nonzero entries.
    Assembly diag(&m.pattern(), &m.stencils()), block(&m.pattern(), &m.stencils());
    diag.reset(mode, w);
    block.reset(mode, w);
    m.terms()[1]->evaluate(ctx, diag);
    m.terms()[1]->evaluate(ctx, block);
    m.terms()[0]->evaluate(ctx, diag);
    m.terms()[2]->evaluate(ctx, block);
    const std::string what = "mode " + std::to_string(static_cast<int>(mode)) + ", wa " + std::to_string(w.wa);
    EXPECT_GT(diag.r.norm(), 1.0) << what;
    expect_same_assembly_bits(diag, block, what);
  }
}

TEST(DerivativeHarness, DetectsAWrongDerivative) {
  // A term whose declared ∂r/∂q is off by 1 % must fail: the harness is not vacuous.
  class Wrong final : public Term {
   public:
    explicit Wrong(int dof) : dof_(dof) {}
    std::string_view name() const override { return "wrong"; }
    void declare(StencilSet& s) override { id_ = s.add({dof_, dof_ + 1, dof_ + 2}); }
    void evaluate(const TermContext& ctx, Assembly& out) const override {
      const Vec3 x = ctx.q.segment<3>(dof_);
      const Vec3 r = x.array().cube();
      const Mat3 dq = 1.01 * Mat3(3.0 * x.array().square().matrix().asDiagonal());
      out.add<3>(id_, r, &dq, nullptr, nullptr);
    }

   private:
    int dof_, id_ = -1;
  };
  ParticleFixture f(Integrator::kBdf1, 0.01, 10);
  f.particles({Vec3(1, 2, 3)}, {Vec3::Zero()}, {1.0});
  f.model->add_term(std::make_unique<Wrong>(0));
  f.model->finalize();
  DerivativeCheckOptions opt;
  opt.expect_dq = true;
  const auto res = check_term_derivatives(*f.model, *f.model->terms()[0], Vec3(1, 2, 3), Vec3::Zero(), Vec3::Zero(),
                                          f.model->params().defaults(), 1, opt);
  EXPECT_FALSE(res.ok);
  // And a term with no derivative at all cannot satisfy an expect_* flag.
  DerivativeCheckOptions vacuous;
  vacuous.expect_dv = true;
  const auto res2 = check_term_derivatives(*f.model, *f.model->terms()[0], Vec3(1, 2, 3), Vec3::Zero(), Vec3::Zero(),
                                           f.model->params().defaults(), 1, vacuous);
  EXPECT_FALSE(res2.ok);
}

}  // namespace
}  // namespace addsim
