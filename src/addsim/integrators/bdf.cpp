#include "addsim/integrators/bdf.h"

namespace addsim {

void bdf_history_terms(const TimeScheme& s, const StateHistory& hist, int step, VecX& v_hist, VecX& a_hist) {
  const StepCoefficients& c = s.at(step);
  v_hist = c.v0_v * hist.v0();
  a_hist = (c.v0_a / s.h) * hist.v0();
  for (int k = 1; k <= s.window() && step - k >= 0; ++k) {
    if (c.cv[k] != 0.0) hist.add_scaled(step - k, c.cv[k] / s.h, v_hist);
    if (c.ca[k] != 0.0) hist.add_scaled(step - k, c.ca[k] / (s.h * s.h), a_hist);
  }
}

void bdf_rates(const TimeScheme& s, int step, const VecX& q, const VecX& v_hist, const VecX& a_hist, VecX& v, VecX& a) {
  const StepCoefficients& c = s.at(step);
  v = (c.cv[0] / s.h) * q + v_hist;
  a = (c.ca[0] / (s.h * s.h)) * q + a_hist;
}

JacobianWeights bdf_weights(const TimeScheme& s, int step, int k) {
  if (step - k < 0 || k > s.window()) return {0.0, 0.0, 0.0};
  const StepCoefficients& c = s.at(step);
  return {k == 0 ? 1.0 : 0.0, c.cv[k] / s.h, c.ca[k] / (s.h * s.h)};
}

JacobianWeights bdf_v0_weights(const TimeScheme& s, int step) {
  const StepCoefficients& c = s.at(step);
  return {0.0, c.v0_v, c.v0_a / s.h};
}

void combine_partials(const JacobianWeights& w, const VecX& kq, const VecX& kv, const VecX& ka, VecX& values) {
  values = w.wq * kq + w.wv * kv + w.wa * ka;
}

}  // namespace addsim
