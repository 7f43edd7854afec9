#pragma once
/// Optimisation methods over a SimulationProblem, behind one entry point (paper §6):
/// L-BFGS-B with bounds (LBFGS++), Gauss–Newton / Levenberg–Marquardt on the residuals with
/// the Jacobian from direct sensitivities (bounds by projection), ADAM (bounds by
/// projection), and CMA-ES (pagmo2) as the gradient-free baseline. Every forward
/// simulation counts as one "simulation run" as the paper counts them; a failed simulation
/// is Φ = +∞ to the method (line searches back off, LM raises its damping, ADAM halves its
/// learning rate, CMA-ES ranks it last). CMA-ES simulates each generation on as many
/// threads as the problem has simulator slots. Stopping: a budget in simulations and seconds,
/// Φ/Φ₀, and the norm of the projected gradient.

#include <functional>
#include <limits>
#include <string>

#include "addsim/optim/problem.h"

namespace addsim {

enum class OptimizerMethod { kLbfgsb, kGaussNewton, kAdam, kCmaes };

/// "lbfgsb", "gauss_newton", "adam", "cmaes".
const char* to_string(OptimizerMethod method);

/// L-BFGS-B's line search: LBFGS++'s Moré–Thuente (strong Wolfe conditions), or bisection
/// and doubling to the weak Wolfe conditions (GuardedLineSearch in optimizer.cpp).
enum class LbfgsLineSearch { kMoreThuente, kWeakWolfe };

enum class StopReason {
  kPhiRatio,          ///< Φ/Φ₀ ≤ phi_ratio_tolerance
  kGradient,          ///< ‖projected ∇Φ‖ ≤ gradient_tolerance
  kSimulationBudget,  ///< max_simulations reached
  kTimeBudget,        ///< max_seconds reached
  kLineSearch,        ///< L-BFGS-B's line search found no decrease (message says why)
  kNoProgress,        ///< the method cannot move any more (LM damping overflow, step below round-off, CMA-ES converged)
  kInitialFailure,    ///< the simulation at the starting point failed
  kInterrupted,       ///< the iteration callback asked to stop
  kPhiChange,         ///< an iteration lowered Φ by ≤ phi_change_tolerance · Φ (Gauss–Newton, L-BFGS-B)
  kStall,             ///< the last stall_simulations simulations lowered the best Φ by less than stall_factor
  kPhiBelow,          ///< Φ ≤ phi_below (an absolute goal, e.g. a distance to a target)
};

/// "phi_ratio", "gradient", "simulation_budget", "time_budget", "line_search", "no_progress",
/// "initial_failure", "interrupted", "phi_change", "stall", "phi_below".
const char* to_string(StopReason reason);

/// True for the stop reasons that mean the run reached its goal: Φ/Φ₀ ≤ phi_ratio_tolerance
/// or Φ ≤ phi_below.
bool reached_goal(StopReason reason);

struct OptimizerOptions {
  OptimizerMethod method = OptimizerMethod::kLbfgsb;
  long max_simulations = 100;  ///< budget of forward simulations (> 0)
  double max_seconds = std::numeric_limits<double>::infinity();  ///< wall-time budget (> 0)
  double phi_ratio_tolerance = 0.0;  ///< stop when Φ/Φ₀ ≤ this (0: never)
  /// Stop (StopReason::kPhiBelow) when the best Φ ≤ this, whatever Φ₀ (0: never). An absolute
  /// goal where the task states one: for Φ = ½‖c − c*‖², Φ ≤ 5e-7 is "within 1 mm of the
  /// target"; a stage of a continuation started near its goal reaches it without the
  /// iterations a relative tolerance would still ask for. Counts as solved, as Φ/Φ₀ does.
  double phi_below = 0.0;
  double gradient_tolerance = 0.0;   ///< stop when ‖projected dΦ/dx‖₂ ≤ this (0: never)
  /// Gauss–Newton and L-BFGS-B: stop when an iteration lowers the best Φ by at most this
  /// fraction of Φ at its start (the relative-decrease test of MINPACK's ftol; 0: never).
  /// For regularised problems whose Φ/Φ₀ has a floor > 0 (trajectory optimisation with a
  /// smoothness term), where phi_ratio_tolerance cannot say when the optimum is reached.
  double phi_change_tolerance = 0.0;
  /// Stop (StopReason::kStall) before a simulation when the last stall_simulations
  /// simulations of this run lowered the best Φ by less than a factor stall_factor (best Φ now
  /// > best Φ then / stall_factor); 0: never. Any method. For a stage that may end in another
  /// local minimum and has a fallback attempt after it (optim/continuation.h): a run that
  /// creeps is cut short instead of spending its whole budget; a run that converges lowers Φ
  /// by orders of magnitude in far fewer simulations.
  long stall_simulations = 0;
  double stall_factor = 2.0;  ///< > 1
  // L-BFGS-B
  int lbfgs_memory = 6;          ///< correction pairs kept
  int lbfgs_max_linesearch = 20;  ///< trials per line search
  /// Length (x units) at most of the first trial step of a run, which LBFGS++ takes as a unit
  /// step along the normalised steepest-descent direction; 0: that unit step. The line search
  /// may still extrapolate beyond it. For problems where a unit change of x is a large one (a
  /// throw speed in m/s from a point centimetres from its target), so that the first trial of
  /// a run, or of every stage of a continuation (each stage starts with an empty memory), does
  /// not jump to another family of solutions.
  double lbfgs_first_step = 0.0;
  /// Also cap the first trial of a run at Φ/‖∇Φ‖ (x units): the step along steepest descent
  /// at which the linear model of Φ reaches zero. For a sum of squares whose minimum is Φ = 0
  /// it is at most half the way to the minimum of a quadratic along that line, so that a stage
  /// started millimetres from its target (the last stages of a continuation) does not try a
  /// step sized for the first. Off by default.
  bool lbfgs_first_step_phi = false;
  /// Restart rule (0: off): before a line search (never within one), when the last
  /// lbfgs_restart_iterations iterations since the current (re)start lowered the best Φ by less than a factor
  /// lbfgs_restart_factor, LBFGS++ starts again from the best point with an empty memory (its
  /// first trial capped as a fresh run's; the best point's Φ and gradient are reused, no
  /// simulation). A line search that fails after the best Φ fell since the last restart also
  /// restarts instead of stopping the run. For a run creeping on a curved valley with a
  /// memory of stale curvature pairs, as Gauss–Newton's restarts begin afresh; the stall test
  /// (stall_simulations) still ends a run that restarts without progress.
  long lbfgs_restart_iterations = 0;
  double lbfgs_restart_factor = 2.0;  ///< > 1
  /// kWeakWolfe: accept a trial with sufficient decrease whose slope along the direction has
  /// risen to wolfe · the initial slope, whatever its sign (a step past a shallow ripple
  /// minimum along the line is kept), instead of Moré–Thuente's |slope| ≤ wolfe · |initial|.
  LbfgsLineSearch lbfgs_line_search = LbfgsLineSearch::kMoreThuente;
  // Gauss–Newton / Levenberg–Marquardt: (JᵀJ + λ diag JᵀJ) δ = −Jᵀρ
  double lm_damping = 1e-3;  ///< initial λ (0: plain Gauss–Newton until a step fails)
  /// On a rejected trial λ grows by 4 (from 0: to 1e-6). With lm_step_shrink s in (0, 1) it
  /// grows at least so far that the next trial's scaled step ‖D^½ δ‖ is at most s times the
  /// rejected one's (lm_damping_after_rejection): a λ far below the scale of D^-½ JᵀJ D^-½
  /// hardly changes the step, and growing it by 4 per trial then spends several simulations
  /// on almost the same point. 0: off (growth by 4 only).
  double lm_step_shrink = 0.0;
  /// lm_step_shrink applies from the lm_shrink_after-th rejected trial in a row at the same
  /// point on (≥ 1; 1: from every rejection); the rejections before it grow λ by 4 only. A
  /// run whose trials are rejected at most lm_shrink_after − 1 times in a row takes exactly
  /// the steps it takes without lm_step_shrink; a long run of rejections (the damping far
  /// below the scale of the scaled normal matrix, every trial nearly the same point) is cut.
  int lm_shrink_after = 1;
  /// Floor τ in [0, 1] on Marquardt's scaling: D_k = max(diag(JᵀJ)_k, τ · max_j diag(JᵀJ)_j).
  /// With fewer residuals than parameters the step (even at λ → 0) is the one of least
  /// ‖D^½ δ‖ among those that solve the linear model, so D decides which parameters move:
  /// Marquardt's D (τ = 0) makes a parameter with little influence as cheap to move, per unit
  /// of its effect, as one with much, and moves it far; τ = 1 is Levenberg's D ∝ I in the
  /// optimiser's units, which moves the influential parameters instead. 0: off.
  double lm_scale_floor = 0.0;
  JacobianMode gn_jacobian = JacobianMode::kAuto;  ///< how J is formed (SimulationProblem::set_jacobian_mode)
  // ADAM [Kingma and Ba 2015]: learning rate η_k = η₀ · decay^k
  double adam_learning_rate = 1e-2;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double adam_decay = 1.0;
  // CMA-ES [Hansen 2016] (pagmo::cmaes)
  int cmaes_population = 0;      ///< λ (0: pagmo's default 4 + ⌊3 ln n⌋, at least 5)
  double cmaes_sigma = 0.5;      ///< initial step size σ₀ in x units
  unsigned cmaes_seed = 1;
};

/// One evaluation as the methods see it, for logs.
struct EvaluationRecord {
  int iteration = 0;           ///< the iteration this evaluation belongs to (0: the start)
  long simulations = 0;        ///< simulations so far including this one (with the start's offset)
  double phi = 0.0;            ///< +∞ if failed
  double gradient_norm = std::numeric_limits<double>::quiet_NaN();  ///< ‖dΦ/dx‖₂, NaN if not computed
  VecX x;                      ///< optimiser variable
  VecX values;                 ///< selected parameters in p's units
  bool failed = false;
  std::string failure;
  double elapsed = 0.0;        ///< seconds since the start (with the start's offset)
};

/// The state after a completed iteration (an accepted step; for CMA-ES a generation).
struct IterationRecord {
  int iteration = 0;
  long simulations = 0;
  double phi = 0.0;            ///< best Φ so far
  double phi0 = 0.0;           ///< Φ at the start
  double gradient_norm = std::numeric_limits<double>::quiet_NaN();  ///< at the best point, if known
  VecX x_best;
  double elapsed = 0.0;
};

struct OptimizerCallbacks {
  /// After every evaluation (also failed ones).
  std::function<void(const EvaluationRecord&)> on_evaluation;
  /// After every iteration; returning false stops the run (StopReason::kInterrupted).
  std::function<bool(const IterationRecord&)> on_iteration;
};

/// Where a run starts: counters continued from an earlier run (resume, continuation).
struct OptimizerStart {
  long simulations = 0;   ///< simulations already spent (count towards max_simulations)
  double seconds = 0.0;   ///< seconds already spent (count towards max_seconds)
  int iteration = 0;      ///< iterations already done
  double phi0 = std::numeric_limits<double>::quiet_NaN();  ///< Φ₀ of the original start (NaN: Φ at x0)
};

struct OptimizationResult {
  VecX x_best;              ///< best point (optimiser variable)
  VecX values_best;         ///< best point, selected parameters in p's units
  double phi_best = std::numeric_limits<double>::infinity();
  double phi0 = std::numeric_limits<double>::quiet_NaN();
  VecX gradient_best;       ///< dΦ/dx at the best point when computed, else empty
  long simulations = 0;     ///< total including the start's offset
  long failed_simulations = 0;  ///< in this run
  int iterations = 0;       ///< total including the start's offset
  double seconds = 0.0;     ///< total including the start's offset
  StopReason reason = StopReason::kSimulationBudget;
  std::string message;      ///< details of the stop (e.g. LBFGS++'s exception text)
  int restarts = 0;         ///< L-BFGS-B restarts from the best point in this run (lbfgs_restart_iterations)
};

/// The Levenberg–Marquardt damping after a rejected trial with damping `lambda`, for the
/// normal matrix A = JᵀJ, Marquardt's scaling D (> 0) and g = Jᵀρ: the trial step solves
/// (A + (λ + 1e-14) D) δ = −g. Returns max(4λ (1e-6 if λ = 0), λ_s) where λ_s is the
/// smallest damping at which ‖D^½ δ(λ_s)‖ ≤ shrink · ‖D^½ δ(λ)‖ (shrink in (0, 1); shrink = 0:
/// the growth by 4 alone). The scaled step length is Σ_k c_k² / (σ_k + λ + 1e-14)² over the
/// eigenpairs (σ_k, u_k) of D^-½ A D^-½ with c = Uᵀ D^-½ g, monotone in λ; λ_s by bisection
/// in log λ to a relative 1e-6.
double lm_damping_after_rejection(const MatX& A, const VecX& D, const VecX& g, double lambda, double shrink);

/// Minimises Φ over the problem's selection from x0 (|x|, projected onto the bounds) with
/// `options.method`. Never throws for a failed simulation; throws InputError for invalid
/// options (non-positive budget, Gauss–Newton on an objective that is not a sum of squares).
OptimizationResult minimize(SimulationProblem& problem, const VecX& x0, const OptimizerOptions& options,
                            const OptimizerCallbacks& callbacks = {}, const OptimizerStart& start = {});

}  // namespace addsim
