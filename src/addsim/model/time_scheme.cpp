#include "addsim/model/time_scheme.h"

#include <cmath>

#include "addsim/core/error.h"

namespace addsim {

void RateForm::add(const RateForm& o, double w) {
  for (const auto& [m, c] : o.q) q[m] += w * c;
  v0 += w * o.v0;
  a0 += w * o.a0;
}

TimeScheme TimeScheme::make(Integrator integrator, double h, int steps, Startup startup) {
  TimeScheme s;
  s.integrator = integrator;
  s.startup = startup;
  s.h = h;
  s.steps = steps;
  s.cv = integrator == Integrator::kBdf1 ? std::vector<double>{1.0, -1.0} : std::vector<double>{1.5, -2.0, 0.5};
  s.ca.assign(2 * s.cv.size() - 1, 0.0);
  for (size_t i = 0; i < s.cv.size(); ++i)
    for (size_t j = 0; j < s.cv.size(); ++j) s.ca[i + j] += s.cv[i] * s.cv[j];
  // Beyond step 2·order + 2 no step reads the initial state: every step uses the steady set.
  const int order = static_cast<int>(s.cv.size()) - 1;
  const int last = 2 * order + 2;
  for (int i = 1; i <= last; ++i) s.table_.push_back(s.build_step(i, 0, i));
  s.forms_.clear();
  return s;
}

TimeScheme TimeScheme::grid() const {
  TimeScheme g;
  g.integrator = integrator;
  g.startup = startup;
  g.h = h;
  g.steps = steps;
  g.cv = cv;
  g.ca = ca;
  g.is_grid_ = true;
  return g;
}

StepCoefficients TimeScheme::build_step(int j, int depth, int row) {
  const double rho = std::ldexp(1.0, -depth);  // h_j / h, a power of two: every scaling below is exact
  const double inv = std::ldexp(1.0, depth);
  const int model_order = static_cast<int>(cv.size()) - 1;
  const bool virtual_history = startup == Startup::kConstantVelocity || startup == Startup::kConstantAcceleration;
  // Virtual states before t₀, spaced like the first step: x^{−m} = x⁰ − m ρ₁ (h v⁰) + ½ m² ρ₁² (h² a⁰).
  auto state = [&](int m) {
    RateForm f;
    if (m >= 0) {
      f.q[m] = 1.0;
      return f;
    }
    f.q[0] = 1.0;
    f.v0 = m * rho;
    if (startup == Startup::kConstantAcceleration) f.a0 = 0.5 * m * m * rho * rho;
    return f;
  };
  // BDF coefficients over the nodes t_{m−2}, t_{m−1}, t_m with ω = (t_m − t_{m−1})/(t_{m−1} − t_{m−2})
  // (variable-step BDF2; ω = 1: 3/2, −2, 1/2), in units of 1/(t_m − t_{m−1}).
  auto coefficients = [](int o, double omega) {
    if (o == 1) return std::vector<double>{1.0, -1.0};
    if (omega == 1.0) return std::vector<double>{1.5, -2.0, 0.5};
    return std::vector<double>{(1.0 + 2.0 * omega) / (1.0 + omega), -(1.0 + omega), omega * omega / (1.0 + omega)};
  };
  // h·V of an order-o BDF difference of the states ending at index m, for steps of size ρ h.
  auto bdf_velocity = [&](int o, int m, double omega) {
    RateForm f;
    const std::vector<double> c = coefficients(o, omega);
    for (int k = 0; k <= o; ++k) f.add(state(m - k), c[k] * inv);
    return f;
  };
  if (j == 1) {
    forms_.clear();
    if (virtual_history) {
      forms_.push_back(bdf_velocity(model_order, 0, 1.0));  // h·V_0 (= h v⁰ for BDF2, exact on quadratics)
      vm1_ = bdf_velocity(model_order, -1, 1.0);            // h·V_{−1}
    } else {
      RateForm v0;
      v0.v0 = 1.0;  // V_0 = v⁰
      forms_.push_back(v0);
    }
  }
  ADDSIM_CHECK(static_cast<int>(forms_.size()) == j, "time scheme: steps must be built in order");
  // Order of step j: the model's, with the variable-step BDF2 differences where the step size
  // changes (ω = h_j/h_{j−1} = 1/2, 1/4, … or 2); BDF1 where it grows more than twofold (beyond
  // ω = 1 + √2 variable-step BDF2 loses zero-stability); the start-up's choice at step 1.
  int order = model_order;
  bool trapezoid = false;
  double omega = 1.0;
  if (model_order == 2) {
    if (j == 1) {
      trapezoid = startup == Startup::kTrapezoidal;
      if (startup == Startup::kTrapezoidal || startup == Startup::kBdf1FirstStep) order = 1;
    } else {
      omega = std::ldexp(1.0, table_.back().depth - depth);
      if (omega > 2.0) order = 1;
    }
  }
  auto velocity_form = [&](int m) -> const RateForm& { return m >= 0 ? forms_[m] : vm1_; };
  RateForm V;
  if (trapezoid) {
    // (q¹ − q⁰)/h = (V_0 + V_1)/2: second order, exact for constant acceleration.
    V.add(state(j), 2.0 * inv);
    V.add(state(j - 1), -2.0 * inv);
    V.add(forms_[j - 1], -1.0);
  } else {
    V = bdf_velocity(order, j, omega);
  }
  forms_.push_back(V);
  RateForm A;
  const std::vector<double> c = coefficients(order, omega);
  for (int k = 0; k <= order; ++k) A.add(velocity_form(j - k), c[k] * inv);

  StepCoefficients sc;
  sc.cv.assign(window() + 1, 0.0);
  sc.ca.assign(window() + 1, 0.0);
  for (const auto& [m, w] : V.q) {
    ADDSIM_CHECK(j - m >= 0 && j - m <= window(), "time scheme: velocity reads beyond the window");
    sc.cv[j - m] = w * rho;
  }
  for (const auto& [m, w] : A.q) {
    ADDSIM_CHECK(j - m >= 0 && j - m <= window(), "time scheme: acceleration reads beyond the window");
    sc.ca[j - m] = w * rho * rho;
  }
  // h·V_j holds (coef)·h v⁰ → v^j gets coef·v⁰; h²·A_j holds (coef)·h v⁰ → a^j gets (coef ρ/h_j) v⁰;
  // h·V_j holds (coef)·h² a⁰ → v^j gets (coef/ρ) h_j a⁰; h²·A_j holds (coef)·h² a⁰ → a^j gets coef·a⁰.
  sc.v0_v = V.v0;
  sc.v0_a = A.v0 * rho;
  sc.a0_v = V.a0 * inv;
  sc.a0_a = A.a0;
  sc.h = h * rho;
  sc.row = row;
  sc.order = order;
  sc.depth = depth;
  return sc;
}

const StepCoefficients& TimeScheme::at(int i) const {
  if (is_grid_) {
    ADDSIM_CHECK(i >= 1 && i <= static_cast<int>(table_.size()), "time grid: step outside the grid");
    return table_[i - 1];
  }
  const int idx = std::min(i, static_cast<int>(table_.size())) - 1;
  return table_[idx];
}

void TimeScheme::push_step(int depth, int row) {
  ADDSIM_CHECK(is_grid_, "push_step on a uniform time scheme");
  table_.push_back(build_step(static_cast<int>(table_.size()) + 1, depth, row));
}

void TimeScheme::pop_step() {
  ADDSIM_CHECK(is_grid_ && !table_.empty(), "pop_step on an empty time grid");
  table_.pop_back();
  forms_.pop_back();
  if (table_.empty()) forms_.clear();
}

bool TimeScheme::next_reads_initial_state() const {
  const int j = static_cast<int>(table_.size());
  if (j == 0) return true;
  // Step j + 1's acceleration reads V_{j+1} (states only), V_j and V_{j−1}.
  for (int m = std::max(0, j - 1); m <= j; ++m)
    if (forms_[m].v0 != 0.0 || forms_[m].a0 != 0.0) return true;
  return false;
}

const char* to_string(Integrator integrator) { return integrator == Integrator::kBdf1 ? "bdf1" : "bdf2"; }

const char* to_string(Startup startup) {
  switch (startup) {
    case Startup::kTrapezoidal: return "trapezoidal";
    case Startup::kConstantVelocity: return "constant_velocity";
    case Startup::kConstantAcceleration: return "constant_acceleration";
    case Startup::kBdf1FirstStep: return "bdf1_first_step";
  }
  return "?";
}

}  // namespace addsim
