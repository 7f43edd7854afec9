// Newton acceptance (docs/solver.md, "Acceptance"): the tolerance scales with the forces on
// each body, steps accepted at the round-off floor or on a tiny Newton step are flagged, and
// those whose contributions did not cancel fail instead of passing as converged. Plus the run
// checks of io/run_checks.h: energy growth in passive scenes and initial penetration. The
// cases are the ones measured in issue 18 (defect 7), each small enough to run in well under
// a second.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "addsim/core/error.h"
#include "addsim/io/run_checks.h"
#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace addsim {
namespace {

constexpr double kG = 9.81;

Trajectory simulate(const Scene& scene) {
  Simulator sim(*scene.model);
  return sim.run(scene.model->params().defaults());
}

int floor_steps(const Trajectory& t) {
  int n = 0;
  for (const StepReport& r : t.reports) n += r.accepted_at_floor();
  return n;
}

// One free particle of mass m at the origin, BDF1, n steps of h.
std::string free_particle(double mass, double h, int steps) {
  char buf[512];
  std::snprintf(buf, sizeof buf, R"({"dt": %.17g, "steps": %d, "integrator": "bdf1",
      "bodies": [{"type": "particles", "name": "dust", "positions": [[0, 0, 0]], "mass": %.17g}]})",
                h, steps, mass);
  return buf;
}

// Implicit Euler free fall from rest: z_n = −g h² n (n + 1) / 2.
double bdf1_fall(double h, int n) { return -kG * h * h * n * (n + 1) / 2.0; }

TEST(Acceptance, ParticleLighterThanTheForceToleranceFalls) {
  // Its weight, 9.81e-11 N, is below the absolute tolerance of 1e-10 N: before the relative
  // test the initial guess (no motion) was accepted and the particle never fell.
  for (const double mass : {1e-11, 1e-15, 1.0}) {
    const Scene scene = load_scene_text(free_particle(mass, 0.01, 30), "dust.json");
    const Trajectory t = simulate(scene);
    ASSERT_TRUE(t.completed()) << t.failure;
    EXPECT_EQ(floor_steps(t), 0) << "mass " << mass;
    const double z = t.q.back()[2];
    EXPECT_NEAR(z, bdf1_fall(0.01, 30), 1e-9 * std::abs(bdf1_fall(0.01, 30))) << "mass " << mass;
    // g t²/2 up to the O(h) error of implicit Euler (g h t / 2).
    EXPECT_NEAR(z, -kG * 0.3 * 0.3 / 2.0, kG * 0.01 * 0.3 / 2.0 * 1.0001) << "mass " << mass;
    for (const StepReport& r : t.reports) EXPECT_LE(r.relative_residual, scene.model->solver().relative_tolerance);
  }
}

TEST(Acceptance, AbsurdTimeStepFailsInsteadOfFreezing) {
  // h = 1e300: the inertia m (q − q_prev)/h² underflows, so no q balances gravity. Newton's
  // step no longer moves q and the residual is the whole weight (relative residual 1).
  const Scene scene = load_scene_text(free_particle(1.0, 1e300, 3), "dt.json");
  const Trajectory t = simulate(scene);
  ASSERT_FALSE(t.completed());
  EXPECT_EQ(t.failed_step, 1);
  EXPECT_NE(t.failure.find("relative residual 1"), std::string::npos) << t.failure;
  EXPECT_NE(t.failure.find("'dust'"), std::string::npos) << t.failure;
  EXPECT_NE(t.failure.find("double precision"), std::string::npos) << t.failure;
}

// One FEM box (one cell, six tets) of side `size` at `z`, with Young's modulus E and an
// optional floor; velocity along z.
std::string fem_box(double size, double z, double E, double h, int steps, double vz = 0.0, bool floor = false,
                    const char* integrator = "bdf1") {
  char buf[1024];
  std::snprintf(buf, sizeof buf, R"({"dt": %.17g, "steps": %d, "integrator": "%s",
      %s
      "bodies": [{"type": "fem", "name": "box", "mesh": {"generator": "box", "size": [%.17g, %.17g, %.17g],
                  "target_tets": 6}, "position": [0, 0, %.17g], "velocity": [0, 0, %.17g],
                  "material": {"youngs_modulus": %.17g, "density": 1000}}]})",
                h, steps, integrator,
                floor ? R"("contact": {"kn": 1e5}, "obstacles": [{"type": "plane", "name": "floor", "point": [0, 0, 0],
                              "normal": [0, 0, 1], "friction": 0.5}],)"
                      : "",
                size, size, size, z, vz, E);
  return buf;
}

TEST(Acceptance, RigidlyStiffBoxFailsLoudly) {
  // E = 1e30 Pa on a 1 m box: rounding q by ε changes the elastic forces by ≈ 1e14 N, far more
  // than its weight (9.81e3 N). Steps were accepted with ‖r‖ ≈ 4e12 N and the box hung in the
  // air; now the first step fails naming the body and the relative residual.
  const Scene scene = load_scene_text(fem_box(1.0, 1.0, 1e30, 0.01, 5), "stiff.json");
  const Trajectory t = simulate(scene);
  ASSERT_FALSE(t.completed());
  EXPECT_EQ(t.failed_step, 1);
  EXPECT_NE(t.failure.find("relative residual"), std::string::npos) << t.failure;
  EXPECT_NE(t.failure.find("'box'"), std::string::npos) << t.failure;
}

TEST(Acceptance, MicrometreTetFalls) {
  // A 1 µm box (a mesh in mm read as m) weighs 1.5e-14 N, below the absolute tolerance: it
  // froze. It must fall like anything else, at the origin and 1 m away from it (where q is
  // known to 2e-16 m, a strain of 2e-10, whose elastic round-off ≈ 4e-18 N is still far
  // below its weight).
  for (const double z0 : {0.0, 1.0}) {
    const Scene scene = load_scene_text(fem_box(1e-6, z0, 2e4, 0.01, 20), "micro.json");
    const Trajectory t = simulate(scene);
    ASSERT_TRUE(t.completed()) << t.failure;
    EXPECT_EQ(floor_steps(t), 0) << "z0 " << z0;
    const Body& box = *scene.model->bodies()[0];
    const double z = box.center_of_mass(t.q.back(), t.p).z() - box.center_of_mass(t.q0, t.p).z();
    EXPECT_NEAR(z, bdf1_fall(0.01, 20), 1e-6 * std::abs(bdf1_fall(0.01, 20))) << "z0 " << z0;
  }
}

TEST(Acceptance, SpinWithoutForcesConvergesOnTheTolerance) {
  // Nothing but inertia acts on a box spinning without gravity: its contributions are at
  // round-off level, so the relative test falls back on the body's own round-off floor.
  const std::string text = R"({"dt": 0.001, "steps": 20, "gravity": [0, 0, 0],
      "bodies": [{"type": "rigid", "name": "box", "shape": {"type": "box", "size": [0.3, 0.2, 0.1]}, "mass": 1.0,
                  "angular_velocity": [0.01, 6.0, 0.01], "proxies": []}]})";
  const Scene scene = load_scene_text(text, "spin.json");
  const Trajectory t = simulate(scene);
  ASSERT_TRUE(t.completed()) << t.failure;
  EXPECT_EQ(floor_steps(t), 0);
}

TEST(Acceptance, EnergyGrowthOfAPassiveSceneIsReported) {
  // E = 1e12 Pa box thrown at the floor at 50 m/s with h = 0.5 s (BDF2): it ends 356 m above
  // the floor with 3.6 times its initial energy (1.26e6 J → 4.5e6 J), and was reported as a
  // plain success. Its steps are also only resolved at the round-off floor of the stiff
  // elastic forces (relative residual up to 3.4e-4), which is flagged too.
  const Scene scene = load_scene_text(fem_box(1.0, 0.6, 1e12, 0.5, 12, -50.0, true, "bdf2"), "bounce.json");
  const Trajectory t = simulate(scene);
  ASSERT_TRUE(t.completed()) << t.failure;
  const RunChecks c = check_run(scene, t);
  EXPECT_TRUE(c.passive);
  EXPECT_GT(c.peak_energy, 3.0 * c.initial_energy);
  EXPECT_GT(c.floor_steps, 0);
  EXPECT_TRUE(c.energy_growth) << "E0 " << c.initial_energy << " peak " << c.peak_energy << " scale "
                               << c.energy_scale << (t.completed() ? "" : ", failed: " + t.failure);
  bool named = false;
  for (const std::string& w : c.warnings) named = named || w.find("energy") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(Acceptance, DroppedBallKeepsItsEnergyBelowTheWarning) {
  // The same box, soft and with a reasonable step: no energy warning, no floor steps.
  const Scene scene = load_scene_text(fem_box(0.2, 0.5, 1e5, 0.01, 60, 0.0, true), "drop.json");
  const Trajectory t = simulate(scene);
  ASSERT_TRUE(t.completed()) << t.failure;
  const RunChecks c = check_run(scene, t);
  EXPECT_TRUE(c.passive);
  EXPECT_FALSE(c.energy_growth) << "E0 " << c.initial_energy << " peak " << c.peak_energy;
  EXPECT_LT(c.peak_energy, c.initial_energy + 1e-9 * c.energy_scale);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_EQ(c.floor_steps, 0);
}

TEST(Acceptance, BodyStartingInsideAnObstacleIsNamed) {
  const std::string text = R"({"dt": 0.01, "steps": 2, "contact": {"kn": 1e4},
      "obstacles": [{"type": "plane", "name": "ground", "point": [0, 0, 0], "normal": [0, 0, 1]}],
      "bodies": [{"type": "particles", "name": "resting", "positions": [[0, 0, -0.0005]], "mass": 1},
                 {"type": "particles", "name": "buried", "positions": [[1, 0, -0.05]], "mass": 1}]})";
  const Scene scene = load_scene_text(text, "buried.json");
  const Trajectory t = simulate(scene);
  const RunChecks c = check_run(scene, t);
  // "resting" sits at 0.5 mm, inside twice its resting depth m g / k_n = 0.98 mm.
  ASSERT_EQ(c.penetrations.size(), 1u);
  EXPECT_EQ(c.penetrations[0].body, "buried");
  EXPECT_EQ(c.penetrations[0].obstacle, "ground");
  EXPECT_NEAR(c.penetrations[0].depth, 0.05, 1e-12);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("'buried'"), std::string::npos);
  // Its penalty energy, which E leaves out, comes back as motion: no energy check then.
  EXPECT_FALSE(c.passive);
}

TEST(Acceptance, DrivenScenesAreNotPassive) {
  const std::string text = R"({"dt": 0.01, "steps": 2,
      "bodies": [{"type": "particles", "name": "p", "positions": [[0, 0, 0]], "mass": 1}],
      "handles": [{"name": "hand", "position": [0, 0, 1]}]})";
  const Scene scene = load_scene_text(text, "driven.json");
  EXPECT_FALSE(passive_scene(*scene.model));
  const Scene still = load_scene_text(free_particle(1.0, 0.01, 2), "still.json");
  EXPECT_TRUE(passive_scene(*still.model));
}

TEST(Acceptance, RelativeToleranceIsValidated) {
  EXPECT_THROW(load_scene_text(R"({"solver": {"relative_tolerance": 1}, "bodies": []})", "s.json"), InputError);
  EXPECT_THROW(load_scene_text(R"({"solver": {"relative_tolerance": 0}, "bodies": []})", "s.json"), InputError);
}

}  // namespace
}  // namespace addsim
