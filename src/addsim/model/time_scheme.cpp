#include "addsim/model/time_scheme.h"

#include <map>

namespace addsim {

namespace {
// A velocity or acceleration as a linear form: coefficients of q^m (absolute index m) and of v⁰.
struct Form {
  std::map<int, double> q;
  double v0 = 0.0;
  void add(const Form& o, double w) {
    for (const auto& [m, c] : o.q) q[m] += w * c;
    v0 += w * o.v0;
  }
};
}  // namespace

TimeScheme TimeScheme::make(Integrator integrator, double h, int steps) {
  TimeScheme s;
  s.integrator = integrator;
  s.h = h;
  s.steps = steps;
  s.cv = integrator == Integrator::kBdf1 ? std::vector<double>{1.0, -1.0} : std::vector<double>{1.5, -2.0, 0.5};
  s.ca.assign(2 * s.cv.size() - 1, 0.0);
  for (size_t i = 0; i < s.cv.size(); ++i)
    for (size_t j = 0; j < s.cv.size(); ++j) s.ca[i + j] += s.cv[i] * s.cv[j];

  // Velocity forms h·V_j and acceleration forms h²·a^i (v⁰ terms scaled to match).
  const int order = static_cast<int>(s.cv.size()) - 1;
  const int last = 2 * order + 2;  // beyond this every step uses the steady coefficients
  std::vector<Form> V(last + 1);
  V[0].v0 = 1.0;  // V_0 = v⁰ (as h·V_0 the v⁰ coefficient is h; kept unscaled, see below)
  for (int j = 1; j <= last; ++j) {
    if (order == 2 && j == 1) {
      V[j].q[1] = 2.0, V[j].q[0] = -2.0, V[j].v0 = -1.0;  // h·V_1 = 2q¹ − 2q⁰ − h v⁰
    } else {
      for (int k = 0; k <= order; ++k) V[j].q[j - k] += s.cv[k];
    }
  }
  // In h·V_j the v⁰ coefficient multiplies h v⁰; store it per unit h below.
  s.table_.resize(last);
  for (int i = 1; i <= last; ++i) {
    Form A;  // h²·a^i = Σ_k c[k] (h·V_{i-k}); BDF1 at i = 1 for BDF2 (V_{-1} does not exist)
    const std::vector<double> c = (order == 2 && i == 1) ? std::vector<double>{1.0, -1.0} : s.cv;
    for (int k = 0; k < static_cast<int>(c.size()); ++k) A.add(V[i - k], c[k]);
    StepCoefficients sc;
    sc.cv.assign(s.window() + 1, 0.0);
    sc.ca.assign(s.window() + 1, 0.0);
    for (const auto& [m, w] : V[i].q) sc.cv[i - m] = w;
    for (const auto& [m, w] : A.q) sc.ca[i - m] = w;
    // h·V_i contains (coef)·h v⁰ → v^i gets coef·v⁰; h²·a^i contains (coef)·h v⁰ → a^i gets (coef/h) v⁰.
    sc.v0_v = V[i].v0;
    sc.v0_a = A.v0;
    s.table_[i - 1] = std::move(sc);
  }
  return s;
}

const StepCoefficients& TimeScheme::at(int i) const {
  const int idx = std::min(i, static_cast<int>(table_.size())) - 1;
  return table_[idx];
}

const char* to_string(Integrator integrator) { return integrator == Integrator::kBdf1 ? "bdf1" : "bdf2"; }

}  // namespace addsim
