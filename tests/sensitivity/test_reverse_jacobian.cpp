// The reverse-mode Gauss–Newton Jacobian (sensitivity/reverse_jacobian.h): for residual rows
// with given ∂ρ/∂q^i at several steps (a row reading two steps among them), the backward
// sweep's Σ_i ∂ρ/∂q^i dq^i/dp equals the same rows times the direct sweep's S^i
// (direct_jacobian.h) to 1e-10 relative, on scenes with springs, BDF1 and BDF2, contact with
// linear, tanh and hybrid friction (sticking), per-step handle controls, initial state, mass
// and material parameters, on the dense and the sparse path; the Table 2 tasks' own terms
// (cube drag: kinematic poses, k_n, initial velocity; quadruped: motor targets, a com_line
// and an upright axis over every step) through Objective::residual_partials against the
// direct Jacobian and central differences; the cost model; bad input.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../support/cube_drag_fixture.h"
#include "../support/source_dir.h"
#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/io/task.h"
#include "addsim/objectives/markers.h"
#include "addsim/objectives/objective.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/sensitivity/direct_jacobian.h"
#include "addsim/sensitivity/reverse_jacobian.h"
#include "addsim/solver/simulator.h"
#include "scenes.h"

namespace addsim::testing {
namespace {

std::vector<int> all_groups(const Scene& s) {
  std::vector<int> params;
  for (const auto& [name, idx] : s.groups) params.insert(params.end(), idx.begin(), idx.end());
  return params;
}

// Residual blocks with seeded random ∂ρ/∂q^i: rows 0–2 at the last step, rows 3–4 at step
// n/2, rows 5–6 at step 3, row 7 at step 0 only, and row 2 also at step n/2 (a row that
// reads two steps). 8 rows in all.
std::vector<ResidualStateRows> random_rows(int nq, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto block = [&](int step, int first, int count) {
    ResidualStateRows b;
    b.step = step;
    b.first_row = first;
    b.dq.resize(count, nq);
    for (int r = 0; r < count; ++r)
      for (int d = 0; d < nq; ++d) b.dq(r, d) = u(rng);
    return b;
  };
  return {block(n, 0, 3), block(n / 2, 3, 2), block(3, 5, 2), block(0, 7, 1), block(n / 2, 2, 1)};
}

// Σ_b dq_b S^{step_b} from the direct sweep (8 rows × m).
MatX direct_rows(const std::vector<ResidualStateRows>& rows, const TrajectorySensitivities& sens) {
  const int m = static_cast<int>(sens.params.size());
  MatX out = MatX::Zero(8, m);
  for (const ResidualStateRows& b : rows)
    for (int c = 0; c < m; ++c) out.middleRows(b.first_row, b.dq.rows()).col(c) += b.dq * sens.column(b.step, c);
  return out;
}

// Columns `cols` of the residual Jacobian `got` (one column per entry of `params`) against
// central differences of the task's residuals over whole rollouts. The runs slide with
// friction, so 1e-4 relative is the differences' own noise; the bound is 1e-3.
void expect_columns_match_differences(const Task& task, Simulator& sim, const VecX& p, const std::vector<int>& params,
                                      const MatX& got, std::initializer_list<int> cols) {
  const Model& m = *task.scene.model;
  for (int c : cols) {
    const int j = params[c];
    const double t = 1e-6 * std::max(1.0, std::abs(p[j]));
    VecX pp = p, pm = p, rp, rm;
    pp[j] += t;
    pm[j] -= t;
    const Trajectory tp = sim.run(pp), tm = sim.run(pm);
    ASSERT_TRUE(tp.completed() && tm.completed());
    task.objective.residuals(m, tp, rp, nullptr, nullptr);
    task.objective.residuals(m, tm, rm, nullptr, nullptr);
    const VecX fd = (rp - rm) / (2.0 * t);
    EXPECT_GT(got.col(c).norm(), 1e-6) << m.params().name_of(j);
    EXPECT_LT((got.col(c) - fd).norm(), 1e-3 * std::max(fd.norm(), 1e-3))
        << m.params().name_of(j) << ": analytic " << got.col(c).transpose() << "\nfd " << fd.transpose();
  }
}

double relative_deviation(const MatX& a, const MatX& b) {
  return (a - b).cwiseAbs().maxCoeff() / std::max(b.cwiseAbs().maxCoeff(), 1e-300);
}

TEST(ReverseJacobian, EqualsTheDirectSweepOnEveryScene) {
  struct Case {
    SceneKind kind;
    Integrator integrator;
    ContactModel friction;
    int steps;
  };
  const Case cases[] = {{SceneKind::kChain, Integrator::kBdf1, ContactModel::kLinear, 30},
                        {SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 30},
                        {SceneKind::kBouncingCluster, Integrator::kBdf1, ContactModel::kLinear, 0},
                        {SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kTanh, 0},
                        {SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kLinear, 0},
                        {SceneKind::kDraggedSheet, Integrator::kBdf1, ContactModel::kTanh, 0},
                        {SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kHybrid, 0}};
  for (const Case& k : cases) {
    Scene s = make_scene(k.kind, k.integrator, k.friction, k.steps);
    const Model& m = *s.model;
    Simulator sim(m);
    const Trajectory traj = sim.run(m.params().defaults());
    const std::string label = std::string(to_string(k.kind)) + ", " + to_string(k.integrator) + ", " +
                              to_string(k.friction);
    ASSERT_TRUE(traj.completed()) << label << ": " << traj.failure;
    const int n = m.scheme().steps;
    ASSERT_GE(n, 6) << label;
    if (k.friction == ContactModel::kHybrid) {
      // The hybrid case must exercise stick constraints.
      long sticking = 0;
      for (const StepReport& r : traj.reports) sticking += static_cast<long>(r.contact.sticking.size());
      EXPECT_GT(sticking, 0) << label;
    }
    const std::vector<int> params = all_groups(s);
    const std::vector<ResidualStateRows> rows = random_rows(m.num_dofs(), n, 7);
    for (int dense_dofs : {kDenseSensitivityDofs, 0}) {
      const TrajectorySensitivities sens = direct_sensitivity_matrices(m, traj, params, dense_dofs);
      const MatX expected = direct_rows(rows, sens);
      ReverseJacobianSweep sweep(m, dense_dofs);
      MatX got = MatX::Zero(8, static_cast<Eigen::Index>(params.size()));
      sweep.run(traj, params, rows, got);
      EXPECT_EQ(sweep.seeds(), 8) << label;
      EXPECT_EQ(sweep.factorizations(), n) << label;
      // Non-zero in every row and in every parameter group.
      for (int r = 0; r < 8; ++r) EXPECT_GT(expected.row(r).norm(), 1e-8) << label << " row " << r;
      for (const auto& [group, idx] : s.groups) {
        if (idx.empty()) continue;
        double largest = 0.0;
        for (int j : idx) {
          const auto at = std::find(params.begin(), params.end(), j) - params.begin();
          largest = std::max(largest, expected.col(at).norm());
        }
        EXPECT_GT(largest, 0.0) << label << ": group " << group << " has a zero Jacobian";
      }
      EXPECT_LT(relative_deviation(got, expected), 1e-10)
          << label << (dense_dofs > 0 ? " (dense)" : " (sparse)");
      // A second run on the same object (kept buffers) adds the same again.
      sweep.run(traj, params, rows, got);
      EXPECT_LT(relative_deviation(got, 2.0 * expected), 1e-10) << label << " (second run)";
    }
  }
}

// A soft FEM ball thrown with spin onto a frictional floor whose impact steps are retried as
// sub-steps (solver.substep_retry; the sweep runs over the internal grid, rows enter at their
// output step), with the default and the constant-acceleration start-up (a⁰ depends on the
// material): all parameters, Young's modulus among them, against the direct sweep.
TEST(ReverseJacobian, SubSteppedFemRunsMatchTheDirectSweep) {
  const std::vector<std::string> base{"steps=40",
                                      "dt=0.01",
                                      "bodies.0.mesh.target_tets=40",
                                      "bodies.0.position=[0,0,0.12]",
                                      "bodies.0.velocity=[1.5,0,-1.0]",
                                      "contact.kd=0.5",
                                      "solver.max_iterations=4",
                                      "solver.substep_retry={\"max_depth\": 3}"};
  for (const std::string startup : {"trapezoidal", "constant_acceleration"}) {
    std::vector<std::string> overrides = base;
    overrides.push_back("integrator_startup=\"" + startup + "\"");
    const addsim::Scene scene = load_scene_file(test::scene_path("soft_ball_throw.json"), overrides);
    const Model& m = *scene.model;
    Simulator sim(m);
    const Trajectory traj = sim.run(m.params().defaults());
    ASSERT_TRUE(traj.completed()) << startup << ": " << traj.failure;
    ASSERT_TRUE(traj.substepped()) << startup << ": no step was retried";
    std::vector<int> params(m.params().size());
    for (int j = 0; j < m.params().size(); ++j) params[j] = j;
    const std::vector<ResidualStateRows> rows = random_rows(m.num_dofs(), m.scheme().steps, 11);
    const MatX expected = direct_rows(rows, direct_sensitivity_matrices(m, traj, params));
    const int E = m.params().require("bodies.0.material.youngs_modulus").offset;
    EXPECT_GT(expected.col(E).norm(), 0.0) << startup;
    MatX got = MatX::Zero(8, static_cast<Eigen::Index>(params.size()));
    ReverseJacobianSweep sweep(m);
    sweep.run(traj, params, rows, got);
    EXPECT_EQ(sweep.factorizations(), traj.internal_steps()) << startup;
    EXPECT_LT(relative_deviation(got, expected), 1e-10) << startup;
  }
}

// The cube drag task (paper §6.4): its feature points and smoothness regulariser, with the
// kinematic plate's poses, k_n and the cube's initial velocity as parameters, plus feature
// points at two more frames: Objective::residual_partials + the reverse sweep against the
// direct Jacobian and, for some columns, central differences of the residuals.
TEST(ReverseJacobian, CubeDragTermsMatchTheDirectJacobianAndDifferences) {
  Task task = test::short_cube_drag_task();
  const Model& m = *task.scene.model;
  const VecX p = m.params().defaults();
  // Feature points at steps 4 and 9 too (rows at several frames).
  const auto& feature = dynamic_cast<const MarkerTrajectories&>(task.objective.term(0));
  std::vector<MarkerFrame> frames;
  for (int step : {4, 9}) {
    MarkerFrame f;
    f.step = step;
    for (size_t k = 0; k < feature.markers().size(); ++k) {
      f.positions.push_back(Vec3(0.01 * step, 0.0, 0.05));
      f.visible.push_back(k != 1 || step != 4);
    }
    frames.push_back(f);
  }
  task.objective.add(0.5, std::make_unique<MarkerTrajectories>(feature.markers(), frames));
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  std::vector<int> params;
  const int poses = m.params().require("bodies.effector.poses").offset;
  for (int k = 0; k < 6 * 13; ++k) params.push_back(poses + k);
  for (const char* name : {"contact.kn", "bodies.cube.velocity"}) {
    const auto& e = m.params().require(name);
    for (int k = 0; k < e.size; ++k) params.push_back(e.offset + k);
  }
  const TrajectorySensitivities sens = direct_sensitivity_matrices(m, traj, params);
  MatX expected;
  task.objective.residual_jacobian(m, traj, sens, expected);

  MatX got;
  std::vector<MatX> parts;
  std::vector<ResidualStateRows> rows;
  const TrajectorySensitivities zero = no_sensitivities(m, traj, params);
  ASSERT_EQ(task.objective.residual_partials(m, traj, zero, got, parts, rows), -1);
  ReverseJacobianSweep sweep(m);
  sweep.run(traj, params, rows, got);
  EXPECT_EQ(sweep.seeds(), 12 + 21);  // 4 markers × 3 at the end, 3 + 4 markers × 3 at steps 4, 9
  ASSERT_EQ(got.rows(), expected.rows());
  EXPECT_GT(expected.cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_LT(relative_deviation(got, expected), 1e-10);
  // The cost model prefers the reverse sweep here (33 rows, ≤ 12 steps each, against 84
  // columns over ≈ 6 steps on average: the poses start at their step).
  const JacobianModeCost cost = jacobian_mode_cost(m, params, rows);
  EXPECT_TRUE(cost.reverse_is_cheaper()) << cost.reverse << " vs " << cost.direct;

  // Central differences of the residuals for the plate's x at step 3 and z at step 8, its
  // tilt at step 5, k_n and the cube's x velocity.
  expect_columns_match_differences(task, sim, p, params, got, {6 * 3 + 0, 6 * 8 + 2, 6 * 5 + 4, 78, 79});
}

// The quadruped (78 DOFs, sparse history blocks, motor targets per step): the task's
// com_target and smoothness plus a com_line and an upright axis of the torso over every
// step (rows at every step), reverse against direct.
TEST(ReverseJacobian, QuadrupedTermsMatchTheDirectJacobian) {
  Task task = load_task_file(test::source_dir() / "tasks" / "quadruped_short.json", {"scene.steps=8"});
  const Model& m = *task.scene.model;
  Simulator sim(m);
  const Trajectory traj = sim.run(task.p());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  task.objective.add(2.0, std::make_unique<CenterOfMassLine>(0, Vec3(0.0, 0.0, 0.42), Vec3(1.0, 0.0, 0.0),
                                                             StepWindow::range(0, -1)));
  task.objective.add(0.5, std::make_unique<UprightAxis>(rigid_marker(m, 0, Vec3::Zero()),
                                                        rigid_marker(m, 0, Vec3(0.0, 0.0, 0.1)),
                                                        Vec3(0.0, 0.0, 1.0), StepWindow::range(0, -1)));
  std::vector<int> params;
  for (const char* name : {"joints.leg0_hip.target_angles", "joints.leg2_knee.target_angles",
                           "joints.leg3_abd.target_angles"}) {
    const auto& e = m.params().require(name);
    for (int k = 0; k < e.size; ++k) params.push_back(e.offset + k);
  }
  params.push_back(m.params().require("contact.kn").offset);
  const TrajectorySensitivities sens = direct_sensitivity_matrices(m, traj, params);
  MatX expected, got;
  task.objective.residual_jacobian(m, traj, sens, expected);
  std::vector<MatX> parts;
  std::vector<ResidualStateRows> rows;
  ASSERT_EQ(task.objective.residual_partials(m, traj, no_sensitivities(m, traj, params), got, parts, rows), -1);
  MatX one_thread;
  for (int dense_dofs : {kDenseSensitivityDofs, 0}) {
    MatX out = got;
    ReverseJacobianSweep sweep(m, dense_dofs);
    sweep.run(traj, params, rows, out);
    EXPECT_GT(expected.cwiseAbs().maxCoeff(), 1e-3);
    EXPECT_LT(relative_deviation(out, expected), 1e-10) << (dense_dofs > 0 ? "dense" : "sparse");
    if (dense_dofs > 0) one_thread = out;
  }
  // With solver.threads = 2 a helper linearises the next step: the same arithmetic on the
  // same trajectory, so the same Jacobian bit for bit.
  const Task two = load_task_file(test::source_dir() / "tasks" / "quadruped_short.json",
                                  {"scene.steps=8", "scene.solver.threads=2"});
  ASSERT_EQ(two.scene.model->solver().threads, 2);
  MatX out = got;
  ReverseJacobianSweep sweep(*two.scene.model);
  sweep.run(traj, params, rows, out);
  EXPECT_TRUE(out == one_thread);
}

// The parameters of `params` whose first_parameter_step is at least `from`.
std::vector<int> late_parameters(const Model& m, const std::vector<int>& params, int from) {
  std::vector<int> late;
  for (int j : params)
    if (first_parameter_step(m, j) >= from) late.push_back(j);
  return late;
}

// first_parameter_step() is what both sweeps skip by: the direct sweep over all parameters
// (which finds each column's first non-zero step itself) never starts a column earlier, for
// handle positions (dragged sheet), kinematic poses (cube drag) and motor targets
// (quadruped). With only the late half of the controls listed, the reverse sweep stops at
// their first step and gives the full list's columns bit for bit; the direct sweep starts
// there and gives them to round-off; both factorise n − s + 1 steps instead of n.
TEST(ReverseJacobian, LateControlsSkipTheStepsBeforeTheirFirst) {
  struct Case {
    std::string label;
    const Model* model;
    std::vector<int> params;
  };
  const Scene sheet = make_scene(SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kLinear, 0);
  std::vector<Case> cases{{"dragged sheet (handles)", sheet.model.get(), all_groups(sheet)}};
  std::vector<std::unique_ptr<Task>> tasks;
  // The cube drag's plate poses with k_n and the cube's velocity; the quadruped's 12 motor
  // target paths.
  const std::vector<std::pair<const char*, std::vector<std::string>>> files{
      {"cube_drag.json",
       {"scene.steps=10", "scene.bodies.0.velocity=[0.3, 0, 0]",
        R"(parameters=["bodies.effector.poses", "contact.kn", "bodies.cube.velocity"])"}},
      {"quadruped_short.json", {"scene.steps=10"}}};
  for (const auto& [file, sets] : files) {
    tasks.push_back(std::make_unique<Task>(load_task_file(test::source_dir() / "tasks" / file, sets)));
    cases.push_back({file, tasks.back()->scene.model.get(), tasks.back()->selection.indices()});
  }
  for (const Case& k : cases) {
    const Model& m = *k.model;
    const int n = m.scheme().steps;
    Simulator sim(m);
    const Trajectory traj = sim.run(m.params().defaults());
    ASSERT_TRUE(traj.completed()) << k.label << ": " << traj.failure;
    const TrajectorySensitivities all = direct_sensitivity_matrices(m, traj, k.params);
    int controls = 0;
    for (size_t c = 0; c < k.params.size(); ++c) {
      const int first = first_parameter_step(m, k.params[c]);
      if (first >= 2) ++controls;
      EXPECT_GE(all.first_step[c], first) << k.label << ": " << m.params().name_of(k.params[c]);
    }
    EXPECT_GT(controls, 0) << k.label;
    const int from = n / 2;
    const std::vector<int> late = late_parameters(m, k.params, from);
    ASSERT_FALSE(late.empty()) << k.label;
    std::vector<int> at;  // columns of `late` in the full list
    for (int j : late) at.push_back(static_cast<int>(std::find(k.params.begin(), k.params.end(), j) - k.params.begin()));
    // Rows at the last step, at n/2 and at step 3 (before every late column).
    const std::vector<ResidualStateRows> rows = random_rows(m.num_dofs(), n, 5);
    ReverseJacobianSweep sweep(m);
    MatX full = MatX::Zero(8, static_cast<Eigen::Index>(k.params.size()));
    sweep.run(traj, k.params, rows, full);
    MatX got = MatX::Zero(8, static_cast<Eigen::Index>(late.size()));
    sweep.run(traj, late, rows, got);
    EXPECT_EQ(sweep.factorizations(), n - from + 1) << k.label;
    MatX expected(8, static_cast<Eigen::Index>(late.size()));
    for (size_t c = 0; c < late.size(); ++c) expected.col(static_cast<Eigen::Index>(c)) = full.col(at[c]);
    EXPECT_GT(expected.cwiseAbs().maxCoeff(), 0.0) << k.label;
    EXPECT_TRUE(got == expected) << k.label << ": deviation " << relative_deviation(got, expected);
    const TrajectorySensitivities part = direct_sensitivity_matrices(m, traj, late);
    EXPECT_EQ(part.factorizations, n - from + 1) << k.label;
    for (size_t c = 0; c < late.size(); ++c) {
      EXPECT_EQ(part.first_step[c], all.first_step[at[c]]) << k.label;
      for (int i = 0; i <= n; ++i)
        EXPECT_LE((part.column(i, static_cast<int>(c)) - all.column(i, at[c])).norm(),
                  1e-12 * std::max(all.column(i, at[c]).norm(), 1e-300))
            << k.label << ": " << m.params().name_of(late[c]) << " step " << i;
    }
    EXPECT_LT(relative_deviation(direct_rows(rows, part), expected), 1e-10) << k.label;
  }
}

// The cube drag's own terms with only the plate's poses of rows 5 … 12 listed (the reverse
// sweep stops at step 5): the residual Jacobian against central differences of whole
// rollouts.
TEST(ReverseJacobian, LateCubeDragPosesMatchDifferences) {
  const Task task = test::short_cube_drag_task();
  const Model& m = *task.scene.model;
  const VecX p = m.params().defaults();
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const int poses = m.params().require("bodies.effector.poses").offset;
  std::vector<int> params;
  for (int k = 6 * 5; k < 6 * 13; ++k) params.push_back(poses + k);
  MatX got;
  std::vector<MatX> parts;
  std::vector<ResidualStateRows> rows;
  ASSERT_EQ(task.objective.residual_partials(m, traj, no_sensitivities(m, traj, params), got, parts, rows), -1);
  ReverseJacobianSweep sweep(m);
  sweep.run(traj, params, rows, got);
  EXPECT_EQ(sweep.factorizations(), 12 - 5 + 1);
  // x of the plate at row 5 (its first step), z at row 8, the tilt at row 11.
  expect_columns_match_differences(task, sim, p, params, got, {0, 6 * 3 + 2, 6 * 6 + 4});
}

TEST(ReverseJacobian, CostModelCountsColumnsFromTheirStepAndRowsToTheirStep) {
  const Task task = load_task_file(test::source_dir() / "tasks" / "cube_drag.json",
                                   {"scene.steps=10", R"(parameters=["bodies.effector.poses"])"});
  const Model& m = *task.scene.model;
  const int poses = m.params().require("bodies.effector.poses").offset;
  // Pose row r (6 values) is carried over steps max(r, 1) … 10; k_n over all 10.
  std::vector<int> params;
  for (int k = 6 * 9; k < 6 * 11; ++k) params.push_back(poses + k);  // rows 9 and 10
  std::vector<ResidualStateRows> rows(2);
  rows[0].step = 10;
  rows[0].first_row = 0;
  rows[0].dq = MatX::Zero(3, m.num_dofs());
  rows[1].step = 4;
  rows[1].first_row = 2;  // row 2 again (last step 10) and row 3
  rows[1].dq = MatX::Zero(2, m.num_dofs());
  const JacobianModeCost cost = jacobian_mode_cost(m, params, rows);
  EXPECT_DOUBLE_EQ(cost.direct, 6 * 2 + 6 * 1);
  EXPECT_DOUBLE_EQ(cost.reverse, 3 * 10 + 4);
  EXPECT_FALSE(cost.reverse_is_cheaper());
  params.push_back(m.params().require("contact.kn").offset);
  params.push_back(poses + 6 * 2);  // row 2: steps 2 … 10
  const JacobianModeCost more = jacobian_mode_cost(m, params, rows);
  EXPECT_DOUBLE_EQ(more.direct, 18 + 10 + 9);
  EXPECT_TRUE(more.reverse_is_cheaper());
}

TEST(ReverseJacobian, RejectsBadInput) {
  Scene s = make_scene(SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 5);
  const Model& m = *s.model;
  Simulator sim(m);
  const Trajectory traj = sim.run(m.params().defaults());
  const int j = s.groups.at("stiffness")[0];
  std::vector<ResidualStateRows> rows = random_rows(m.num_dofs(), 5, 3);
  ReverseJacobianSweep sweep(m);
  MatX out = MatX::Zero(8, 2);
  EXPECT_THROW(sweep.run(traj, std::vector<int>{j, j}, rows, out), InputError);
  EXPECT_THROW(sweep.run(traj, std::vector<int>{j, m.params().size()}, rows, out), InputError);
  MatX narrow = MatX::Zero(8, 1);
  EXPECT_THROW(sweep.run(traj, std::vector<int>{j, j + 1}, rows, narrow), InternalError);
  MatX short_rows = MatX::Zero(5, 2);
  EXPECT_THROW(sweep.run(traj, std::vector<int>{j, j + 1}, rows, short_rows), InternalError);
  Trajectory partial = traj;
  partial.q.resize(3);
  partial.failed_step = 3;
  partial.failure = "test: cut short";
  EXPECT_THROW(sweep.run(partial, std::vector<int>{j}, rows, narrow), SimulationError);
  // After the throws the same object still gives the direct sweep's rows.
  const std::vector<int> params = {j};
  MatX got = MatX::Zero(8, 1);
  sweep.run(traj, params, rows, got);
  EXPECT_LT(relative_deviation(got, direct_rows(rows, direct_sensitivity_matrices(m, traj, params))), 1e-10);
}

}  // namespace
}  // namespace addsim::testing
