#pragma once
/// BDF integration as coefficient sets (DESIGN.md §1). The integrator turns the terms'
/// local partials into step Jacobians by the chain rule:
///   dr^i/dq^i     = ∂r/∂q + (cv[0]/h) ∂r/∂v + (ca[0]/h²) ∂r/∂a
///   dr^i/dq^{i-k} =          (cv[k]/h) ∂r/∂v + (ca[k]/h²) ∂r/∂a
/// and reads past states from a trajectory whose history before t₀ is the constant-
/// velocity extrapolation q^{-k} = q⁰ − k h v⁰ of the initial state (paper §6.2).

#include <vector>

#include "addsim/core/types.h"
#include "addsim/model/time_scheme.h"

namespace addsim {

/// Past states q^j of a run: stored states for j ≥ 0, extrapolated for j < 0.
class StateHistory {
 public:
  StateHistory(const std::vector<VecX>* q, const VecX* q0, const VecX* v0, double h) : q_(q), q0_(q0), v0_(v0), h_(h) {}
  /// Adds w · q^j to out (|q|).
  void add_scaled(int j, double w, VecX& out) const;

 private:
  const std::vector<VecX>* q_;
  const VecX* q0_;
  const VecX* v0_;
  double h_;
};

/// The history-only parts of v^i and a^i: v_hist = (1/h) Σ_{k≥1} cv[k] q^{i-k},
/// a_hist = (1/h²) Σ_{k≥1} ca[k] q^{i-k}.
void bdf_history_terms(const TimeScheme& s, const StateHistory& hist, int step, VecX& v_hist, VecX& a_hist);

/// v^i = (cv[0]/h) q^i + v_hist and a^i = (ca[0]/h²) q^i + a_hist.
void bdf_rates(const TimeScheme& s, const VecX& q, const VecX& v_hist, const VecX& a_hist, VecX& v, VecX& a);

/// Weights (wq, wv, wa) of ∂r/∂q, ∂r/∂v, ∂r/∂a in dr^i/dq^{i-k}.
struct JacobianWeights {
  double wq, wv, wa;
};
JacobianWeights bdf_weights(const TimeScheme& s, int k);

/// values = wq·kq + wv·kv + wa·ka (value arrays over one pattern).
void combine_partials(const JacobianWeights& w, const VecX& kq, const VecX& kv, const VecX& ka, VecX& values);

}  // namespace addsim
