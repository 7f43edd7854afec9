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

}  // namespace
}  // namespace addsim
