#pragma once
/// BDF integration as coefficient sets (DESIGN.md §1, model/time_scheme.h). The
/// integrator turns the terms' local partials into step Jacobians by the chain rule:
///   dr^i/dq^{i-k} = [k = 0] ∂r/∂q + (cv_i[k]/h) ∂r/∂v + (ca_i[k]/h²) ∂r/∂a
///   dr^i/dv⁰      = v0_v,i ∂r/∂v + (v0_a,i/h) ∂r/∂a
///   dr^i/da⁰      = a0_v,i h ∂r/∂v + a0_a,i ∂r/∂a
/// where (cv_i, ca_i, v0_v,i, v0_a,i, a0_v,i, a0_a,i, h = h_i) = TimeScheme::at(i) (a time
/// grid's steps have their own h_i); terms never see which
/// integrator runs and the integrator never sees which terms exist.

#include <vector>

#include "addsim/core/types.h"
#include "addsim/math/sparse_assembly.h"
#include "addsim/model/body.h"
#include "addsim/model/time_scheme.h"

namespace addsim {

/// A change of chart of one body's coordinates after step `step` converged (rigid bodies:
/// θ' = θ (1 − 2π/|θ|) near |θ| = π, docs/rigid.md). Steps i > `step` read every stored
/// state q^j with j ≤ `step` re-expressed by body->rechart(); q^j itself stays stored in the
/// chart it was solved in.
struct ChartSwitch {
  int step = 0;
  const Body* body = nullptr;
};

/// Stored states q^0 … q^m of a run plus the initial velocity v⁰, the initial acceleration
/// a⁰ (constant-acceleration start-up only; null otherwise) and the chart switches.
class StateHistory {
 public:
  StateHistory(const std::vector<VecX>* q, const VecX* v0, const std::vector<ChartSwitch>* charts = nullptr,
               const VecX* a0 = nullptr)
      : q_(q), v0_(v0), charts_(charts), a0_(a0) {}
  /// Adds w · q^j to out (|q|); j ≥ 0 and already stored (in its own chart).
  void add_scaled(int j, double w, VecX& out) const { out += w * (*q_)[j]; }
  /// Adds w · q^j as step `reader` > j reads it: in the chart of step `reader` (every
  /// switch with j ≤ step < reader applied in order).
  void add_scaled_for(int reader, int j, double w, VecX& out) const;
  /// True if some chart switch lies between stored step j and step `reader` > j.
  bool recharted(int reader, int j) const;
  /// q^j in the chart of step `reader` (|q|).
  VecX state_for(int reader, int j) const;
  /// Per body touched by a switch between j and `reader`: ∂(q^j in reader's chart)/∂q^j
  /// restricted to the body's block (dof_count × dof_count), composed over the switches.
  std::vector<std::pair<const Body*, MatX>> chart_jacobians(int reader, int j) const;
  const VecX& v0() const { return *v0_; }
  /// a⁰, or null when the start-up does not read it.
  const VecX* a0() const { return a0_; }
  /// Number of DOFs |q|.
  int size() const { return static_cast<int>(v0_->size()); }

 private:
  const std::vector<VecX>* q_;
  const VecX* v0_;
  const std::vector<ChartSwitch>* charts_;
  const VecX* a0_;
};

/// The parts of v^i and a^i that do not depend on q^i (past states and v⁰).
void bdf_history_terms(const TimeScheme& s, const StateHistory& hist, int step, VecX& v_hist, VecX& a_hist);

/// v^i = (cv_i[0]/h) q^i + v_hist and a^i = (ca_i[0]/h²) q^i + a_hist.
void bdf_rates(const TimeScheme& s, int step, const VecX& q, const VecX& v_hist, const VecX& a_hist, VecX& v, VecX& a);

/// Weights of dr^i/dq^{i-k} (all zero when i − k < 0).
JacobianWeights bdf_weights(const TimeScheme& s, int step, int k);
/// Weights of dr^i/dv⁰ (non-zero only in the start-up steps).
JacobianWeights bdf_v0_weights(const TimeScheme& s, int step);
/// Weights of dr^i/da⁰ (non-zero only in the constant-acceleration start-up steps).
JacobianWeights bdf_a0_weights(const TimeScheme& s, int step);

/// values = wq·kq + wv·kv + wa·ka (value arrays over one pattern).
void combine_partials(const JacobianWeights& w, const VecX& kq, const VecX& kv, const VecX& ka, VecX& values);

}  // namespace addsim
