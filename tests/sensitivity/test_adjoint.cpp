// End-to-end gradient checks over whole rollouts: adjoint vs direct sensitivities vs
// central finite differences, for every parameter kind of each scene, BDF1 and BDF2,
// linear and tanh friction (DESIGN.md §6).

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>

#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"
#include "scenes.h"

namespace addsim::testing {
namespace {

struct Case {
  SceneKind scene;
  Integrator integrator;
  ContactModel friction;
  int steps = 0;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(to_string(info.param.scene)) + "_" + addsim::to_string(info.param.integrator) + "_" +
         addsim::to_string(info.param.friction) + (info.param.steps ? "_" + std::to_string(info.param.steps) : "");
}

double relative_norm_error(const VecX& a, const VecX& b) { return (a - b).norm() / std::max(b.norm(), 1e-300); }

// Random direction over one parameter group, seeded per group; relative groups are
// perturbed in proportion to their values.
VecX group_direction(const Scene& s, const std::string& group, const VecX& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX d = VecX::Zero(p.size());
  const bool relative =
      std::find(s.relative_groups.begin(), s.relative_groups.end(), group) != s.relative_groups.end();
  for (int j : s.groups.at(group)) {
    double x = u(rng);
    if (std::abs(x) < 0.2) x = x < 0 ? -0.2 : 0.2;  // keep every entry active
    d[j] = relative ? x * std::abs(p[j]) : x;
  }
  return d;
}

class GradientTest : public ::testing::TestWithParam<Case> {};

TEST_P(GradientTest, AdjointMatchesDirectAndFiniteDifferences) {
  const Case c = GetParam();
  Scene s = make_scene(c.scene, c.integrator, c.friction, c.steps);
  const Model& m = *s.model;
  const VecX p = m.params().defaults();
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;

  // Contact-rich scenes must actually touch the floor for most of the run.
  if (s.has_contact) {
    int touching = 0;
    for (const VecX& q : traj.q) {
      bool any = false;
      for (int k = 2; k < q.size(); k += 3) any = any || q[k] < 0.0;
      touching += any;
    }
    EXPECT_GT(touching, static_cast<int>(traj.q.size()) / 4) << "too few contact steps for a contact test";
  }

  // Adjoint (all parameters) vs direct (all parameters).
  const GradientResult adj = gradient_adjoint(m, traj, s.objective);
  std::vector<int> all(m.params().size());
  for (int j = 0; j < m.params().size(); ++j) all[j] = j;
  const DirectResult dir = gradient_direct(m, traj, s.objective, all);
  EXPECT_DOUBLE_EQ(adj.phi, dir.phi);
  ASSERT_GT(adj.dphi_dp.norm(), 0.0);
  const double e_dir = relative_norm_error(adj.dphi_dp, dir.dphi_dp);
  EXPECT_LT(e_dir, 1e-9) << "adjoint vs direct, ‖Δ‖/‖direct‖";
  std::printf("[ %s ] |p| = %d, adjoint vs direct: %.3e\n", case_name({c, 0}).c_str(), m.params().size(), e_dir);

  // Every parameter group vs a central finite difference along a random direction.
  const double tol = s.has_contact ? 1e-4 : 1e-6;
  // Smooth rollouts: larger steps keep the forward tolerance's noise (≈1e-13 in Φ) small;
  // contact-rich ones: smaller steps avoid crossing contact and stick/slip kinks.
  const std::vector<double> steps =
      s.has_contact ? std::vector<double>{1e-4, 1e-5, 1e-6, 1e-7} : std::vector<double>{1e-3, 1e-4, 1e-5, 1e-6};
  unsigned seed = 7;
  for (const auto& [group, indices] : s.groups) {
    const VecX d = group_direction(s, group, p, seed++);
    const double analytic = adj.dphi_dp.dot(d);
    const FdSweep fd = directional_derivative_fd_sweep(sim, s.objective, p, d, steps);
    // Relative error with an absolute floor tied to the size of the whole gradient.
    const double floor = 1e-8 * adj.dphi_dp.norm() * d.norm();
    const double err = std::abs(analytic - fd.derivative) / std::max(std::abs(fd.derivative), floor);
    std::printf("[ %s ] %-16s analytic = % .10e  fd = % .10e  rel = %.2e\n", case_name({c, 0}).c_str(),
                group.c_str(), analytic, fd.derivative, err);
    EXPECT_GT(std::abs(analytic), floor) << group << ": vacuous directional derivative";
    EXPECT_GT(std::abs(fd.derivative), floor) << group << ": vacuous finite difference";
    EXPECT_LT(err, tol) << group << ": adjoint " << analytic << " vs FD " << fd.derivative << "\n" << fd.report();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Scenes, GradientTest,
    ::testing::Values(Case{SceneKind::kChain, Integrator::kBdf1, ContactModel::kLinear},
                      Case{SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear},
                      Case{SceneKind::kBouncingCluster, Integrator::kBdf1, ContactModel::kLinear},
                      Case{SceneKind::kBouncingCluster, Integrator::kBdf1, ContactModel::kTanh},
                      Case{SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kLinear},
                      Case{SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kTanh},
                      Case{SceneKind::kDraggedSheet, Integrator::kBdf1, ContactModel::kLinear},
                      Case{SceneKind::kDraggedSheet, Integrator::kBdf1, ContactModel::kTanh},
                      Case{SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kLinear},
                      Case{SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kTanh}),
    case_name);

// Long horizon with many contacts: 400 steps of the bouncing cluster.
INSTANTIATE_TEST_SUITE_P(LongHorizon, GradientTest,
                         ::testing::Values(Case{SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kTanh, 400},
                                           Case{SceneKind::kBouncingCluster, Integrator::kBdf1, ContactModel::kLinear,
                                                400}),
                         case_name);

TEST(Adjoint, FailedTrajectoryThrowsNamingTheStep) {
  Scene s = make_scene(SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear);
  s.model->solver_mut().max_iterations = 0;  // every step fails at its first check
  Simulator sim(*s.model);
  const Trajectory traj = sim.run(s.model->params().defaults());
  ASSERT_FALSE(traj.completed());
  try {
    gradient_adjoint(*s.model, traj, s.objective);
    FAIL() << "expected SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_EQ(e.step(), traj.failed_step);
    EXPECT_NE(std::string(e.what()).find("step " + std::to_string(traj.failed_step)), std::string::npos) << e.what();
  }
  EXPECT_THROW(gradient_direct(*s.model, traj, s.objective, std::vector<int>{0}), SimulationError);
}

TEST(Adjoint, MismatchedTrajectoryIsAnInputError) {
  Scene a = make_scene(SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 20);
  Scene b = make_scene(SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 30);
  Simulator sim(*a.model);
  const Trajectory traj = sim.run(a.model->params().defaults());
  EXPECT_THROW(gradient_adjoint(*b.model, traj, b.objective), InputError);
}

// solver.threads = 2: a helper thread linearises the steps ahead of the adjoint's sweep and
// factorises the Jacobians of the fresh-LU steps (those before a forward step that
// factorised); in the direct pass it linearises step i + 1 while step i is solved. The
// arithmetic is the same, so the gradient is identical bit for bit; a failing step still
// throws through the pipeline.
TEST(Adjoint, TwoThreadsGiveTheSameGradientAdjointAndDirect) {
  Scene s = make_scene(SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kLinear);
  Simulator sim(*s.model);
  const Trajectory traj = sim.run(s.model->params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  int fresh = 0;
  for (std::size_t i = 1; i < traj.reports.size(); ++i) fresh += traj.reports[i].factorizations > 0;
  EXPECT_GT(fresh, 0) << "no fresh-LU step: the scene no longer exercises them";
  const GradientResult one = gradient_adjoint(*s.model, traj, s.objective);
  EXPECT_GE(one.factorizations, fresh);
  s.model->solver_mut().threads = 2;
  const GradientResult two = gradient_adjoint(*s.model, traj, s.objective);
  EXPECT_GT(one.dphi_dp.norm(), 0.0);
  EXPECT_EQ(one.phi, two.phi);
  EXPECT_EQ(one.dphi_dp, two.dphi_dp);
  // The direct pass linearises the next step ahead on the helper thread: same numbers too.
  const std::vector<int> some{0, s.model->params().size() / 2, s.model->params().size() - 1};
  s.model->solver_mut().threads = 1;
  const DirectResult d1 = gradient_direct(*s.model, traj, s.objective, some);
  s.model->solver_mut().threads = 2;
  const DirectResult d2 = gradient_direct(*s.model, traj, s.objective, some);
  EXPECT_EQ(d1.dphi_dp, d2.dphi_dp);
  Trajectory broken = traj;
  broken.q[3].setConstant(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THROW(gradient_adjoint(*s.model, broken, s.objective), std::runtime_error);
  EXPECT_THROW(gradient_direct(*s.model, broken, s.objective, some), std::runtime_error);
}

// Timing of one adjoint vs its forward rollout on the biggest scene (no assertion: timing
// belongs to benchmarks; this prints it for the record).
TEST(Adjoint, ReportsCostRelativeToForward) {
  Scene s = make_scene(SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kTanh, 200);
  Simulator sim(*s.model);
  const VecX p = s.model->params().defaults();
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const GradientResult adj = gradient_adjoint(*s.model, traj, s.objective);
  int iterations = 0;
  for (const StepReport& r : traj.reports) iterations += r.iterations;
  std::printf("dragged sheet, 200 steps, |q| = %d, |p| = %d: forward %.2f ms (%d Newton iterations), adjoint %.2f ms\n",
              s.model->num_dofs(), s.model->params().size(), 1e3 * traj.wall_seconds, iterations,
              1e3 * adj.wall_seconds);
  EXPECT_GT(adj.dphi_dp.norm(), 0.0);
}

}  // namespace
}  // namespace addsim::testing
