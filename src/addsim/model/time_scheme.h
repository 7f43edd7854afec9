#pragma once
/// BDF time-discretisation coefficients (DESIGN.md §1, docs/notation.md §Time).
/// Velocities are BDF differences of positions and accelerations BDF differences of
/// velocities: V_j = BDF(q)_j, a^i = BDF(V)_i. In the steady state (i ≥ start())
///   v^i = (1/h) Σ_k cv[k] q^{i-k},   a^i = (1/h²) Σ_k ca[k] q^{i-k},   ca = cv ∗ cv.
/// The first steps read the initial state (q⁰, v⁰) instead of a virtual history: V_0 = v⁰,
/// and for BDF2 the second-order start-up V_1 = 2(q¹ − q⁰)/h − v⁰ with a¹ = (V_1 − V_0)/h
/// (exact for constant acceleration), so BDF2 keeps its global order 2 for any initial
/// state. Every v^i and a^i stays a fixed linear combination of q^i … q^{i−K} and v⁰.

#include <string>
#include <vector>

namespace addsim {

enum class Integrator { kBdf1, kBdf2 };

/// v^i = (1/h) Σ_k cv[k] q^{i-k} + v0_v v⁰ and a^i = (1/h²) Σ_k ca[k] q^{i-k} + (v0_a/h) v⁰;
/// entries for i − k < 0 are zero.
struct StepCoefficients {
  std::vector<double> cv;  ///< window() + 1 entries
  std::vector<double> ca;  ///< window() + 1 entries
  double v0_v = 0.0;
  double v0_a = 0.0;
};

struct TimeScheme {
  Integrator integrator = Integrator::kBdf2;
  double h = 0.01;            ///< time step, s
  int steps = 100;            ///< number of steps n
  std::vector<double> cv;     ///< steady-state velocity coefficients (order + 1)
  std::vector<double> ca;     ///< steady-state acceleration coefficients (2·order + 1)

  static TimeScheme make(Integrator integrator, double h, int steps);
  /// Number of past states a step reads: q^{i-1} … q^{i-K}.
  int window() const { return static_cast<int>(ca.size()) - 1; }
  /// Coefficients of step i ≥ 1 (start-up steps differ from the steady state).
  const StepCoefficients& at(int i) const;

 private:
  std::vector<StepCoefficients> table_;  // steps 1 … until steady, then the steady set
};

const char* to_string(Integrator integrator);

}  // namespace addsim
