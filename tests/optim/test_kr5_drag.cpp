// The KR5 cube drag's inverse-kinematics stage (tasks/kr5_cube_drag.json, stage "ik", written by
// scripts/make_kr5_cube_drag.py): Gauss–Newton on the six motors' 61 targets each fits the
// palm to the free end-effector's path through the URDF chain, the motors and the strings.
// Skipped without the robot data (scripts/fetch-robots.sh), as the URDF tests are.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "addsim/io/scene_geometry.h"
#include "addsim/io/task.h"
#include "addsim/optim/optimizer.h"
#include "addsim/optim/problem.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

TEST(Kr5Drag, IkStageFitsThePalmToTheFreeEffectorPath) {
  const std::filesystem::path urdf = test::source_dir() / "data" / "robots" / "KR5" / "KR5 sixx R650.urdf";
  if (!std::filesystem::exists(urdf))
    GTEST_SKIP() << "robot data KR5/KR5 sixx R650.urdf absent: run scripts/fetch-robots.sh (copies Debian's "
                    "dart-doc URDFs into data/robots/)";
  // The stage's objective: the cube term off, the palm-tracking term on (as its objective_set).
  const Task task = load_task_file(test::source_dir() / "tasks" / "kr5_cube_drag.json",
                                   {"objective.0.weight=0", "objective.2.weight=1"});
  ASSERT_EQ(task.selection.size(), 6 * 61);
  // Robot links have no scene "shape": they are shown as their inertia spheres.
  const Model& model = *task.scene.model;
  for (std::size_t b = 0; b < model.bodies().size(); ++b) {
    const nlohmann::json g = body_geometry(task.scene, b);
    if (task.scene.bodies[b].type == "urdf") {
      EXPECT_EQ(g["shape"]["type"], "sphere") << task.scene.bodies[b].name;
      EXPECT_GT(g["shape"]["radius"].get<double>(), 0.0) << task.scene.bodies[b].name;
    } else {
      EXPECT_EQ(g["shape"]["type"], "box");
    }
  }
  SimulationProblem problem(model, task.objective, task.selection, task.p());
  OptimizerOptions options = task.optimize;
  ASSERT_EQ(options.method, OptimizerMethod::kGaussNewton);
  options.max_simulations = 6;
  options.phi_change_tolerance = 0.0;
  const OptimizationResult r = minimize(problem, problem.x0(), options);
  ASSERT_TRUE(std::isfinite(r.phi_best));
  // Measured: Φ/Φ₀ = 6.0e-4 after 6 simulations (5 iterations; Φ₀ = 0.165 m², the palm up to
  // 11 cm from the path), no failed simulation.
  EXPECT_LT(r.phi_best, 5e-3 * r.phi0) << "Phi " << r.phi_best << " from " << r.phi0 << " in " << r.simulations
                                       << " simulations";
  EXPECT_EQ(r.failed_simulations, 0);
}

}  // namespace
}  // namespace addsim
