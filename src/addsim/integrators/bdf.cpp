#include "addsim/integrators/bdf.h"

namespace addsim {

void StateHistory::add_scaled(int j, double w, VecX& out) const {
  if (j >= 0) {
    out += w * (*q_)[j];
  } else {
    out += w * (*q0_);
    out += (w * j * h_) * (*v0_);
  }
}

void bdf_history_terms(const TimeScheme& s, const StateHistory& hist, int step, VecX& v_hist, VecX& a_hist) {
  v_hist.setZero();
  a_hist.setZero();
  for (int k = 1; k < static_cast<int>(s.cv.size()); ++k) hist.add_scaled(step - k, s.cv[k] / s.h, v_hist);
  for (int k = 1; k < static_cast<int>(s.ca.size()); ++k) hist.add_scaled(step - k, s.ca[k] / (s.h * s.h), a_hist);
}

void bdf_rates(const TimeScheme& s, const VecX& q, const VecX& v_hist, const VecX& a_hist, VecX& v, VecX& a) {
  v = (s.cv[0] / s.h) * q + v_hist;
  a = (s.ca[0] / (s.h * s.h)) * q + a_hist;
}

JacobianWeights bdf_weights(const TimeScheme& s, int k) {
  const double wv = k < static_cast<int>(s.cv.size()) ? s.cv[k] / s.h : 0.0;
  const double wa = k < static_cast<int>(s.ca.size()) ? s.ca[k] / (s.h * s.h) : 0.0;
  return {k == 0 ? 1.0 : 0.0, wv, wa};
}

void combine_partials(const JacobianWeights& w, const VecX& kq, const VecX& kv, const VecX& ka, VecX& values) {
  values = w.wq * kq + w.wv * kv + w.wa * ka;
}

}  // namespace addsim
