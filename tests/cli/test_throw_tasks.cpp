// The shipped throwing tasks start where docs/validation/throwing.md says: tasks/ball_via_wall.json
// at the coarse grid's best throw (3.3 cm from the target; the scene's own throw is 27 cm off),
// tasks/ball_to_line.json with the back-spin omega_y = -50 rad/s (2.7 cm rms from the line; the
// scene's -15 rad/s, where tasks/ball_to_line_cmaes.json starts, is 24.7 cm off). Phi at each
// start through `addsim gradient`.
//
// Under ADDSIM_TEST_REDUCED (docs/testing.md) every run takes a 120-tet ball instead of the
// scenes' 451 tets (`--set scene.bodies.0.mesh.target_tets=120`, a quarter of the cost), over the
// same horizon and through the same task files and --set overrides. The Release run keeps the
// shipped tasks' values; the reduced run checks what stays true on the coarser ball: the same
// bounds for ball_to_line, the same Φ of the two spellings of the smoothed problem, and for
// the wall throw (whose bounce sequence changes with the mesh) Φ of both throws pinned to their
// 120-tet values.

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/test_size.h"
#include "cli_test_util.h"

namespace {

using nlohmann::json;
using namespace addsim::cli_test;

double phi_of(const fs::path& dir, const std::string& task, const std::string& sets) {
  const std::string mesh = addsim::test::reduced() ? " --set scene.bodies.0.mesh.target_tets=120" : "";
  const CliRun r = run("gradient '" + (source_dir() / "tasks" / task).string() + "' --quiet " + sets + mesh, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return 0.0;
  return json::parse(r.out)["phi"].get<double>();
}

TEST(ThrowTasks, BallViaWallStartsAtTheGridsBestThrow) {
  const fs::path dir = fresh_temp_dir();
  const double start = phi_of(dir, "ball_via_wall.json", "");
  const double scene_throw = phi_of(dir, "ball_via_wall.json", "--set 'scene.bodies.ball.velocity=[3,0,1.5]'");
  if (addsim::test::reduced()) {
    // 120 tets: 15.6 cm from the target, the scene's throw 8.7 cm (measured, Release).
    EXPECT_NEAR(start, 1.2216099e-2, 1e-6 * 1.22e-2);
    EXPECT_NEAR(scene_throw, 3.7834286e-3, 1e-6 * 3.78e-3);
    return;
  }
  EXPECT_GT(start, 1e-4);  // ½‖c − target‖²: 3.3 cm measured (5.3e-4)
  EXPECT_LT(start, 1e-3);
  EXPECT_GT(scene_throw, 1e-2);  // 27 cm (3.6e-2)
}

TEST(ThrowTasks, BallToLineStartsWithTheStoppingBackSpin) {
  const fs::path dir = fresh_temp_dir();
  const double start = phi_of(dir, "ball_to_line.json", "");
  // tasks/ball_to_line_cmaes.json is the same problem from the scene's throw (its stages start there).
  const double scene_spin = phi_of(dir, "ball_to_line_cmaes.json", "");
  // 120 tets (reduced): 2.9e-2 and 1.99.
  EXPECT_GT(start, 1e-3);  // ½ Σ over 51 steps of the squared distance: 2.7 cm rms (1.9e-2)
  EXPECT_LT(start, 5e-2);
  EXPECT_GT(scene_spin, 1.0);  // 24.7 cm rms (1.56)
}

TEST(ThrowTasks, BallToTargetGnStartsAtTheShippedThrowOnTheSmoothedProblem) {
  // tasks/ball_to_target_gn.json (Gauss–Newton with a fallback attempt; its stages parse) is
  // tasks/ball_to_target.json's problem with tanh friction and w = 5 mm, from the same start:
  // 10.9 cm from the target (Φ₀ = 6.094e-3 in the runs of docs/validation/throwing.md).
  const fs::path dir = fresh_temp_dir();
  const double start = phi_of(dir, "ball_to_target_gn.json", "");
  const double same = phi_of(dir, "ball_to_target.json",
                             "--set 'scene.contact.model=\"tanh\"' --set scene.contact.smoothing=0.005");
  // 120 tets (reduced): Φ₀ = 5.768282e-3.
  EXPECT_NEAR(start, addsim::test::sized(6.094e-3, 5.768282e-3), 1e-6);
  EXPECT_EQ(start, same);
}

TEST(ThrowTasks, BallToTargetLbfgsbStartsAtTheSameThrow) {
  // tasks/ball_to_target_lbfgsb.json (L-BFGS-B, w = 10 -> 5 mm; its stages parse) has the same
  // problem and start as ball_to_target_gn.json outside its stages.
  const fs::path dir = fresh_temp_dir();
  EXPECT_EQ(phi_of(dir, "ball_to_target_lbfgsb.json", ""), phi_of(dir, "ball_to_target_gn.json", ""));
  // The 1 mm tasks (phi_below, fallback_from; the six scalars named one by one) parse, and
  // start from the same throw on the same problem.
  const double lbfgsb = phi_of(dir, "ball_to_target_lbfgsb.json", "");
  EXPECT_EQ(phi_of(dir, "ball_to_target_lbfgsb_1mm.json", ""), lbfgsb);
  EXPECT_EQ(phi_of(dir, "ball_to_target_lbfgsb_1mm_plane.json", ""), lbfgsb);
  // The reduced sizes' mesh override does not apply to the multi-fidelity task's rigid surrogate
  // scene, and a task's stage scenes are loaded with the command line's overrides (as optimize
  // runs them) when the task loads: that task is checked at full size only.
  if (addsim::test::reduced()) return;
  // The multi-fidelity task (stages[k].scene, join; the block LU solver) parses and starts from the
  // same throw on the same problem, to the solvers' round-off.
  EXPECT_NEAR(phi_of(dir, "ball_to_target_lbfgsb_1mm_surrogate.json", ""), lbfgsb, 1e-8 * lbfgsb);
  // Its surrogate stages' problem: the rigid sphere of scenes/soft_ball_surrogate.json at the same
  // throw, 9.4 mm above the soft ball's target (objective_set), 10.6 cm away (measured, Release).
  const double surrogate = phi_of(dir, "ball_to_target_lbfgsb_1mm_surrogate.json",
                                  "--set 'scene=\"../scenes/soft_ball_surrogate.json\"' --set 'objective.0.target=[1.2,0,0.1094]'");
  EXPECT_NEAR(surrogate, 5.5844001552893e-3, 1e-9);
}

}  // namespace
