// Physical validation of the particle core against closed forms: free fall (BDF order),
// spring period, sliding on an incline, sticking creep, and the restitution formula
// of paper eq. restitution.

#include <gtest/gtest.h>

#include <cmath>

#include "addsim/solver/simulator.h"
#include "../support/particle_fixture.h"

namespace addsim {
namespace {

using testing::ParticleFixture;
constexpr double kG = 9.81;

// z(T) error of a particle falling from rest for T = 1 s.
double free_fall_error(Integrator integrator, double h) {
  const int steps = static_cast<int>(std::lround(1.0 / h));
  ParticleFixture f(integrator, h, steps);
  f.particles({Vec3(0, 0, 10)}, {Vec3(0.5, 0, 0)}, {2.0});
  f.standard_terms(Vec3(0, 0, -kG));
  f.model->finalize();
  Simulator sim(*f.model);
  const Trajectory t = sim.run(f.model->params().defaults());
  EXPECT_TRUE(t.completed()) << t.failure;
  const double T = steps * h;
  return std::abs(t.q.back()[2] - (10.0 - 0.5 * kG * T * T));
}

TEST(FreeFall, Bdf1IsFirstOrderAndBdf2ExactForConstantAcceleration) {
  // BDF1 loses O(h) in its first step (a¹ = (V_1 − v⁰)/h is the mean acceleration over a
  // step that V_1 lags by h/2); BDF2 with its second-order start-up (time_scheme.h) is
  // exact for quadratic trajectories, so free fall only shows round-off.
  const double hs[3] = {0.02, 0.01, 0.005};
  double e[3];
  for (int k = 0; k < 3; ++k) e[k] = free_fall_error(Integrator::kBdf1, hs[k]);
  EXPECT_NEAR(std::log2(e[0] / e[1]), 1.0, 0.05) << e[0] << " " << e[1] << " " << e[2];
  EXPECT_NEAR(std::log2(e[1] / e[2]), 1.0, 0.05) << e[0] << " " << e[1] << " " << e[2];
  for (double h : hs) EXPECT_LT(free_fall_error(Integrator::kBdf2, h), 1e-9) << "h = " << h;
}

// Max z error over t ∈ [0, 1 s] of an undamped 1 kg particle on a 100 N/m zero-length spring, T = 1 s,
// started with both a displacement and a velocity (non-polynomial trajectory).
double oscillator_error(Integrator integrator, double h) {
  const int steps = static_cast<int>(std::lround(1.0 / h));
  ParticleFixture f(integrator, h, steps);
  f.particles({Vec3(0, 0, 0.1)}, {Vec3(0, 0, 0.5)}, {1.0});
  f.standard_terms(Vec3::Zero());
  std::vector<Spring> springs{f.spring(SpringKind::kZeroLength, Anchor::world_point(Vec3::Zero(), "w"), f.point(0), 100.0, 0.0, 0.0)};
  f.model->add_term(std::make_unique<SpringTerm>(f.model.get(), springs));
  f.model->finalize();
  Simulator sim(*f.model);
  const Trajectory t = sim.run(f.model->params().defaults());
  EXPECT_TRUE(t.completed()) << t.failure;
  // Maximum error over the run (a single instant can sit where phase and amplitude
  // errors cancel).
  const double w = 10.0;
  double e = 0.0;
  for (int i = 0; i <= steps; ++i)
    e = std::max(e, std::abs(t.q[i][2] - (0.1 * std::cos(w * i * h) + 0.05 * std::sin(w * i * h))));
  return e;
}

TEST(Oscillator, MeasuredOrderOfBdf1AndBdf2) {
  const double hs[3] = {2e-3, 1e-3, 5e-4};
  for (Integrator integrator : {Integrator::kBdf1, Integrator::kBdf2}) {
    double e[3];
    for (int k = 0; k < 3; ++k) e[k] = oscillator_error(integrator, hs[k]);
    const double expected = integrator == Integrator::kBdf1 ? 1.0 : 2.0;
    EXPECT_NEAR(std::log2(e[0] / e[1]), expected, 0.15) << to_string(integrator) << " " << e[0] << " " << e[1];
    EXPECT_NEAR(std::log2(e[1] / e[2]), expected, 0.15) << to_string(integrator) << " " << e[1] << " " << e[2];
  }
}

TEST(SpringOscillator, PeriodWithinHalfPercent) {
  // 1 kg on a 100 N/m distance spring from a fixed point, with gravity: T = 2π sqrt(m/k).
  const double k = 100.0, m = 1.0, h = 1e-3, rest = 0.5;
  const int steps = 3000;
  ParticleFixture f(Integrator::kBdf2, h, steps);
  const double z_eq = 1.0 - rest - m * kG / k;
  f.particles({Vec3(0, 0, z_eq - 0.05)}, {Vec3::Zero()}, {m});
  f.standard_terms(Vec3(0, 0, -kG));
  std::vector<Spring> springs{f.spring(SpringKind::kDistance, Anchor::world_point(Vec3(0, 0, 1), "w"), f.point(0), k, 0.0, rest)};
  f.model->add_term(std::make_unique<SpringTerm>(f.model.get(), springs));
  f.model->finalize();
  Simulator sim(*f.model);
  const Trajectory t = sim.run(f.model->params().defaults());
  ASSERT_TRUE(t.completed()) << t.failure;
  // Upward zero crossings of z − z_eq, linearly interpolated.
  std::vector<double> crossings;
  for (int i = 1; i <= steps; ++i) {
    const double a = t.q[i - 1][2] - z_eq, b = t.q[i][2] - z_eq;
    if (a < 0 && b >= 0) crossings.push_back(h * (i - 1 + a / (a - b)));
  }
  ASSERT_GE(crossings.size(), 3u);
  const double period = (crossings.back() - crossings.front()) / (crossings.size() - 1);
  const double exact = 2 * M_PI * std::sqrt(m / k);
  EXPECT_NEAR(period / exact, 1.0, 0.005) << "period " << period << " exact " << exact;
}

// One particle resting on z = 0 under gravity tilted by 20° in the x–z plane.
struct InclineRun {
  double x_final = 0.0;
  double x_at_1s = 0.0;
};

InclineRun incline(ContactModel model, double mu, double kt) {
  const double theta = 20.0 * M_PI / 180.0, h = 1e-3, kn = 1e5, m = 1.0;
  const int steps = 2000;
  ParticleFixture f(Integrator::kBdf2, h, steps);
  const double depth = m * kG * std::cos(theta) / kn;  // static penetration: starts in equilibrium
  f.particles({Vec3(0, 0, -depth)}, {Vec3::Zero()}, {m});
  f.contact_params(model, kn, 0.0, kt);
  f.plane(Vec3::Zero(), Vec3(0, 0, 1), mu);
  f.standard_terms(Vec3(kG * std::sin(theta), 0, -kG * std::cos(theta)));
  f.model->finalize();
  Simulator sim(*f.model);
  const Trajectory t = sim.run(f.model->params().defaults());
  EXPECT_TRUE(t.completed()) << t.failure;
  return {t.q.back()[0], t.q[1000][0]};
}

TEST(Incline, SlidesHalfGSinMinusMuCosTSquared) {
  const double theta = 20.0 * M_PI / 180.0, mu = 0.2;
  const double exact = 0.5 * kG * (std::sin(theta) - mu * std::cos(theta)) * 4.0;  // 3.023 m
  for (ContactModel model : {ContactModel::kLinear, ContactModel::kTanh}) {
    const InclineRun r = incline(model, mu, 1e4);
    EXPECT_NEAR(r.x_final / exact, 1.0, 0.01) << to_string(model) << " slid " << r.x_final << " m, exact " << exact;
  }
}

TEST(Incline, SticksWithBoundedPenaltyCreep) {
  // μ = 0.8 > tan 20°: the penalty friction holds the particle with a creep speed fixed by
  // the stick law: linear k_t v = m g sin θ; tanh c_f f_n tanh(k_t v/(c_f f_n)) = m g sin θ.
  const double theta = 20.0 * M_PI / 180.0, mu = 0.8, kt = 1e4, m = 1.0;
  const double ft = m * kG * std::sin(theta), fn = m * kG * std::cos(theta);
  const double creep_linear = ft / kt;
  const double creep_tanh = mu * fn / kt * std::atanh(ft / (mu * fn));
  for (ContactModel model : {ContactModel::kLinear, ContactModel::kTanh}) {
    const InclineRun r = incline(model, mu, kt);
    const double creep = model == ContactModel::kLinear ? creep_linear : creep_tanh;
    // Creep over 2 s equals the creep speed times the time, within 5 %.
    EXPECT_NEAR(r.x_final / (2.0 * creep), 1.0, 0.05) << to_string(model) << " moved " << r.x_final << " m";
    EXPECT_LT(r.x_final, 1e-3) << to_string(model);
  }
}

// Velocity ratio of a particle hitting a wall with contact damping (paper eq. restitution).
double rebound_ratio(double kn, double kd, double m, double h) {
  const double v_in = 1.0;
  const int steps = static_cast<int>(0.1 / h);
  ParticleFixture f(Integrator::kBdf2, h, steps);
  f.particles({Vec3(0, 0, 0.01)}, {Vec3(0, 0, -v_in)}, {m});
  f.contact_params(ContactModel::kLinear, kn, kd);
  f.plane(Vec3::Zero(), Vec3(0, 0, 1), 0.0);
  f.standard_terms(Vec3::Zero());
  f.model->finalize();
  Simulator sim(*f.model);
  const Trajectory t = sim.run(f.model->params().defaults());
  EXPECT_TRUE(t.completed()) << t.failure;
  // Leaving contact: z crosses 0 upwards; take the BDF velocity at that step.
  for (int i = 2; i < static_cast<int>(t.q.size()); ++i)
    if (t.q[i - 1][2] < 0 && t.q[i][2] >= 0) return t.velocity(f.model->scheme(), i)[2] / v_in;
  ADD_FAILURE() << "particle never left the wall";
  return 0.0;
}

TEST(Restitution, MatchesClosedFormWithinTwoPercent) {
  const double kn = 1e4, m = 1.0, h = 2e-5;
  for (double kd : {5.0, 20.0, 60.0}) {
    const double exact = std::exp(-M_PI * kd / std::sqrt(4 * kn * m - kd * kd));
    const double measured = rebound_ratio(kn, kd, m, h);
    EXPECT_NEAR(measured / exact, 1.0, 0.02) << "kd " << kd << " measured " << measured << " exact " << exact;
  }
}

}  // namespace
}  // namespace addsim
