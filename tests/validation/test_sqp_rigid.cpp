// SQP contact (paper §4.1, forward only) for rigid bodies: hard normal constraints g ≥ 0 and
// stick constraints T̄ ẋ = 0 on the proxy points, solved per body with minimum-norm
// multipliers (docs/contact.md, "SQP model"). A 0.2 m cube with 8 corner points on the 20°
// incline of scenes/rigid_cube_incline.json sticks with μ = 0.8 and slides with μ = 0.2 as
// ½ g (sin θ − μ cos θ) t²; on every step the corners do not penetrate and every sticking
// corner's multiplier is inside its Coulomb cone with zero tangential velocity. The thrown
// sphere rolls out to the closed form (BDF1; BDF2 is reported); a tilted cube dropped on a
// corner settles on a face; the jointed quadruped stands on its hard foot contacts; a
// particle sharing the scene with the cube slides as when alone (the point path is unchanged).

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"
#include "../support/test_size.h"

namespace addsim {
namespace {

constexpr double kG = 9.81;
constexpr double kTheta = 20.0 * M_PI / 180.0;

using test::scene_path;

struct SceneRun {
  Scene scene;
  Trajectory traj;
  double iterations_per_step = 0.0;
  int max_iterations = 0;
  double min_gap = 0.0;  ///< smallest proxy-point gap over all steps, m
  int sticks = 0;        ///< sticking rigid point records
};

// Runs a scene; for every step checks the rigid proxy points: gap ≥ −1e-8 m (SQP only) and,
// for every recorded sticking point, the Coulomb cone and a vanishing tangential velocity.
SceneRun run(const std::string& file, const std::vector<std::string>& overrides, bool sqp) {
  SceneRun r{load_scene_file(scene_path(file), overrides), {}};
  const Model& model = *r.scene.model;
  Simulator sim(model);
  r.traj = sim.run(model.params().defaults());
  EXPECT_TRUE(r.traj.completed()) << r.traj.failure;
  const TimeScheme& s = model.scheme();
  const VecX p = model.params().defaults();
  long total = 0;
  for (const StepReport& rep : r.traj.reports) {
    total += rep.iterations;
    r.max_iterations = std::max(r.max_iterations, rep.iterations);
  }
  r.iterations_per_step = static_cast<double>(total) / std::max<size_t>(1, r.traj.reports.size());
  std::vector<const RigidContactTerm*> terms;
  for (const auto& t : model.terms())
    if (const auto* c = dynamic_cast<const RigidContactTerm*>(t.get())) terms.push_back(c);
  r.min_gap = std::numeric_limits<double>::infinity();
  for (int i = 1; i < static_cast<int>(r.traj.q.size()); ++i) {
    const VecX v = r.traj.velocity(s, i), a = VecX::Zero(v.size());
    const TermContext ctx{r.traj.q[i], v, a, p, i, s};
    Eigen::Matrix<double, 3, 6> Pv;
    std::array<Eigen::Matrix<double, 3, 6>, 3> dPv;
    for (const RigidContactTerm* c : terms)
      for (int k = 0; k < c->num_points(); ++k)
        for (int o = 0; o < c->num_obstacles(); ++o) {
          const double g = c->point_jacobian(ctx, k, o, Pv, dPv);
          r.min_gap = std::min(r.min_gap, g);
          if (sqp) {
            EXPECT_GE(g, -1e-8) << "step " << i << " point " << k;
          }
        }
    for (const StickPoint& sp : r.traj.reports[i - 1].contact.rigid_sticking) {
      ++r.sticks;
      EXPECT_LE(sp.force.norm(), sp.limit * (1.0 + 1e-12) + 1e-12) << "step " << i << " point " << sp.point;
      EXPECT_NEAR(sp.force.dot(sp.n), 0.0, 1e-9 * (1.0 + sp.force.norm()));
      if (!sqp) continue;
      for (const RigidContactTerm* c : terms) {
        if (c->body().dof() != sp.dof) continue;
        c->point_jacobian(ctx, sp.point, sp.obstacle, Pv, dPv);
        const Vec3 xdot = Pv * v.segment<6>(sp.dof);
        EXPECT_LT(std::abs(sp.t1.dot(xdot)) + std::abs(sp.t2.dot(xdot)), 1e-7) << "step " << i;
      }
    }
  }
  return r;
}

std::vector<std::string> cube(const std::string& model, double mu, int steps) {
  return {"contact.model=" + model, "obstacles.0.friction=" + std::to_string(mu), "steps=" + std::to_string(steps)};
}

TEST(SqpRigid, CubeSticksOnIncline) {
  const SceneRun sqp = run("rigid_cube_incline.json", cube("sqp", 0.8, 2000), true);
  ASSERT_TRUE(sqp.traj.completed());
  const SceneRun hyb = run("rigid_cube_incline.json", cube("hybrid", 0.8, 2000), false);
  const int n = static_cast<int>(sqp.traj.q.size()) - 1;
  const double last_second = (sqp.traj.q[n] - sqp.traj.q[n - 1000]).norm();
  const double total = (sqp.traj.q[n].head<3>() - sqp.traj.q[0].head<3>()).norm();
  std::printf("[ sqp rigid cube mu=0.8 ] moved %.3e m over the last second, %.3e m in total; min gap %.3e m; "
              "%d sticking records\n",
              last_second, total, sqp.min_gap, sqp.sticks);
  std::printf("[ sqp rigid cube mu=0.8 ] Newton iterations per step: sqp %.2f (max %d), hybrid %.2f (max %d)\n",
              sqp.iterations_per_step, sqp.max_iterations, hyb.iterations_per_step, hyb.max_iterations);
  EXPECT_LT(last_second, 1e-6);
  EXPECT_GE(sqp.sticks, 4 * 2000);  // the four bottom corners stick in every step
}

// 2 s (h = 1 ms); under ADDSIM_TEST_REDUCED (docs/testing.md) the first 1 s, same 1 % bound.
TEST(SqpRigid, CubeSlidesLikeClosedForm) {
  const int steps = test::sized(2000, 1000);
  const SceneRun sqp = run("rigid_cube_incline.json", cube("sqp", 0.2, steps), true);
  ASSERT_TRUE(sqp.traj.completed());
  const SceneRun hyb = run("rigid_cube_incline.json", cube("hybrid", 0.2, steps), false);
  const double t = 0.001 * steps, expected = 0.5 * kG * (std::sin(kTheta) - 0.2 * std::cos(kTheta)) * t * t;
  const double slid = (sqp.traj.q.back().head<3>() - sqp.traj.q.front().head<3>()).norm();
  const double slid_h = (hyb.traj.q.back().head<3>() - hyb.traj.q.front().head<3>()).norm();
  std::printf("[ sqp rigid cube mu=0.2 ] slid %.6f m in %.0f s (hybrid %.6f m), closed form %.6f m (%+.3f %%); "
              "min gap %.3e m\n",
              slid, t, slid_h, expected, 100.0 * (slid - expected) / expected, sqp.min_gap);
  std::printf("[ sqp rigid cube mu=0.2 ] Newton iterations per step: sqp %.2f (max %d), hybrid %.2f (max %d)\n",
              sqp.iterations_per_step, sqp.max_iterations, hyb.iterations_per_step, hyb.max_iterations);
  EXPECT_NEAR(slid, expected, 0.01 * expected);
  // It slides without tipping: θ stays the initial 20° rotation about y.
  EXPECT_NEAR((sqp.traj.q.back().tail<3>() - sqp.traj.q.front().tail<3>()).norm(), 0.0, 1e-6);
}

// Largest height of the sphere centre after its first impact (bounce apex), m.
double apex_after_impact(const Trajectory& t) {
  size_t i = 1;
  while (i < t.q.size() && t.q[i][2] > 0.1 + 1e-9) ++i;
  double apex = 0.0;
  for (; i < t.q.size(); ++i) apex = std::max(apex, t.q[i][2] - 0.1);
  return apex;
}

TEST(SqpRigid, SphereThrowRollsToClosedForm) {
  for (const std::string integrator : {"bdf1", "bdf2"}) {
    const std::vector<std::string> set = {"integrator=" + integrator};
    std::vector<std::string> sqp_set = set, hyb_set = set;
    sqp_set.push_back("contact.model=sqp");
    hyb_set.push_back("contact.model=hybrid");
    const SceneRun sqp = run("rigid_sphere_throw.json", sqp_set, true);
    ASSERT_TRUE(sqp.traj.completed());
    const SceneRun hyb = run("rigid_sphere_throw.json", hyb_set, false);
    const SceneRun lin = run("rigid_sphere_throw.json", set, false);
    const double x = sqp.traj.q.back()[0];
    const double closed = 0.76547;  // docs/validation/rigid.md: rolling from the impact on
    const int n = static_cast<int>(sqp.traj.q.size()) - 1;
    const VecX v = sqp.traj.velocity(sqp.scene.model->scheme(), n);
    std::printf("[ sqp rigid sphere %s ] x(1 s): sqp %.6f m, hybrid %.6f m, linear %.6f m, closed form %.5f m; "
                "final v_x %.6f m/s, theta_dot_y %.6f rad/s; bounce apex %.3e m (hybrid %.3e m); min gap %.3e m\n",
                integrator.c_str(), x, hyb.traj.q.back()[0], lin.traj.q.back()[0], closed, v[0], v[4],
                apex_after_impact(sqp.traj), apex_after_impact(hyb.traj), sqp.min_gap);
    std::printf("[ sqp rigid sphere %s ] Newton iterations per step: sqp %.2f (max %d), hybrid %.2f (max %d), "
                "linear %.2f (max %d)\n",
                integrator.c_str(), sqp.iterations_per_step, sqp.max_iterations, hyb.iterations_per_step,
                hyb.max_iterations, lin.iterations_per_step, lin.max_iterations);
    if (integrator != "bdf1") continue;
    // BDF1: the hard normal constraint makes the impact perfectly inelastic and the friction
    // impulse suffices to roll at once, the closed form's assumption.
    EXPECT_NEAR(x, closed, 0.01 * closed);
    EXPECT_NEAR(v[0], 0.8 / 1.4, 1e-6);  // rolling: v_x = (v_x0 + 0.4 r ω_y0)/1.4
  }
}

// A cube dropped on a corner (tilted about x and y) with a spin: corner, edge and face
// contact (B of rank 1 … 6), tipping with releases; it comes to rest on a face.
TEST(SqpRigid, TiltedCubeDropSettlesOnFace) {
  const std::string text =
      R"({"dt": 0.001, "steps": 1500, "integrator": "bdf1", "contact": {"model": "sqp", "kn": 1e5},
          "obstacles": [{"type": "plane", "name": "floor", "friction": 0.5}],
          "bodies": [{"type": "rigid", "name": "cube", "shape": {"type": "box", "size": [0.2, 0.2, 0.2]},
                      "mass": 1.0, "position": [0, 0, 0.3], "orientation": [0.4, 0.3, 0],
                      "velocity": [0.5, 0, 0], "angular_velocity": [0, 0, 2]}]})";
  Scene scene = load_scene_text(text, "tilted_drop");
  Simulator sim(*scene.model);
  const Trajectory t = sim.run(scene.model->params().defaults());
  ASSERT_TRUE(t.completed()) << t.failure;
  const TimeScheme& s = scene.model->scheme();
  const auto* term = [&]() -> const RigidContactTerm* {
    for (const auto& x : scene.model->terms())
      if (const auto* c = dynamic_cast<const RigidContactTerm*>(x.get())) return c;
    return nullptr;
  }();
  ASSERT_NE(term, nullptr);
  const VecX p = scene.model->params().defaults();
  double min_gap = 0.0;
  long iterations = 0;
  int max_iterations = 0, sticks = 0;
  for (int i = 1; i < static_cast<int>(t.q.size()); ++i) {
    const VecX v = t.velocity(s, i), a = VecX::Zero(v.size());
    const TermContext ctx{t.q[i], v, a, p, i, s};
    Eigen::Matrix<double, 3, 6> Pv;
    std::array<Eigen::Matrix<double, 3, 6>, 3> dPv;
    for (int k = 0; k < term->num_points(); ++k) min_gap = std::min(min_gap, term->point_jacobian(ctx, k, 0, Pv, dPv));
    iterations += t.reports[i - 1].iterations;
    max_iterations = std::max(max_iterations, t.reports[i - 1].iterations);
    for (const StickPoint& sp : t.reports[i - 1].contact.rigid_sticking) {
      ++sticks;
      EXPECT_LE(sp.force.norm(), sp.limit * (1.0 + 1e-12) + 1e-12) << "step " << i << " point " << sp.point;
    }
  }
  const VecX v = t.velocity(s, static_cast<int>(t.q.size()) - 1);
  std::printf("[ sqp tilted cube drop ] final z %.9f m, |v| %.3e, min gap %.3e m, %d sticking records, "
              "Newton iterations per step %.2f (max %d)\n",
              t.q.back()[2], v.norm(), min_gap, sticks, static_cast<double>(iterations) / (t.q.size() - 1),
              max_iterations);
  EXPECT_GE(min_gap, -1e-8);
  EXPECT_NEAR(t.q.back()[2], 0.1, 1e-8);  // resting on a face
  EXPECT_LT(v.norm(), 1e-8);
}

// Coupled rigid bodies: the quadruped (13 bodies, penalty hinges and motors, 4 shin-tip
// sphere proxies) stands on hard contacts; its feet do not penetrate (checked in run()),
// the torso stands higher than with the penalty model by about the penalty depth.
TEST(SqpRigid, QuadrupedStandsOnHardContacts) {
  const SceneRun sqp = run("quadruped.json", {"contact.model=sqp"}, true);
  ASSERT_TRUE(sqp.traj.completed());
  const SceneRun hyb = run("quadruped.json", {"contact.model=hybrid"}, false);
  const SceneRun lin = run("quadruped.json", {}, false);
  std::printf("[ sqp quadruped ] torso z(1.92 s): sqp %.6f m, hybrid %.6f m, linear %.6f m; min foot gap: sqp %.3e m, "
              "linear %.3e m; %d sticking records\n",
              sqp.traj.q.back()[2], hyb.traj.q.back()[2], lin.traj.q.back()[2], sqp.min_gap, lin.min_gap, sqp.sticks);
  std::printf("[ sqp quadruped ] Newton iterations per step: sqp %.2f (max %d), hybrid %.2f (max %d), "
              "linear %.2f (max %d)\n",
              sqp.iterations_per_step, sqp.max_iterations, hyb.iterations_per_step, hyb.max_iterations,
              lin.iterations_per_step, lin.max_iterations);
  EXPECT_GT(sqp.sticks, 0);
  // Penalty depth at rest: 1/4 of the 18 kg weight per foot over k_n = 3e4 N/m = 1.47 mm.
  const double dz = sqp.traj.q.back()[2] - lin.traj.q.back()[2];
  const double depth = 18.0 * kG / 4.0 / 3e4;
  std::printf("[ sqp quadruped ] torso height difference %.4e m, penalty depth %.4e m\n", dz, depth);
  EXPECT_NEAR(dz, depth, 0.05 * depth);
}

// A particle beside the cube on the same slope: the rigid rows must not disturb the point path.
TEST(SqpRigid, MixedSceneKeepsParticlePath) {
  const std::string slope =
      R"({"dt": 0.001, "steps": 1000, "integrator": "bdf2", "contact": {"model": "sqp", "kn": 1e5},
          "obstacles": [{"type": "plane", "name": "slope", "point": [0, 0, 0],
                         "normal": [0.3420201433, 0, 0.9396926208], "friction": 0.2}],
          "bodies": [{"type": "particles", "name": "p", "positions": [[0, 1, 0]], "mass": 1})";
  const std::string cube_body =
      R"(, {"type": "rigid", "name": "cube", "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}, "mass": 1.0,
            "position": [0.0342020143, 0, 0.0939692621], "orientation": [0, 0.3490658504, 0]})";
  Scene mixed = load_scene_text(slope + cube_body + "]}", "mixed");
  Scene alone = load_scene_text(slope + "]}", "alone");
  Simulator sim_m(*mixed.model), sim_a(*alone.model);
  const Trajectory tm = sim_m.run(mixed.model->params().defaults());
  const Trajectory ta = sim_a.run(alone.model->params().defaults());
  ASSERT_TRUE(tm.completed()) << tm.failure;
  ASSERT_TRUE(ta.completed()) << ta.failure;
  const double t = 1.0, expected = 0.5 * kG * (std::sin(kTheta) - 0.2 * std::cos(kTheta)) * t * t;
  const double particle_m = (tm.q.back().head<3>() - tm.q.front().head<3>()).norm();
  const double particle_a = (ta.q.back().head<3>() - ta.q.front().head<3>()).norm();
  const double cube_m = (tm.q.back().segment<3>(3) - tm.q.front().segment<3>(3)).norm();
  std::printf("[ sqp mixed ] particle slid %.9f m (alone %.9f m), cube %.6f m, closed form %.6f m\n", particle_m,
              particle_a, cube_m, expected);
  EXPECT_NEAR(particle_m, particle_a, 1e-7);
  EXPECT_NEAR(cube_m / expected, 1.0, 0.01);
  EXPECT_NEAR(particle_m / expected, 1.0, 0.01);
}

}  // namespace
}  // namespace addsim
