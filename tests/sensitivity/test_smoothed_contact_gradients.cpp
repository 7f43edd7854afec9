// Whole-trajectory gradients with the C¹ smoothed normal penalty (contact.smoothing,
// docs/contact.md): adjoint vs direct ≤ 1e-9 relative over all parameters (the width w
// included), vs central finite differences ≤ 1e-4 for the initial velocity, spin, k_n, w and
// the friction coefficient, on contact-rich rollouts: a soft ball thrown with back-spin onto
// the floor (linear, tanh and hybrid friction) and the rigid sphere throw. Also: an absent
// key leaves the parameter table and the run exactly as before.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"
#include "../support/test_size.h"
#include "centroid_objective.h"

namespace addsim {
namespace {

using test::CentroidObjective;

// Adjoint vs direct over all of p, then central differences for the named parameters.
void check_gradients(const Model& m, const std::vector<std::string>& fd_names, const std::string& label) {
  const CentroidObjective obj;
  const VecX p = m.params().defaults();
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << label << ": " << traj.failure;
  const GradientResult adj = test::expect_adjoint_matches_direct(m, traj, obj, label);
  const std::vector<double> steps{1e-4, 1e-5, 1e-6};
  for (const std::string& name : fd_names) {
    const int j = m.params().require(name).offset;
    const FdSweep fd = gradient_fd_sweep(sim, obj, p, j, steps);
    const double floor = 1e-8 * adj.dphi_dp.norm();
    const double err = std::abs(adj.dphi_dp[j] - fd.derivative) / std::max(std::abs(fd.derivative), floor);
    EXPECT_GT(std::abs(adj.dphi_dp[j]), floor) << label << " " << name << ": vacuous derivative";
    EXPECT_LT(err, 1e-4) << label << " " << name << "\n" << fd.report();
    std::printf("[ %s ] %-30s adjoint % .10e  fd % .10e  rel %.2e\n", label.c_str(), name.c_str(), adj.dphi_dp[j],
                fd.derivative, err);
  }
}

// Contact points inside the blend (|g| < w/2) over the run: the smoothing must be exercised.
int blended_contacts(const Model& m, const Trajectory& traj, double w) {
  int count = 0;
  for (std::size_t i = 1; i < traj.q.size(); ++i)
    for (int k = 2; k < traj.q[i].size(); k += 3) count += std::abs(traj.q[i][k]) < 0.5 * w;
  (void)m;
  return count;
}

// Under ADDSIM_TEST_REDUCED (docs/testing.md) each model checks a third of the six parameters
// by finite differences (the k-th model those of index ≡ k mod 3), so the three models
// together still check every one; adjoint vs direct stays over all of p.
TEST(SmoothedContactGradients, SoftBallThrowAllPenaltyModels) {
  const std::vector<std::string> names = {"bodies.0.velocity.0.0",         "bodies.0.velocity.0.2",
                                          "bodies.0.angular_velocity.0.1", "contact.kn",
                                          "contact.smoothing",             "obstacles.0.friction"};
  int index = 0;
  for (const char* model : {"linear", "tanh", "hybrid"}) {
    std::vector<std::string> fd_names;
    for (std::size_t k = 0; k < names.size(); ++k)
      if (!test::reduced() || static_cast<int>(k % 3) == index) fd_names.push_back(names[k]);
    ++index;
    const Scene scene = load_scene_file(
        test::scene_path("soft_ball_throw.json"),
        {std::string("contact.model=\"") + model + "\"", "contact.smoothing=0.004", "steps=45", "dt=0.01",
         "bodies.0.mesh.target_tets=40", "bodies.0.position=[0,0,0.15]", "bodies.0.velocity=[1.5,0,-0.5]",
         "contact.kd=0.5"});
    const Model& m = *scene.model;
    Simulator sim(m);
    const Trajectory traj = sim.run(m.params().defaults());
    ASSERT_TRUE(traj.completed()) << model << ": " << traj.failure;
    EXPECT_GT(blended_contacts(m, traj, 0.004), 5) << model;
    check_gradients(m, fd_names, std::string("soft ball ") + model);
  }
}

// Under ADDSIM_TEST_REDUCED (docs/testing.md) finite differences of every second parameter
// from the first (an initial velocity, the spin and the blend width); adjoint vs direct stays
// over all of p.
TEST(SmoothedContactGradients, RigidSphereThrow) {
  const Scene scene = load_scene_file(test::scene_path("rigid_sphere_throw.json"),
                                      {"contact.smoothing=0.002", "contact.kn=1e4", "contact.kd=50", "steps=400",
                                       "dt=0.002", "solver.tolerance=1e-12"});
  const Model& m = *scene.model;
  const std::vector<std::string> names = {"bodies.0.velocity.0.0", "bodies.0.velocity.0.2",
                                          "bodies.0.angular_velocity.0.1", "contact.kn",
                                          "contact.smoothing", "obstacles.0.friction"};
  std::vector<std::string> fd_names;
  for (std::size_t k = 0; k < names.size(); k += test::reduced() ? 2 : 1) fd_names.push_back(names[k]);
  check_gradients(m, fd_names, "rigid sphere");
}

// contact.smoothing = 0 is eq. linPenN exactly: the same trajectory, bit for bit, as without
// the key (which adds no parameter); the sqp model rejects a positive width.
TEST(SmoothedContactGradients, ZeroWidthIsTheExactPenalty) {
  const std::vector<std::string> base{"steps=40", "bodies.0.mesh.target_tets=40", "bodies.0.position=[0,0,0.15]"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return extra;
  };
  const Scene plain = load_scene_file(test::scene_path("soft_ball_throw.json"), base);
  const Scene zero = load_scene_file(test::scene_path("soft_ball_throw.json"), with({"contact.smoothing=0"}));
  EXPECT_FALSE(plain.model->params().resolve("contact.smoothing").has_value());
  Simulator a(*plain.model), b(*zero.model);
  const Trajectory ta = a.run(plain.model->params().defaults());
  const Trajectory tb = b.run(zero.model->params().defaults());
  ASSERT_TRUE(ta.completed() && tb.completed());
  ASSERT_EQ(ta.q.size(), tb.q.size());
  for (std::size_t i = 0; i < ta.q.size(); ++i) EXPECT_EQ((ta.q[i] - tb.q[i]).cwiseAbs().maxCoeff(), 0.0) << i;
  EXPECT_THROW(load_scene_file(test::scene_path("soft_ball_throw.json"),
                               with({"contact.model=\"sqp\"", "contact.smoothing=0.001"})),
               InputError);
}

}  // namespace
}  // namespace addsim
