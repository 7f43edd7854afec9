// The finite-difference helper itself, on a quantity with a closed form: the final
// height of a free-falling particle, z_n(v_z) is linear in the initial velocity.

#include <gtest/gtest.h>

#include <cmath>

#include "addsim/objectives/objective_terms.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/terms/particle_terms.h"

namespace addsim {
namespace {

TEST(FiniteDifference, FreeFallHeightIsLinearInInitialVelocity) {
  Model m;
  m.scheme_mut() = TimeScheme::make(Integrator::kBdf1, 0.01, 30);
  const int b = m.add_particles("ball", {Vec3(0, 0, 1)}, {Vec3(0, 0, 0.5)}, {0.2});
  const auto* body = static_cast<const ParticleBody*>(m.bodies()[b].get());
  m.add_term(std::make_unique<ParticleInertiaTerm>(body));
  m.add_term(std::make_unique<ParticleGravityTerm>(body, Vec3(0, 0, -9.81)));
  m.finalize();
  Objective obj;
  VecX w = VecX::Zero(3);
  w[2] = 1.0;
  obj.add(1.0, std::make_unique<LinearState>(w, -1));
  Simulator sim(m);
  const VecX p = m.params().defaults();
  const int jv = m.params().require("bodies.0.velocities.0.2").offset;
  // BDF1 with the history q^{-1} = q0 − h v0: z^n is affine in v0 with slope n h.
  const double expected = 30 * 0.01;
  EXPECT_NEAR(gradient_fd(sim, obj, p, jv, 1e-4), expected, 1e-8);
  const std::vector<double> steps = {1e-2, 1e-3, 1e-4};
  const FdSweep sweep = gradient_fd_sweep(sim, obj, p, jv, steps);
  ASSERT_EQ(sweep.samples.size(), 3u);
  EXPECT_NEAR(sweep.derivative, expected, 1e-8) << sweep.report();
  EXPECT_NEAR(sweep.samples[0].forward, expected, 1e-8);
  EXPECT_NE(sweep.report().find("chosen"), std::string::npos);
}

}  // namespace
}  // namespace addsim
