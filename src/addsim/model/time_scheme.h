#pragma once
/// BDF time-discretisation coefficients (DESIGN.md §1). v^i = (1/h) Σ_k cv[k] q^{i-k},
/// a^i = (1/h²) Σ_k ca[k] q^{i-k}, with ca = cv ∗ cv (discrete convolution).

#include <string>
#include <vector>

namespace addsim {

enum class Integrator { kBdf1, kBdf2 };

struct TimeScheme {
  Integrator integrator = Integrator::kBdf2;
  double h = 0.01;            ///< time step, s
  int steps = 100;            ///< number of steps n
  std::vector<double> cv;     ///< velocity coefficients (order + 1)
  std::vector<double> ca;     ///< acceleration coefficients (2·order + 1)

  static TimeScheme make(Integrator integrator, double h, int steps);
  /// Number of past states a step reads: q^{i-1} … q^{i-K}.
  int window() const { return static_cast<int>(ca.size()) - 1; }
  double cv_k(int k) const { return k < static_cast<int>(cv.size()) ? cv[k] : 0.0; }
};

const char* to_string(Integrator integrator);

}  // namespace addsim
