// The optimisation methods on small simulations that converge in well under a second:
// a particle thrown to a target (quadratic Φ), a rigid sphere thrown with a bounce, friction
// recovered on an incline from a synthetic trajectory; bounds, budgets, failed simulations.

#include <gtest/gtest.h>

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../support/source_dir.h"
#include "addsim/core/error.h"
#include "addsim/io/task.h"
#include "addsim/objectives/markers.h"
#include "addsim/optim/optimizer.h"
#include "optim_scenes.h"

namespace addsim {
namespace {

using test::kParticleIncline;
using test::kParticleThrow;
using test::kRigidSphereThrow;

const Vec3 kTarget(1.0, 0.5, 0.2);
constexpr double kInf = std::numeric_limits<double>::infinity();

std::shared_ptr<test::SceneTask> particle_throw_task(double lower_vx = -std::numeric_limits<double>::infinity(),
                                                     double upper_vx = std::numeric_limits<double>::infinity()) {
  auto t = test::scene_task(kParticleThrow, {{"bodies.0.velocities.0.0", false, lower_vx, upper_vx},
                                             {"bodies.0.velocities.0.1"},
                                             {"bodies.0.velocities.0.2"}});
  t->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, kTarget));
  return t;
}

OptimizerOptions options(OptimizerMethod method, long sims) {
  OptimizerOptions o;
  o.method = method;
  o.max_simulations = sims;
  return o;
}

TEST(Optimizer, LbfgsbThrowsAParticleToItsTarget) {
  auto problem = test::make_problem(particle_throw_task());
  OptimizerOptions o = options(OptimizerMethod::kLbfgsb, 40);
  o.phi_ratio_tolerance = 1e-20;
  long evaluations = 0;
  int last_iteration = 0;
  OptimizerCallbacks cb;
  cb.on_evaluation = [&](const EvaluationRecord& r) {
    ++evaluations;
    EXPECT_EQ(r.simulations, evaluations);
    EXPECT_TRUE(std::isfinite(r.gradient_norm));
  };
  cb.on_iteration = [&](const IterationRecord& r) {
    EXPECT_EQ(r.iteration, last_iteration + 1);
    last_iteration = r.iteration;
    return true;
  };
  const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
  EXPECT_EQ(r.reason, StopReason::kPhiRatio) << r.message;
  EXPECT_LE(r.phi_best, 1e-20 * r.phi0);
  EXPECT_GT(r.phi0, 0.1);
  EXPECT_LE(r.simulations, 15);
  EXPECT_EQ(r.simulations, evaluations);
  EXPECT_EQ(r.iterations, last_iteration);
  EXPECT_GE(r.iterations, 1);
  EXPECT_NEAR((test::particle_throw_end(r.values_best) - kTarget).norm(), 0.0, 1e-9);
}

TEST(Optimizer, LbfgsbFirstStepCapsTheFirstTrial) {
  // optimize.lbfgsb.first_step (OptimizerOptions::lbfgs_first_step): LBFGS++'s first trial is
  // a unit step in x along the normalised steepest-descent direction; with the option it is
  // that long at most, in the same direction, and the run still converges.
  auto first_trial = [](double first_step) {
    auto problem = test::make_problem(particle_throw_task());
    OptimizerOptions o = options(OptimizerMethod::kLbfgsb, 40);
    o.phi_ratio_tolerance = 1e-20;
    o.lbfgs_first_step = first_step;
    std::vector<VecX> xs;
    OptimizerCallbacks cb;
    cb.on_evaluation = [&](const EvaluationRecord& r) { xs.push_back(r.x); };
    const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
    EXPECT_EQ(r.reason, StopReason::kPhiRatio) << first_step << ": " << r.message;
    EXPECT_LE(r.simulations, 20) << first_step;
    EXPECT_GE(xs.size(), 2u);
    return VecX(xs[1] - xs[0]);
  };
  const VecX unit = first_trial(0.0), capped = first_trial(0.05), long_cap = first_trial(10.0);
  EXPECT_NEAR(unit.norm(), 1.0, 1e-12);
  EXPECT_NEAR(capped.norm(), 0.05, 1e-12);
  EXPECT_LE((capped / 0.05 - unit).norm(), 1e-12);
  EXPECT_EQ(long_cap, unit);  // a cap above 1 leaves the unit step
}

TEST(Optimizer, LbfgsbFirstStepPhiCapsTheFirstTrialAtPhiOverTheGradientNorm) {
  // optimize.lbfgsb.first_step_phi (OptimizerOptions::lbfgs_first_step_phi): the first trial
  // is at most Φ₀/‖∇Φ₀‖ long, along the same direction as the unit step, and with first_step
  // the shorter cap applies; the run still converges.
  auto first_trial = [](bool phi_cap, double first_step, double& cap) {
    // v in units of 10 m/s: Φ₀/‖∇Φ₀‖ ≈ 0.2 in x, shorter than the unit step.
    auto t = test::scene_task(kParticleThrow, {{"bodies.0.velocities", false, -kInf, kInf, 10.0}});
    t->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, kTarget));
    auto problem = test::make_problem(t);
    OptimizerOptions o = options(OptimizerMethod::kLbfgsb, 40);
    o.phi_ratio_tolerance = 1e-20;
    o.lbfgs_first_step = first_step;
    o.lbfgs_first_step_phi = phi_cap;
    std::vector<VecX> xs;
    std::vector<double> phis, norms;
    OptimizerCallbacks cb;
    cb.on_evaluation = [&](const EvaluationRecord& r) {
      xs.push_back(r.x);
      phis.push_back(r.phi);
      norms.push_back(r.gradient_norm);
    };
    const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
    EXPECT_EQ(r.reason, StopReason::kPhiRatio) << r.message;
    EXPECT_LE(r.simulations, 20);
    EXPECT_GE(xs.size(), 2u);
    cap = phis[0] / norms[0];
    return VecX(xs[1] - xs[0]);
  };
  double cap = 0.0;
  const VecX unit = first_trial(false, 0.0, cap), capped = first_trial(true, 0.0, cap);
  ASSERT_LT(cap, 0.5);
  EXPECT_NEAR(unit.norm(), 1.0, 1e-12);
  EXPECT_NEAR(capped.norm(), cap, 1e-12 * cap);
  EXPECT_LE((capped / cap - unit).norm(), 1e-12);
  const VecX both = first_trial(true, 0.5 * cap, cap);
  EXPECT_NEAR(both.norm(), 0.5 * cap, 1e-12 * cap);
}

TEST(Optimizer, GaussNewtonSolvesTheAffineThrowInOneStep) {
  auto problem = test::make_problem(particle_throw_task());
  OptimizerOptions o = options(OptimizerMethod::kGaussNewton, 20);
  o.phi_ratio_tolerance = 1e-20;
  o.lm_damping = 0.0;
  const OptimizationResult r = minimize(*problem, problem->x0(), o);
  EXPECT_EQ(r.reason, StopReason::kPhiRatio) << r.message;
  // Affine residuals: one Gauss–Newton step from the start lands on the solution.
  EXPECT_EQ(r.simulations, 2);
  EXPECT_NEAR((test::particle_throw_end(r.values_best) - kTarget).norm(), 0.0, 1e-9);
}

TEST(Optimizer, GaussNewtonJacobianMatchesTheAdjointGradient) {
  // Jᵀρ from direct sensitivities equals dΦ/dx from the adjoint, on a run with contact and
  // a log-scaled parameter.
  auto t = test::scene_task(kRigidSphereThrow, {{"bodies.0.velocity"}, {"contact.kn", true, 0.0}});
  t->objective.add(2.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0.6, 0.1, 0.1), StepWindow::range(-50, -1)));
  auto problem = test::make_problem(t);
  const VecX x = problem->x0();
  const Evaluation e = problem->evaluate(x, true);
  const LeastSquaresEvaluation ls = problem->evaluate_residuals(x, true);
  ASSERT_FALSE(e.failed);
  ASSERT_FALSE(ls.failed);
  EXPECT_NEAR(ls.phi, e.phi, 1e-12 * e.phi);
  const VecX g = ls.jacobian.transpose() * ls.residuals;
  EXPECT_GT(g.norm(), 0.0);
  for (int k = 0; k < g.size(); ++k) EXPECT_NEAR(g[k], e.gradient[k], 1e-7 * e.gradient.norm()) << k;
  EXPECT_EQ(problem->simulations(), 2);
}

TEST(Optimizer, GaussNewtonJacobianInColumnBlocksEqualsOneSweep) {
  // A memory budget of one column per sweep (every block its own direct sweep) gives the
  // same dρ/dx as one sweep over all columns (with a log-scaled column).
  auto t = test::scene_task(kRigidSphereThrow, {{"bodies.0.velocity"}, {"contact.kn", true, 0.0}});
  t->objective.add(2.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0.6, 0.1, 0.1), StepWindow::range(-50, -1)));
  auto whole = test::make_problem(t);
  auto blocks = test::make_problem(t);
  whole->set_jacobian_mode(JacobianMode::kDirect);
  blocks->set_jacobian_mode(JacobianMode::kDirect);
  blocks->set_sensitivity_memory(1.0);
  const LeastSquaresEvaluation a = whole->evaluate_residuals(whole->x0(), true);
  const LeastSquaresEvaluation b = blocks->evaluate_residuals(blocks->x0(), true);
  ASSERT_FALSE(a.failed);
  ASSERT_FALSE(b.failed);
  ASSERT_EQ(a.jacobian.cols(), 4);
  EXPECT_GT(a.jacobian.leftCols(3).norm(), 0.0);
  EXPECT_LT((a.jacobian - b.jacobian).cwiseAbs().maxCoeff(), 1e-12 * a.jacobian.cwiseAbs().maxCoeff());
}

TEST(Optimizer, GaussNewtonJacobianFromTheKeptTrajectoryEqualsTheJointEvaluation) {
  // add_jacobian() after evaluate_residuals(x, false) reuses that run's trajectory (no second
  // simulation) and gives the Jacobian of evaluate_residuals(x, true); after another point
  // was evaluated on the slot it simulates x again.
  auto t = test::scene_task(kRigidSphereThrow, {{"bodies.0.velocity"}, {"contact.kn", true, 0.0}});
  t->objective.add(2.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0.6, 0.1, 0.1), StepWindow::range(-50, -1)));
  auto problem = test::make_problem(t);
  const VecX x = problem->x0();
  const LeastSquaresEvaluation joint = problem->evaluate_residuals(x, true);
  ASSERT_FALSE(joint.failed);
  ASSERT_GT(joint.jacobian.norm(), 0.0);
  LeastSquaresEvaluation e = problem->evaluate_residuals(x, false);
  ASSERT_FALSE(e.failed);
  EXPECT_EQ(e.jacobian.size(), 0);
  EXPECT_EQ(problem->simulations(), 2);
  problem->add_jacobian(e);
  ASSERT_FALSE(e.failed) << e.failure;
  EXPECT_EQ(problem->simulations(), 2);
  EXPECT_EQ((e.jacobian - joint.jacobian).cwiseAbs().maxCoeff(), 0.0);
  VecX other = x;
  other[0] += 0.1;
  ASSERT_FALSE(problem->evaluate_residuals(other, false).failed);
  LeastSquaresEvaluation again = e;
  again.jacobian.resize(0, 0);
  problem->add_jacobian(again);
  ASSERT_FALSE(again.failed) << again.failure;
  EXPECT_EQ(problem->simulations(), 4);
  EXPECT_EQ((again.jacobian - joint.jacobian).cwiseAbs().maxCoeff(), 0.0);
}

TEST(Optimizer, GaussNewtonFormsTheJacobianOnlyAtTheStartAndAtTakenSteps) {
  // Evaluations with a gradient (Jᵀρ) are exactly the start and the accepted trial points,
  // one simulation per evaluation; rejected trials have none. The shipped 5 cm cube drag
  // (paper §6.4, 360 pose controls) with its own options rejects some of its trials.
  const Task task = load_task_file(test::source_dir() / "tasks" / "cube_drag.json");
  SimulationProblem problem(*task.scene.model, task.objective, task.selection, task.p(), 1, 1);
  const OptimizerOptions& o = task.optimize;
  long evaluations = 0, with_gradient = 0, accepted = 0;
  double phi_current = std::numeric_limits<double>::infinity();
  OptimizerCallbacks cb;
  cb.on_evaluation = [&](const EvaluationRecord& r) {
    ++evaluations;
    const bool taken = !r.failed && r.phi < phi_current;
    if (taken) {
      phi_current = r.phi;
      ++accepted;
    }
    EXPECT_EQ(std::isfinite(r.gradient_norm), taken) << "evaluation " << evaluations;
    with_gradient += std::isfinite(r.gradient_norm);
  };
  const OptimizationResult r = minimize(problem, problem.x0(), o, cb);
  EXPECT_GE(r.iterations, 2) << r.message;
  EXPECT_EQ(r.simulations, evaluations);
  EXPECT_EQ(with_gradient, accepted);
  EXPECT_EQ(accepted, r.iterations + 1);
  EXPECT_GT(evaluations, accepted) << "no trial was rejected";
}

TEST(Optimizer, RigidSphereThrowWithSpinByLbfgsbAndGaussNewton) {
  // Targets: where two surface markers are at the end when thrown at v* and ω*; the start is
  // the scene's v, ω. The markers' end positions depend on ω through the rotation.
  const Vec3 v_star(1.3, 0.1, 1.2), w_star(2.0, -9.0, 1.0);
  const std::vector<Vec3> locals = {Vec3(0.1, 0, 0), Vec3(0, 0.05, 0.08)};
  std::vector<MarkerFrame> frames(1);
  {
    Scene s = load_scene_text(kRigidSphereThrow, "test.json");
    VecX p = s.model->params().defaults();
    p.segment<3>(s.model->params().require("bodies.0.velocity").offset) = v_star;
    p.segment<3>(s.model->params().require("bodies.0.angular_velocity").offset) = w_star;
    Simulator sim(*s.model, 1);
    const Trajectory traj = sim.run(p);
    ASSERT_TRUE(traj.completed());
    frames[0].step = 100;
    for (const Vec3& l : locals) {
      frames[0].positions.push_back(rigid_marker(*s.model, 0, l).position(traj.q.back()));
      frames[0].visible.push_back(true);
    }
  }
  for (OptimizerMethod m : {OptimizerMethod::kLbfgsb, OptimizerMethod::kGaussNewton}) {
    auto t = test::scene_task(kRigidSphereThrow, {{"bodies.0.velocity"}, {"bodies.0.angular_velocity"}});
    std::vector<Marker> markers;
    for (const Vec3& l : locals) markers.push_back(rigid_marker(*t->scene.model, 0, l));
    t->objective.add(1.0, std::make_unique<MarkerTrajectories>(markers, frames));
    auto problem = test::make_problem(t);
    OptimizerOptions o = options(m, 60);
    o.phi_ratio_tolerance = 1e-20;
    const OptimizationResult r = minimize(*problem, problem->x0(), o);
    EXPECT_EQ(r.reason, StopReason::kPhiRatio) << to_string(m) << ": " << r.message;
    EXPECT_LE(r.phi_best, 1e-20 * r.phi0) << to_string(m);
    EXPECT_LE(r.simulations, m == OptimizerMethod::kGaussNewton ? 15 : 60) << to_string(m);
  }
}

TEST(Optimizer, FrictionCoefficientRecoveredOnAnInclineFromATrajectory) {
  // Synthetic data: the particle's positions at four steps with μ = 0.3; start at μ = 0.15.
  // The bounds keep the block sliding (it sticks for μ ≥ tan 20° = 0.364, where Φ is flat).
  std::vector<MarkerFrame> frames;
  {
    Scene s = load_scene_text(kParticleIncline, "test.json");
    Simulator sim(*s.model, 1);
    const Trajectory traj = sim.run(s.model->params().defaults());
    ASSERT_TRUE(traj.completed());
    for (int step : {25, 50, 75, 100}) frames.push_back({step, {traj.q[step].head<3>()}, {true}});
  }
  for (OptimizerMethod m : {OptimizerMethod::kLbfgsb, OptimizerMethod::kGaussNewton}) {
    auto t = test::scene_task(kParticleIncline, {{"obstacles.0.friction", false, 0.05, 0.35}});
    t->objective.add(1.0, std::make_unique<MarkerTrajectories>(
                              std::vector<Marker>{node_marker(*t->scene.model, 0, 0)}, frames));
    VecX p = t->scene.model->params().defaults();
    p[t->selection.indices()[0]] = 0.15;
    auto problem = test::make_problem(t, p);
    OptimizerOptions o = options(m, 30);
    o.phi_ratio_tolerance = 1e-20;
    const OptimizationResult r = minimize(*problem, problem->x0(), o);
    EXPECT_NEAR(r.values_best[0], 0.3, 1e-6) << to_string(m) << ": " << r.message;
    EXPECT_LE(r.simulations, 20) << to_string(m);
  }
}

TEST(Optimizer, BoundsAreRespectedByEveryMethod) {
  // v_x ≤ 0.5 m/s keeps the target out of reach: the optimum lies on the bound.
  for (OptimizerMethod m : {OptimizerMethod::kLbfgsb, OptimizerMethod::kGaussNewton, OptimizerMethod::kAdam,
                            OptimizerMethod::kCmaes}) {
    auto problem = test::make_problem(particle_throw_task(-1.0, 0.5));
    OptimizerOptions o = options(m, m == OptimizerMethod::kCmaes || m == OptimizerMethod::kAdam ? 300 : 40);
    o.adam_learning_rate = 0.2;
    o.cmaes_sigma = 0.5;
    OptimizerCallbacks cb;
    int outside = 0;
    cb.on_evaluation = [&](const EvaluationRecord& r) { outside += r.values[0] > 0.5 || r.values[0] < -1.0; };
    const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
    EXPECT_EQ(outside, 0) << to_string(m);
    EXPECT_NEAR(r.values_best[0], 0.5, m == OptimizerMethod::kCmaes ? 1e-3 : 1e-6) << to_string(m) << ": " << r.message;
  }
}

TEST(Optimizer, AdamConvergesOnASmoothProblem) {
  auto problem = test::make_problem(particle_throw_task());
  OptimizerOptions o = options(OptimizerMethod::kAdam, 400);
  o.adam_learning_rate = 0.1;
  o.adam_decay = 0.99;
  o.phi_ratio_tolerance = 1e-8;
  const OptimizationResult r = minimize(*problem, problem->x0(), o);
  EXPECT_EQ(r.reason, StopReason::kPhiRatio) << r.message;
  EXPECT_LE(r.phi_best, 1e-8 * r.phi0);
  EXPECT_EQ(r.iterations + 1, r.simulations);  // one simulation per step plus the start
}

TEST(Optimizer, CmaesConvergesOnATinyProblem) {
  auto problem = test::make_problem(particle_throw_task());
  OptimizerOptions o = options(OptimizerMethod::kCmaes, 1000);
  o.cmaes_sigma = 1.0;
  o.phi_ratio_tolerance = 1e-8;
  int generations = 0;
  OptimizerCallbacks cb;
  cb.on_iteration = [&](const IterationRecord&) { return ++generations > 0; };
  const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
  EXPECT_EQ(r.reason, StopReason::kPhiRatio) << r.message;
  EXPECT_LE(r.phi_best, 1e-8 * r.phi0);
  EXPECT_GT(r.simulations, 30);  // many more than a gradient method needs
  EXPECT_GE(generations, 5);
  EXPECT_TRUE(r.gradient_best.size() == 0);  // gradient-free
}

TEST(Optimizer, FailedSimulationsAreInfiniteForTheMethodsAndCounted) {
  // Φ pulls the box down over its first 8 steps (monotone in v_z); with at most 6 Newton
  // iterations a step, v_z ≲ −2.5 m/s fails at impact on the iteration cap (sub-step retry
  // off: the problems' default would rescue most of these runs). Inverted extrapolated
  // guesses no longer fail a step (docs/solver.md, "Initial guess").
  auto make = [] {
    auto t = test::scene_task(test::kSoftBoxDrop, {{"bodies.0.velocity.0.2"}},
                              {"solver.substep_retry={\"max_depth\": 0}", "solver.max_iterations=6"});
    t->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0, 0, -0.5), StepWindow::range(1, 8)));
    return test::make_problem(t);
  };
  {
    auto problem = make();
    const Evaluation bad = problem->evaluate(VecX::Constant(1, -10.0), true);
    EXPECT_TRUE(bad.failed);
    EXPECT_TRUE(std::isinf(bad.phi));
    EXPECT_NE(bad.failure.find("iteration cap"), std::string::npos) << bad.failure;
    EXPECT_EQ(problem->failures(), 1);
    EXPECT_EQ(problem->simulations(), 1);
    const LeastSquaresEvaluation bad_ls = problem->evaluate_residuals(VecX::Constant(1, -10.0), true);
    EXPECT_TRUE(bad_ls.failed);
    EXPECT_EQ(problem->failures(), 2);
  }
  for (OptimizerMethod m : {OptimizerMethod::kLbfgsb, OptimizerMethod::kGaussNewton, OptimizerMethod::kAdam,
                            OptimizerMethod::kCmaes}) {
    auto problem = make();
    OptimizerOptions o = options(m, 25);
    o.adam_learning_rate = 2.0;
    o.cmaes_sigma = 3.0;
    long failed_records = 0;
    OptimizerCallbacks cb;
    cb.on_evaluation = [&](const EvaluationRecord& r) {
      if (r.failed) {
        ++failed_records;
        EXPECT_TRUE(std::isinf(r.phi));
        EXPECT_FALSE(r.failure.empty());
      }
    };
    const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
    EXPECT_GE(r.failed_simulations, 1) << to_string(m);
    EXPECT_EQ(r.failed_simulations, failed_records) << to_string(m);
    EXPECT_TRUE(std::isfinite(r.phi_best)) << to_string(m);
    EXPECT_LT(r.phi_best, r.phi0) << to_string(m);
    EXPECT_GT(r.values_best[0], -4.5) << to_string(m);  // a completed run
    EXPECT_LT(r.values_best[0], -1.5) << to_string(m);  // that went downhill
  }
}

// The problems retry failed steps as sub-steps unless the scene says otherwise: a drop at
// v_z = −5 m/s, which hits the cap of 6 Newton iterations at the nominal step, evaluates with an
// exact gradient.
TEST(Optimizer, ProblemsRetryFailedStepsAsSubsteps) {
  auto t = test::scene_task(test::kSoftBoxDrop, {{"bodies.0.velocity.0.2"}}, {"solver.max_iterations=6"});
  t->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0, 0, -0.5), StepWindow::range(1, 8)));
  auto problem = test::make_problem(t);
  const Evaluation e = problem->evaluate(VecX::Constant(1, -5.0), true);
  EXPECT_FALSE(e.failed) << e.failure;
  ASSERT_EQ(e.gradient.size(), 1);
  const double d = 1e-6;
  const double fd = (problem->evaluate(VecX::Constant(1, -5.0 + d), false).phi -
                     problem->evaluate(VecX::Constant(1, -5.0 - d), false).phi) / (2.0 * d);
  EXPECT_NEAR(e.gradient[0], fd, 1e-5 * std::abs(fd));
  EXPECT_EQ(problem->failures(), 0);
  auto off = test::scene_task(test::kSoftBoxDrop, {{"bodies.0.velocity.0.2"}},
                              {"solver.substep_retry={\"max_depth\": 0}", "solver.max_iterations=6"});
  off->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0, 0, -0.5), StepWindow::range(1, 8)));
  EXPECT_TRUE(test::make_problem(off)->evaluate(VecX::Constant(1, -5.0), false).failed);
}

TEST(Optimizer, CmaesOnTwoThreadsFollowsTheSameSearch) {
  // Each generation is simulated on two simulators at once; the search is the same as on one.
  OptimizerOptions o = options(OptimizerMethod::kCmaes, 200);
  o.cmaes_sigma = 1.0;
  std::vector<std::vector<double>> phis(2);
  std::vector<OptimizationResult> results;
  for (int slots : {1, 2}) {
    auto problem = test::make_problem(particle_throw_task(), VecX(), slots);
    OptimizerCallbacks cb;
    cb.on_evaluation = [&](const EvaluationRecord& r) { phis[slots - 1].push_back(r.phi); };
    results.push_back(minimize(*problem, problem->x0(), o, cb));
    EXPECT_EQ(problem->simulations(), 200);
  }
  EXPECT_EQ(results[0].phi_best, results[1].phi_best);
  EXPECT_EQ(results[0].iterations, results[1].iterations);
  EXPECT_EQ(phis[0], phis[1]);
  EXPECT_LT(results[1].phi_best, 1e-3 * results[1].phi0);
}

TEST(Optimizer, BudgetsAndCallbackStopTheRun) {
  auto problem = test::make_problem(particle_throw_task());
  OptimizationResult r = minimize(*problem, problem->x0(), options(OptimizerMethod::kAdam, 7));
  EXPECT_EQ(r.reason, StopReason::kSimulationBudget);
  EXPECT_EQ(r.simulations, 7);
  OptimizerOptions o = options(OptimizerMethod::kLbfgsb, 100);
  OptimizerCallbacks cb;
  cb.on_iteration = [](const IterationRecord& it) { return it.iteration < 2; };
  r = minimize(*problem, problem->x0(), o, cb);
  EXPECT_EQ(r.reason, StopReason::kInterrupted);
  EXPECT_EQ(r.iterations, 2);
  // Counters continue from an earlier run.
  OptimizerStart start;
  start.simulations = 95;
  start.iteration = 10;
  start.phi0 = 123.0;
  r = minimize(*problem, problem->x0(), options(OptimizerMethod::kAdam, 100), {}, start);
  EXPECT_EQ(r.simulations, 100);
  EXPECT_EQ(r.iterations, 10 + 4);
  EXPECT_EQ(r.phi0, 123.0);
  EXPECT_THROW(minimize(*problem, problem->x0(), options(OptimizerMethod::kAdam, 0)), InputError);
}

TEST(Optimizer, StallStopsARunThatNoLongerLowersPhi) {
  // v_x ≤ 0.5 m/s keeps the target out of reach: Φ has a floor > 0, which ADAM approaches
  // and then circles. Without the stall test it spends its whole budget; with it the run
  // ends before the first simulation after which the last N lowered the best Φ by less
  // than the factor, on the same path (the test changes nothing before it stops).
  constexpr long kWindow = 10;
  constexpr double kFactor = 2.0;
  auto run = [](long window, std::vector<double>& best_after) {
    auto problem = test::make_problem(particle_throw_task(-1.0, 0.5));
    OptimizerOptions o = options(OptimizerMethod::kAdam, 300);
    o.adam_learning_rate = 0.2;
    o.stall_simulations = window;
    o.stall_factor = kFactor;
    OptimizerCallbacks cb;
    cb.on_evaluation = [&](const EvaluationRecord& r) {
      best_after.push_back(std::min(best_after.empty() ? r.phi : best_after.back(), r.phi));
    };
    return minimize(*problem, problem->x0(), o, cb);
  };
  std::vector<double> free_run, stalled;
  const OptimizationResult full = run(0, free_run);
  EXPECT_EQ(full.reason, StopReason::kSimulationBudget);
  const OptimizationResult r = run(kWindow, stalled);
  ASSERT_EQ(r.reason, StopReason::kStall) << r.message;
  EXPECT_STREQ(to_string(r.reason), "stall");
  const long n = r.simulations;
  ASSERT_GT(n, kWindow + 1);
  ASSERT_LT(n, 300);
  EXPECT_EQ(stalled.size(), static_cast<size_t>(n));
  for (long k = 0; k < n; ++k) EXPECT_EQ(stalled[k], free_run[k]) << "simulation " << k + 1;
  // Stopped at the first k where best(k)·factor > best(k − N), not earlier.
  EXPECT_GT(stalled[n - 1] * kFactor, stalled[n - 1 - kWindow]);
  for (long k = kWindow + 1; k < n; ++k) EXPECT_LE(stalled[k - 1] * kFactor, stalled[k - 1 - kWindow]) << k;
  EXPECT_EQ(r.phi_best, stalled.back());
  // A run that converges is not cut: L-BFGS-B to the reachable target, same count either way.
  for (long window : {0L, 4L}) {
    auto problem = test::make_problem(particle_throw_task());
    OptimizerOptions o = options(OptimizerMethod::kLbfgsb, 40);
    o.phi_ratio_tolerance = 1e-20;
    o.stall_simulations = window;
    const OptimizationResult c = minimize(*problem, problem->x0(), o);
    EXPECT_EQ(c.reason, StopReason::kPhiRatio) << window << ": " << c.message;
    EXPECT_LE(c.simulations, 15) << window;
  }
}

TEST(Optimizer, LbfgsbRestartsFromTheBestPointWhenPhiStopsFalling) {
  // optimize.lbfgsb.restart_iterations / restart_factor (OptimizerOptions::lbfgs_restart_iterations).
  // The particle throw: with the first trial capped at 0.05 the first line search creeps
  // (Φ 1.64 → 1.31 in several trials), and the second iteration's quasi-Newton step solves
  // the throw. A rule that asks for a 1e6-fold decrease per iteration fires before that second
  // line search: the run shares the free run's path up to there, then restarts from the best
  // point so far with an empty memory — its next simulation is a fresh first trial from that
  // point, at most first_step long — and never loses its best Φ. A rule that does not fire
  // (a 2-fold decrease over 4 iterations) leaves the converging run as it is, simulation for
  // simulation.
  constexpr double kFirstStep = 0.05;
  auto run = [](long window, double factor, std::vector<EvaluationRecord>& evals) {
    auto problem = test::make_problem(particle_throw_task());
    OptimizerOptions o = options(OptimizerMethod::kLbfgsb, 30);
    o.phi_ratio_tolerance = 1e-20;
    o.lbfgs_first_step = kFirstStep;
    o.lbfgs_restart_iterations = window;
    o.lbfgs_restart_factor = factor;
    OptimizerCallbacks cb;
    cb.on_evaluation = [&](const EvaluationRecord& r) { evals.push_back(r); };
    return minimize(*problem, problem->x0(), o, cb);
  };
  std::vector<EvaluationRecord> free_run, restarted, kept;
  const OptimizationResult plain = run(0, 2.0, free_run);
  EXPECT_EQ(plain.reason, StopReason::kPhiRatio) << plain.message;
  EXPECT_EQ(plain.restarts, 0);
  const OptimizationResult r = run(1, 1e6, restarted);
  ASSERT_GE(r.restarts, 1) << r.message;
  size_t k = 0;
  while (k < free_run.size() && k < restarted.size() && restarted[k].x == free_run[k].x) ++k;
  ASSERT_GE(k, 3u);
  ASSERT_LT(k, restarted.size());
  size_t best = 0;
  for (size_t j = 1; j < k; ++j)
    if (restarted[j].phi < restarted[best].phi) best = j;
  const double jump = (restarted[k].x - restarted[best].x).norm();
  EXPECT_GT(jump, 0.0);
  EXPECT_LE(jump, kFirstStep * (1.0 + 1e-12));
  EXPECT_LT(restarted[k].phi, restarted[best].phi);  // a descent step along -grad Phi
  EXPECT_LE(r.phi_best, restarted[best].phi);
  const OptimizationResult c = run(4, 2.0, kept);
  EXPECT_EQ(c.reason, StopReason::kPhiRatio) << c.message;
  EXPECT_EQ(c.restarts, 0);
  ASSERT_EQ(kept.size(), free_run.size());
  for (size_t j = 0; j < kept.size(); ++j) EXPECT_EQ(kept[j].x, free_run[j].x) << j;
}

TEST(Optimizer, LbfgsbWeakWolfeLineSearchDoublesTheFirstTrialUntilTheSlopeRises) {
  // optimize.lbfgsb.line_search = "weak_wolfe" (OptimizerOptions::lbfgs_line_search): from a
  // first trial capped at 0.05 along −∇Φ₀/‖∇Φ₀‖ (Φ is quadratic along that line, its minimum
  // far beyond), each trial whose slope has not yet risen to wolfe · the initial one doubles
  // the step on the same line; the first iteration ends at the first trial that meets both weak
  // Wolfe conditions, and the run still converges.
  constexpr double kFirstStep = 0.05;
  auto problem = test::make_problem(particle_throw_task());
  OptimizerOptions o = options(OptimizerMethod::kLbfgsb, 40);
  o.phi_ratio_tolerance = 1e-20;
  o.lbfgs_first_step = kFirstStep;
  o.lbfgs_line_search = LbfgsLineSearch::kWeakWolfe;
  std::vector<EvaluationRecord> evals;
  long first_iteration_sims = 0;
  OptimizerCallbacks cb;
  cb.on_evaluation = [&](const EvaluationRecord& r) { evals.push_back(r); };
  cb.on_iteration = [&](const IterationRecord& r) {
    if (first_iteration_sims == 0) first_iteration_sims = r.simulations;
    return true;
  };
  const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
  EXPECT_EQ(r.reason, StopReason::kPhiRatio) << r.message;
  EXPECT_LE(r.simulations, 30);
  // Simulation 1 is the start, 2 … first_iteration_sims the first line search's trials.
  ASSERT_GE(first_iteration_sims, 3);
  const VecX d = (evals[1].x - evals[0].x).normalized();
  for (long k = 1; k < first_iteration_sims; ++k) {
    const VecX step = evals[k].x - evals[0].x;
    EXPECT_NEAR(step.norm(), kFirstStep * std::pow(2.0, k - 1), 1e-12) << k;
    EXPECT_NEAR(step.normalized().dot(d), 1.0, 1e-12) << k;
    EXPECT_LT(evals[k].phi, evals[k - 1].phi) << k;  // still descending: the slope had not risen enough
  }
}

// Scaled step length ‖D^½ δ‖ of the trial (A + (λ + 1e-14) D) δ = −g.
double scaled_step(const MatX& A, const VecX& D, const VecX& g, double lambda) {
  MatX M = A;
  M.diagonal() += (lambda + 1e-14) * D;
  return D.cwiseSqrt().cwiseProduct(M.ldlt().solve(-g)).norm();
}

TEST(Optimizer, LevenbergMarquardtDampingAfterARejectionShortensTheScaledStep) {
  // Three residuals, six parameters (as the ball throw): A = JᵀJ has rank 3, so a damping far
  // below the scale of its non-zero eigenvalues hardly changes the step.
  MatX J(3, 6);
  J << 1.0, 0.2, -0.3, 0.01, 0.002, 0.0, 0.1, 0.9, 0.2, -0.004, 0.01, 0.003, -0.2, 0.1, 1.1, 0.002, -0.001, 0.02;
  const VecX rho = Vec3(0.01, -0.02, 0.005);
  const MatX A = J.transpose() * J;
  const VecX D = A.diagonal();
  const VecX g = J.transpose() * rho;
  for (double lambda : {0.0, 1e-9, 5e-7, 1e-3, 1e2}) {
    // Off: growth by 4 (from 0: 1e-6), bit for bit the rule without the option.
    EXPECT_EQ(lm_damping_after_rejection(A, D, g, lambda, 0.0), lambda > 0.0 ? 4.0 * lambda : 1e-6);
    for (double shrink : {0.5, 0.25}) {
      const double next = lm_damping_after_rejection(A, D, g, lambda, shrink);
      const double before = scaled_step(A, D, g, lambda), after = scaled_step(A, D, g, next);
      EXPECT_GE(next, lambda > 0.0 ? 4.0 * lambda : 1e-6) << lambda;
      // (1e-3: round-off of the solve with the rank-deficient A at λ ≈ 0, cond ≈ 1e14.)
      EXPECT_LE(after, shrink * before * (1.0 + 1e-3)) << lambda << " " << shrink;
      // Growth by 4 would not have shortened the step enough: then the damping is the
      // smallest one that does (the step length is continuous and monotone in λ).
      const double grown = lambda > 0.0 ? 4.0 * lambda : 1e-6;
      if (scaled_step(A, D, g, grown) > shrink * before) {
        EXPECT_GT(next, grown);
        EXPECT_NEAR(after, shrink * before, 1e-3 * before) << lambda << " " << shrink;
      } else {
        EXPECT_EQ(next, grown) << lambda << " " << shrink;
      }
    }
  }
  // The rejection sequence from λ = 5e-7 with shrink 1/2: every trial at least halves the
  // scaled step, where growth by 4 leaves it within 1 % of the first for four trials.
  double lambda = 5e-7, four = 5e-7;
  const double first = scaled_step(A, D, g, lambda);
  for (int k = 1; k <= 4; ++k) {
    lambda = lm_damping_after_rejection(A, D, g, lambda, 0.5);
    four = lm_damping_after_rejection(A, D, g, four, 0.0);
    EXPECT_LE(scaled_step(A, D, g, lambda), std::pow(0.5, k) * first * (1.0 + 1e-3)) << k;
  }
  EXPECT_GT(scaled_step(A, D, g, four), 0.99 * first);
}

TEST(Optimizer, GaussNewtonRejectsAnObjectiveThatIsNotASumOfSquares) {
  auto t = particle_throw_task();
  t->objective.add(1.0, std::make_unique<CenterOfMassCoordinate>(0, Vec3(1, 0, 0), StepWindow::final_step()));
  auto problem = test::make_problem(t);
  try {
    minimize(*problem, problem->x0(), options(OptimizerMethod::kGaussNewton, 10));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("com_coordinate"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace addsim
