// Rigid bodies and joints through the scene loader: keys, errors, kinematic bodies driven by
// pose controls, and gradients through a motor's per-step target angles and a kinematic pose.
#include <cmath>

#include <gtest/gtest.h>

#include "addsim/core/error.h"
#include "addsim/io/output.h"
#include "addsim/io/scene.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"

namespace addsim {
namespace {

// A kinematic paddle driving a dynamic box through a ball joint; a motor between the box and
// a second box with per-step targets; a particle hanging from the second box.
const char* kScene = R"({"dt": 0.01, "steps": 12, "gravity": [0, 0, -9.81],
  "bodies": [
    {"type": "rigid", "name": "paddle", "shape": {"type": "box", "size": [0.1, 0.1, 0.1]}, "mass": 1.0,
     "kinematic": true, "position": [0, 0, 1], "velocity": [0.2, 0, 0], "angular_velocity": [0, 0, 0.5]},
    {"type": "rigid", "name": "a", "shape": {"type": "capsule", "radius": 0.05, "length": 0.3}, "mass": 1.0,
     "position": [0.3, 0, 1]},
    {"type": "rigid", "name": "b", "shape": {"type": "cylinder", "radius": 0.05, "length": 0.3}, "density": 1000,
     "position": [0.7, 0, 1]},
    {"type": "particles", "name": "bob", "positions": [[0.9, 0, 0.8]], "mass": 0.2}],
  "joints": [
    {"type": "ball", "anchors": [{"body": "paddle", "point": [0.05, 0, 0]}, {"body": "a", "point": [-0.2, 0, 0]}],
     "stiffness": 1e4},
    {"type": "motor", "name": "m", "anchors": [{"body": "a", "point": [0.2, 0, 0]}, {"body": "b", "point": [-0.2, 0, 0]}],
     "axis": [0, 1, 0], "stiffness": 1e4, "axis_stiffness": 100, "motor_stiffness": 20,
     "target_angles": [0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.22, 0.24]},
    {"type": "motor_damping", "anchors": [{"body": "a"}, {"body": "b"}], "damping": 0.5},
    {"type": "distance", "anchors": [{"body": "bob", "point": 0}, {"body": "b", "point": [0.2, 0, 0]}],
     "stiffness": 500}]})";

// Φ = Σ_i (world x and z of body b's centre)².
class CentreObjective final : public ObjectiveFunction {
 public:
  double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const override {
    const int d = rigid_body(model, 2).dof();
    double phi = 0.0;
    for (std::size_t i = 0; i < traj.q.size(); ++i) {
      phi += traj.q[i][d] * traj.q[i][d] + traj.q[i][d + 2] * traj.q[i][d + 2];
      if (grad) {
        grad->dphi_dq(static_cast<int>(i))[d] += 2.0 * traj.q[i][d];
        grad->dphi_dq(static_cast<int>(i))[d + 2] += 2.0 * traj.q[i][d + 2];
      }
    }
    return phi;
  }
};

TEST(RigidSceneIo, KinematicBodyFollowsItsPosesAndGradientsAgree) {
  Scene s = load_scene_text(kScene, "rig.json");
  const Model& m = *s.model;
  Simulator sim(m);
  const VecX p = m.params().defaults();
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const double h = m.scheme().h;
  for (int i = 0; i <= m.scheme().steps; ++i) {
    EXPECT_NEAR(traj.q[i][0], 0.2 * i * h, 1e-12);
    EXPECT_NEAR(traj.q[i][5], 0.5 * i * h, 1e-12);
  }
  const CentreObjective phi;
  const GradientResult adj = gradient_adjoint(m, traj, phi);
  const int poses = m.params().require("bodies.paddle.poses").offset;
  const int angles = m.params().require("joints.m.target_angles").offset;
  const int k = m.params().require("joints.m.motor_stiffness").offset;
  const std::vector<int> check = {poses + 6 * 3 + 0, poses + 6 * 5 + 4, angles + 4, angles + 9, k};
  const DirectResult dir = gradient_direct(m, traj, phi, check);
  for (std::size_t c = 0; c < check.size(); ++c) {
    const double steps[] = {1e-4, 1e-5, 1e-6};
    const FdSweep fd = gradient_fd_sweep(sim, phi, p, check[c], steps);
    const double scale = std::max(1e-3, std::abs(fd.derivative));
    EXPECT_GT(std::abs(adj.dphi_dp[check[c]]), 1e-8) << m.params().name_of(check[c]);
    EXPECT_NEAR(adj.dphi_dp[check[c]], dir.dphi_dp[c], 1e-8 * scale) << m.params().name_of(check[c]);
    EXPECT_NEAR(adj.dphi_dp[check[c]], fd.derivative, 1e-5 * scale) << m.params().name_of(check[c]) << "\n"
                                                                     << fd.report();
  }
  // The summary reports rigid orientation, angular velocity, momentum and energies.
  const nlohmann::json sum = make_summary(s, traj, "test");
  EXPECT_TRUE(sum["bodies"][1].contains("final_angular_momentum"));
  EXPECT_TRUE(sum["bodies"][3].contains("kinetic_energy"));
  EXPECT_FALSE(sum["bodies"][3].contains("final_orientation"));
}

TEST(RigidSceneIo, ErrorsNameTheKeyPath) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      load_scene_text(text, "bad.json");
      ADD_FAILURE() << "no error for " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string body = R"({"type": "rigid", "shape": {"type": "box", "size": [1, 1, 1]}, "mass": 1})";
  expect_error(R"({"bodies": [{"type": "rigid", "shape": {"type": "box", "size": [1, 1, 1]}}]})", "bodies.0.mass");
  expect_error(R"({"bodies": [{"type": "rigid", "shape": {"type": "cone"}, "mass": 1}]})", "bodies.0.shape.type");
  expect_error(R"({"bodies": [{"type": "rigid", "shape": {"type": "sphere", "radius": 1}, "mass": 1,
                  "proxies": [{"type": "box_corners"}]}]})", "bodies.0.proxies.0.type");
  expect_error(R"({"bodies": [)" + body + R"(], "joints": [{"type": "hinge", "anchors": [{"body": 0}, {"world": [0, 0, 0]}],
                  "stiffness": 1}]})", "joints.0.axis");
  expect_error(R"({"bodies": [)" + body + R"(], "joints": [{"type": "ball", "anchors": [{"world": [0, 0, 0]}, {"world": [1, 0, 0]}],
                  "stiffness": 1}]})", "joints.0.anchors");
  expect_error(R"({"bodies": [{"type": "rigid", "shape": {"type": "mesh", "file": "missing.obj"}, "mass": 1}]})",
               "bodies.0.shape.file");
}

}  // namespace
}  // namespace addsim
