// Batches of rollouts and adjoint gradients (batch/batch.h): results equal a lone rollout's
// bit for bit whatever the thread count, failures are per-item results, bad input fails the
// batch before any rollout.

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "addsim/batch/batch.h"
#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/io/task.h"
#include "addsim/sensitivity/adjoint.h"
#include "../support/source_dir.h"
#include "../support/test_size.h"

namespace addsim {
namespace {

// The small soft ball task (48 tets, 40 steps of contact-rich BDF2): parameter vectors with
// the throw velocity varied around the task's values.
struct Fixture {
  Task task = load_task_file(test::source_dir() / "tasks/soft_material.json");
  const Model& model() const { return *task.scene.model; }

  std::vector<VecX> throws(int n) const {
    const ParamRange v = model().params().require("bodies.ball.velocity");
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> jitter(-0.3, 0.3);
    std::vector<VecX> out;
    for (int k = 0; k < n; ++k) {
      VecX p = task.p();
      p[v.offset] += jitter(rng);
      p[v.offset + 2] += jitter(rng);
      out.push_back(p);
    }
    return out;
  }
};

// Under ADDSIM_TEST_REDUCED (docs/testing.md) 3 items instead of 5 (still more items than
// threads, so the two workers share them unevenly).
TEST(Batch, ResultsAreBitIdenticalForAnyThreadCountAndEqualALoneRollout) {
  const Fixture f;
  const std::vector<VecX> ps = f.throws(test::sized(5, 3));
  BatchOptions one;
  one.threads = 1;
  one.gradients = true;
  BatchOptions two;
  two.threads = 2;
  two.gradients = true;
  const auto r1 = run_batch(f.model(), ps, &f.task.objective, one);
  const auto r2 = run_batch(f.model(), ps, &f.task.objective, two);
  ASSERT_EQ(r1.size(), ps.size());
  ASSERT_EQ(r2.size(), ps.size());
  for (std::size_t k = 0; k < ps.size(); ++k) {
    ASSERT_TRUE(r1[k].completed) << r1[k].failure;
    ASSERT_TRUE(r2[k].completed) << r2[k].failure;
    EXPECT_EQ(r1[k].phi, r2[k].phi) << "item " << k;
    ASSERT_EQ(r1[k].dphi_dp.size(), f.task.p().size());
    EXPECT_TRUE((r1[k].dphi_dp.array() == r2[k].dphi_dp.array()).all()) << "item " << k;
    EXPECT_GT(r1[k].dphi_dp.norm(), 0.0);
    // A lone rollout on a fresh simulator gives the same numbers bit for bit.
    Simulator sim(f.model(), 1);
    const Trajectory traj = sim.run(ps[k]);
    const GradientResult g = gradient_adjoint(f.model(), traj, f.task.objective);
    EXPECT_EQ(g.phi, r1[k].phi);
    EXPECT_TRUE((g.dphi_dp.array() == r1[k].dphi_dp.array()).all());
  }
  // Different throws give different objectives: the batch did not run one item five times.
  EXPECT_NE(r1[0].phi, r1[1].phi);
}

TEST(Batch, AReusedSimulatorGivesTheBitsOfAFreshOne) {
  // Simulator::run starts afresh, so an evaluation's result does not depend on which runs
  // the simulator made before (optimisers keep simulators alive across evaluations).
  // The 451-tet ball (UMFPACK with a reused LU, the state that used to carry over); under
  // ADDSIM_TEST_REDUCED (docs/testing.md) 12 steps instead of 25.
  const std::string steps = "steps=" + std::to_string(test::sized(25, 12));
  const Scene scene = load_scene_file(test::source_dir() / "scenes" / "soft_ball_throw.json", {steps});
  const Model& model = *scene.model;
  const ParamRange v = model.params().require("bodies.ball.velocity");
  std::vector<VecX> ps(3, model.params().defaults());
  ps[0][v.offset] += 0.4;
  ps[1][v.offset + 2] -= 0.7;
  Simulator reused(model, 1);
  ASSERT_STREQ(reused.linear_solver_name(), Simulator(model, 1).linear_solver_name());
  reused.run(ps[0]);
  reused.run(ps[1]);
  const Trajectory again = reused.run(ps[2]);
  Simulator fresh(model, 1);
  const Trajectory once = fresh.run(ps[2]);
  ASSERT_TRUE(again.completed());
  ASSERT_EQ(again.q.size(), once.q.size());
  for (std::size_t i = 0; i < once.q.size(); ++i)
    ASSERT_TRUE((again.q[i].array() == once.q[i].array()).all()) << "step " << i;
}

TEST(Batch, ProgressCountsEveryItemOnce) {
  const Fixture f;
  const std::vector<VecX> ps = f.throws(4);
  std::vector<int> seen;
  BatchOptions o;
  o.threads = 2;
  o.progress = [&](int done, int total) {
    EXPECT_EQ(total, 4);
    seen.push_back(done);
  };
  const auto r = run_batch(f.model(), ps, &f.task.objective, o);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4}));
  for (const auto& item : r) {
    EXPECT_TRUE(item.completed);
    EXPECT_TRUE(std::isfinite(item.phi));
    EXPECT_EQ(item.dphi_dp.size(), 0);  // no gradients asked
    EXPECT_TRUE(item.trajectory.q.empty());
  }
}

TEST(Batch, AFailedRolloutIsAResultOfItsItemOnly) {
  const Fixture f;
  std::vector<VecX> ps = f.throws(3);
  // A material a million times softer than the ball's, thrown at the floor: the rollout
  // fails at impact (inverted element or a step that does not converge).
  const ParamRange e = f.model().params().require("bodies.ball.material.youngs_modulus");
  ps[1][e.offset] = 1e-2;
  const ParamRange v = f.model().params().require("bodies.ball.velocity");
  ps[1][v.offset + 2] = -3.0;
  BatchOptions o;
  o.threads = 2;
  o.gradients = true;
  o.keep_trajectories = true;
  const auto r = run_batch(f.model(), ps, &f.task.objective, o);
  EXPECT_TRUE(r[0].completed);
  EXPECT_TRUE(r[2].completed);
  ASSERT_FALSE(r[1].completed);
  EXPECT_FALSE(r[1].failure.empty());
  EXPECT_GT(r[1].failed_step, 0);
  EXPECT_TRUE(std::isnan(r[1].phi));
  EXPECT_EQ(r[1].dphi_dp.size(), 0);
  // The failed item keeps its converged steps, the others their whole rollout.
  EXPECT_EQ(static_cast<int>(r[1].trajectory.q.size()), r[1].failed_step);
  EXPECT_EQ(static_cast<int>(r[0].trajectory.q.size()), f.model().scheme().steps + 1);
}

TEST(Batch, InvalidInputFailsBeforeAnyRollout) {
  const Fixture f;
  std::vector<VecX> ps = f.throws(3);
  ps[2][0] = std::nan("");
  int calls = 0;
  BatchOptions o;
  o.progress = [&](int, int) { ++calls; };
  try {
    run_batch(f.model(), ps, &f.task.objective, o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch item 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0);
  ps.pop_back();
  ps.push_back(VecX::Zero(3));
  EXPECT_THROW(run_batch(f.model(), ps, nullptr), InputError);
  BatchOptions with_gradients;
  with_gradients.gradients = true;
  EXPECT_THROW(run_batch(f.model(), f.throws(1), nullptr, with_gradients), InputError);
  EXPECT_TRUE(run_batch(f.model(), std::vector<VecX>{}, nullptr).empty());
}

// A chunk of a larger batch (addsim.dask: rows start … of the whole) names an invalid vector by
// its row in the whole batch, not by its place in the chunk.
TEST(Batch, InvalidItemOfAChunkIsNamedByItsRowInTheWholeBatch) {
  const Fixture f;
  std::vector<VecX> ps = f.throws(1);
  ps[0][0] = std::nan("");
  BatchOptions o;
  o.first_index = 2;
  try {
    run_batch(f.model(), ps, &f.task.objective, o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("batch item 2: "), std::string::npos) << what;
    EXPECT_EQ(what.find("batch item 0"), std::string::npos) << what;
  }
}

TEST(Batch, ThreadsNeverExceedItems) {
  EXPECT_EQ(batch_threads(8, 3), 3);
  EXPECT_EQ(batch_threads(1, 10), 1);
  EXPECT_GE(batch_threads(0, 100), 1);
  EXPECT_EQ(batch_threads(0, 1), 1);
}

}  // namespace
}  // namespace addsim
