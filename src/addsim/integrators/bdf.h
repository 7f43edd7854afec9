#pragma once
/// BDF integration as coefficient sets (DESIGN.md §1, model/time_scheme.h). The
/// integrator turns the terms' local partials into step Jacobians by the chain rule:
///   dr^i/dq^{i-k} = [k = 0] ∂r/∂q + (cv_i[k]/h) ∂r/∂v + (ca_i[k]/h²) ∂r/∂a
///   dr^i/dv⁰      = v0_v,i ∂r/∂v + (v0_a,i/h) ∂r/∂a
/// where (cv_i, ca_i, v0_v,i, v0_a,i) = TimeScheme::at(i); terms never see which
/// integrator runs and the integrator never sees which terms exist.

#include <vector>

#include "addsim/core/types.h"
#include "addsim/model/time_scheme.h"

namespace addsim {

/// Stored states q^0 … q^m of a run plus the initial velocity v⁰.
class StateHistory {
 public:
  StateHistory(const std::vector<VecX>* q, const VecX* v0) : q_(q), v0_(v0) {}
  /// Adds w · q^j to out (|q|); j ≥ 0 and already stored.
  void add_scaled(int j, double w, VecX& out) const { out += w * (*q_)[j]; }
  const VecX& v0() const { return *v0_; }
  /// Number of DOFs |q|.
  int size() const { return static_cast<int>(v0_->size()); }

 private:
  const std::vector<VecX>* q_;
  const VecX* v0_;
};

/// The parts of v^i and a^i that do not depend on q^i (past states and v⁰).
void bdf_history_terms(const TimeScheme& s, const StateHistory& hist, int step, VecX& v_hist, VecX& a_hist);

/// v^i = (cv_i[0]/h) q^i + v_hist and a^i = (ca_i[0]/h²) q^i + a_hist.
void bdf_rates(const TimeScheme& s, int step, const VecX& q, const VecX& v_hist, const VecX& a_hist, VecX& v, VecX& a);

/// Weights (wq, wv, wa) of ∂r/∂q, ∂r/∂v, ∂r/∂a in a total derivative of r^i.
struct JacobianWeights {
  double wq, wv, wa;
};
/// Weights of dr^i/dq^{i-k} (all zero when i − k < 0).
JacobianWeights bdf_weights(const TimeScheme& s, int step, int k);
/// Weights of dr^i/dv⁰ (non-zero only in the start-up steps).
JacobianWeights bdf_v0_weights(const TimeScheme& s, int step);

/// values = wq·kq + wv·kv + wa·ka (value arrays over one pattern).
void combine_partials(const JacobianWeights& w, const VecX& kq, const VecX& kv, const VecX& ka, VecX& values);

}  // namespace addsim
