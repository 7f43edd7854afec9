#include "addsim/integrators/bdf.h"

#include <algorithm>
#include <iterator>

#include "addsim/core/error.h"

namespace addsim {

bool StateHistory::recharted(int reader, int j) const {
  if (!charts_) return false;
  for (const ChartSwitch& c : *charts_)
    if (c.step >= j && c.step < reader) return true;
  return false;
}

VecX StateHistory::state_for(int reader, int j) const {
  VecX x = (*q_)[j];
  if (charts_)
    for (const ChartSwitch& c : *charts_)
      if (c.step >= j && c.step < reader) c.body->rechart(x);
  return x;
}

void StateHistory::add_scaled_for(int reader, int j, double w, VecX& out) const {
  if (recharted(reader, j))
    out += w * state_for(reader, j);
  else
    out += w * (*q_)[j];
}

std::vector<std::pair<const Body*, MatX>> StateHistory::chart_jacobians(int reader, int j) const {
  std::vector<std::pair<const Body*, MatX>> out;
  if (!recharted(reader, j)) return out;
  // Chain rule over the switches in order: G ← G_s(x) G, x ← rechart(x).
  VecX x = (*q_)[j];
  for (const ChartSwitch& c : *charts_) {
    if (c.step < j || c.step >= reader) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == c.body; });
    if (it == out.end()) {
      out.emplace_back(c.body, MatX::Identity(c.body->dof_count(), c.body->dof_count()));
      it = std::prev(out.end());
    }
    it->second = c.body->rechart_jacobian(x) * it->second;
    c.body->rechart(x);
  }
  return out;
}

void bdf_history_terms(const TimeScheme& s, const StateHistory& hist, int step, VecX& v_hist, VecX& a_hist) {
  const StepCoefficients& c = s.at(step);
  const double h = c.h;
  v_hist = c.v0_v * hist.v0();
  a_hist = (c.v0_a / h) * hist.v0();
  if (c.a0_v != 0.0 || c.a0_a != 0.0) {
    ADDSIM_CHECK(hist.a0(), "the constant-acceleration start-up needs the initial acceleration a⁰");
    v_hist += (c.a0_v * h) * *hist.a0();
    a_hist += c.a0_a * *hist.a0();
  }
  for (int k = 1; k <= s.window() && step - k >= 0; ++k) {
    if (c.cv[k] != 0.0) hist.add_scaled_for(step, step - k, c.cv[k] / h, v_hist);
    if (c.ca[k] != 0.0) hist.add_scaled_for(step, step - k, c.ca[k] / (h * h), a_hist);
  }
}

void bdf_rates(const TimeScheme& s, int step, const VecX& q, const VecX& v_hist, const VecX& a_hist, VecX& v, VecX& a) {
  const StepCoefficients& c = s.at(step);
  v = (c.cv[0] / c.h) * q + v_hist;
  a = (c.ca[0] / (c.h * c.h)) * q + a_hist;
}

JacobianWeights bdf_weights(const TimeScheme& s, int step, int k) {
  if (step - k < 0 || k > s.window()) return {0.0, 0.0, 0.0};
  const StepCoefficients& c = s.at(step);
  return {k == 0 ? 1.0 : 0.0, c.cv[k] / c.h, c.ca[k] / (c.h * c.h)};
}

JacobianWeights bdf_v0_weights(const TimeScheme& s, int step) {
  const StepCoefficients& c = s.at(step);
  return {0.0, c.v0_v, c.v0_a / c.h};
}

JacobianWeights bdf_a0_weights(const TimeScheme& s, int step) {
  const StepCoefficients& c = s.at(step);
  return {0.0, c.a0_v * c.h, c.a0_a};
}

void combine_partials(const JacobianWeights& w, const VecX& kq, const VecX& kv, const VecX& ka, VecX& values) {
  values = w.wq * kq + w.wv * kv + w.wa * ka;
}

}  // namespace addsim
