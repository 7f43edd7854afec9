// Physical validation of rigid bodies with the BDF2 simulator: the Dzhanibekov flip of
// a free box with conserved angular momentum (with θ reparametrised at restarts), a
// backspinning sphere thrown onto a rough floor ending in rolling without slipping, and
// a cube sliding down a rough incline.
#include <cmath>
#include <cstdio>
#include <numbers>

#include <gtest/gtest.h>

#include "addsim/rigid/so3.h"
#include "addsim/solver/simulator.h"
#include "rigid_test_scene.h"

namespace addsim {
namespace {

using test::RigidScene;

TEST(RigidPhysics, DzhanibekovFlipConservesAngularMomentum) {
  // Box 0.3 × 0.2 × 0.1 m, 1 kg: I_x < I_y < I_z. Spin about the intermediate axis y
  // with a small perturbation; the instability grows at λ = ω √((I_y−I_x)(I_z−I_y)/(I_x I_z)).
  const double h = 1e-3, segment = 0.1, total = 4.0;
  const int steps = static_cast<int>(std::lround(segment / h));
  RigidScene s;
  s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, h, steps);
  RigidInit init;
  init.angular_velocity = Vec3(0.05, 10.0, 0.05);
  s.add_body(RigidShape::box(Vec3(0.3, 0.2, 0.1)), 1.0, init, {}, Vec3::Zero());
  s.model->finalize();
  const RigidBody& b = rigid_body(*s.model, 0);
  Simulator sim(*s.model);
  VecX p = s.model->params().defaults();
  VecX q0(6), v0(6);
  s.model->initial_state(p, q0, v0);
  const Vec3 L0 = b.angular_momentum_W(q0, v0, p);
  double max_rel_drift = 0.0, min_axis_dot = 1.0, max_theta = 0.0;
  int restarts = 0, reparametrizations = 0;
  // The simulator keeps θ in one chart; |θ| grows by ~1 rad per segment here, so each
  // segment restarts from the end state with θ re-expressed when |θ| > π (the history
  // window is rebuilt from (q, v) by the constant-velocity extrapolation of §6.2).
  for (double t = 0.0; t < total - 1e-9; t += segment) {
    const Trajectory traj = sim.run(p);
    ASSERT_TRUE(traj.completed()) << traj.failure;
    for (int i = 1; i <= steps; ++i) {
      const VecX v = traj.velocity(s.model->scheme(), i);
      const Vec3 L = b.angular_momentum_W(traj.q[i], v, p);
      max_rel_drift = std::max(max_rel_drift, std::abs(L.norm() - L0.norm()) / L0.norm());
      min_axis_dot = std::min(min_axis_dot, (b.rotation(traj.q[i]) * Vec3::UnitY()).dot(L0.normalized()));
      max_theta = std::max(max_theta, traj.q[i].tail<3>().norm());
    }
    const VecX& q = traj.q.back();
    const VecX v = traj.velocity(s.model->scheme(), steps);
    Vec3 theta = q.tail<3>();
    if (theta.norm() > std::numbers::pi) {
      theta = reparametrize_rotation(theta);
      ++reparametrizations;
    }
    p.segment<3>(b.position_param()) = q.head<3>();
    p.segment<3>(b.orientation_param()) = theta;
    p.segment<3>(b.velocity_param()) = v.head<3>();
    p.segment<3>(b.angular_velocity_param()) = b.angular_velocity_W(q, v);
    ++restarts;
  }
  std::printf("[ rigid ] Dzhanibekov: max | |L| - |L0| | / |L0| = %.3e, min (R e_y)·L0/|L0| = %.4f, "
              "max |theta| = %.3f, %d restarts, %d reparametrisations\n",
              max_rel_drift, min_axis_dot, max_theta, restarts, reparametrizations);
  EXPECT_LT(max_rel_drift, 1e-3);
  EXPECT_LT(min_axis_dot, -0.9);  // the intermediate axis flipped
  EXPECT_GT(reparametrizations, 0);
  EXPECT_LT(max_theta, 2.0 * std::numbers::pi - 1.0);
}

TEST(RigidPhysics, ThrownSphereEndsRolling) {
  // r = 0.1 m, 1 kg, from (0, 0, 0.2) with v = (1, 0, 2), ω = (0, −5, 0) onto z = 0 with
  // μ = 0.5 and critical contact damping. Landing at t₁ = 0.45278 s, x₁ = 0.45278 m; the
  // angular momentum about the contact point gives v_roll = (v_x + 0.4 r ω_y)/1.4 =
  // 0.571429 m/s, so x(1 s) = x₁ + v_roll (1 − t₁) = 0.76548 m.
  const double g = 9.81, r = 0.1;
  const double t1 = (2.0 + std::sqrt(4.0 + 2.0 * g * 0.1)) / g;
  const double expected = t1 + (1.0 - 0.4 * r * 5.0) / 1.4 * (1.0 - t1);
  for (double h : {1e-3, 5e-4}) {
    RigidScene s;
    const int steps = static_cast<int>(std::lround(1.0 / h));
    s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, h, steps);
    const double kn = 1e5;
    s.add_contact(ContactModel::kLinear, kn, 2.0 * std::sqrt(kn * 1.0));
    s.add_plane(Vec3::Zero(), Vec3::UnitZ(), 0.5);
    RigidInit init;
    init.position = Vec3(0, 0, 0.2);
    init.velocity = Vec3(1, 0, 2);
    init.angular_velocity = Vec3(0, -5, 0);
    s.add_body(RigidShape::sphere(r), 1.0, init, RigidProxy::sphere(Vec3::Zero(), r), Vec3(0, 0, -g));
    s.model->finalize();
    Simulator sim(*s.model);
    const Trajectory traj = sim.run(s.model->params().defaults());
    ASSERT_TRUE(traj.completed()) << traj.failure;
    const VecX& q = traj.q.back();
    const VecX v = traj.velocity(s.model->scheme(), steps);
    const Vec3 w = rigid_body(*s.model, 0).angular_velocity_W(q, v);
    const double err = std::abs(q[0] - expected) / expected;
    std::printf("[ rigid ] thrown sphere, h = %g: x(1 s) = %.5f m (expected %.5f, error %.3f %%), "
                "v_x = %.5f, r ω_y = %.5f, z = %.5f\n",
                h, q[0], expected, 100 * err, v[0], r * w.y(), q[2]);
    EXPECT_LT(err, 0.01);
    EXPECT_NEAR(v[0], r * w.y(), 1e-3);  // rolling without slipping
    EXPECT_NEAR(v[0], (1.0 - 0.4 * r * 5.0) / 1.4, 5e-3);
  }
}

TEST(RigidPhysics, CubeSlidesDownIncline) {
  // 0.2 m, 1 kg cube on a 20° incline (gravity tilted, floor z = 0) with μ = 0.2:
  // d = ½ g (sin α − μ cos α) t² = 3.0230 m after 2 s.
  const double g = 9.81, alpha = 20.0 * std::numbers::pi / 180.0, mu = 0.2, T = 2.0;
  const double expected = 0.5 * g * (std::sin(alpha) - mu * std::cos(alpha)) * T * T;
  const double h = 1e-3;
  const int steps = static_cast<int>(std::lround(T / h));
  RigidScene s;
  s.model->scheme_mut() = TimeScheme::make(Integrator::kBdf2, h, steps);
  s.add_contact(ContactModel::kLinear, 1e5, 100.0);
  s.add_plane(Vec3::Zero(), Vec3::UnitZ(), mu);
  RigidInit init;
  init.position = Vec3(0, 0, 0.1);
  s.add_body(RigidShape::box(Vec3(0.2, 0.2, 0.2)), 1.0, init, RigidProxy::box_corners(Vec3(0.2, 0.2, 0.2)),
             Vec3(g * std::sin(alpha), 0, -g * std::cos(alpha)));
  s.model->finalize();
  Simulator sim(*s.model);
  const Trajectory traj = sim.run(s.model->params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const VecX& q = traj.q.back();
  const double d = q[0];
  const double err = std::abs(d - expected) / expected;
  std::printf("[ rigid ] incline: d(2 s) = %.5f m (expected %.5f, error %.3f %%), |theta| = %.2e\n", d, expected,
              100 * err, q.tail<3>().norm());
  EXPECT_LT(err, 0.01);
  EXPECT_LT(q.tail<3>().norm(), 1e-2);  // slides without tipping
}

}  // namespace
}  // namespace addsim
