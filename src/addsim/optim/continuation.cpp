#include "addsim/optim/continuation.h"

#include <algorithm>
#include <cmath>

#include "addsim/core/error.h"

namespace addsim {

NamedValues named_values(const ParameterSelection& selection, const VecX& values) {
  NamedValues out;
  for (int k = 0; k < selection.size(); ++k) out.emplace_back(selection.names()[k], values[k]);
  return out;
}

VecX apply_named_values(const ParameterTable& table, VecX p, const NamedValues& values) {
  for (const auto& [name, value] : values) {
    const std::optional<ParamRange> r = table.resolve(name);
    if (!r || r->size != 1) continue;
    p[r->offset] = value;
  }
  return p;
}

void merge_named_values(NamedValues& into, const NamedValues& from) {
  // A plain loop variable, not a structured binding: clang before 16 cannot capture bindings in lambdas.
  for (const auto& entry : from) {
    auto it = std::find_if(into.begin(), into.end(), [&](const auto& e) { return e.first == entry.first; });
    if (it != into.end())
      it->second = entry.second;
    else
      into.push_back(entry);
  }
}

ContinuationResult run_continuation(const std::vector<StageSpec>& stages, const StageFactory& factory,
                                    const ContinuationCallbacks& callbacks, const ContinuationStart& start) {
  if (stages.empty()) throw InputError("continuation: no stages");
  if (start.stage < 0 || start.stage >= static_cast<int>(stages.size()))
    throw InputError("continuation: start stage " + std::to_string(start.stage) + " does not exist");
  if (stages.front().fallback) throw InputError("continuation: the first stage cannot be a fallback");
  if (stages.front().join) throw InputError("continuation: the first stage cannot be a join");
  for (const StageSpec& st : stages) {
    if (st.fallback && st.join) throw InputError("continuation: stage \"" + st.name + "\" is both a fallback and a join");
    if (st.fallback && !st.run_after.empty())
      throw InputError("continuation: stage \"" + st.name + "\" is a fallback; it takes fallback_after, not run_after");
  }
  const int n = static_cast<int>(stages.size());
  // The first join stage after s, or n.
  auto next_join = [&](int s) {
    while (s < n && !stages[s].join) ++s;
    return s;
  };
  // The last stage of the attempt that stage s is in (before the next fallback or join stage).
  auto attempt_end = [&](int s) {
    while (s + 1 < n && !stages[s + 1].fallback && !stages[s + 1].join) ++s;
    return s;
  };
  ContinuationResult out;
  out.best = start.carried;
  out.simulations = start.simulations;
  out.seconds = start.seconds;
  out.iterations = start.iteration;
  // Whether `reasons` (a fallback_after or run_after list; empty: any) lets a stage run after
  // the last stop reason.
  auto runs_after = [&](const std::vector<StopReason>& reasons) {
    return reasons.empty() || std::find(reasons.begin(), reasons.end(), out.reason) != reasons.end();
  };
  for (int s = start.stage; s < n; ++s) {
    if (stages[s].fallback) {
      if (s > start.stage) {
        // The attempt before reached its goal: done, or on at the next join. Otherwise restart from the
        // task's start (or go on from the best point so far).
        if (reached_goal(out.reason)) {
          const int j = next_join(s + 1);
          if (j == n) break;
          s = j - 1;
          continue;
        }
        if (!runs_after(stages[s].fallback_after)) {
          s = attempt_end(s);  // not this attempt's case: skip it up to the next fallback or join stage
          continue;
        }
        if (!stages[s].fallback_from_best) out.best.clear();
      } else if (std::isnan(start.phi0) && !stages[s].fallback_from_best) {
        out.best.clear();  // resumed before the fallback stage began
      }
    } else if (s > start.stage && !runs_after(stages[s].run_after)) {
      s = attempt_end(s);  // the stage before stopped for another reason: this attempt ends here
      continue;
    }
    std::unique_ptr<SimulationProblem> problem = factory(s, out.best);
    // The stage's budget counts from its own start; the tracker counts totals.
    OptimizerOptions options = stages[s].options;
    const bool resumed = s == start.stage && start.stage_start_simulations >= 0;
    options.max_simulations += resumed ? start.stage_start_simulations : out.simulations;
    options.max_seconds += resumed && start.stage_start_seconds >= 0.0 ? start.stage_start_seconds : out.seconds;
    OptimizerStart os;
    os.simulations = out.simulations;
    os.seconds = out.seconds;
    os.iteration = out.iterations;
    if (s == start.stage) os.phi0 = start.phi0;
    OptimizerCallbacks cb;
    if (callbacks.on_evaluation) cb.on_evaluation = [&](const EvaluationRecord& r) { callbacks.on_evaluation(s, r); };
    if (callbacks.on_iteration) cb.on_iteration = [&](const IterationRecord& r) { return callbacks.on_iteration(s, r); };
    StageResult sr;
    sr.name = stages[s].name;
    sr.result = minimize(*problem, problem->x0(), options, cb, os);
    if (sr.result.x_best.size() > 0 && std::isfinite(sr.result.phi_best))
      sr.best = named_values(problem->selection(), sr.result.values_best);
    merge_named_values(out.best, sr.best);
    out.simulations = sr.result.simulations;
    out.seconds = sr.result.seconds;
    out.iterations = sr.result.iterations;
    out.reason = sr.result.reason;
    out.message = sr.result.message;
    if (callbacks.on_stage_end) callbacks.on_stage_end(s, sr);
    out.stages.push_back(std::move(sr));
    if (out.reason == StopReason::kInterrupted || out.reason == StopReason::kInitialFailure) break;
  }
  return out;
}

}  // namespace addsim
