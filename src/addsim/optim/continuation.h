#pragma once
/// Continuation as data (paper §6, the three-phase parameter estimation and the k_n
/// continuation): a list of stages, each optimising its own parameter subset on its own
/// model (scene overrides, time horizon) with its own method and budget. Each stage starts
/// from the best point of the stages before it: the values of every scalar optimised so
/// far are carried over by name, everything else comes from the stage's own model. The
/// caller builds each stage's problem (io rebuilds the scene; this module stays free of
/// files and JSON).
///
/// Attempts: a stage marked `fallback` begins another attempt at the problem. It runs, with
/// the stages after it up to the next fallback, only if the stage before it stopped short of
/// its goal (Φ/Φ₀ tolerance or phi_below), and it starts from the task's own start (nothing
/// carried), not from the best point so far: a restart on another model (e.g. a wider contact
/// blend) for starts where the first attempt ends in another local minimum. Once a stage
/// reaches its goal, the fallback attempts after it are skipped. A fallback stage may name the
/// stop reasons it answers (`fallback_after`): its attempt is skipped, as a whole, when the last
/// stage run stopped for another reason, and the next attempt is considered (a run that
/// creeps to its budget in the right basin and one that stalls in another minimum want
/// different restarts). A fallback stage with `fallback_from_best` starts from the best point
/// so far instead of the task's start: a stage that runs only while the goal is not reached.
///
/// Joins: a stage marked `join` ends the attempts before it. It runs after whichever attempt
/// ran last, whether that attempt reached its goal or not, from that attempt's best point (a
/// goal reached before it skips the remaining attempts up to the join, not the join and the
/// stages after it). Multi-fidelity continuation: attempts at a cheap surrogate of the problem
/// (another scene per stage), each tried only if the one before missed its goal, then the
/// stages of the real problem from the surrogate's optimum.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "addsim/optim/optimizer.h"

namespace addsim {

/// Selected scalars by name (ParameterTable::name_of, e.g. "bodies.0.velocity.0.2") with
/// their values in p's units, in selection order.
using NamedValues = std::vector<std::pair<std::string, double>>;

/// The names and values (|selection|, p's units) of a selection.
NamedValues named_values(const ParameterSelection& selection, const VecX& values);
/// `p` (|p|) with every named value whose name resolves in `table` set; names the table
/// does not know are skipped (a later stage may drop a parameter).
VecX apply_named_values(const ParameterTable& table, VecX p, const NamedValues& values);
/// `into` updated with `from` (same names overwritten, new names appended).
void merge_named_values(NamedValues& into, const NamedValues& from);

struct StageSpec {
  std::string name;          ///< for logs ("ballistic", "stage 1")
  OptimizerOptions options;  ///< method, budget (per stage) and tolerances
  /// Begins another attempt from the task's start, run only if the stage before it stopped
  /// short of its Φ/Φ₀ tolerance (see above). Not for the first stage.
  bool fallback = false;
  /// For a fallback stage: the stop reasons of the last stage run before it for which its
  /// attempt runs; empty: any reason short of the goal.
  std::vector<StopReason> fallback_after;
  /// For a fallback stage: start from the best point so far (the values carried by the stages
  /// before it) instead of the task's start. An attempt that continues where the one before
  /// stopped short, on another model or with another method (a narrower run stuck in a ripple
  /// minimum hops to a wider blend, whose minima lie elsewhere, and back), and is skipped once
  /// a stage has reached its goal.
  bool fallback_from_best = false;
  /// Ends the attempts before it: runs after the last attempt that ran, from its best point,
  /// whether or not it reached its goal (see above). Not for the first stage or a fallback.
  bool join = false;
  /// For a stage that is not a fallback: the stop reasons of the stage before it (e.g. its goal,
  /// `kPhiRatio`) after which it runs (empty: any). For another reason its attempt ends there:
  /// this stage and the non-fallback, non-join stages after it are skipped, and the run goes on
  /// at the next fallback or join stage, judged on that stop reason.
  std::vector<StopReason> run_after;
};

/// Builds the problem of stage `stage` with the carried values applied to its start
/// (apply_named_values on the stage model's defaults). Called once per stage.
using StageFactory = std::function<std::unique_ptr<SimulationProblem>(int stage, const NamedValues& carried)>;

struct StageResult {
  std::string name;
  OptimizationResult result;  ///< counts are totals over the whole continuation
  NamedValues best;           ///< this stage's best point
};

struct ContinuationCallbacks {
  std::function<void(int stage, const EvaluationRecord&)> on_evaluation;
  /// Returning false stops the whole continuation.
  std::function<bool(int stage, const IterationRecord&)> on_iteration;
  std::function<void(int stage, const StageResult&)> on_stage_end;
};

/// Where a continuation starts: stage index, counters and carried values of an earlier,
/// interrupted run (resume restarts the stage's method from the best point so far).
struct ContinuationStart {
  int stage = 0;
  long simulations = 0;
  double seconds = 0.0;
  int iteration = 0;
  double phi0 = std::numeric_limits<double>::quiet_NaN();  ///< Φ₀ of the resumed stage
  /// Totals when the resumed stage first started (its budget counts from there); −1: now.
  long stage_start_simulations = -1;
  double stage_start_seconds = -1.0;
  NamedValues carried;
};

struct ContinuationResult {
  std::vector<StageResult> stages;  ///< the stages run now (from start.stage on)
  NamedValues best;                 ///< carried values after the last stage: the best point
  long simulations = 0;
  double seconds = 0.0;
  int iterations = 0;
  StopReason reason = StopReason::kNoProgress;  ///< of the last stage run
  std::string message;
};

/// Runs stages start.stage … end in order. Each stage's budget counts from the stage's own
/// start; the counters are totals. Stops early when a stage is interrupted or its start
/// fails to simulate, and before a fallback stage when the stage before it reached its
/// goal (reached_goal) — or goes on at the next join stage, where there is one; skips a
/// fallback attempt whose fallback_after does not list the last stop reason, and the rest of
/// an attempt at a stage whose run_after does not list it. Throws
/// InputError for a fallback or join first stage and a stage that is both. A resumed fallback stage
/// that had not started yet (start.phi0 NaN) starts from the task's start (with
/// fallback_from_best: from start.carried).
ContinuationResult run_continuation(const std::vector<StageSpec>& stages, const StageFactory& factory,
                                    const ContinuationCallbacks& callbacks = {}, const ContinuationStart& start = {});

}  // namespace addsim
