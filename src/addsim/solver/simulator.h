#pragma once
/// Forward simulation: for each step i, Newton's method on r^i(q^i) = 0 with a
/// backtracking line search on ‖r‖ (paper §3.1, DESIGN.md §5). A step that cannot
/// converge ends the run with a StepReport naming the step, residual and reason; the
/// trajectory keeps only converged states (never a half-updated one).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "addsim/integrators/bdf.h"
#include "addsim/model/model.h"
#include "addsim/solver/contact_correction.h"
#include "addsim/solver/linear_solver.h"
#include "addsim/solver/newton_step.h"
#include "addsim/solver/reused_factorization.h"
#include "addsim/solver/worker_thread.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

/// How a converged step met its convergence test (docs/solver.md, "Acceptance").
enum class StepAcceptance {
  kTolerance,     ///< ‖r‖ < tolerance and every body's relative residual ≤ relative_tolerance
  kRoundoffFloor, ///< ‖r‖ at its estimated round-off floor, which no step could decrease
  kTinyStep,      ///< no decrease possible and the Newton correction no longer moves q
};
const char* to_string(StepAcceptance a);

/// Relative residual above which a step accepted at the floor or on a tiny step is a failure
/// rather than a warning: the forces on a body did not cancel to 0.1 %, so the step is not
/// resolved in double precision (docs/solver.md, "Acceptance").
inline constexpr double kFloorFailureRelativeResidual = 1e-3;

/// What happened in one time step.
struct StepReport {
  int step = 0;
  bool converged = false;
  int iterations = 0;              ///< Newton iterations (linear solves)
  int line_search_halvings = 0;    ///< total halvings over all iterations
  int damped_iterations = 0;       ///< direction solves with Levenberg–Marquardt damping μ > 0
  int clamped_spring_iterations = 0;  ///< Newton iterations retried with clamped spring blocks (docs/solver.md)
  int chord_iterations = 0;        ///< iterations on an earlier iteration's LU (solver.chord_contraction)
  int corrected_contact_points = 0;  ///< contact points moved by solver.contact_correction, summed over the directions
  double residual_norm = 0.0;      ///< final ‖r‖
  double tolerance_used = 0.0;     ///< max(tolerance, round-off floor) the step was held to
  std::vector<double> residual_history;  ///< ‖r‖ at the start and after every iteration
  double wall_ms = 0.0;
  double assembly_ms = 0.0;        ///< time in residual + Jacobian evaluation
  double factor_ms = 0.0;          ///< time in LU factorisation
  double solve_ms = 0.0;           ///< time in triangular solves (and GMRES, with reuse)
  int assemblies = 0;              ///< residual (+ partials) evaluations
  int factorizations = 0;          ///< numeric LU factorisations (on this thread)
  int background_factorizations = 0;  ///< LUs factorised ahead by the helper thread and adopted here
  int krylov_iterations = 0;       ///< GMRES iterations on a reused factorisation
  std::string failure;             ///< empty when converged
  std::string note;                ///< e.g. "converged at the round-off floor of ‖r‖"
  StepAcceptance acceptance = StepAcceptance::kTolerance;  ///< meaningful when converged
  /// At the accepted state: max over bodies b of ‖r_b‖ / ‖Σ|contributions|_b‖ (plain Newton;
  /// hybrid and SQP contact: ‖r_c‖ / ‖Σ|contributions|‖ over all DOFs); 0 where nothing acts.
  double relative_residual = 0.0;
  int relative_residual_body = -1;  ///< index into Model::bodies() of that maximum (−1: all DOFs)
  /// True for a converged step accepted at the floor or on a tiny step, not on the tolerance.
  bool accepted_at_floor() const { return converged && acceptance != StepAcceptance::kTolerance; }
  ContactState contact;            ///< touching/sticking points (hybrid contact, paper §4.3)
  int substeps = 1;                ///< steps the interval was solved in (> 1: retried as sub-steps)
  int substep_depth = 0;           ///< deepest halving of the step size (h / 2^depth)
};

/// Sub-step retry (solver.substep_retry, docs/solver.md): a step that fails is solved again
/// as two steps of half the size, each of those recursively, down to h / 2^max_depth.
struct SubstepRetry {
  int max_depth = 0;  ///< 0: off
};
/// Depth the optimisation problems use when the scene does not set solver.substep_retry.
inline constexpr int kOptimizationSubstepDepth = 4;

/// A recorded run: all the backward pass needs (DESIGN.md §2).
///
/// Output steps and internal steps: `q` and `reports` hold one entry per output step (times
/// t_k = k h), which objectives and outputs index. A run that sub-stepped some step
/// (substepped()) also records its own time grid and every internal state x^0 … x^m (the
/// sub-steps' states included, q^k = x^{output_index[k]}); the forward, adjoint and direct
/// passes walk the internal steps. Without sub-steps the internal steps are the output steps
/// (x, x_reports, output_index stay empty and the model's scheme applies).
struct Trajectory {
  VecX p;                          ///< parameters of the run
  VecX q0, v0;                     ///< initial state
  VecX a0;                         ///< initial acceleration (constant-acceleration start-up), else empty
  std::vector<VecX> q;             ///< q^0 … q^m for the converged steps (m ≤ n)
  std::vector<StepReport> reports; ///< one per attempted step
  std::vector<ChartSwitch> charts; ///< chart switches in internal step order (q^j stays in its own chart)
  std::string failure;             ///< empty if every step converged
  int failed_step = -1;
  double wall_seconds = 0.0;
  TimeScheme grid;                 ///< the run's time grid (grid.is_grid()) if it sub-stepped
  std::vector<VecX> x;             ///< internal states x^0 … x^m of a sub-stepped run
  std::vector<StepReport> x_reports;  ///< one per converged internal step of a sub-stepped run
  std::vector<int> output_index;   ///< internal index of q^k (sub-stepped runs)
  bool completed() const { return failure.empty(); }
  bool substepped() const { return grid.is_grid(); }
  /// The scheme of the internal steps: the run's grid, or the model's scheme `model_scheme`.
  const TimeScheme& scheme(const TimeScheme& model_scheme) const { return substepped() ? grid : model_scheme; }
  /// Number of converged internal steps m (states x^0 … x^m).
  int internal_steps() const { return static_cast<int>(substepped() ? x.size() : q.size()) - 1; }
  /// Internal state x^j.
  const VecX& state(int j) const { return substepped() ? x[j] : q[j]; }
  /// Report of internal step j ≥ 1.
  const StepReport& internal_report(int j) const { return substepped() ? x_reports[j - 1] : reports[j - 1]; }
  /// The output step whose state is x^j, or −1 for a sub-step's intermediate state.
  int output_of(int j) const;
  /// The stored internal states as the BDF window reads them (chart switches applied).
  StateHistory history() const {
    return StateHistory(substepped() ? &x : &q, &v0, &charts, a0.size() > 0 ? &a0 : nullptr);
  }
  /// v^i of a stored output step i ≥ 0 (|q|), from the time scheme `s` (the model's; a
  /// sub-stepped run uses its grid), in the chart of q^i.
  VecX velocity(const TimeScheme& s, int i) const;
  /// a^i of a stored output step i ≥ 1 (|q|).
  VecX acceleration(const TimeScheme& s, int i) const;
  /// v and a of internal step j ≥ 1 under the scheme `s` of the internal steps.
  void internal_rates(const TimeScheme& s, int j, VecX& v, VecX& a) const;
};

class HybridContact;
class SqpContact;

class Simulator {
 public:
  /// The model must be finalised and outlive the simulator. One simulator per thread.
  /// `threads` (1 or 2) overrides the model's solver.threads when positive (e.g. 1 for
  /// simulators that already run one per core).
  explicit Simulator(const Model& model, int threads = 0);

  /// Runs all steps of the model's scheme from parameters p (|p|, checked). Each run starts
  /// afresh (ReusedFactorization::reset): the result depends only on p, not on earlier runs
  /// of this simulator, so a reused simulator gives the same bits as a new one.
  /// `after_step`, if given, sees the run after every attempted step (its last report is
  /// that step's; q holds the converged states, so a writer can stream them); returning
  /// false stops the run there: `failure` then says "stopped after step i of n" (the caller
  /// may replace it with why, e.g. an interrupt), `failed_step` stays −1 (no step failed).
  Trajectory run(const VecX& p, const std::function<void(const StepReport&)>& progress = {},
                 const std::function<bool(const Trajectory&)>& after_step = {});
  /// Sub-step retry of the following runs; overrides the model's solver.substep_retry.
  void set_substep_retry(SubstepRetry retry) { retry_ = retry; }
  const SubstepRetry& substep_retry() const { return retry_; }
  /// Per-phase timing of the following runs (StepReport::assembly_ms, factor_ms, solve_ms of
  /// plain Newton steps; off by default, when they stay 0): two clock reads per evaluation,
  /// factorisation and solve, ≈ 1.5 % of a 75-DOF sheet's step (docs/solver.md, "Sheet flip,
  /// seventh round"). wall_ms is measured either way.
  void set_phase_timing(bool on);
  bool phase_timing() const { return phase_timing_; }
  /// The time scheme of the steps being solved: the model's, or the run's grid once it
  /// sub-stepped. Step indices passed to evaluate_trial and the contact solvers are its.
  const TimeScheme& scheme() const { return grid_ ? *grid_ : model_.scheme(); }

  /// Sums all terms at one state into `out` (residual, and partials if asked). With two
  /// threads the helper assembles the upper part of every splittable term's items
  /// (Term::item_count; the share fixed at construction, helper_share()) into its own
  /// Assembly, added to `out` at the end.
  void evaluate(const TermContext& ctx, Assembly& out) const;
  /// The share of every splittable term's items that the helper thread evaluates (two
  /// threads): ½ (1 + U / S) for U = kUnsplitTermItems per term that cannot be split and S
  /// the splittable items, at most 1 — so that the helper's items cost about what the
  /// caller's items and the other terms cost together (a fixed cost model, never timing:
  /// runs repeat bit for bit).
  double helper_share() const { return helper_share_; }
  /// Cost of one unsplittable term (a body's inertia or gravity, a contact, the joints) in
  /// FEM items (a node's inertia or gravity, an element's stress), from thread-CPU times on
  /// the soft-feet quadruped: 31 such terms ≈ 18 µs against 408 items ≈ 42 µs.
  static constexpr double kUnsplitTermItems = 5.6;
  /// True if every term accepts the state; otherwise `why` names the offender.
  bool admissible(const TermContext& ctx, std::string* why) const;
  /// One trial evaluation of step `step` at q (the merit of every Newton-type solver):
  /// v, a from the history parts, then — if every term admits the state — all terms into
  /// `out`, then `finish(ctx)` (null: none), which returns the residual whose norm is the
  /// merit (out.r, or a constrained copy of it). Returns that norm, or +inf with `why` set
  /// for an inadmissible state or a non-finite residual.
  double evaluate_trial(int step, const VecX& q, const VecX& v_hist, const VecX& a_hist, const VecX& p, EvalMode mode,
                        VecX& v, VecX& a, Assembly& out, std::string* why,
                        const std::function<const VecX&(const TermContext&)>& finish = {}) const;

  const Model& model() const { return model_; }
  /// The helper thread with two threads, else null (bench_trajopt reads its profile).
  WorkerThread* worker() const { return worker_.get(); }
  const char* linear_solver_name() const { return lu_->name(); }
  /// Linear tolerance for the next Newton direction at residual `norm` (inexact Newton),
  /// given the step's residual history (ending with norm) and the convergence tolerance.
  double newton_forcing(const std::vector<double>& history, double norm, double tol);
  /// Solves J x = b for the step Jacobian with nonzero `values`, linearised at q (reusing the
  /// last LU where that is cheaper; q gives the FEM bodies' rotations since that LU); adds
  /// factorisation/solve times and counts to `rep`. False if J had to be factorised and is
  /// singular. `tolerance` (absolute, on ‖b − J x‖) is raised to at least 1e-3 of the Newton
  /// tolerance.
  bool solve_linear(const VecX& q, const VecX& values, const VecX& b, VecX& x, StepReport& rep,
                    double tolerance = 0.0);
  Assembly& assembly() { return assembly_; }
  /// Max over bodies b of ‖r_b‖ / ‖r_abs,b‖ (|q| each; a body with r_abs,b = 0 counts 0);
  /// `body` (optional) receives the index of the maximum (−1 if every body counts 0).
  double relative_residual(const VecX& r, const VecX& r_abs, int* body = nullptr) const;
  /// The absolute tolerance a step with contribution magnitudes r_abs is solved to:
  /// min(tolerance, relative_tolerance · min_b ‖r_abs,b‖ over bodies with r_abs,b ≠ 0). Sets the
  /// floor of solve_linear's tolerance (1e-3 of it) until the next call.
  double scaled_tolerance(const VecX& r_abs);

 private:
  // Solves step `step` from the guess q (and, for plain Newton, from alt_guess instead if
  // its residual is smaller); q holds the result.
  StepReport solve_step(int step, const StateHistory& hist, const VecX& p, VecX& q, const VecX* alt_guess = nullptr);
  // Solves the next internal step j of `traj` (scheme() already holds its coefficients) from
  // the extrapolated guesses; on success appends the state (and chart switches).
  StepReport advance(Trajectory& traj, int j, const VecX& p);
  // Solves the interval ending at output step `row` as two steps of depth `depth` (each
  // retried deeper on failure, down to retry_.max_depth) into `traj`'s grid; `agg` sums the
  // reports. False (agg.failure set) if a step at the deepest level failed.
  bool solve_substeps(Trajectory& traj, int row, int depth, const VecX& p, StepReport& agg);
  // What a clamped retry did: nothing (not tried, or the model has no springs; assembly_ is
  // untouched), evaluated assembly_ at q without a usable clamped matrix (no spring is
  // compressed, or q is inadmissible), or formed clamped_jac_.
  enum class ClampedRetry { kNotEvaluated, kNothingClamped, kClamped };
  // Forms clamped_jac_, the step Jacobian at q with compressed springs' transverse stiffness
  // left out (Assembly::clamp_compressed_springs), by an evaluation into assembly_.
  ClampedRetry retry_with_clamped_springs(int step, const VecX& q, const VecX& p, StepReport& rep);
  // Anderson mixing of a chord step (solver.chord_acceleration m ≥ 1): x = q with its chord
  // step f = dq; replaces dq by f − (ΔX + ΔF) γ, γ minimising ‖f − ΔF γ‖ over the last m
  // differences of the chord sequence's iterates (ΔX) and steps (ΔF). The first call of a
  // sequence (chord_history_ < 0) only records x and f.
  void chord_accelerate(const VecX& q, VecX& dq, int depth);
  // Turns the uniform record of `traj` into a grid record (before its first sub-step).
  void start_grid(Trajectory& traj);

  SubstepRetry retry_;
  const TimeScheme* grid_ = nullptr;  ///< the current run's grid once it sub-stepped

  const Model& model_;
  Assembly assembly_;
  std::unique_ptr<ReusedFactorization> lu_;
  std::shared_ptr<HybridContact> hybrid_;  ///< null unless the model has hybrid contact
  std::shared_ptr<SqpContact> sqp_;        ///< null unless the model has SQP contact
  double step_tolerance_ = 0.0;   ///< scaled_tolerance of the current step (0: solver.tolerance)
  double newton_constant_ = 0.0;  ///< C in ‖r_{k+1}‖ ≈ C ‖r_k‖², last estimate (inexact Newton)
  int last_step_iterations_ = 0;  ///< Newton iterations of the previous plain-Newton step
  /// The constant-acceleration guess started the previous step with two guesses (solve_step
  /// evaluates that step's winner with partials first).
  bool alt_guess_won_ = true;
  VecX v_hist_, a_hist_, v_, a_, jac_, r_, jq_abs_, guess_ca_, q_guess_;
  VecX floor_q_;  ///< the state of the last step Jacobian, for its round-off floor (solve_step)
  VecX residual_q_;  ///< the state of assembly_'s residual-only evaluation (solve_step's complete_partials)
  bool phase_timing_ = false;  ///< set_phase_timing
  bool has_springs_ = false;  ///< the model has a spring term (else no clamped retry)
  VecX clamped_jac_;  ///< step Jacobian with clamped compressed springs (retry_with_clamped_springs)
  VecX clamped_q_;    ///< the exact direction's trial state while the clamped one is tried
  step::NewtonWorkspace newton_;  ///< scratch of step::newton_step
  // Anderson mixing of chord steps (solver.chord_acceleration; chord_accelerate): the
  // differences of the chord sequence's iterates and of their chord steps, newest first.
  MatX chord_dx_, chord_df_, chord_qr_;
  VecX chord_x_prev_, chord_f_prev_;
  int chord_history_ = 0;  ///< columns of chord_dx_ / chord_df_ in use; −1: a new sequence
  /// solver.contact_correction (null when off or without tanh point contact) and its scratch.
  std::unique_ptr<ContactCorrection> contact_correction_;
  VecX correction_v_, correction_a_;
  // Declared after lu_, so destroyed before it: the helper's thread finishes a background
  // factorisation (into lu_'s spare solver) before lu_ goes.
  std::unique_ptr<WorkerThread> worker_;  ///< null with one thread
  mutable Assembly worker_assembly_;      ///< the helper thread's share of an evaluation
  std::vector<int> helper_begin_;         ///< per term: the first item the helper evaluates (two threads)
  double helper_share_ = 0.5;
};

}  // namespace addsim
