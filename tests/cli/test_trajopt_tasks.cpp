// The shipped Table 2 trajectory-optimisation tasks (tasks/sheet_flip.json, sheet_flip_gn.json,
// tasks/quadruped_walk.json, quadruped_walk_gn.json, quadruped_soft_feet_gn.json) at reduced size through `addsim optimize`: a
// few dozen L-BFGS-B or a few Gauss–Newton simulations must bring the feature points much closer to
// their targets (measured on a replay of optimized_scene.json with `addsim gradient`, which reports
// each term's value).

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/test_size.h"
#include "cli_test_util.h"

namespace {

using nlohmann::json;
using namespace addsim::cli_test;

// Value of objective term `k` of TASK (with `sets`) on its own scene and on the optimum.
std::pair<double, double> term_before_after(const fs::path& dir, const std::string& task, const std::string& sets,
                                            int k) {
  const CliRun before = run("gradient '" + task + "' " + sets, dir);
  EXPECT_EQ(before.code, 0) << before.err;
  const std::string optimum = (dir / "run" / "optimized_scene.json").string();
  const CliRun after = run("gradient '" + task + "' " + sets + " --set scene='" + optimum + "'", dir);
  EXPECT_EQ(after.code, 0) << after.err;
  if (before.code != 0 || after.code != 0) return {0.0, 0.0};
  return {json::parse(before.out)["terms"][k]["value"].get<double>(),
          json::parse(after.out)["terms"][k]["value"].get<double>()};
}

// The quadruped's trot cut to 30 steps (0.5 s), the torso to reach x = 0.12 m: 25 simulations
// of the 12 x 31 motor targets bring the torso from 7 cm short to within millimetres. Under
// ADDSIM_TEST_REDUCED (docs/testing.md) 10 simulations: measured Φ/Φ₀ 0.036 and the term
// 2.7e-3 → 8.1e-7 (25 simulations: 0.036, 7.9e-7).
TEST(TrajoptTasks, ShortQuadrupedWalkReachesItsTarget) {
  const fs::path dir = fresh_temp_dir();
  const std::string task = (source_dir() / "tasks" / "quadruped_walk.json").string();
  const std::string sets = "--set scene.steps=30 --set 'objective.0.target=[0.12,0,0.42]'";
  const std::string sims = std::to_string(addsim::test::sized(25, 10));
  const CliRun r = run("optimize '" + task + "' --out run --quiet --max-sims " + sims + " " + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = json::parse(slurp(dir / "run" / "result.json"));
  EXPECT_LT(res["phi_ratio"].get<double>(), 0.1);
  const auto [before, after] = term_before_after(dir, task, sets, 0);
  EXPECT_GT(before, 1e-3);  // ½‖c − target‖²: about 7 cm off with the nominal trot
  EXPECT_LT(after, 1e-2 * before);
}

// The same 30-step walk by the Gauss-Newton task (tasks/quadruped_walk_gn.json: Levenberg-
// Marquardt, lambda0 = 10, the Jacobian by one reverse sweep): 8 simulations (a rejected trial
// counts one) take Phi/Phi0 to about 0.011 in 5 iterations and the torso to within millimetres.
TEST(TrajoptTasks, ShortQuadrupedWalkByGaussNewtonReachesItsTarget) {
  const fs::path dir = fresh_temp_dir();
  const std::string task = (source_dir() / "tasks" / "quadruped_walk_gn.json").string();
  const std::string sets = "--set scene.steps=30 --set 'objective.0.target=[0.12,0,0.42]'";
  const CliRun r = run("optimize '" + task + "' --out run --quiet --max-sims 8 " + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = json::parse(slurp(dir / "run" / "result.json"));
  EXPECT_EQ(res["stages"][0]["method"], "gauss_newton");
  EXPECT_LT(res["phi_ratio"].get<double>(), 0.03);
  EXPECT_LE(res["iterations"].get<int>(), 6);
  const auto [before, after] = term_before_after(dir, task, sets, 0);
  EXPECT_GT(before, 1e-3);
  EXPECT_LT(after, 1e-2 * before);
}

// The soft-feet robot's Gauss-Newton task (tasks/quadruped_soft_feet_gn.json: 402 DOF, its `set`
// smooths the contact) cut to 30 steps, the torso to reach x = 0.06 m: 5 simulations take the
// torso from 3.3 cm short to below a millimetre (measured: 2 iterations do it), and the optimum
// runs on the task's contact (tanh friction, k_t = 100 N s/m, 2 mm blend), not the scene's.
// Under ADDSIM_TEST_REDUCED (docs/testing.md) 3 simulations, the two iterations: measured the
// term 5.5e-4 → 8.0e-7, as with 5 (2 simulations, one iteration, would give 2.2e-6).
TEST(TrajoptTasks, ShortSoftFeetWalkByGaussNewtonReachesItsTarget) {
  const fs::path dir = fresh_temp_dir();
  const std::string task = (source_dir() / "tasks" / "quadruped_soft_feet_gn.json").string();
  const std::string sets = "--set scene.steps=30 --set 'objective.0.target=[0.06,0,0.42]'";
  const std::string sims = std::to_string(addsim::test::sized(5, 3));
  const CliRun r = run("optimize '" + task + "' --out run --quiet --max-sims " + sims + " " + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = json::parse(slurp(dir / "run" / "result.json"));
  EXPECT_EQ(res["stages"][0]["method"], "gauss_newton");
  EXPECT_LE(res["iterations"].get<int>(), 4);
  const json optimum = json::parse(slurp(dir / "run" / "optimized_scene.json"));
  EXPECT_EQ(optimum["contact"]["model"], "tanh");
  EXPECT_EQ(optimum["contact"]["kt"].get<double>(), 100.0);
  EXPECT_EQ(optimum["contact"]["smoothing"].get<double>(), 0.002);
  const auto [before, after] = term_before_after(dir, task, sets, 0);
  EXPECT_GT(before, 1e-4);  // ½‖c − target‖²: about 3.3 cm off with the nominal trot
  EXPECT_LT(after, 1e-2 * before);
}

// The sheet's first flip (60 steps, the t = 1 s pose target only) from the shipped hand-made
// handle paths: 45 simulations of the 2 x 61 handle positions cut the corners' squared error
// by more than 3x (the regulariser keeps Φ/Φ₀ itself near 0.6). Measured: 9.3e-4 → 8.9e-5
// (10x); under ADDSIM_TEST_REDUCED (docs/testing.md) 30 simulations, 9.3e-4 → 1.5e-4 (6x).
TEST(TrajoptTasks, SheetFirstFlipMovesTheCornersToTheirTargets) {
  const fs::path dir = fresh_temp_dir();
  const std::string task = (source_dir() / "tasks" / "sheet_flip.json").string();
  const std::string sets =
      "--set scene.steps=60 --set objective.1.step=60 --set objective.1.weight=0 "
      "--set 'parameters=[\"handles.corner_a.positions\",\"handles.corner_b.positions\"]' "
      "--set 'stages=[{\"name\":\"flip 1\"}]'";
  const std::string sims = std::to_string(addsim::test::sized(45, 30));
  const CliRun r = run("optimize '" + task + "' --out run --quiet --max-sims " + sims + " " + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto [before, after] = term_before_after(dir, task, sets, 0);
  EXPECT_GT(before, 5e-4);
  EXPECT_LT(after, before / 3.0);
}

// The Gauss–Newton task's first flip (tasks/sheet_flip_gn.json: β = 1e-5, 2 mm contact blend)
// cut to 60 steps: 40 simulations bring the corners from 29 mm (far) to about 2 mm off at
// t = 1 s, a drop of the pose term by more than 50x (measured: 8.5e-4 to 8.4e-6).
TEST(TrajoptTasks, SheetGaussNewtonFirstFlipReachesItsTarget) {
  const fs::path dir = fresh_temp_dir();
  const std::string task = (source_dir() / "tasks" / "sheet_flip_gn.json").string();
  const std::string sets =
      "--set scene.steps=60 --set objective.1.step=60 --set objective.1.weight=0 "
      "--set 'parameters=[\"handles.corner_a.positions\",\"handles.corner_b.positions\"]' "
      "--set 'stages=[{\"name\":\"flip 1\"}]'";
  const CliRun r = run("optimize '" + task + "' --out run --quiet --max-sims 40 " + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = json::parse(slurp(dir / "run" / "result.json"));
  EXPECT_EQ(res["failed_simulations"].get<int>(), 0);
  const auto [before, after] = term_before_after(dir, task, sets, 0);
  EXPECT_GT(before, 5e-4);
  EXPECT_LT(after, before / 50.0);
}

}  // namespace
