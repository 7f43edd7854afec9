// Kinematic pose controls (paper §6.4 cube dragging, scenes/cube_drag.json): the pose term
// and the strings of a kinematic end-effector through the derivative harness, and dΦ/dp of
// the shipped task (feature points + smoothness on the poses) by adjoint, direct and central
// differences over a short drag.
#include <cmath>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "addsim/check/derivative_check.h"
#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/io/task.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

const Term& term_named(const Model& m, std::string_view name) {
  for (const auto& t : m.terms())
    if (t->name() == name) return *t;
  throw std::runtime_error("no term " + std::string(name));
}

// Random state with the effector raised and shifted so that every string is stretched, and
// random pose controls (the harness perturbs p[poses] for ∂r/∂p).
TEST(CubeDrag, PoseTermAndStringsPassTheHarness) {
  const Scene s = load_scene_file(test::scene_path("cube_drag.json"), {"steps=4"});
  const Model& m = *s.model;
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX q(m.num_dofs()), v(m.num_dofs()), a(m.num_dofs());
  for (int k = 0; k < q.size(); ++k) {
    q[k] = 0.05 * u(rng);
    v[k] = u(rng);
    a[k] = u(rng);
  }
  const RigidBody& effector = rigid_body(m, 0);
  const RigidBody& cube = rigid_body(m, 1);
  ASSERT_TRUE(effector.kinematic());
  q.segment<3>(effector.dof()) += Vec3(0.08, 0.01, 0.2);
  q.segment<3>(effector.dof() + 3) = Vec3(0.3, -1.1, 0.7);
  q.segment<3>(cube.dof() + 3) = Vec3(0.2, 0.4, -0.3);
  VecX p = m.params().defaults();
  const int poses = effector.poses_param();
  for (int k = 0; k < 6 * (m.scheme().steps + 1); ++k) p[poses + k] += 0.1 * u(rng);
  for (int step = 1; step <= 2; ++step) {
    DerivativeCheckOptions opt;
    opt.expect_dq = opt.expect_dp = true;
    const DerivativeCheckResult pose = check_term_derivatives(m, term_named(m, "rigid_pose"), q, v, a, p, step, opt);
    EXPECT_TRUE(pose.ok) << pose.report;
    const DerivativeCheckResult strings = check_term_derivatives(m, term_named(m, "rigid_joints"), q, v, a, p, step, opt);
    EXPECT_TRUE(strings.ok) << strings.report;
  }
}

TEST(CubeDrag, ShortDragGradientsAgreeAdjointDirectFd) {
  // 12 steps of the shipped task, the effector moving at 0.3 m/s along +x so that the
  // strings pull the block (sliding on the floor).
  const Task task = load_task_file(test::source_dir() / "tasks" / "cube_drag.json",
                                   {"scene.steps=12", "scene.bodies.0.velocity=[0.3, 0, 0]",
                                    R"(parameters=["bodies.effector.poses"])"});
  const Model& m = *task.scene.model;
  Simulator sim(m);
  const VecX p = m.params().defaults();
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const int d = rigid_body(m, 1).dof();
  EXPECT_GT(traj.q.back()[d] - traj.q.front()[d], 1e-3) << "the block is dragged";
  const GradientResult adj = gradient_adjoint(m, traj, task.objective);
  const int poses = m.params().require("bodies.effector.poses").offset;
  // x, z and the tilt θ_y of the effector at early, middle and late steps (y and the other
  // rotations have zero gradient: the task is symmetric about the xz-plane).
  const std::vector<int> check = {poses + 6 * 2 + 0, poses + 6 * 6 + 2, poses + 6 * 9 + 0, poses + 6 * 10 + 4,
                                  poses + 6 * 12 + 4, poses + 6 * 12 + 0};
  const DirectResult dir = gradient_direct(m, traj, task.objective, check);
  for (std::size_t c = 0; c < check.size(); ++c) {
    const double steps[] = {1e-5, 1e-6, 1e-7};
    const FdSweep fd = gradient_fd_sweep(sim, task.objective, p, check[c], steps);
    const double scale = std::max(1e-6, std::abs(fd.derivative));
    std::printf("[ cube drag %-28s ] adjoint %.10e  direct %.10e  central FD %.10e\n",
                m.params().name_of(check[c]).c_str(), adj.dphi_dp[check[c]], dir.dphi_dp[c], fd.derivative);
    EXPECT_GT(std::abs(adj.dphi_dp[check[c]]), 1e-8) << m.params().name_of(check[c]);
    EXPECT_NEAR(adj.dphi_dp[check[c]], dir.dphi_dp[c], 1e-8 * scale) << m.params().name_of(check[c]);
    EXPECT_NEAR(adj.dphi_dp[check[c]], fd.derivative, 1e-4 * scale) << m.params().name_of(check[c]) << "\n"
                                                                     << fd.report();
  }
}

// The task's `control` key names whole per-step controls; anything else is a one-line error.
TEST(CubeDrag, SmoothnessControlMustBeAPerStepControl) {
  const auto task = test::source_dir() / "tasks" / "cube_drag.json";
  auto error = [&](const std::string& value, const std::string& extra = "") {
    std::vector<std::string> overrides = {"objective.1.control=" + value};
    if (!extra.empty()) overrides.push_back(extra);
    try {
      load_task_file(task, overrides);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const std::string v : {R"("contact.kn")", R"("bodies.effector.poses.3")", R"("nothing")", R"([])", "3"})
    EXPECT_NE(error(v).find("objective.1.control"), std::string::npos) << v << ": " << error(v);
  EXPECT_EQ(error(R"(["bodies.effector.poses", "bodies.0.poses"])"), "");
  EXPECT_NE(error(R"("bodies.effector.poses")", "objective.1.handle=0").find("objective.1.control: give either"),
            std::string::npos);
}

}  // namespace
}  // namespace addsim
