#pragma once
/// BDF time-discretisation coefficients (DESIGN.md §1, docs/notation.md §Time).
/// Velocities are BDF differences of positions and accelerations BDF differences of
/// velocities: V_j = BDF(q)_j, a^i = BDF(V)_i. In the steady state (i ≥ start())
///   v^i = (1/h) Σ_k cv[k] q^{i-k},   a^i = (1/h²) Σ_k ca[k] q^{i-k},   ca = cv ∗ cv.
/// How the first steps read the initial state is the start-up (Startup, scene key
/// `integrator_startup`); every v^i and a^i stays a fixed linear combination of
/// q^i … q^{i−K}, v⁰ and (constant-acceleration start-up only) the initial acceleration a⁰.
///
/// A TimeScheme is either the model's uniform scheme (steps of size h, coefficients of the
/// start-up steps then the steady set) or a run's own time grid (grid()): an explicit list of
/// steps of sizes h / 2^d, appended one by one while a run sub-steps a step that failed
/// (Simulator, solver.substep_retry). A step of a grid uses BDF2 when the previous step has
/// the same size and BDF1 (on the previous step's velocity) where the size changes, so every
/// step's rates stay fixed linear forms of the stored states: the adjoint and direct passes
/// differentiate them exactly like the uniform scheme's.

#include <map>
#include <string>
#include <vector>

namespace addsim {

enum class Integrator { kBdf1, kBdf2 };

/// How the first BDF steps read the initial state (q⁰, v⁰) (docs/notation.md §Time).
enum class Startup {
  kTrapezoidal,           ///< default: V_0 = v⁰, BDF2's V_1 = 2(q¹ − q⁰)/h − v⁰, a¹ = (V_1 − V_0)/h
  kConstantVelocity,      ///< virtual history q^{−m} = q⁰ − m h v⁰, steady coefficients from step 1
  kConstantAcceleration,  ///< virtual history q^{−m} = q⁰ − m h v⁰ + ½ m² h² a⁰ (a⁰ from the dynamics at t₀)
  kBdf1FirstStep,         ///< step 1 BDF1 from V_0 = v⁰, BDF2 from step 2 on
};

/// v^i = (1/h_i) Σ_k cv[k] q^{i-k} + v0_v v⁰ + a0_v h_i a⁰ and
/// a^i = (1/h_i²) Σ_k ca[k] q^{i-k} + (v0_a/h_i) v⁰ + a0_a a⁰; entries for i − k < 0 are zero.
struct StepCoefficients {
  std::vector<double> cv;  ///< window() + 1 entries
  std::vector<double> ca;  ///< window() + 1 entries
  double v0_v = 0.0;
  double v0_a = 0.0;
  double a0_v = 0.0;  ///< weights of the initial acceleration (Startup::kConstantAcceleration)
  double a0_a = 0.0;
  double h = 0.0;     ///< this step's size h_i, s
  int row = 0;        ///< control row: the output step whose interval (t_{row−1}, t_row] holds the step
  int order = 0;      ///< BDF order of the step's velocity and acceleration (1 or 2)
  int depth = 0;      ///< h_i = h / 2^depth
};

/// A velocity h·V or acceleration h²·A (nominal h) as a linear form over stored states
/// (absolute index), h v⁰ and h² a⁰.
struct RateForm {
  std::map<int, double> q;
  double v0 = 0.0;
  double a0 = 0.0;
  void add(const RateForm& o, double w);
};

struct TimeScheme {
  Integrator integrator = Integrator::kBdf2;
  Startup startup = Startup::kTrapezoidal;
  double h = 0.01;            ///< nominal time step, s (grids: the output interval)
  int steps = 100;            ///< number of (output) steps n
  std::vector<double> cv;     ///< steady-state velocity coefficients (order + 1)
  std::vector<double> ca;     ///< steady-state acceleration coefficients (2·order + 1)

  static TimeScheme make(Integrator integrator, double h, int steps, Startup startup = Startup::kTrapezoidal);
  /// An empty time grid with this scheme's integrator, start-up, h and steps (push_step()).
  TimeScheme grid() const;
  /// Number of past states a step reads: q^{i-1} … q^{i-K}.
  int window() const { return static_cast<int>(ca.size()) - 1; }
  /// Coefficients of step i ≥ 1 (start-up steps differ from the steady state; a grid's
  /// steps each have their own).
  const StepCoefficients& at(int i) const;
  /// Control row of step i (i itself for the uniform scheme).
  int row(int i) const { return is_grid_ ? table_[i - 1].row : i; }
  /// True if some step reads a⁰ (the constant-acceleration start-up).
  bool uses_initial_acceleration() const { return startup == Startup::kConstantAcceleration; }

  // --- time grids ---
  bool is_grid() const { return is_grid_; }
  /// Number of steps of a grid.
  int grid_steps() const { return static_cast<int>(table_.size()); }
  /// Appends a step of size h / 2^depth with control row `row` (grids only).
  void push_step(int depth, int row);
  /// Removes the last step of a grid.
  void pop_step();
  /// True if the step after the last one of a grid would read v⁰ or a⁰.
  bool next_reads_initial_state() const;

 private:
  // The coefficients of step j from the forms of V_{j−1}, V_{j−2} (forms_[j−1], forms_[j−2];
  // index −1 is vm1_), appending h·V_j to forms_.
  StepCoefficients build_step(int j, int depth, int row);

  bool is_grid_ = false;
  std::vector<StepCoefficients> table_;  // uniform: steps 1 … until steady; grid: every step
  std::vector<RateForm> forms_;          // h·V_j of the steps built so far (index j), j ≥ 0
  RateForm vm1_;                         // h·V_{−1} of the virtual history (constant-* start-ups)
};

const char* to_string(Integrator integrator);
const char* to_string(Startup startup);

}  // namespace addsim
