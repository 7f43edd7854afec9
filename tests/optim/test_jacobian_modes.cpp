// The two ways SimulationProblem forms the Gauss–Newton Jacobian dρ/dx (optim/problem.h,
// JacobianMode): the reverse sweep (one adjoint seed per residual row that reads the state)
// equals the direct sweep to round-off with contact and a log-scaled parameter and with the
// cube drag's 360-odd pose controls; kAuto picks by the cost model; a Gauss–Newton run of the
// cube drag takes the same iterates in both modes; the task key
// optimize.gauss_newton.jacobian.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../support/source_dir.h"
#include "addsim/core/error.h"
#include "addsim/io/task.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/optim/optimizer.h"
#include "optim_scenes.h"

namespace addsim {
namespace {

double relative_deviation(const MatX& a, const MatX& b) {
  return (a - b).cwiseAbs().maxCoeff() / std::max(b.cwiseAbs().maxCoeff(), 1e-300);
}

// A spinning rigid sphere thrown down onto a frictional floor (it bounces and slides).
const char* kSphereOnFloor = R"({
  "dt": 0.005, "steps": 100, "integrator": "bdf2",
  "contact": {"kn": 1e4},
  "obstacles": [{"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1], "friction": 0.5}],
  "bodies": [{"type": "rigid", "name": "ball", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1.0,
              "position": [0, 0, 0.15], "velocity": [1, 0, -1], "angular_velocity": [0, -5, 0]}]
})";

TEST(JacobianModes, AdjointEqualsDirectWithContactAndALogScaledParameter) {
  // The sphere's centre of mass against a target over the last 50 steps (150 rows); its
  // initial velocity and log-scaled k_n (4 columns).
  auto t = test::scene_task(kSphereOnFloor, {{"bodies.0.velocity"}, {"contact.kn", true, 0.0}});
  t->objective.add(2.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0.6, 0.1, 0.1), StepWindow::range(-50, -1)));
  auto direct = test::make_problem(t);
  auto adjoint = test::make_problem(t);
  auto automatic = test::make_problem(t);
  direct->set_jacobian_mode(JacobianMode::kDirect);
  adjoint->set_jacobian_mode(JacobianMode::kAdjoint);
  const LeastSquaresEvaluation a = direct->evaluate_residuals(direct->x0(), true);
  const LeastSquaresEvaluation b = adjoint->evaluate_residuals(adjoint->x0(), true);
  const LeastSquaresEvaluation c = automatic->evaluate_residuals(automatic->x0(), true);
  ASSERT_FALSE(a.failed || b.failed || c.failed);
  EXPECT_EQ(direct->last_jacobian_mode(), JacobianMode::kDirect);
  EXPECT_EQ(adjoint->last_jacobian_mode(), JacobianMode::kAdjoint);
  // 150 rows carried over up to all steps against 4 columns: the direct sweep is cheaper.
  EXPECT_EQ(automatic->last_jacobian_mode(), JacobianMode::kDirect);
  ASSERT_EQ(a.jacobian.rows(), 150);
  ASSERT_EQ(a.jacobian.cols(), 4);
  // Every column moves (k_n through the bounce).
  for (int k = 0; k < 4; ++k) EXPECT_GT(a.jacobian.col(k).norm(), 1e-6) << k;
  EXPECT_LT(relative_deviation(b.jacobian, a.jacobian), 1e-10);
  // Jᵀρ equals the adjoint gradient of Φ.
  const Evaluation e = adjoint->evaluate(adjoint->x0(), true);
  const VecX g = b.jacobian.transpose() * b.residuals;
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(g[k], e.gradient[k], 1e-7 * e.gradient.norm()) << k;
}

Task short_cube_drag(int steps) {
  return load_task_file(test::source_dir() / "tasks" / "cube_drag.json",
                        {"scene.steps=" + std::to_string(steps), R"(parameters=["bodies.effector.poses"])"});
}

TEST(JacobianModes, CubeDragPicksTheAdjointAndTakesTheSameGaussNewtonIterates) {
  const Task task = short_cube_drag(20);
  const Model& m = *task.scene.model;
  ASSERT_EQ(task.selection.size(), 6 * 21);
  std::vector<std::vector<VecX>> iterates(3);
  std::vector<OptimizationResult> results;
  const JacobianMode modes[] = {JacobianMode::kDirect, JacobianMode::kAdjoint, JacobianMode::kAuto};
  for (int k = 0; k < 3; ++k) {
    SimulationProblem problem(m, task.objective, task.selection, task.p(), 1, 1);
    OptimizerOptions o = task.optimize;
    o.gn_jacobian = modes[k];
    o.max_simulations = 8;
    o.phi_change_tolerance = 0.0;
    OptimizerCallbacks cb;
    cb.on_iteration = [&](const IterationRecord& r) {
      iterates[k].push_back(r.x_best);
      return true;
    };
    results.push_back(minimize(problem, problem.x0(), o, cb));
    EXPECT_EQ(problem.last_jacobian_mode(), k == 0 ? JacobianMode::kDirect : JacobianMode::kAdjoint) << k;
  }
  ASSERT_GE(iterates[0].size(), 3u) << results[0].message;
  EXPECT_LT(results[0].phi_best, 0.5 * results[0].phi0);
  for (int k = 1; k < 3; ++k) {
    ASSERT_EQ(iterates[k].size(), iterates[0].size()) << k;
    EXPECT_EQ(results[k].simulations, results[0].simulations);
    for (size_t it = 0; it < iterates[0].size(); ++it) {
      const double scale = std::max(iterates[0][it].cwiseAbs().maxCoeff(), 1e-3);
      EXPECT_LT((iterates[k][it] - iterates[0][it]).cwiseAbs().maxCoeff(), 1e-9 * scale) << "iteration " << it;
    }
    EXPECT_NEAR(results[k].phi_best, results[0].phi_best, 1e-9 * results[0].phi_best);
  }
}

TEST(JacobianModes, APointCloudTermIsDirectInAutoAndAnErrorInAdjoint) {
  // point_cloud gives no state rows (its closest points move with q): kAuto forms its
  // Jacobian by direct sensitivities, kAdjoint is a bad option naming the key.
  auto t = test::scene_task(test::kSoftBoxDrop, {{"bodies.0.velocity.0.2"}}, {"steps=10"});
  std::vector<PointCloudFrame> frames(1);
  frames[0].step = 10;
  frames[0].points = {Vec3(0.05, 0.0, 0.0), Vec3(0.0, 0.05, 0.2)};
  t->objective.add(1.0, std::make_unique<PointCloudDistance>(0, frames));
  auto automatic = test::make_problem(t);
  const LeastSquaresEvaluation e = automatic->evaluate_residuals(automatic->x0(), true);
  ASSERT_FALSE(e.failed) << e.failure;
  EXPECT_GT(e.jacobian.norm(), 0.0);
  EXPECT_EQ(automatic->last_jacobian_mode(), JacobianMode::kDirect);
  auto adjoint = test::make_problem(t);
  adjoint->set_jacobian_mode(JacobianMode::kAdjoint);
  try {
    adjoint->evaluate_residuals(adjoint->x0(), true);
    FAIL() << "adjoint mode accepted a term without state rows";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("optimize.gauss_newton.jacobian"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("point_cloud"), std::string::npos) << err.what();
  }
}

TEST(JacobianModes, SoftFeetQuadrupedPicksTheAdjointAndItsJacobianGivesTheGradient) {
  // The soft-feet walking task (paper Table 2 row 4) with its smoothed contact, cut to 24
  // steps: 12 motor targets per step against the rows of com_target (last step), com_line and
  // upright (every step). The cost model must pick the reverse sweep, as it does at the full
  // 144 steps (its parameter columns outnumber the state rows at every step).
  const Task task = load_task_file(test::source_dir() / "tasks" / "quadruped_soft_feet_gn.json",
                                   {"scene.steps=24", R"(optimize.gauss_newton.jacobian="auto")"});
  ASSERT_EQ(task.optimize.gn_jacobian, JacobianMode::kAuto);
  ASSERT_EQ(task.selection.size(), 12 * 25);
  SimulationProblem problem(*task.scene.model, task.objective, task.selection, task.p(), 1, 1);
  problem.set_jacobian_mode(task.optimize.gn_jacobian);
  const LeastSquaresEvaluation ls = problem.evaluate_residuals(problem.x0(), true);
  ASSERT_FALSE(ls.failed) << ls.failure;
  EXPECT_EQ(problem.last_jacobian_mode(), JacobianMode::kAdjoint);
  ASSERT_EQ(ls.jacobian.cols(), 12 * 25);
  // Jᵀρ equals the adjoint gradient of Φ (non-zero: the torso is far from its target).
  const Evaluation e = problem.evaluate(problem.x0(), true);
  ASSERT_FALSE(e.failed) << e.failure;
  const VecX g = ls.jacobian.transpose() * ls.residuals;
  ASSERT_GT(e.gradient.norm(), 1e-3);
  EXPECT_LT((g - e.gradient).cwiseAbs().maxCoeff(), 1e-7 * e.gradient.norm());
}

TEST(JacobianModes, TaskKeyChoosesTheMode) {
  EXPECT_EQ(short_cube_drag(10).optimize.gn_jacobian, JacobianMode::kAuto);
  const Task direct = load_task_file(test::source_dir() / "tasks" / "cube_drag.json",
                                     {"scene.steps=10", R"(parameters=["bodies.effector.poses"])",
                                      R"(optimize.gauss_newton.jacobian="direct")"});
  EXPECT_EQ(direct.optimize.gn_jacobian, JacobianMode::kDirect);
  const Task adjoint = load_task_file(test::source_dir() / "tasks" / "cube_drag.json",
                                      {"scene.steps=10", R"(parameters=["bodies.effector.poses"])",
                                       R"(optimize.gauss_newton.jacobian="adjoint")"});
  EXPECT_EQ(adjoint.optimize.gn_jacobian, JacobianMode::kAdjoint);
  try {
    load_task_file(test::source_dir() / "tasks" / "cube_drag.json",
                   {"scene.steps=10", R"(parameters=["bodies.effector.poses"])",
                    R"(optimize.gauss_newton.jacobian="reverse")"});
    FAIL() << "an unknown mode was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("optimize.gauss_newton.jacobian"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace addsim
