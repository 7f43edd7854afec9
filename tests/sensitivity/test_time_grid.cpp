// Gradients through the time grid (docs/notation.md §Time, docs/solver.md §Sub-step retry):
// every BDF start-up (integrator_startup) and runs whose failed steps were retried as
// sub-steps (solver.substep_retry) differentiate exactly: adjoint vs direct ≤ 1e-9 relative
// over all parameters, vs central finite differences ≤ 1e-4 for an initial condition and a
// material parameter, on a soft ball thrown with spin onto a frictional floor. Also: the
// default start-up and an unused retry leave runs bit-identical, and kt_rule changes k_t.
// And the fallback initial guess of a step whose extrapolated guesses invert an element.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/direct_jacobian.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"
#include "../support/test_size.h"
#include "centroid_objective.h"

namespace addsim {
namespace {

using test::CentroidObjective;

const std::vector<std::string> kBall{"steps=40",
                                     "dt=0.01",
                                     "bodies.0.mesh.target_tets=40",
                                     "bodies.0.position=[0,0,0.12]",
                                     "bodies.0.velocity=[1.5,0,-1.0]",
                                     "contact.kd=0.5"};

Scene ball(std::vector<std::string> extra) {
  extra.insert(extra.begin(), kBall.begin(), kBall.end());
  return load_scene_file(test::scene_path("soft_ball_throw.json"), extra);
}

// Adjoint vs direct over all of p, then central differences for the named parameters; the
// ±δ runs of the smallest difference step must sub-step like the run itself (else the
// difference sees a different grid; larger steps may cross a retry boundary, which the
// sweep's agreement check then discards).
void check_gradients(const Model& m, Simulator& sim, const std::vector<std::string>& fd_names, const std::string& label) {
  const CentroidObjective obj;
  const VecX p = m.params().defaults();
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << label << ": " << traj.failure;
  const GradientResult adj = test::expect_adjoint_matches_direct(m, traj, obj, label);
  std::vector<int> all(m.params().size());
  for (int j = 0; j < m.params().size(); ++j) all[j] = j;
  // The multi-parameter sweep of the Gauss–Newton Jacobian (sensitivity/direct_jacobian.h)
  // walks the same grid and start-up: every output step's column equals the single pass.
  const TrajectorySensitivities jac = direct_sensitivity_matrices(m, traj, all);
  ASSERT_EQ(jac.num_steps(), m.scheme().steps) << label;
  const std::vector<double> steps{1e-4, 1e-5, 1e-6};
  for (const std::string& name : fd_names) {
    const int j = m.params().require(name).offset;
    {
      DirectOptions keep;
      keep.keep_sensitivities_of = j;
      const std::vector<int> one{j};
      const DirectResult single = gradient_direct(m, traj, obj, one, keep);
      double worst = 0.0, scale = 0.0;
      for (int k = 0; k <= m.scheme().steps; ++k) {
        worst = std::max(worst, (jac.column(k, j) - single.sensitivities[k]).norm());
        scale = std::max(scale, single.sensitivities[k].norm());
      }
      EXPECT_GT(scale, 0.0) << label << " " << name;
      EXPECT_LT(worst, 1e-8 * scale) << label << " " << name << ": multi-parameter sweep vs single pass";
    }
    {
      const double t = steps.back();
      VecX pp = p, pm = p;
      const double d = t * std::max(1.0, std::abs(p[j]));
      pp[j] += d;
      pm[j] -= d;
      const Trajectory tp = sim.run(pp), tm = sim.run(pm);
      ASSERT_TRUE(tp.completed() && tm.completed()) << label << " " << name;
      EXPECT_EQ(tp.output_index, traj.output_index) << label << " " << name << ": +δ run sub-steps differently";
      EXPECT_EQ(tm.output_index, traj.output_index) << label << " " << name << ": −δ run sub-steps differently";
    }
    const FdSweep fd = gradient_fd_sweep(sim, obj, p, j, steps);
    const double floor = 1e-8 * adj.dphi_dp.norm();
    const double err = std::abs(adj.dphi_dp[j] - fd.derivative) / std::max(std::abs(fd.derivative), floor);
    EXPECT_GT(std::abs(adj.dphi_dp[j]), floor) << label << " " << name << ": vacuous derivative";
    EXPECT_LT(err, 1e-4) << label << " " << name << "\n" << fd.report();
    std::printf("[ %s ] %-36s adjoint % .10e  fd % .10e  rel %.2e\n", label.c_str(), name.c_str(), adj.dphi_dp[j],
                fd.derivative, err);
  }
}

const std::vector<std::string> kFdParams{"bodies.0.velocity.0.0", "bodies.0.material.youngs_modulus"};

// Every start-up: adjoint vs direct over all parameters and the multi-parameter sweep, then
// finite differences for both kFdParams; under ADDSIM_TEST_REDUCED (docs/testing.md) the
// k-th start-up takes kFdParams[k mod 2], so the four together still check both.
TEST(TimeGrid, EveryStartupDifferentiatesExactly) {
  const std::vector<const char*> startups{"trapezoidal", "constant_velocity", "constant_acceleration",
                                          "bdf1_first_step"};
  for (std::size_t k = 0; k < startups.size(); ++k) {
    const char* startup = startups[k];
    const Scene scene = ball({std::string("integrator_startup=\"") + startup + "\""});
    const Model& m = *scene.model;
    Simulator sim(m);
    const Trajectory traj = sim.run(m.params().defaults());
    ASSERT_TRUE(traj.completed()) << startup << ": " << traj.failure;
    EXPECT_FALSE(traj.substepped());
    const std::vector<std::string> fd_names =
        test::reduced() ? std::vector<std::string>{kFdParams[k % kFdParams.size()]} : kFdParams;
    check_gradients(m, sim, fd_names, std::string("startup ") + startup);
  }
}

// The start-ups differ in the run (they read the initial state differently), and the
// constant-acceleration one records a⁰ = g for a body in free flight at t₀. Without spin the
// ball translates undeformed until it lands: the trapezoidal and constant-acceleration
// start-ups are both exact for that motion and agree there, the others do not.
TEST(TimeGrid, StartupsChangeTheRun) {
  const std::vector<const char*> startups{"trapezoidal", "constant_velocity", "constant_acceleration", "bdf1_first_step"};
  auto runs_with = [&](const std::string& spin) {
    std::vector<Trajectory> runs;
    for (const char* startup : startups) {
      const Scene scene = ball({std::string("integrator_startup=\"") + startup + "\"", "bodies.0.position=[0,0,0.3]",
                                "bodies.0.angular_velocity=" + spin});
      Simulator sim(*scene.model);
      runs.push_back(sim.run(scene.model->params().defaults()));
      EXPECT_TRUE(runs.back().completed()) << startup;
    }
    return runs;
  };
  const std::vector<Trajectory> still = runs_with("[0,0,0]");
  const VecX& a0 = still[2].a0;
  ASSERT_EQ(a0.size(), still[2].q0.size());
  for (int k = 0; k < a0.size(); k += 3) {
    EXPECT_NEAR(a0[k], 0.0, 1e-9);
    EXPECT_NEAR(a0[k + 2], -9.81, 1e-9);
  }
  EXPECT_LT((still[0].q.back() - still[2].q.back()).norm(), 1e-9);
  EXPECT_GT((still[0].q.back() - still[1].q.back()).norm(), 1e-6);
  EXPECT_GT((still[0].q.back() - still[3].q.back()).norm(), 1e-6);
  // With spin the elastic forces change from t₀ on: every start-up gives its own run.
  const std::vector<Trajectory> spinning = runs_with("[0,-15,0]");
  for (std::size_t a = 0; a < spinning.size(); ++a)
    for (std::size_t b = a + 1; b < spinning.size(); ++b)
      EXPECT_GT((spinning[a].q.back() - spinning[b].q.back()).norm(), 1e-6) << startups[a] << " vs " << startups[b];
}

// A scene whose impact steps fail at the nominal step (a Newton iteration cap) but converge
// as sub-steps.
Scene retry_ball(int depth) {
  return ball({"solver.max_iterations=4", "solver.substep_retry={\"max_depth\": " + std::to_string(depth) + "}"});
}

TEST(TimeGrid, RetriedRunDifferentiatesExactly) {
  const Scene scene = retry_ball(3);
  const Model& m = *scene.model;
  Simulator sim(m);
  const Trajectory traj = sim.run(m.params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  ASSERT_TRUE(traj.substepped()) << "no step was retried: the test scene no longer exercises sub-steps";
  int retried = 0;
  for (const StepReport& r : traj.reports) retried += r.substeps > 1;
  EXPECT_GT(retried, 0);
  EXPECT_GT(traj.internal_steps(), m.scheme().steps);
  EXPECT_EQ(static_cast<int>(traj.q.size()), m.scheme().steps + 1);
  std::printf("[ retry ] %d of %d steps retried, %d internal steps\n", retried, m.scheme().steps,
              traj.internal_steps());
  // Without retry the same scene fails: the sub-steps are what make it run.
  Scene off = ball({"solver.max_iterations=4"});
  Simulator plain(*off.model);
  EXPECT_FALSE(plain.run(off.model->params().defaults()).completed());
  // Under ADDSIM_TEST_REDUCED (docs/testing.md) FD for the material parameter only: the
  // retried run with the constant-acceleration start-up (below) checks an initial velocity.
  const std::vector<std::string> fd_names =
      test::reduced() ? std::vector<std::string>{"bodies.0.material.youngs_modulus"} : kFdParams;
  check_gradients(m, sim, fd_names, "retry");
}

// The failure the retry was first made for: a soft ball (E = 1 kPa) hitting the floor whose
// extrapolated guesses invert an element. The fallback guess (below) now resolves it at the
// nominal step before any retry, so with retry enabled nothing is sub-stepped and the run
// is bit-identical to the plain one (no change of time grid, no jump of Φ in E).
TEST(TimeGrid, InvertedGuessIsResolvedBeforeRetry) {
  const std::vector<std::string> soft{"bodies.0.material.youngs_modulus=1000", "bodies.0.velocity=[1.5,0,-2]"};
  Scene off = ball(soft);
  Simulator plain(*off.model);
  const Trajectory a = plain.run(off.model->params().defaults());
  ASSERT_TRUE(a.completed()) << a.failure;
  std::vector<std::string> with = soft;
  with.push_back("solver.substep_retry={\"max_depth\": 4}");
  const Scene scene = ball(with);
  Simulator sim(*scene.model);
  const Trajectory b = sim.run(scene.model->params().defaults());
  ASSERT_TRUE(b.completed()) << b.failure;
  EXPECT_FALSE(b.substepped());
  ASSERT_EQ(a.q.size(), b.q.size());
  for (std::size_t i = 0; i < a.q.size(); ++i) EXPECT_EQ((a.q[i] - b.q[i]).cwiseAbs().maxCoeff(), 0.0) << i;
}

// Initial guess fallback (docs/solver.md, "Initial guess"): at E = 1 kPa both extrapolated
// guesses of the impact step invert an element; a shorter extrapolation q^{i-1} + α h v^{i-1}
// is admissible, Newton converges from it at the nominal step (no sub-steps), and the
// gradient through that step is exact (the solution does not depend on the guess). Under
// ADDSIM_TEST_REDUCED (docs/testing.md) finite differences of Young's modulus only (adjoint vs
// direct stays over all parameters).
TEST(InitialGuess, InadmissibleExtrapolationFallsBack) {
  const Scene scene = ball({"bodies.0.material.youngs_modulus=1000", "bodies.0.velocity=[1.5,0,-2]"});
  Simulator sim(*scene.model);
  const Trajectory traj = sim.run(scene.model->params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  EXPECT_FALSE(traj.substepped());
  int fallbacks = 0;
  for (const StepReport& r : traj.reports)
    if (r.note.find("initial guess q^{i-1} + ") != std::string::npos) {
      ++fallbacks;
      EXPECT_NE(r.note.find("inverted"), std::string::npos) << r.note;
      EXPECT_TRUE(r.converged);
      EXPECT_GT(r.iterations, 0);
    }
  EXPECT_GT(fallbacks, 0);
  const std::vector<std::string> fd_names =
      test::reduced() ? std::vector<std::string>{"bodies.0.material.youngs_modulus"} : kFdParams;
  check_gradients(*scene.model, sim, fd_names, "fallback guess after inversion");
}

// Sub-steps combine with the other start-ups (the grid's first steps use the start-up's rule).
TEST(TimeGrid, RetriedRunWithConstantAcceleration) {
  const Scene scene = ball({"solver.max_iterations=4", "solver.substep_retry={\"max_depth\": 3}",
                            "integrator_startup=\"constant_acceleration\""});
  Simulator sim(*scene.model);
  const Trajectory traj = sim.run(scene.model->params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  ASSERT_TRUE(traj.substepped());
  check_gradients(*scene.model, sim, {"bodies.0.velocity.0.2"}, "retry + constant_acceleration");
}

// Retry that is enabled but never needed, and the default start-up spelled out, give the
// same bits as the plain scene.
TEST(TimeGrid, UnusedRetryAndDefaultStartupAreBitIdentical) {
  const Scene plain = ball({});
  const Scene with = ball({"solver.substep_retry={\"max_depth\": 4}", "integrator_startup=\"trapezoidal\""});
  Simulator a(*plain.model), b(*with.model);
  const Trajectory ta = a.run(plain.model->params().defaults());
  const Trajectory tb = b.run(with.model->params().defaults());
  ASSERT_TRUE(ta.completed() && tb.completed());
  EXPECT_FALSE(tb.substepped());
  ASSERT_EQ(ta.q.size(), tb.q.size());
  for (std::size_t i = 0; i < ta.q.size(); ++i) EXPECT_EQ((ta.q[i] - tb.q[i]).cwiseAbs().maxCoeff(), 0.0) << i;
}

// A retry that cannot help still fails, naming the step and the retry.
TEST(TimeGrid, RetryThatCannotHelpReportsTheFailure) {
  const Scene scene = ball({"solver.max_iterations=1", "solver.substep_retry={\"max_depth\": 1}"});
  Simulator sim(*scene.model);
  const Trajectory traj = sim.run(scene.model->params().defaults());
  ASSERT_FALSE(traj.completed());
  EXPECT_NE(traj.failure.find("sub-step retry"), std::string::npos) << traj.failure;
  EXPECT_THROW(ball({"solver.substep_retry={\"max_depth\": 11}"}), InputError);
  EXPECT_THROW(ball({"solver.substep_retry={\"depth\": 2}"}), InputError);
  EXPECT_THROW(ball({"integrator_startup=\"constant\""}), InputError);
}

// contact.kt_rule = "effective_step": k_t = k_n ⅔h for BDF2, which changes the sliding run;
// its gradient (k_n enters k_t) stays exact.
TEST(TimeGrid, EffectiveStepTangentialStiffness) {
  const Scene h = ball({});
  const Scene eff = ball({"contact.kt_rule=\"effective_step\""});
  char kt[64];
  std::snprintf(kt, sizeof kt, "contact.kt=%.17g", 1000.0 * (0.01 * (1.0 / 1.5)));
  const Scene explicit_kt = ball({kt});
  Simulator a(*h.model), b(*eff.model), c(*explicit_kt.model);
  const Trajectory ta = a.run(h.model->params().defaults());
  const Trajectory tb = b.run(eff.model->params().defaults());
  const Trajectory tc = c.run(explicit_kt.model->params().defaults());
  ASSERT_TRUE(ta.completed() && tb.completed() && tc.completed());
  EXPECT_GT((ta.q.back() - tb.q.back()).norm(), 1e-6);
  EXPECT_LT((tb.q.back() - tc.q.back()).norm(), 1e-9);
  // Under ADDSIM_TEST_REDUCED (docs/testing.md) FD for contact.kn only, the parameter k_t is
  // derived from (adjoint vs direct still covers all).
  const std::vector<std::string> fd_names = test::reduced() ? std::vector<std::string>{"contact.kn"}
                                                            : std::vector<std::string>{"contact.kn", "bodies.0.velocity.0.0"};
  check_gradients(*eff.model, b, fd_names, "kt_rule effective_step");
  EXPECT_THROW(ball({"contact.kt=5", "contact.kt_rule=\"h\""}), InputError);
}

}  // namespace
}  // namespace addsim
