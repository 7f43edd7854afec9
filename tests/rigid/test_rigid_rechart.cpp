// Chart switches of the rotation vector (docs/rigid.md "Reparametrisation"): a fast free
// spin passes |θ| = 1.25π many times; the simulator re-expresses the BDF window, and the
// adjoint, direct sensitivities and finite differences still agree across the switches.
#include <cmath>
#include <numbers>
#include <random>

#include <gtest/gtest.h>

#include "addsim/io/scene.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"

namespace addsim {
namespace {

// A free box spinning mostly about its major axis with a small wobble, no gravity.
std::string spin_scene(int steps, double dt, const char* integrator) {
  return std::string(R"({"dt": )") + std::to_string(dt) + R"(, "steps": )" + std::to_string(steps) +
         R"(, "integrator": ")" + integrator + R"(", "gravity": [0, 0, 0],
    "bodies": [{"type": "rigid", "name": "box", "shape": {"type": "box", "size": [0.3, 0.2, 0.1]},
                "mass": 2.0, "position": [0.1, 0.0, 0.0], "orientation": [0.2, -0.1, 0.3],
                "velocity": [0.1, 0.2, 0.0], "angular_velocity": [0.5, -0.3, 20.0]}]})";
}

// Φ = Σ_i wᵢ·q^i over all stored states (random fixed weights): exact in every chart.
class WeightedStates final : public ObjectiveFunction {
 public:
  WeightedStates(int nq, int steps) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int i = 0; i <= steps; ++i) {
      VecX w(nq);
      for (int d = 0; d < nq; ++d) w[d] = u(rng);
      w_.push_back(w);
    }
  }
  double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const override {
    double phi = 0.0;
    for (std::size_t i = 0; i < traj.q.size(); ++i) {
      phi += w_[i].dot(traj.q[i]);
      if (grad) grad->dphi_dq(static_cast<int>(i)) += w_[i];
    }
    return phi;
  }

 private:
  std::vector<VecX> w_;
};

TEST(RigidRechart, FastSpinSwitchesChartsAndKeepsThetaBounded) {
  Scene s = load_scene_text(spin_scene(300, 0.005, "bdf2"), "spin.json");
  Simulator sim(*s.model);
  const Trajectory traj = sim.run(s.model->params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  // 20 rad/s for 1.5 s is 30 rad of rotation: the first switch at |θ| = 1.25π, then one per
  // 2π (after a switch |θ| falls from 0.75π to 0 and grows again to 1.25π).
  EXPECT_GE(traj.charts.size(), 4u);
  const RigidBody& b = rigid_body(*s.model, 0);
  const double L0 = b.angular_momentum_W(traj.q[0], traj.v0, traj.p).norm();
  for (int i = 1; i < static_cast<int>(traj.q.size()); ++i) {
    EXPECT_LE(traj.q[i].segment<3>(3).norm(), 1.25 * std::numbers::pi + 0.2) << "step " << i;
    const VecX v = traj.velocity(s.model->scheme(), i);
    // ω is chart-independent: a switch must not show up as a jump of the angular velocity.
    const double L = b.angular_momentum_W(traj.q[i], v, traj.p).norm();
    EXPECT_NEAR(L / L0, 1.0, 2e-2) << "step " << i;
  }
}

TEST(RigidRechart, AdjointDirectAndFiniteDifferencesAgreeAcrossSwitches) {
  for (const char* integrator : {"bdf1", "bdf2"}) {
    Scene s = load_scene_text(spin_scene(60, 0.01, integrator), "spin.json");
    const Model& m = *s.model;
    Simulator sim(m);
    const VecX p = m.params().defaults();
    const Trajectory traj = sim.run(p);
    ASSERT_TRUE(traj.completed()) << traj.failure;
    ASSERT_GE(traj.charts.size(), 2u) << integrator;
    const WeightedStates phi(m.num_dofs(), m.scheme().steps);
    const GradientResult adj = gradient_adjoint(m, traj, phi);
    // The body's initial state and mass (contact parameters sit at their bound 0 and do not act).
    std::vector<int> params;
    for (int j = 0; j < m.params().size(); ++j)
      if (m.params().name_of(j).rfind("bodies.", 0) == 0) params.push_back(j);
    ASSERT_EQ(params.size(), 13u);
    const DirectResult dir = gradient_direct(m, traj, phi, params);
    for (std::size_t c = 0; c < params.size(); ++c) {
      const int j = params[c];
      const double steps[] = {1e-4, 1e-5, 1e-6};
      const FdSweep fd = gradient_fd_sweep(sim, phi, p, j, steps);
      const double scale = std::max(1.0, std::abs(fd.derivative));
      EXPECT_NEAR(adj.dphi_dp[j], dir.dphi_dp[c], 1e-8 * scale) << integrator << " " << m.params().name_of(j);
      EXPECT_NEAR(adj.dphi_dp[j], fd.derivative, 1e-5 * scale)
          << integrator << " " << m.params().name_of(j) << "\n" << fd.report();
    }
  }
}

}  // namespace
}  // namespace addsim
