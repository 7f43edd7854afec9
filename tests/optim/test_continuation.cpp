// Continuation stages: each stage rebuilt with its own overrides and parameter subset,
// started from the previous stage's best point, counters continued.

#include <gtest/gtest.h>

#include "addsim/core/error.h"
#include "addsim/optim/continuation.h"
#include "optim_scenes.h"

namespace addsim {
namespace {

// n stages: stage 0 L-BFGS-B with 2 simulations (stops on its budget, short of the target),
// the others undamped Gauss–Newton to Φ/Φ₀ ≤ 1e-20 within 20 simulations (solves the affine
// particle throw); the caller marks which are fallbacks.
std::vector<StageSpec> short_start_then_gauss_newton(int n) {
  std::vector<StageSpec> stages(n);
  for (StageSpec& s : stages) {
    s.options.method = OptimizerMethod::kGaussNewton;
    s.options.max_simulations = 20;
    s.options.phi_ratio_tolerance = 1e-20;
    s.options.lm_damping = 0.0;
  }
  stages[0].options.method = OptimizerMethod::kLbfgsb;
  stages[0].options.max_simulations = 2;
  return stages;
}

// Every stage the particle throw towards target with all of v as parameters, started from the
// carried point; each stage's start (in optimiser space) is appended to *starts and its index
// to *built (either may be null).
StageFactory particle_throw_stages(const Vec3& target, std::vector<VecX>* starts, std::vector<int>* built = nullptr) {
  return [starts, built, target](int stage, const NamedValues& carried) {
    if (built) built->push_back(stage);
    auto t = test::scene_task(test::kParticleThrow, {{"bodies.0.velocities"}});
    t->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, target));
    const VecX p = apply_named_values(t->scene.model->params(), t->scene.model->params().defaults(), carried);
    if (starts) starts->push_back(t->selection.gather(p));
    return test::make_problem(t, p);
  };
}

TEST(Continuation, TwoStagesCarryTheBestPointAndCounters) {
  const Vec3 target(1.0, 0.5, 0.2);
  // Stage 0 optimises v_x only with 40 steps; stage 1 all of v with the scene's 50 steps.
  const std::vector<std::vector<ParameterSpec>> specs = {{{"bodies.0.velocities.0.0"}},
                                                         {{"bodies.0.velocities"}}};
  const std::vector<std::vector<std::string>> overrides = {{"steps=40"}, {}};
  std::vector<StageSpec> stages(2);
  for (StageSpec& s : stages) {
    s.options.method = OptimizerMethod::kLbfgsb;
    s.options.max_simulations = 30;
    s.options.phi_ratio_tolerance = 1e-20;
  }
  stages[0].name = "x only";
  stages[0].options.max_simulations = 4;
  stages[1].name = "all";
  std::vector<VecX> starts;
  std::vector<int> steps;
  const StageFactory factory = [&](int stage, const NamedValues& carried) {
    auto t = test::scene_task(test::kParticleThrow, specs[stage], overrides[stage]);
    t->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, target));
    const VecX p = apply_named_values(t->scene.model->params(), t->scene.model->params().defaults(), carried);
    starts.push_back(t->selection.gather(p));
    steps.push_back(t->scene.model->scheme().steps);
    return test::make_problem(t, p);
  };
  std::vector<int> stage_of_evaluation;
  ContinuationCallbacks cb;
  cb.on_evaluation = [&](int stage, const EvaluationRecord&) { stage_of_evaluation.push_back(stage); };
  const ContinuationResult r = run_continuation(stages, factory, cb);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(steps, (std::vector<int>{40, 50}));
  // Stage 0 spent its own budget; stage 1 started from its best v_x.
  EXPECT_EQ(r.stages[0].result.reason, StopReason::kSimulationBudget);
  EXPECT_EQ(r.stages[0].result.simulations, 4);
  ASSERT_EQ(r.stages[0].best.size(), 1u);
  EXPECT_NE(r.stages[0].best[0].second, 0.0);
  EXPECT_EQ(starts[1][0], r.stages[0].best[0].second);
  EXPECT_EQ(starts[1][1], 0.0);
  EXPECT_EQ(r.stages[1].result.reason, StopReason::kPhiRatio) << r.stages[1].result.message;
  EXPECT_EQ(r.simulations, static_cast<long>(stage_of_evaluation.size()));
  EXPECT_EQ(std::count(stage_of_evaluation.begin(), stage_of_evaluation.end(), 0), 4);
  EXPECT_EQ(r.best.size(), 3u);
  Vec3 v;
  for (int k = 0; k < 3; ++k) v[k] = r.best[k].second;
  EXPECT_NEAR((test::particle_throw_end(v) - target).norm(), 0.0, 1e-9);

  // A resumed continuation starts at the given stage with the carried values and counters.
  ContinuationStart start;
  start.stage = 1;
  start.simulations = 50;
  start.iteration = 7;
  start.carried = r.best;
  starts.clear();
  steps.clear();
  const ContinuationResult resumed = run_continuation(stages, factory, {}, start);
  ASSERT_EQ(resumed.stages.size(), 1u);
  EXPECT_EQ(steps, (std::vector<int>{50}));
  EXPECT_EQ(starts[0], v);
  EXPECT_GE(resumed.simulations, 51);
  EXPECT_GE(resumed.iterations, 7);
}

TEST(Continuation, FallbackStagesRestartFromTheStartOnlyWhenTheAttemptBeforeStopsShort) {
  const Vec3 target(1.0, 0.5, 0.2);
  std::vector<VecX> starts;
  const StageFactory factory = particle_throw_stages(target, &starts);
  // Attempt 1: L-BFGS-B with 2 simulations (short of 1e-20); attempt 2: Gauss–Newton, which
  // solves the affine throw; attempt 3 is then skipped.
  std::vector<StageSpec> stages = short_start_then_gauss_newton(3);
  stages[1].fallback = stages[2].fallback = true;
  const ContinuationResult r = run_continuation(stages, factory);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].result.reason, StopReason::kSimulationBudget);
  EXPECT_GT(r.stages[0].result.phi_best, 0.0);
  EXPECT_LT(r.stages[0].result.phi_best, r.stages[0].result.phi0);
  // The fallback started from the scene's start (v = 0), not from attempt 1's best point.
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[1], starts[0]);
  EXPECT_EQ(starts[1], Vec3::Zero());
  EXPECT_EQ(r.stages[1].result.reason, StopReason::kPhiRatio) << r.stages[1].result.message;
  EXPECT_EQ(r.reason, StopReason::kPhiRatio);
  EXPECT_EQ(r.simulations, 2 + 2);
  Vec3 v;
  for (int k = 0; k < 3; ++k) v[k] = r.best[k].second;
  EXPECT_NEAR((test::particle_throw_end(v) - target).norm(), 0.0, 1e-9);

  // A first attempt that reaches its tolerance skips every fallback.
  stages[0] = stages[1];
  stages[0].fallback = false;
  starts.clear();
  const ContinuationResult solved = run_continuation(stages, factory);
  EXPECT_EQ(solved.stages.size(), 1u);
  EXPECT_EQ(solved.reason, StopReason::kPhiRatio);
  EXPECT_EQ(starts.size(), 1u);

  // A first attempt that stalls (ADAM with a step too small to get anywhere, stall test on)
  // ends long before its budget, and the fallback runs.
  stages[0] = stages[1];
  stages[0].fallback = false;
  stages[0].options.method = OptimizerMethod::kAdam;
  stages[0].options.adam_learning_rate = 1e-4;
  stages[0].options.max_simulations = 100;
  stages[0].options.stall_simulations = 5;
  starts.clear();
  const ContinuationResult stalled = run_continuation(stages, factory);
  ASSERT_EQ(stalled.stages.size(), 2u);
  EXPECT_EQ(stalled.stages[0].result.reason, StopReason::kStall) << stalled.stages[0].result.message;
  EXPECT_EQ(stalled.stages[0].result.simulations, 6);
  EXPECT_LT(stalled.stages[0].result.phi_best, stalled.stages[0].result.phi0);
  EXPECT_EQ(stalled.stages[1].result.reason, StopReason::kPhiRatio);
  EXPECT_EQ(stalled.simulations, 6 + 2);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[1], Vec3::Zero());

  // A fallback needs an attempt before it.
  stages[0].fallback = true;
  EXPECT_THROW(run_continuation(stages, factory), InputError);
}

TEST(Continuation, FallbackAfterSkipsAttemptsForOtherStopReasons) {
  // stages[k].fallback_after: an attempt runs only after the stop reasons it lists (of the
  // last stage run); otherwise it is skipped as a whole (with its non-fallback stages) and the
  // next attempt is considered.
  const Vec3 target(1.0, 0.5, 0.2);
  std::vector<int> built;
  const StageFactory factory = particle_throw_stages(target, nullptr, &built);
  // 0: L-BFGS-B, 2 simulations (stops on its budget); attempt 1 (stages 1, 2) only after a
  // stall; attempt 2 (stage 3) after the budget: Gauss–Newton, solved.
  std::vector<StageSpec> stages = short_start_then_gauss_newton(4);
  stages[1].fallback = stages[3].fallback = true;
  stages[1].fallback_after = {StopReason::kStall};
  stages[3].fallback_after = {StopReason::kStall, StopReason::kSimulationBudget};
  const ContinuationResult r = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0, 3}));
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].result.reason, StopReason::kSimulationBudget);
  EXPECT_EQ(r.stages[1].result.reason, StopReason::kPhiRatio);
  EXPECT_EQ(r.simulations, 2 + 2);

  // With the budget listed, attempt 1 runs: stage 1 solves it, stage 2 (of the same attempt)
  // still runs from there, and attempt 2 is skipped.
  stages[1].fallback_after = {StopReason::kSimulationBudget};
  built.clear();
  const ContinuationResult first = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(first.stages.size(), 3u);
  EXPECT_EQ(first.stages[1].result.reason, StopReason::kPhiRatio);

  // No attempt answers: the result is the first stage's.
  stages[1].fallback_after = stages[3].fallback_after = {StopReason::kStall};
  built.clear();
  const ContinuationResult none = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0}));
  EXPECT_EQ(none.reason, StopReason::kSimulationBudget);
  EXPECT_EQ(none.simulations, 2);
}

TEST(Continuation, RunAfterEndsTheAttemptWhenTheStageBeforeMissedItsGoal) {
  // stages[k].run_after: a non-fallback stage runs only after the listed stop reasons of the
  // stage before; otherwise its attempt ends there (it and the stages after it up to the next
  // fallback are skipped) and the next fallback runs on the stage before's reason.
  const Vec3 target(1.0, 0.5, 0.2);
  std::vector<int> built;
  const StageFactory factory = particle_throw_stages(target, nullptr, &built);
  // 0: L-BFGS-B, 2 simulations (ends on its budget); 1: runs only after a reached goal;
  // 2: the attempt's next stage; 3: a fallback from the start after a budget stop
  // (Gauss–Newton, solved).
  std::vector<StageSpec> stages = short_start_then_gauss_newton(4);
  stages[1].run_after = {StopReason::kPhiRatio};
  stages[3].fallback = true;
  stages[3].fallback_after = {StopReason::kSimulationBudget};
  const ContinuationResult r = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0, 3}));
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].result.reason, StopReason::kSimulationBudget);
  EXPECT_EQ(r.stages[1].result.reason, StopReason::kPhiRatio);

  // The budget listed: the attempt goes on (stage 1 solves it, stage 2 follows; whether the
  // fallback runs after stage 2 is fallback_after's business).
  stages[1].run_after = {StopReason::kPhiRatio, StopReason::kSimulationBudget};
  built.clear();
  const ContinuationResult on = run_continuation(stages, factory);
  ASSERT_GE(built.size(), 3u);
  EXPECT_EQ(std::vector<int>(built.begin(), built.begin() + 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(on.stages[1].result.reason, StopReason::kPhiRatio);

  // Stage 2 after stage 1's goal: runs.
  stages[1].run_after.clear();
  stages[2].run_after = {StopReason::kPhiRatio};
  built.clear();
  run_continuation(stages, factory);
  ASSERT_GE(built.size(), 3u);
  EXPECT_EQ(std::vector<int>(built.begin(), built.begin() + 3), (std::vector<int>{0, 1, 2}));

  // Skipped with no fallback after it: the result is the stage before's.
  stages.pop_back();
  stages[2].run_after.clear();
  stages[1].run_after = {StopReason::kStall};
  built.clear();
  const ContinuationResult none = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0}));
  EXPECT_EQ(none.reason, StopReason::kSimulationBudget);
  EXPECT_EQ(none.simulations, 2);

  // A fallback takes fallback_after, not run_after.
  stages[2].fallback = true;
  stages[2].run_after = {StopReason::kStall};
  EXPECT_THROW(run_continuation(stages, factory), InputError);
}

TEST(Continuation, PhiBelowEndsAStageAsSolvedAndSkipsTheFallback) {
  // optimize.phi_below: an absolute goal (Φ ≤ phi_below) ends the stage at the first iteration
  // that reaches it, counts as solved (the fallback after it is skipped), and on its own
  // (without a Φ/Φ₀ tolerance) makes a stage one a fallback may follow.
  const Vec3 target(1.0, 0.5, 0.2);
  std::vector<int> built;
  const StageFactory factory = particle_throw_stages(target, nullptr, &built);
  constexpr double kGoal = 1e-6;
  std::vector<StageSpec> stages = short_start_then_gauss_newton(2);
  stages[0].options.max_simulations = 40;
  stages[0].options.phi_ratio_tolerance = 0.0;
  stages[0].options.phi_below = kGoal;
  stages[1].fallback = true;
  std::vector<double> phi_per_iteration;
  ContinuationCallbacks cb;
  cb.on_iteration = [&](int, const IterationRecord& it) {
    if (phi_per_iteration.empty()) phi_per_iteration.push_back(it.phi0);
    phi_per_iteration.push_back(it.phi);
    return true;
  };
  const ContinuationResult r = run_continuation(stages, factory, cb);
  EXPECT_EQ(built, (std::vector<int>{0}));
  ASSERT_EQ(r.stages.size(), 1u);
  EXPECT_EQ(r.reason, StopReason::kPhiBelow) << r.message;
  EXPECT_TRUE(reached_goal(r.reason));
  EXPECT_STREQ(to_string(r.reason), "phi_below");
  ASSERT_GE(phi_per_iteration.size(), 2u);
  EXPECT_LE(phi_per_iteration.back(), kGoal);
  EXPECT_GT(phi_per_iteration[phi_per_iteration.size() - 2], kGoal);  // the first iteration below it ends the stage
  EXPECT_LT(r.simulations, 40);
  Vec3 v;
  for (int k = 0; k < 3; ++k) v[k] = r.best[k].second;
  EXPECT_LE(0.5 * (test::particle_throw_end(v) - target).squaredNorm(), kGoal * (1.0 + 1e-12));

  // A goal below anything the first stage reaches in its budget: the fallback runs.
  stages[0].options.max_simulations = 2;
  built.clear();
  const ContinuationResult short_of_it = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0, 1}));
  ASSERT_EQ(short_of_it.stages.size(), 2u);
  EXPECT_EQ(short_of_it.stages[0].result.reason, StopReason::kSimulationBudget);
  EXPECT_EQ(short_of_it.reason, StopReason::kPhiRatio);
}

TEST(Continuation, FallbackFromBestGoesOnFromTheBestPointOnlyWhileShortOfTheGoal) {
  // stages[k].fallback_from_best: the attempt runs only when the stage before stopped short
  // of its goal, as any fallback, but starts from the best point so far, not the task's start.
  const Vec3 target(1.0, 0.5, 0.2);
  std::vector<VecX> starts;
  const StageFactory factory = particle_throw_stages(target, &starts);
  std::vector<StageSpec> stages = short_start_then_gauss_newton(3);
  stages[1].fallback = stages[2].fallback = true;
  stages[1].fallback_from_best = true;
  const ContinuationResult r = run_continuation(stages, factory);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].result.reason, StopReason::kSimulationBudget);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_NE(starts[1], Vec3::Zero());
  for (int k = 0; k < 3; ++k) EXPECT_EQ(starts[1][k], r.stages[0].best[k].second);
  // Its Φ₀ is the first stage's best Φ (the same problem), and it solves the throw.
  EXPECT_EQ(r.stages[1].result.phi0, r.stages[0].result.phi_best);
  EXPECT_EQ(r.stages[1].result.reason, StopReason::kPhiRatio);
  EXPECT_EQ(r.reason, StopReason::kPhiRatio);

  // Resumed at a fallback-from-best stage that had not begun: the carried values are kept.
  ContinuationStart start;
  start.stage = 1;
  start.simulations = 2;
  start.carried = r.stages[0].best;
  starts.clear();
  const ContinuationResult resumed = run_continuation(stages, factory, {}, start);
  ASSERT_EQ(starts.size(), 1u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(starts[0][k], r.stages[0].best[k].second);
  EXPECT_EQ(resumed.reason, StopReason::kPhiRatio);
}

TEST(Continuation, JoinRunsAfterWhicheverAttemptRanLastFromItsBestPoint) {
  // stages[k].join: ends the attempts before it. It runs whether the last attempt reached its
  // goal or not, from that attempt's best point; a goal reached skips the attempts left before it,
  // not the join.
  const Vec3 target(1.0, 0.5, 0.2);
  std::vector<VecX> starts;
  std::vector<int> built;
  const StageFactory factory = particle_throw_stages(target, &starts, &built);
  // 0: L-BFGS-B, 2 simulations (short of its goal); 1: fallback, Gauss–Newton (solves); 2: fallback
  // (skipped); 3: join, Gauss–Newton.
  std::vector<StageSpec> stages = short_start_then_gauss_newton(4);
  stages[1].fallback = stages[2].fallback = true;
  stages[3].join = true;
  const ContinuationResult r = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0, 1, 3}));
  ASSERT_EQ(r.stages.size(), 3u);
  EXPECT_EQ(r.stages[1].result.reason, StopReason::kPhiRatio);
  // The join started from the fallback attempt's best point (which started from v = 0).
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[1], Vec3::Zero());
  for (int k = 0; k < 3; ++k) EXPECT_EQ(starts[2][k], r.stages[1].best[k].second);
  EXPECT_EQ(r.stages[2].result.phi0, r.stages[1].result.phi_best);

  // A first attempt that reaches its goal skips both fallbacks before the join, not the join.
  stages[0] = short_start_then_gauss_newton(1)[0];
  stages[0].options.method = OptimizerMethod::kGaussNewton;
  stages[0].options.max_simulations = 20;
  built.clear();
  starts.clear();
  const ContinuationResult solved = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0, 3}));
  ASSERT_EQ(starts.size(), 2u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(starts[1][k], solved.stages[0].best[k].second);

  // Every attempt short of its goal: the join still runs, from the last attempt's best point.
  stages = short_start_then_gauss_newton(3);
  stages[1].fallback = true;
  stages[1].options = stages[0].options;
  stages[2].join = true;
  built.clear();
  starts.clear();
  const ContinuationResult short_of_it = run_continuation(stages, factory);
  EXPECT_EQ(built, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[1], Vec3::Zero());
  for (int k = 0; k < 3; ++k) EXPECT_EQ(starts[2][k], short_of_it.stages[1].best[k].second);
  EXPECT_EQ(short_of_it.reason, StopReason::kPhiRatio);

  // Not for the first stage, and not on a fallback.
  stages[0].join = true;
  EXPECT_THROW(run_continuation(stages, factory), InputError);
  stages[0].join = false;
  stages[1].join = true;
  EXPECT_THROW(run_continuation(stages, factory), InputError);
}

}  // namespace
}  // namespace addsim
