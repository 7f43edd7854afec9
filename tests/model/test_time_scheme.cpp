// BDF coefficient sets: steady state, start-up steps, exactness on polynomials.

#include <gtest/gtest.h>

#include <cmath>

#include "addsim/model/time_scheme.h"

namespace addsim {
namespace {

TEST(TimeScheme, SteadyCoefficientsAreTheConvolution) {
  const TimeScheme s = TimeScheme::make(Integrator::kBdf2, 0.1, 10);
  const std::vector<double> expected{9.0 / 4, -6.0, 11.0 / 2, -2.0, 1.0 / 4};
  ASSERT_EQ(s.ca.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_DOUBLE_EQ(s.ca[k], expected[k]);
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_DOUBLE_EQ(s.at(50).ca[k], expected[k]);
  EXPECT_EQ(s.at(50).v0_v, 0.0);
  EXPECT_EQ(s.at(50).v0_a, 0.0);
}

// v^i and a^i from the coefficient sets on a sampled trajectory q(t) with q'(0) = v0.
void rates(const TimeScheme& s, int i, double (*q)(double), double v0, double* v, double* a) {
  const StepCoefficients& c = s.at(i);
  *v = c.v0_v * v0;
  *a = c.v0_a / s.h * v0;
  for (int k = 0; k <= s.window() && i - k >= 0; ++k) {
    *v += c.cv[k] / s.h * q((i - k) * s.h);
    *a += c.ca[k] / (s.h * s.h) * q((i - k) * s.h);
  }
}

TEST(TimeScheme, Bdf2IsExactForQuadraticsFromTheFirstStep) {
  const TimeScheme s = TimeScheme::make(Integrator::kBdf2, 0.05, 20);
  auto q = [](double t) { return 1.0 + 2.0 * t - 3.0 * t * t; };
  for (int i = 1; i <= 8; ++i) {
    double v, a;
    rates(s, i, q, 2.0, &v, &a);
    EXPECT_NEAR(v, 2.0 - 6.0 * i * s.h, 1e-11) << "step " << i;
    EXPECT_NEAR(a, -6.0, 1e-9) << "step " << i;
  }
}

TEST(TimeScheme, Bdf1StartsFromTheInitialVelocity) {
  const TimeScheme s = TimeScheme::make(Integrator::kBdf1, 0.1, 5);
  EXPECT_DOUBLE_EQ(s.at(1).cv[0], 1.0);
  EXPECT_DOUBLE_EQ(s.at(1).cv[1], -1.0);
  EXPECT_DOUBLE_EQ(s.at(1).ca[0], 1.0);
  EXPECT_DOUBLE_EQ(s.at(1).ca[1], -1.0);
  EXPECT_DOUBLE_EQ(s.at(1).v0_a, -1.0);
  EXPECT_DOUBLE_EQ(s.at(2).ca[2], 1.0);
  EXPECT_DOUBLE_EQ(s.at(2).v0_a, 0.0);
}

// v^i and a^i of step i of scheme s with the states q[0..i] (general per-step h and a⁰).
void rates_of(const TimeScheme& s, int i, const std::vector<double>& q, double v0, double a0, double* v, double* a) {
  const StepCoefficients& c = s.at(i);
  *v = c.v0_v * v0 + c.a0_v * c.h * a0;
  *a = c.v0_a / c.h * v0 + c.a0_a * a0;
  for (int k = 0; k <= s.window() && i - k >= 0; ++k) {
    *v += c.cv[k] / c.h * q[i - k];
    *a += c.ca[k] / (c.h * c.h) * q[i - k];
  }
}

// Scalar BDF run of q̈ = g: each step solves a^i = g for q^i.
std::vector<double> free_fall(const TimeScheme& s, double v0, double g, int n) {
  std::vector<double> q{0.0};
  for (int i = 1; i <= n; ++i) {
    q.push_back(0.0);
    double v, a;
    rates_of(s, i, q, v0, g, &v, &a);  // a with q^i = 0
    const StepCoefficients& c = s.at(i);
    q[i] = (g - a) * c.h * c.h / c.ca[0];
  }
  return q;
}

TEST(TimeScheme, StartupsUnderConstantAcceleration) {
  const double h = 0.01, g = -9.81, v0 = 0.7;
  const int n = 60;
  for (Startup su : {Startup::kTrapezoidal, Startup::kConstantAcceleration}) {
    const std::vector<double> q = free_fall(TimeScheme::make(Integrator::kBdf2, h, n, su), v0, g, n);
    for (int i = 1; i <= n; ++i) {
      const double t = i * h;
      EXPECT_NEAR(q[i], v0 * t + 0.5 * g * t * t, 1e-12) << to_string(su) << " step " << i;
    }
  }
  // Constant velocity: the parabola from (q⁰ + ¾h²g, v⁰ − ½hg) once the parasitic root 1/3 decayed.
  const std::vector<double> q = free_fall(TimeScheme::make(Integrator::kBdf2, h, n, Startup::kConstantVelocity), v0, g, n);
  for (int i = 40; i <= n; ++i) {
    const double t = i * h;
    EXPECT_NEAR(q[i], 0.75 * h * h * g + (v0 - 0.5 * h * g) * t + 0.5 * g * t * t, 1e-12) << "step " << i;
  }
  // BDF1 first step: one implicit-Euler step (q¹ = h v⁰ + h² g), then BDF2.
  const std::vector<double> qb = free_fall(TimeScheme::make(Integrator::kBdf2, h, n, Startup::kBdf1FirstStep), v0, g, n);
  EXPECT_NEAR(qb[1], h * v0 + h * h * g, 1e-15);
  EXPECT_EQ(TimeScheme::make(Integrator::kBdf2, h, n, Startup::kBdf1FirstStep).at(1).order, 1);
  EXPECT_EQ(TimeScheme::make(Integrator::kBdf2, h, n, Startup::kBdf1FirstStep).at(2).order, 2);
}

// A grid of full steps has the uniform scheme's coefficients exactly; a grid with sub-steps
// reproduces linear motion exactly (v exact, a = 0) through every change of step size, and
// uses the variable-step BDF2 differences except where the size grows more than twofold.
TEST(TimeScheme, GridsAreConsistent) {
  for (Startup su : {Startup::kTrapezoidal, Startup::kConstantVelocity, Startup::kConstantAcceleration,
                     Startup::kBdf1FirstStep}) {
    const TimeScheme s = TimeScheme::make(Integrator::kBdf2, 0.02, 20, su);
    TimeScheme g = s.grid();
    for (int i = 1; i <= 12; ++i) g.push_step(0, i);
    for (int i = 1; i <= 12; ++i) {
      EXPECT_EQ(g.at(i).cv, s.at(i).cv) << i;
      EXPECT_EQ(g.at(i).ca, s.at(i).ca) << i;
      EXPECT_EQ(g.at(i).v0_v, s.at(i).v0_v);
      EXPECT_EQ(g.at(i).v0_a, s.at(i).v0_a);
      EXPECT_EQ(g.at(i).a0_v, s.at(i).a0_v);
      EXPECT_EQ(g.at(i).a0_a, s.at(i).a0_a);
      EXPECT_EQ(g.at(i).h, s.h);
    }
    // Sub-steps of sizes h/2^depth; the size grows fourfold from step 12 to 13 (BDF1 there).
    TimeScheme sub = s.grid();
    const std::vector<int> depth{0, 0, 1, 2, 2, 1, 0, 0, 0, 1, 2, 2, 0, 0};
    std::vector<double> t{0.0};
    for (std::size_t k = 0; k < depth.size(); ++k) {
      sub.push_step(depth[k], static_cast<int>(k) + 1);
      t.push_back(t.back() + sub.at(static_cast<int>(k) + 1).h);
    }
    const double v0 = 1.3;
    std::vector<double> q;
    for (double tk : t) q.push_back(0.4 + v0 * tk);
    for (int i = 1; i <= static_cast<int>(depth.size()); ++i) {
      double v, a;
      rates_of(sub, i, q, v0, 0.0, &v, &a);
      EXPECT_NEAR(v, v0, 1e-12) << to_string(su) << " step " << i;
      EXPECT_NEAR(a, 0.0, 1e-9) << to_string(su) << " step " << i;
      const int expected_order = i == 1 ? s.at(1).order : (depth[i - 2] - depth[i - 1] >= 2 ? 1 : 2);
      EXPECT_EQ(sub.at(i).order, expected_order) << to_string(su) << " step " << i;
    }
    sub.pop_step();
    EXPECT_EQ(sub.grid_steps(), static_cast<int>(depth.size()) - 1);
    // Variable-step BDF2 is exact on quadratics: a step whose V and A read only BDF2 forms
    // (steps 6 and 7: sizes ½ → h → h after ¼ ¼) sees q̈ exactly.
    if (su == Startup::kConstantVelocity || su == Startup::kConstantAcceleration) {
      std::vector<double> qq;
      for (double tk : t) qq.push_back(0.4 + v0 * tk - 2.5 * tk * tk);
      for (int i : {6, 7, 8}) {
        double v, a;
        rates_of(sub, i, qq, v0, -5.0, &v, &a);
        EXPECT_NEAR(v, v0 - 5.0 * t[i], 1e-10) << to_string(su) << " step " << i;
        EXPECT_NEAR(a, -5.0, 1e-7) << to_string(su) << " step " << i;
      }
    }
  }
}

}  // namespace
}  // namespace addsim
