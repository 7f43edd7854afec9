// CI-sized runs of the paper's bunny throw (Fig. SphereAndBunnyThrow b): the real files
// scenes/bunny_throw.json and tasks/bunny_to_pose.json, shortened by --set overrides.
// The bunny's surface (data/bunny.obj) is made by scripts/install-deps.sh and meshed by gmsh,
// so the tests skip without either.

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "addsim/fem/fem_body.h"
#include "addsim/io/task.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/mesh/tet_mesh.h"
#include "addsim/optim/optimizer.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"
#include "../support/test_size.h"

namespace addsim {
namespace {

using test::source_dir;

bool bunny_available() { return gmsh_available() && std::filesystem::exists(source_dir() / "data" / "bunny.obj"); }

std::filesystem::path task_file() { return source_dir() / "tasks" / "bunny_to_pose.json"; }

// Values of scenes/bunny_throw.json the checks below depend on.
constexpr double kDensity = 90.0;  // kg/m³ (paper Table 1)
constexpr double kWallX = 0.45;    // m, the wall plane x = 0.45 with normal −x

// The task (and its scene) shortened to 0.36 s of the scene's 1 s: landing (step 8), sliding,
// the wall (step 18) and the push back. Loaded once: meshing the bunny takes about 2 s.
class BunnyThrow : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (bunny_available()) task_ = new Task(load_task_file(task_file(), {"scene.steps=36"}));
  }
  static void TearDownTestSuite() {
    delete task_;
    task_ = nullptr;
  }
  void SetUp() override {
    if (!task_) GTEST_SKIP() << "needs gmsh and " << source_dir() / "data" / "bunny.obj";
  }
  static Task* task_;
};
Task* BunnyThrow::task_ = nullptr;

TEST_F(BunnyThrow, HitsFloorThenWallAndIsPushedBackWithoutInversion) {
  const Task& task = *task_;
  const Model& model = *task.scene.model;
  const FemBody& fem = static_cast<const FemBody&>(*model.bodies()[0]);
  EXPECT_NEAR(fem.num_tets(), 2729, 400);  // the paper's bunny has 2729 tets

  // Mass of the consistent mass matrix = ρ × mesh volume.
  const VecX& p = task.p();
  const double volume = mesh_volume(fem.mesh());
  EXPECT_NEAR(fem.total_mass(p), kDensity * volume, 1e-12 * kDensity * volume);
  EXPECT_NEAR(volume, 1.9e-4, 0.3e-4) << "data/bunny.obj should be the ≈ 10 cm bunny";

  Simulator sim(model);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const TimeScheme& s = model.scheme();
  const int n = static_cast<int>(traj.q.size()) - 1;

  int first_floor = -1, first_wall = -1;
  double max_vx_before_wall = 0.0, min_vx_after_wall = 0.0;
  for (int i = 0; i <= n; ++i) {
    const VecX& q = traj.q[i];
    double min_z = 1e9, max_x = -1e9;
    for (int k = 0; k < fem.num_nodes(); ++k) {
      min_z = std::min(min_z, q[fem.dof(k) + 2]);
      max_x = std::max(max_x, q[fem.dof(k)]);
    }
    if (first_floor < 0 && min_z < 0.0) first_floor = i;
    if (first_wall < 0 && max_x > kWallX) first_wall = i;
    // No element inverted at any step: det F > 0 for every tet.
    for (int e = 0; e < fem.num_tets(); ++e)
      ASSERT_GT(fem.deformation_gradient(q, e).determinant(), 0.0) << "tet " << e << " inverted at step " << i;
    if (i == 0) continue;
    const double vx = fem.center_of_mass(traj.velocity(s, i), p).x();
    if (first_wall < 0) max_vx_before_wall = std::max(max_vx_before_wall, vx);
    else min_vx_after_wall = std::min(min_vx_after_wall, vx);
  }
  // Lands on the floor first (penetration of a penalty contact), then reaches the wall.
  ASSERT_GE(first_floor, 1);
  ASSERT_GE(first_wall, 1);
  EXPECT_LT(first_floor, first_wall);
  // Thrown at 2.5 m/s towards +x; the wall reverses the centre of mass's x-velocity.
  EXPECT_GT(max_vx_before_wall, 1.0);
  EXPECT_LT(min_vx_after_wall, -0.05);
  // Still in front of the wall and above the floor at the end (no tunnelling).
  const Vec3 c = fem.center_of_mass(traj.q.back(), p);
  EXPECT_LT(c.x(), kWallX);
  EXPECT_GT(c.z(), 0.02);
}

TEST_F(BunnyThrow, TaskTargetsAreTheRestMeshMovedOntoTheFloor) {
  // scripts/make_bunny_pose_task.py puts one marker at every step-0 node (in node order) and its
  // target at the same point shifted by one vector that stands the bunny on the floor. gmsh
  // meshes are numbered canonically (mesh/tet_mesh.h), so every marker must sit on the node
  // of the same index, and the upright regulariser's two nodes where the task expects them.
  const Task& task = *task_;
  const Model& model = *task.scene.model;
  const FemBody& fem = static_cast<const FemBody&>(*model.bodies()[0]);
  const nlohmann::json& points = task.json.at("objective").at(0);
  const nlohmann::json& markers = points.at("markers");
  const nlohmann::json& targets = points.at("frames").at(0).at("positions");
  ASSERT_EQ(markers.size(), targets.size());
  ASSERT_EQ(static_cast<int>(markers.size()), fem.num_nodes());
  const auto vec = [](const nlohmann::json& v) { return Vec3(v[0], v[1], v[2]); };
  const auto marker = [&](int k) { return vec(markers[k].at("position")); };

  const Vec3 shift = vec(targets[0]) - marker(0);
  double lowest = 1e9;
  for (size_t k = 0; k < targets.size(); ++k) {
    EXPECT_LT((vec(targets[k]) - marker(static_cast<int>(k)) - shift).norm(), 1e-8) << "marker " << k;
    lowest = std::min(lowest, vec(targets[k]).z());
  }
  EXPECT_NEAR(lowest, 0.0, 1e-8);  // standing on the floor z = 0

  VecX q0 = VecX::Zero(model.num_dofs()), v0 = VecX::Zero(model.num_dofs());
  fem.initial_state(task.p(), q0, v0);
  const int common = std::min(fem.num_nodes(), static_cast<int>(markers.size()));
  int same = 0;
  for (int k = 0; k < common; ++k) same += (q0.segment<3>(fem.dof(k)) - marker(k)).norm() < 1e-8 ? 1 : 0;
  EXPECT_EQ(same, fem.num_nodes()) << "the mesh differs from the task's: regenerate tasks/bunny_to_pose.json";

  const nlohmann::json& upright = task.json.at("objective").at(1);
  ASSERT_EQ(upright.at("type"), "upright");
  for (const char* key : {"bottom", "top"}) {
    const int node = upright.at(key).at("node");
    ASSERT_LT(node, common) << key;
    EXPECT_LT((q0.segment<3>(fem.dof(node)) - marker(node)).norm(), 1e-8) << key << " node " << node << " moved";
  }
}

TEST(BunnyThrowGradient, AdjointGradientOfThePoseTaskMatchesDirectAndFiniteDifferences) {
  if (!bunny_available()) GTEST_SKIP() << "needs gmsh and " << source_dir() / "data" / "bunny.obj";
  // A 14-step horizon: the flight and the landing on the floor (contact from step 8).
  const Task task = load_task_file(task_file(), {"scene.steps=" + std::to_string(test::sized(14, 10))});
  const Model& model = *task.scene.model;
  const VecX& p = task.p();
  Simulator sim(model);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const GradientResult adj = gradient_adjoint(model, traj, task.objective);
  const std::vector<int>& idx = task.selection.indices();
  ASSERT_EQ(idx.size(), 6u);  // velocity and angular velocity
  const DirectResult dir = gradient_direct(model, traj, task.objective, idx);

  VecX g(6);
  for (int k = 0; k < 6; ++k) g[k] = adj.dphi_dp[idx[k]];
  ASSERT_GT(g.norm(), 0.0);
  for (int k = 0; k < 6; ++k)
    EXPECT_NEAR(g[k], dir.dphi_dp[k], 1e-9 * g.norm()) << task.selection.names()[k];

  // Central differences along one direction that mixes all six parameters (two rollouts per
  // step instead of twelve), event-aware as `addsim gradcheck`.
  const double weights[6] = {0.7, -0.4, 0.5, 0.3, -0.6, 0.2};
  VecX d = VecX::Zero(p.size());
  double analytic = 0.0;
  for (int k = 0; k < 6; ++k) {
    d[idx[k]] = weights[k];
    analytic += weights[k] * g[k];
  }
  const std::vector<double> steps = {1e-5, 1e-6};
  FdSweep fd = directional_derivative_fd_sweep_events(sim, task.objective, p, d, steps);
  ASSERT_NE(fd.kind, FdKind::kStraddling) << fd.report();
  const FdCheck check = check_derivative(analytic, fd, 1e-8 * g.norm(), 1e-4);
  EXPECT_TRUE(check.pass) << "adjoint " << analytic << " vs FD " << fd.derivative << " (rel. error " << check.rel_error
                          << ")\n"
                          << fd.report();
}

// The task file tasks/bunny_to_pose.json as written, for the staged variants below: they
// pose its problem when they name the same scene, parameters and objective. Comparing with
// the file's text instead of a second loaded task meshes the bunny once per test, not twice
// (the load is most of these tests' time under the sanitizers, docs/testing.md); the loaded
// staged task still checks that the scene, parameters and objective build.
nlohmann::json pose_task_json() {
  std::ifstream in(task_file());
  return nlohmann::json::parse(in);
}

// Same scene, parameters and objective as tasks/bunny_to_pose.json: a staged task built from
// these poses the task's problem (the parameter names follow from the scene and the specs).
void expect_poses_the_pose_task(const Task& staged) {
  const nlohmann::json task = pose_task_json();
  const char* regenerate = "regenerate with scripts/make_bunny_pose_task.py";
  EXPECT_EQ(staged.json.at("scene"), task.at("scene")) << regenerate;
  EXPECT_EQ(staged.json.at("parameters"), task.at("parameters")) << regenerate;
  EXPECT_EQ(staged.json.at("objective"), task.at("objective")) << regenerate;
  EXPECT_EQ(staged.selection.names().size(), 6u);  // velocity and angular velocity
}

// tasks/bunny_to_pose_continuation.json (written by scripts/make_bunny_pose_task.py next to
// the task) must pose the same problem: same parameters and objective, with stages that
// stiffen the contact up to the scene's own k_n (the last stage overrides nothing).
TEST(BunnyThrowTasks, ContinuationTaskPosesTheSameProblemWithStiffeningContact) {
  if (!bunny_available()) GTEST_SKIP() << "needs gmsh and " << source_dir() / "data" / "bunny.obj";
  const Task staged = load_task_file(source_dir() / "tasks" / "bunny_to_pose_continuation.json", {"scene.steps=36"});
  expect_poses_the_pose_task(staged);
  EXPECT_EQ(staged.optimize.method, OptimizerMethod::kGaussNewton);
  ASSERT_EQ(staged.stages.size(), 3u);
  std::ifstream scene_file(source_dir() / "scenes" / "bunny_throw.json");
  const double scene_kn = nlohmann::json::parse(scene_file).at("contact").at("kn").get<double>();
  double previous = 0.0;
  for (size_t k = 0; k + 1 < staged.stages.size(); ++k) {
    ASSERT_EQ(staged.stages[k].scene_overrides.size(), 1u) << staged.stages[k].name;
    const std::string& o = staged.stages[k].scene_overrides[0];
    ASSERT_EQ(o.rfind("contact.kn=", 0), 0u) << o;
    const double kn = std::stod(o.substr(o.find('=') + 1));
    EXPECT_GT(kn, previous) << o;
    EXPECT_LT(kn, scene_kn) << o;
    previous = kn;
  }
  EXPECT_TRUE(staged.stages.back().scene_overrides.empty());
}

// tasks/bunny_to_pose_gn.json (also written by scripts/make_bunny_pose_task.py) must pose the
// same problem: stages on tanh friction whose smoothed normal penalty's width w
// (contact.smoothing) narrows from stage to stage, then the scene itself (the last stage
// overrides nothing).
TEST(BunnyThrowTasks, SmoothedTaskNarrowsTheSmoothingThenSolvesTheScene) {
  if (!bunny_available()) GTEST_SKIP() << "needs gmsh and " << source_dir() / "data" / "bunny.obj";
  const Task staged = load_task_file(source_dir() / "tasks" / "bunny_to_pose_gn.json", {"scene.steps=36"});
  expect_poses_the_pose_task(staged);
  EXPECT_EQ(staged.optimize.method, OptimizerMethod::kGaussNewton);
  EXPECT_FALSE(staged.json.contains("set"));
  ASSERT_GE(staged.stages.size(), 3u);
  double previous = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k + 1 < staged.stages.size(); ++k) {
    const std::vector<std::string>& o = staged.stages[k].scene_overrides;
    ASSERT_EQ(o.size(), 2u) << staged.stages[k].name;
    EXPECT_EQ(o[0], "contact.model=\"tanh\"");
    ASSERT_EQ(o[1].rfind("contact.smoothing=", 0), 0u) << o[1];
    const double w = std::stod(o[1].substr(o[1].find('=') + 1));
    EXPECT_GT(w, 0.0) << o[1];
    EXPECT_LT(w, previous) << o[1];
    previous = w;
  }
  EXPECT_TRUE(staged.stages.back().scene_overrides.empty());
}

}  // namespace
}  // namespace addsim
