// The multi-parameter direct sweep (sensitivity/direct_jacobian.h): every column of S^i equals
// the single-parameter direct pass (sensitivity/direct.h) to round-off on scenes with springs,
// frictional contact (penalty and hybrid stick constraints) and per-step controls, on the
// dense and the sparse path; columns of per-step controls start at their step; selected
// columns match central differences of whole rollouts (cube drag, paper §6.4); bad lists.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../support/cube_drag_fixture.h"
#include "../support/source_dir.h"
#include "addsim/core/error.h"
#include "addsim/io/task.h"
#include "addsim/objectives/markers.h"
#include "addsim/objectives/objective.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/direct_jacobian.h"
#include "addsim/solver/simulator.h"
#include "scenes.h"

namespace addsim::testing {
namespace {

// The single-parameter direct pass of each of `params`: its sensitivities s^i, i = 0..n.
std::vector<std::vector<VecX>> single_passes(const Model& m, const Trajectory& traj,
                                             const ObjectiveFunction& objective, const std::vector<int>& params) {
  std::vector<std::vector<VecX>> singles;
  for (const int p : params) {
    DirectOptions opt;
    opt.keep_sensitivities_of = p;
    singles.push_back(gradient_direct(m, traj, objective, std::vector<int>{p}, opt).sensitivities);
  }
  return singles;
}

// Largest deviation of the sweep's columns from the single-parameter passes `singles` (one per
// column), relative to the largest |s^i_c| of that column over the run (floor 1e-12); fails the
// test if a column that the sweep leaves out before its first step is non-zero in the single pass.
double max_relative_deviation(const Model& m, const std::vector<int>& params, const TrajectorySensitivities& sens,
                              const std::vector<std::vector<VecX>>& singles) {
  double worst = 0.0;
  for (size_t c = 0; c < params.size(); ++c) {
    const std::vector<VecX>& single = singles[c];
    double scale = 1e-12;
    for (const VecX& s : single) scale = std::max(scale, s.cwiseAbs().maxCoeff());
    for (int i = 0; i <= m.scheme().steps; ++i) {
      const double dev = (sens.column(i, static_cast<int>(c)) - single[i]).cwiseAbs().maxCoeff() / scale;
      if (i < sens.first_step[c]) {
        EXPECT_LT(dev, 1e-14) << m.params().name_of(params[c]) << " is left out at step " << i << " but moves";
      }
      worst = std::max(worst, dev);
    }
  }
  return worst;
}

double max_relative_deviation(const Model& m, const Trajectory& traj, const ObjectiveFunction& objective,
                              const std::vector<int>& params, const TrajectorySensitivities& sens) {
  return max_relative_deviation(m, params, sens, single_passes(m, traj, objective, params));
}

std::vector<int> all_groups(const Scene& s) {
  std::vector<int> params;
  for (const auto& [name, idx] : s.groups) params.insert(params.end(), idx.begin(), idx.end());
  return params;
}

TEST(DirectJacobian, EqualsTheSingleParameterPassOnEveryScene) {
  struct Case {
    SceneKind kind;
    Integrator integrator;
    ContactModel friction;
    int steps;
  };
  const Case cases[] = {{SceneKind::kChain, Integrator::kBdf1, ContactModel::kLinear, 30},
                        {SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 30},
                        {SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kLinear, 0},
                        {SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kLinear, 0},
                        {SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kHybrid, 0}};
  for (const Case& k : cases) {
    Scene s = make_scene(k.kind, k.integrator, k.friction, k.steps);
    const Model& m = *s.model;
    Simulator sim(m);
    const Trajectory traj = sim.run(m.params().defaults());
    ASSERT_TRUE(traj.completed()) << to_string(k.kind) << ": " << traj.failure;
    const std::vector<int> params = all_groups(s);
    const std::string label = std::string(to_string(k.kind)) + ", " + to_string(k.integrator) + ", " +
                              to_string(k.friction);
    // The dense path (all of these are small) and the sparse path on the same scene, both
    // against the same single passes.
    const std::vector<std::vector<VecX>> singles = single_passes(m, traj, s.objective, params);
    for (int dense_dofs : {kDenseSensitivityDofs, 0}) {
      const TrajectorySensitivities sens = direct_sensitivity_matrices(m, traj, params, dense_dofs);
      ASSERT_EQ(sens.num_steps(), m.scheme().steps);
      EXPECT_EQ(sens.factorizations, m.scheme().steps);
      double largest = 0.0;
      for (size_t c = 0; c < params.size(); ++c) largest = std::max(largest, sens.column(sens.num_steps(), c).norm());
      EXPECT_GT(largest, 1e-6) << label;
      EXPECT_LT(max_relative_deviation(m, params, sens, singles), 1e-9)
          << label << (dense_dofs > 0 ? " (dense)" : " (sparse)");
    }
    // Per-step controls start at their step: control row r (3 handle coordinates) is
    // carried from step r on (rows 0 and 1 also set q⁰ and v⁰).
    if (s.groups.count("controls") && !s.groups.at("controls").empty()) {
      const TrajectorySensitivities sens = direct_sensitivity_matrices(m, traj, params);
      const std::vector<int>& controls = s.groups.at("controls");
      int late = 0;
      for (size_t c = 0; c < params.size(); ++c)
        if (std::find(controls.begin(), controls.end(), params[c]) != controls.end() && sens.first_step[c] > 2) ++late;
      EXPECT_GT(late, static_cast<int>(controls.size()) / 2) << label;
      EXPECT_LT(sens.s[1].cols(), sens.s.back().cols()) << label;
    }
  }
}

// The shipped cube drag (kinematic plate on strings, paper §6.4), 12 steps with the plate
// moving along +x: all 78 pose controls plus contact and initial-state parameters, against the
// single pass and, for a few columns, central differences of whole rollouts.
TEST(DirectJacobian, CubeDragColumnsMatchSinglePassesAndDifferences) {
  const Task task = test::short_cube_drag_task();
  const Model& m = *task.scene.model;
  const VecX p = m.params().defaults();
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const int poses = m.params().require("bodies.effector.poses").offset;
  std::vector<int> params;
  for (int k = 0; k < 6 * 13; ++k) params.push_back(poses + k);
  for (const char* name : {"contact.kn", "bodies.cube.velocity"}) {
    const auto& e = m.params().require(name);
    for (int k = 0; k < e.size; ++k) params.push_back(e.offset + k);
  }
  const TrajectorySensitivities sens = direct_sensitivity_matrices(m, traj, params);
  EXPECT_LT(max_relative_deviation(m, traj, task.objective, params, sens), 1e-9);
  // The residual Jacobians of the task's terms (feature points, smoothness) that read the
  // sensitivity blocks directly equal the generic one-tangent-per-column form.
  for (int t = 0; t < task.objective.size(); ++t) {
    const ObjectiveTerm& term = task.objective.term(t);
    MatX fast, generic;
    term.residual_jacobian(m, traj, sens, fast);
    term.ObjectiveTerm::residual_jacobian(m, traj, sens, generic);
    ASSERT_EQ(fast.rows(), generic.rows()) << term.name();
    EXPECT_GT(generic.norm(), 0.0) << term.name();
    EXPECT_LT((fast - generic).cwiseAbs().maxCoeff(), 1e-13 * generic.cwiseAbs().maxCoeff()) << term.name();
  }
  // Pose row r enters r^r first (rows 0 and 1 also give q⁰ and v⁰ of the plate).
  for (int r = 2; r <= 12; ++r) EXPECT_EQ(sens.first_step[6 * r], r);
  // x and z of the plate at steps 3 and 8, its tilt at step 5, k_n, the cube's x velocity.
  const int block = rigid_body(m, 1).dof();
  for (int c : {6 * 3 + 0, 6 * 8 + 2, 6 * 5 + 4, 78, 79}) {
    const int j = params[c];
    const double t = 1e-6 * std::max(1.0, std::abs(p[j]));
    VecX pp = p, pm = p;
    pp[j] += t;
    pm[j] -= t;
    const Trajectory tp = sim.run(pp), tm = sim.run(pm);
    ASSERT_TRUE(tp.completed() && tm.completed());
    // Steps from the column's first step on (before it the column is zero by construction).
    const int first = std::max(1, sens.first_step[c]);
    for (int i : {first, std::min(first + 3, 12), 12}) {
      const VecX fd = ((tp.q[i] - tm.q[i]) / (2.0 * t)).segment<6>(block);
      const VecX an = sens.column(i, c).segment<6>(block);
      EXPECT_GT(an.norm(), 1e-6) << m.params().name_of(j) << " step " << i;
      // Central differences over a run with sliding friction: 1e-4 relative is their noise.
      EXPECT_LT((an - fd).norm(), 1e-3 * std::max(fd.norm(), 1e-3))
          << m.params().name_of(j) << " step " << i << ": analytic " << an.transpose() << "\nfd " << fd.transpose();
    }
  }
}

// A DirectSensitivitySweep kept across runs (the optimiser's slot workspace: reused blocks
// and buffers) gives what a fresh sweep gives, bit for bit: on another trajectory, with
// another (shorter, reordered) parameter list, after a run that threw for a bad list, and on
// both the dense and the sparse path.
TEST(DirectJacobian, ASweepKeptAcrossRunsEqualsFreshSweeps) {
  Scene s = make_scene(SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kLinear, 0);
  const Model& m = *s.model;
  Simulator sim(m);
  const VecX p0 = m.params().defaults();
  const Trajectory a = sim.run(p0);
  ASSERT_TRUE(a.completed()) << a.failure;
  const std::vector<int> all = all_groups(s);
  const std::vector<int>& controls = s.groups.at("controls");
  ASSERT_GT(controls.size(), 6u);
  VecX p1 = p0;
  for (int j : controls) p1[j] += 0.01;
  const Trajectory b = sim.run(p1);
  ASSERT_TRUE(b.completed()) << b.failure;
  std::vector<int> part(controls.rbegin(), controls.rend());
  part.resize(part.size() / 2);
  auto expect_same = [&](const TrajectorySensitivities& kept, const TrajectorySensitivities& fresh, const char* what) {
    ASSERT_EQ(kept.s.size(), fresh.s.size()) << what;
    EXPECT_EQ(kept.position, fresh.position) << what;
    EXPECT_EQ(kept.first_step, fresh.first_step) << what;
    EXPECT_EQ(kept.factorizations, fresh.factorizations) << what;
    double largest = 0.0;
    for (size_t i = 0; i < fresh.s.size(); ++i) {
      ASSERT_EQ(kept.s[i].rows(), fresh.s[i].rows()) << what << " step " << i;
      ASSERT_EQ(kept.s[i].cols(), fresh.s[i].cols()) << what << " step " << i;
      EXPECT_TRUE(kept.s[i] == fresh.s[i]) << what << " step " << i;
      if (fresh.s[i].size() > 0) largest = std::max(largest, fresh.s[i].cwiseAbs().maxCoeff());
    }
    EXPECT_GT(largest, 1e-6) << what;
  };
  for (int dense_dofs : {kDenseSensitivityDofs, 0}) {
    DirectSensitivitySweep sweep(m, dense_dofs);
    expect_same(sweep.run(a, all), direct_sensitivity_matrices(m, a, all, dense_dofs), "first run");
    expect_same(sweep.run(b, all), direct_sensitivity_matrices(m, b, all, dense_dofs), "other trajectory");
    expect_same(sweep.run(b, part), direct_sensitivity_matrices(m, b, part, dense_dofs), "other parameters");
    EXPECT_THROW(sweep.run(a, std::vector<int>{part[0], part[1], part[0]}), InputError);
    expect_same(sweep.run(a, all), direct_sensitivity_matrices(m, a, all, dense_dofs), "after a bad list");
  }
}

// The quadruped (78 DOFs, 13 rigid bodies on compliant joints, motor targets per step):
// larger than the tiny scenes above, its sparse history blocks take the block-by-block and
// entry-by-entry products of the dense path. Motor-target columns of three joints (the
// first 8 steps) and the contact stiffness against the single-parameter pass.
TEST(DirectJacobian, QuadrupedColumnsMatchTheSingleParameterPass) {
  const Task task = load_task_file(test::source_dir() / "tasks" / "quadruped_short.json", {"scene.steps=8"});
  const Model& m = *task.scene.model;
  ASSERT_GT(m.num_dofs(), 32);
  Simulator sim(m);
  const Trajectory traj = sim.run(task.p());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  std::vector<int> params;
  for (const char* name : {"joints.leg0_hip.target_angles", "joints.leg2_knee.target_angles",
                           "joints.leg3_abd.target_angles"}) {
    const auto& e = m.params().require(name);
    for (int k = 0; k < std::min(e.size, 9); ++k) params.push_back(e.offset + k);
  }
  params.push_back(m.params().require("contact.kn").offset);
  const TrajectorySensitivities sens = direct_sensitivity_matrices(m, traj, params);
  double largest = 0.0;
  for (size_t c = 0; c < params.size(); ++c) largest = std::max(largest, sens.column(sens.num_steps(), c).norm());
  EXPECT_GT(largest, 1e-6);
  EXPECT_LT(max_relative_deviation(m, traj, task.objective, params, sens), 1e-9);
  // The residual Jacobians of the tracked-point and marker terms (the task's com_target; a
  // com_line and an upright axis of the torso over every step) from the sensitivity blocks
  // equal the generic one-tangent-per-column form.
  const CenterOfMassLine line(0 /* torso */, Vec3(0.0, 0.0, 0.42), Vec3(1.0, 0.0, 0.0), StepWindow::range(0, -1));
  const UprightAxis upright(rigid_marker(m, 0, Vec3::Zero()), rigid_marker(m, 0, Vec3(0.0, 0.0, 0.1)),
                            Vec3(0.0, 0.0, 1.0), StepWindow::range(0, -1));
  std::vector<const ObjectiveTerm*> terms = {&line, &upright};
  for (int t = 0; t < task.objective.size(); ++t) terms.push_back(&task.objective.term(t));
  for (const ObjectiveTerm* term : terms) {
    MatX fast, generic;
    term->residual_jacobian(m, traj, sens, fast);
    term->ObjectiveTerm::residual_jacobian(m, traj, sens, generic);
    ASSERT_EQ(fast.rows(), generic.rows()) << term->name();
    ASSERT_EQ(fast.cols(), generic.cols()) << term->name();
    EXPECT_GT(generic.norm(), 0.0) << term->name();
    EXPECT_LT((fast - generic).cwiseAbs().maxCoeff(), 1e-13 * generic.cwiseAbs().maxCoeff()) << term->name();
  }
}

TEST(DirectJacobian, RejectsBadParameterLists) {
  Scene s = make_scene(SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 5);
  const Model& m = *s.model;
  Simulator sim(m);
  const Trajectory traj = sim.run(m.params().defaults());
  const int j = s.groups.at("stiffness")[0];
  EXPECT_THROW(direct_sensitivity_matrices(m, traj, std::vector<int>{j, j}), InputError);
  EXPECT_THROW(direct_sensitivity_matrices(m, traj, std::vector<int>{m.params().size()}), InputError);
  EXPECT_THROW(direct_sensitivity_matrices(m, traj, std::vector<int>{-1}), InputError);
  Trajectory partial = traj;
  partial.q.resize(3);
  partial.failed_step = 3;
  partial.failure = "test: cut short";
  EXPECT_THROW(direct_sensitivity_matrices(m, partial, std::vector<int>{j}), SimulationError);
}

}  // namespace
}  // namespace addsim::testing
