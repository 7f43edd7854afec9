// Material estimation from synthetic markers (paper §6, Fig. noiseResults, at test scale): a
// 48-tet soft box thrown onto the floor with tanh friction and a 5 mm normal blend; six node
// markers every second step of a run at E = 2e4 Pa, c_f = 0.4 are fitted by Gauss–Newton
// from a 4× softer material and half the friction. The full 451-tet study with noise is
// scripts/noise_study.py (docs/validation/noise-study.md).

#include <gtest/gtest.h>

#include "addsim/objectives/markers.h"
#include "addsim/optim/optimizer.h"
#include "optim_scenes.h"

namespace addsim {
namespace {

const char* kSoftBoxThrow = R"({
  "dt": 0.01, "steps": 30, "integrator": "bdf2",
  "contact": {"model": "tanh", "kn": 1000, "smoothing": 0.005},
  "obstacles": [{"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1], "friction": 0.4}],
  "bodies": [{"type": "fem", "name": "box", "mesh": {"generator": "box", "size": [0.1, 0.1, 0.1], "target_tets": 48},
              "position": [0, 0, 0.08], "velocity": [1.0, 0, -0.5], "angular_velocity": [0, -10, 0],
              "material": {"youngs_modulus": 20000, "poisson_ratio": 0.3, "density": 150, "viscosity": 0.0125}}]
})";

TEST(MaterialEstimation, YoungsModulusAndFrictionRecoveredFromNoiseFreeMarkers) {
  const std::vector<int> nodes = {0, 1, 2, 3, 4, 5};
  std::vector<MarkerFrame> frames;
  {
    Scene s = load_scene_text(kSoftBoxThrow, "test.json");
    Simulator sim(*s.model, 1);
    const Trajectory traj = sim.run(s.model->params().defaults());
    ASSERT_TRUE(traj.completed());
    for (int step = 2; step <= 30; step += 2) {
      MarkerFrame f;
      f.step = step;
      for (int k : nodes) {
        f.positions.push_back(node_marker(*s.model, 0, k).position(traj.q[step]));
        f.visible.push_back(true);
      }
      frames.push_back(f);
    }
  }
  auto t = test::scene_task(kSoftBoxThrow, {{"bodies.0.material.youngs_modulus", true, 500, 1e6},
                                            {"obstacles.0.friction", false, 0.0, 2.0}});
  std::vector<Marker> markers;
  for (int k : nodes) markers.push_back(node_marker(*t->scene.model, 0, k));
  t->objective.add(1.0, std::make_unique<MarkerTrajectories>(markers, frames));
  VecX p = t->scene.model->params().defaults();
  p[t->selection.indices()[0]] = 5000.0;
  p[t->selection.indices()[1]] = 0.2;
  auto problem = test::make_problem(t, p);
  OptimizerOptions o;
  o.method = OptimizerMethod::kGaussNewton;
  o.max_simulations = 40;
  o.phi_ratio_tolerance = 1e-16;
  const OptimizationResult r = minimize(*problem, problem->x0(), o);
  EXPECT_EQ(r.failed_simulations, 0) << r.message;
  EXPECT_LE(r.simulations, 15) << r.message;  // measured: 6
  EXPECT_NEAR(r.values_best[0], 2e4, 2e4 * 1e-3) << r.message;
  EXPECT_NEAR(r.values_best[1], 0.4, 0.4 * 1e-3) << r.message;
}

}  // namespace
}  // namespace addsim
