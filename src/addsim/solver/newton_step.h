#pragma once
/// One iteration of the Newton-type step solvers (paper §3.1, DESIGN.md §5), shared by
/// Simulator::solve_step, the hybrid contact active set and the SQP comparison: the
/// backtracking line search on a merit ‖r‖ and the Levenberg–Marquardt damped direction
/// that falls back on it. The caller owns the merit (plain or constrained residual) and
/// decides which trials also evaluate the partials.

#include <functional>
#include <limits>
#include <string>

#include "addsim/core/types.h"

namespace addsim {
class Simulator;
class SparsePattern;
struct StepReport;
}  // namespace addsim

namespace addsim::step {

/// Evaluates the merit at a trial state: returns ‖r(q_trial)‖, or +inf with `why` set when
/// the state is inadmissible or its residual not finite. `first_trial` is true for the full
/// step α = 1 of a line search (the trial most likely accepted, so the one worth evaluating
/// with partials).
using TrialEval = std::function<double(const VecX& q_trial, bool first_trial, std::string* why)>;

/// r_floor argument of newton_step for a merit without a known round-off floor.
inline constexpr double kNoRoundoffFloor = -1.0;

/// Scratch of newton_step (kept by the solver between steps to avoid reallocation).
struct NewtonWorkspace {
  VecX jac_damped;  ///< damped Jacobian values (nnz)
  VecX dq;          ///< last direction (|q|)
  VecX q_trial;     ///< last trial state (|q|); the new iterate when a trial was accepted
};

/// Outcome of a backtracking line search along dq from q.
struct LineSearchResult {
  bool decreased = false;  ///< the last trial passed the Armijo test
  double trial = std::numeric_limits<double>::infinity();  ///< merit at the last trial
  double alpha = 1.0;      ///< step length of the last trial
  int halvings = 0;        ///< halvings of α before the last trial
};

/// True if the direction dq no longer moves q: ‖dq‖∞ ≤ kStepFloor (1 + ‖q‖∞) (|q| each).
bool below_step_floor(const VecX& dq, const VecX& q);

/// Backtracking line search: trials q_trial = q + α dq with α = 1, ½, ¼, … (at most
/// `max_halvings` halvings) until ‖r‖ ≤ (1 − kArmijo α) `norm`. Adds the halvings to
/// rep.line_search_halvings. `why` receives the reason of a rejected inadmissible trial.
/// q, dq, q_trial: (|q|).
LineSearchResult backtrack(const VecX& q, const VecX& dq, double norm, int max_halvings, const TrialEval& eval,
                           VecX& q_trial, std::string* why, StepReport& rep);

/// Outcome of one Newton iteration (newton_step).
struct NewtonStepResult {
  bool accepted = false;  ///< a trial decreased ‖r‖; it is ws.q_trial
  bool singular = false;  ///< some direction solve met a singular factorisation
  /// No trial decreased ‖r‖, but ‖r‖ is at its round-off floor or the undamped direction no
  /// longer moves q (‖Δq‖∞ ≤ kStepFloor (1 + ‖q‖∞)): converged at the floor.
  bool at_floor = false;
  /// With at_floor: accepted because the step no longer moves q, ‖r‖ being above its floor.
  bool tiny_step = false;
  double trial = std::numeric_limits<double>::infinity();  ///< ‖r‖ at the last trial
  int halvings = 0;       ///< halvings of the last line search
  std::string failure;    ///< why the iteration failed (set when neither accepted nor at_floor)
};

/// One damped Newton iteration on the merit ‖r‖: the direction (J + μ D) Δq = rhs with
/// D = diag|J| and μ = 0, then (when the line search finds no decrease) μ = 1e-4, 1e-3, …
/// up to kMaxDamping (Levenberg–Marquardt style; the converged root is unchanged, only the
/// path), each followed by `backtrack`. `jac`: values of the step Jacobian J on `pattern`
/// (nnz); `rhs` = −r (|q|); `norm` = ‖r(q)‖; `r_floor`: the round-off floor of ‖r‖ at q
/// (kNoRoundoffFloor: none known); `linear_tol`: absolute tolerance of the undamped solve
/// (damped ones are solved to the floor of Simulator::solve_linear). Counts damped solves
/// in rep.damped_iterations and halvings in rep.line_search_halvings. `refine`, if set, may
/// change the undamped direction before its line search (the contact correction,
/// solver/contact_correction.h); the damped directions are used as solved.
NewtonStepResult newton_step(Simulator& sim, const SparsePattern& pattern, const VecX& jac, const VecX& rhs,
                             const VecX& q, double norm, double r_floor, double linear_tol, int max_halvings,
                             const TrialEval& eval, NewtonWorkspace& ws, StepReport& rep,
                             const std::function<void(VecX& dq)>& refine = {});

}  // namespace addsim::step
