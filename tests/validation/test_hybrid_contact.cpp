// Hybrid contact (paper §4.3): exact static friction on an incline. A particle and a soft
// cube on a 20° incline: with μ = 0.8 the hybrid model holds them still while the penalty
// models creep; with μ = 0.2 the hybrid slide matches the penalty slide and the closed form
// ½ g (sin θ − μ cos θ) t². Every sticking contact of every step obeys the Coulomb limit.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "addsim/fem/fem_builder.h"
#include "addsim/io/scene.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/solver/simulator.h"
#include "../support/particle_fixture.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

using testing::ParticleFixture;
constexpr double kG = 9.81;
constexpr double kTheta = 20.0 * M_PI / 180.0;

// Every recorded sticking point of every step is within its Coulomb limit, its constraint
// force is tangential, and its tangential (BDF) velocity vanishes in that step.
int check_coulomb(const Trajectory& t, const TimeScheme& scheme) {
  int sticks = 0;
  for (size_t i = 0; i < t.reports.size(); ++i) {
    for (const StickPoint& s : t.reports[i].contact.sticking) {
      ++sticks;
      EXPECT_LE(s.force.norm(), s.limit * (1.0 + 1e-12) + 1e-12) << "step " << i + 1 << " dof " << s.dof;
      EXPECT_NEAR(s.force.dot(s.n), 0.0, 1e-12 * (1.0 + s.force.norm()));
      const Vec3 v = t.velocity(scheme, static_cast<int>(i) + 1).segment<3>(s.dof);
      EXPECT_LT(std::abs(s.t1.dot(v)) + std::abs(s.t2.dot(v)), 1e-10) << "step " << i + 1;
    }
  }
  return sticks;
}

struct InclineRun {
  Trajectory traj;
  double x_final = 0.0;
  double last_second = 0.0;  ///< displacement over the last second, m
};

// One particle on z = 0 under gravity tilted by 20° (as test_particle_closed_forms).
InclineRun particle_incline(ContactModel model, double mu, double kt) {
  const double h = 1e-3, kn = 1e5, m = 1.0;
  const int steps = 2000;
  ParticleFixture f(Integrator::kBdf2, h, steps);
  // Starts at rest in equilibrium: penalty depth, or on the surface for hard contact.
  const double depth = model == ContactModel::kSqp ? 0.0 : m * kG * std::cos(kTheta) / kn;
  f.particles({Vec3(0, 0, -depth)}, {Vec3::Zero()}, {m});
  f.contact_params(model, kn, 0.0, kt);
  f.plane(Vec3::Zero(), Vec3(0, 0, 1), mu);
  f.standard_terms(Vec3(kG * std::sin(kTheta), 0, -kG * std::cos(kTheta)));
  f.model->finalize();
  Simulator sim(*f.model);
  InclineRun r;
  r.traj = sim.run(f.model->params().defaults());
  EXPECT_TRUE(r.traj.completed()) << r.traj.failure;
  r.x_final = r.traj.q.back()[0];
  r.last_second = (r.traj.q.back() - r.traj.q[1000]).norm();
  return r;
}

TEST(HybridIncline, ParticleDoesNotCreepWhilePenaltiesDo) {
  const double mu = 0.8, kt = 1e4;
  const InclineRun hyb = particle_incline(ContactModel::kHybrid, mu, kt);
  EXPECT_LT(hyb.last_second, 1e-6);
  EXPECT_LT(std::abs(hyb.x_final), 1e-9);
  EXPECT_GT(check_coulomb(hyb.traj, TimeScheme::make(Integrator::kBdf2, 1e-3, 2000)), 1900);
  for (ContactModel model : {ContactModel::kLinear, ContactModel::kTanh}) {
    const InclineRun pen = particle_incline(model, mu, kt);
    std::printf("[ particle μ=0.8 ] %-6s creep over the last second: %.3e m (total %.3e m)\n", to_string(model),
                pen.last_second, pen.x_final);
    EXPECT_GT(pen.last_second, 1e-4);
  }
  std::printf("[ particle μ=0.8 ] hybrid creep over the last second: %.3e m\n", hyb.last_second);
}

TEST(HybridIncline, ParticleSlideMatchesPenaltyAndClosedForm) {
  const double mu = 0.2;
  const double exact = 0.5 * kG * (std::sin(kTheta) - mu * std::cos(kTheta)) * 4.0;
  const InclineRun hyb = particle_incline(ContactModel::kHybrid, mu, 1e4);
  const InclineRun lin = particle_incline(ContactModel::kLinear, mu, 1e4);
  check_coulomb(hyb.traj, TimeScheme::make(Integrator::kBdf2, 1e-3, 2000));
  EXPECT_NEAR(hyb.x_final / exact, 1.0, 0.01) << "hybrid slid " << hyb.x_final << " m, exact " << exact;
  EXPECT_NEAR(hyb.x_final / lin.x_final, 1.0, 1e-6) << "hybrid " << hyb.x_final << " linear " << lin.x_final;
  std::printf("[ particle μ=0.2 ] hybrid %.9f m, linear %.9f m, closed form %.9f m\n", hyb.x_final, lin.x_final,
              exact);
}

// A soft cube (8 nodes, 6 tets) on the incline; its bottom nodes touch the plane.
Trajectory cube_incline(ContactModel model, double mu, int steps, double h) {
  auto m = std::make_unique<Model>();
  m->scheme_mut() = TimeScheme::make(Integrator::kBdf1, h, steps);
  auto& P = m->params();
  ContactSettings cs;
  cs.model = model;
  cs.kn_param = P.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, 1e4), 1, 1, 0.0);
  cs.kd_param = P.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, 0.0), 1, 1, 0.0);
  const int pf = P.add("obstacles.0.friction", "", ParamKind::kContact, VecX::Constant(1, mu), 1, 1, 0.0);
  std::vector<std::shared_ptr<const Obstacle>> obstacles{
      std::make_shared<PlaneObstacle>("floor", pf, Vec3::Zero(), Vec3(0, 0, 1))};
  const TetMesh mesh = make_box_mesh(Vec3(0.1, 0.1, 0.1), Eigen::Vector3i(1, 1, 1));
  FemMaterial mat;
  mat.youngs_modulus = 1e5;
  mat.poisson_ratio = 0.3;
  mat.density = 1000.0;
  mat.viscosity = 0.0;
  FemInit init;
  // 1 kg on 4 nodes, k_n = 1e4: penalty equilibrium depth, or on the surface for hard contact.
  init.position = Vec3(0, 0, 0.05 - (model == ContactModel::kSqp ? 0.0 : kG * std::cos(kTheta) / 4.0 / 1e4));
  FemOptions opt;
  opt.gravity = Vec3(kG * std::sin(kTheta), 0, -kG * std::cos(kTheta));
  opt.viscosity = ViscosityModel::kNone;
  add_fem_body(*m, "cube", mesh, mat, init, opt, obstacles, cs);
  m->finalize();
  Simulator sim(*m);
  Trajectory t = sim.run(m->params().defaults());
  EXPECT_TRUE(t.completed()) << t.failure;
  return t;
}

double centroid_x(const VecX& q) {
  double x = 0.0;
  for (int k = 0; k < q.size(); k += 3) x += q[k];
  return x / (q.size() / 3);
}

TEST(HybridIncline, SoftCubeStaysWhilePenaltiesCreep) {
  const int steps = 200;
  const double h = 0.01;
  const Trajectory hyb = cube_incline(ContactModel::kHybrid, 0.8, steps, h);
  const int last_second = steps - static_cast<int>(1.0 / h);
  const double hyb_creep = std::abs(centroid_x(hyb.q.back()) - centroid_x(hyb.q[last_second]));
  EXPECT_LT(hyb_creep, 1e-6);
  EXPECT_GT(check_coulomb(hyb, TimeScheme::make(Integrator::kBdf1, h, steps)), steps);
  const Trajectory lin = cube_incline(ContactModel::kLinear, 0.8, steps, h);
  const double lin_creep = std::abs(centroid_x(lin.q.back()) - centroid_x(lin.q[last_second]));
  EXPECT_GT(lin_creep, 1e-5);
  std::printf("[ cube μ=0.8 ] creep over the last second: hybrid %.3e m, linear %.3e m\n", hyb_creep, lin_creep);
}

TEST(HybridIncline, SoftCubeSlidesLikePenalty) {
  const int steps = 100;
  const double h = 0.01;
  const Trajectory hyb = cube_incline(ContactModel::kHybrid, 0.2, steps, h);
  const Trajectory lin = cube_incline(ContactModel::kLinear, 0.2, steps, h);
  check_coulomb(hyb, TimeScheme::make(Integrator::kBdf1, h, steps));
  const double x_h = centroid_x(hyb.q.back()) - centroid_x(hyb.q[0]);
  const double x_l = centroid_x(lin.q.back()) - centroid_x(lin.q[0]);
  const double exact = 0.5 * kG * (std::sin(kTheta) - 0.2 * std::cos(kTheta));
  EXPECT_NEAR(x_h / x_l, 1.0, 1e-3);
  EXPECT_NEAR(x_h / exact, 1.0, 0.03);
  std::printf("[ cube μ=0.2 ] slide in 1 s: hybrid %.6f m, linear %.6f m, closed form %.6f m\n", x_h, x_l, exact);
}

// SQP comparison (paper §4.1): hard normal and stick constraints with the lagged friction.
TEST(SqpIncline, ParticleStaysOrSlidesLikeClosedForm) {
  const InclineRun stay = particle_incline(ContactModel::kSqp, 0.8, 1e4);
  EXPECT_LT(stay.last_second, 1e-6);
  EXPECT_GT(check_coulomb(stay.traj, TimeScheme::make(Integrator::kBdf2, 1e-3, 2000)), 1800);
  const double exact = 0.5 * kG * (std::sin(kTheta) - 0.2 * std::cos(kTheta)) * 4.0;
  const InclineRun slide = particle_incline(ContactModel::kSqp, 0.2, 1e4);
  EXPECT_NEAR(slide.x_final / exact, 1.0, 0.01) << "sqp slid " << slide.x_final << " m, exact " << exact;
  std::printf("[ particle sqp ] μ=0.8 creep over the last second %.3e m; μ=0.2 slide %.9f m (exact %.9f m)\n",
              stay.last_second, slide.x_final, exact);
}

TEST(SqpIncline, SoftCubeStaysAndSlidesLikeHybrid) {
  const double h = 0.01;
  const Trajectory stay = cube_incline(ContactModel::kSqp, 0.8, 200, h);
  const double creep = std::abs(centroid_x(stay.q.back()) - centroid_x(stay.q[100]));
  EXPECT_LT(creep, 1e-6);
  check_coulomb(stay, TimeScheme::make(Integrator::kBdf1, h, 200));
  const Trajectory sqp = cube_incline(ContactModel::kSqp, 0.2, 100, h);
  const Trajectory hyb = cube_incline(ContactModel::kHybrid, 0.2, 100, h);
  const double x_s = centroid_x(sqp.q.back()) - centroid_x(sqp.q[0]);
  const double x_h = centroid_x(hyb.q.back()) - centroid_x(hyb.q[0]);
  EXPECT_NEAR(x_s / x_h, 1.0, 0.02);
  std::printf("[ cube sqp ] μ=0.8 creep %.3e m; μ=0.2 slide in 1 s: sqp %.6f m, hybrid %.6f m\n", creep, x_s, x_h);
}

// Rigid cube (0.2 m, 1 kg, 8 corner points) on the 20° incline of scenes/rigid_cube_incline.json
// with the hybrid model: every recorded rigid sticking point obeys the Coulomb limit with its
// minimum-norm constraint force; returns the trajectory and the number of sticking records.
struct CubeRun {
  Trajectory traj;
  int sticks = 0;
};

CubeRun cube_incline(double mu, int steps) {
  const Scene scene = load_scene_file(test::scene_path("rigid_cube_incline.json"),
                                     {"contact.model=hybrid", "obstacles.0.friction=" + std::to_string(mu),
                                      "steps=" + std::to_string(steps)});
  Simulator sim(*scene.model);
  CubeRun r;
  r.traj = sim.run(scene.model->params().defaults());
  EXPECT_TRUE(r.traj.completed()) << r.traj.failure;
  for (size_t i = 0; i < r.traj.reports.size(); ++i)
    for (const StickPoint& s : r.traj.reports[i].contact.rigid_sticking) {
      ++r.sticks;
      EXPECT_LE(s.force.norm(), s.limit * (1.0 + 1e-12) + 1e-12) << "step " << i + 1 << " point " << s.point;
      EXPECT_NEAR(s.force.dot(s.n), 0.0, 1e-9 * (1.0 + s.force.norm()));
    }
  return r;
}

TEST(HybridContact, RigidCubeSticksOnInclineWithoutCreep) {
  const CubeRun r = cube_incline(0.8, 2000);
  ASSERT_TRUE(r.traj.completed());
  EXPECT_GT(r.sticks, 0);
  const int n = static_cast<int>(r.traj.q.size()) - 1;
  const double last_second = (r.traj.q[n].head<3>() - r.traj.q[n - 1000].head<3>()).norm();
  const double total = (r.traj.q[n].head<3>() - r.traj.q[0].head<3>()).norm();
  std::printf("[ rigid cube mu=0.8 ] displacement over the last second %.3e m, total %.3e m, sticking records %d\n",
              last_second, total, r.sticks);
  EXPECT_LT(last_second, 1e-6);
}

TEST(HybridContact, RigidCubeSlidesLikeClosedForm) {
  const CubeRun r = cube_incline(0.2, 2000);
  ASSERT_TRUE(r.traj.completed());
  const double t = 2.0, expected = 0.5 * kG * (std::sin(kTheta) - 0.2 * std::cos(kTheta)) * t * t;
  const double slid = (r.traj.q.back().head<3>() - r.traj.q.front().head<3>()).norm();
  std::printf("[ rigid cube mu=0.2 ] slid %.6f m in 2 s, closed form %.6f m (%.3f %%)\n", slid, expected,
              100.0 * (slid - expected) / expected);
  EXPECT_NEAR(slid, expected, 0.01 * expected);
}

}  // namespace
}  // namespace addsim
