#pragma once
// Small scenes and problems of the optimiser tests (each simulation takes milliseconds).

#include <memory>
#include <string>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/optim/problem.h"

namespace addsim::test {

/// A 1 kg particle at the origin under gravity, 50 steps of 0.01 s, no contact: the final
/// position is affine in the initial velocity, so Φ = ½‖x(t) − target‖² is quadratic.
inline const char* kParticleThrow = R"({
  "dt": 0.01, "steps": 50, "integrator": "bdf2",
  "bodies": [{"type": "particles", "name": "p", "positions": [[0, 0, 0]], "mass": 1}]
})";

/// A particle sliding down a 20° incline (gravity tilted; plane z = 0, friction 0.3), 100 steps.
inline const char* kParticleIncline = R"({
  "dt": 0.01, "steps": 100, "integrator": "bdf2",
  "gravity": [3.3552176060248105, 0, -9.218384609909762],
  "contact": {"model": "linear", "kn": 100000},
  "obstacles": [{"type": "plane", "name": "floor", "point": [0, 0, 0], "normal": [0, 0, 1], "friction": 0.3}],
  "bodies": [{"type": "particles", "name": "block", "positions": [[0, 0, -9.218384609909762e-05]], "mass": 1}]
})";

/// A rigid sphere (r = 0.1 m, 1 kg) thrown with spin, 0.5 s of flight: markers on its
/// surface move nonlinearly with the angular velocity (through the rotation).
inline const char* kRigidSphereThrow = R"({
  "dt": 0.005, "steps": 100, "integrator": "bdf2",
  "bodies": [{"type": "rigid", "name": "ball", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1.0,
              "position": [0, 0, 0.2], "velocity": [1, 0, 1], "angular_velocity": [0, -5, 0]}]
})";

/// A soft box (6 tets, E = 300 Pa) thrown down onto the floor from 5 cm above it: for
/// v_z ≲ −4 m/s an element inverts at impact and the simulation fails.
inline const char* kSoftBoxDrop = R"({
  "dt": 0.01, "steps": 40, "integrator": "bdf2",
  "contact": {"kn": 1e4},
  "obstacles": [{"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1], "friction": 0.0}],
  "bodies": [{"type": "fem", "name": "box", "mesh": {"generator": "box", "size": [0.2, 0.2, 0.2], "target_tets": 6},
              "position": [0, 0, 0.15], "velocity": [0, 0, -1],
              "material": {"youngs_modulus": 300, "poisson_ratio": 0.3, "density": 100}}]
})";

/// A scene, an objective and a selection kept together (the problem's owner).
struct SceneTask {
  Scene scene;
  Objective objective;
  ParameterSelection selection;
};

/// Loads `text` with overrides, selects `paths` and adds nothing to the objective yet.
inline std::shared_ptr<SceneTask> scene_task(const std::string& text, const std::vector<ParameterSpec>& specs,
                                             const std::vector<std::string>& overrides = {}) {
  auto t = std::make_shared<SceneTask>();
  t->scene = load_scene_text(text, "test.json", overrides);
  t->selection = ParameterSelection(t->scene.model->params(), specs);
  return t;
}

/// The problem of a SceneTask started at p (|p|; default: the scene's values).
inline std::unique_ptr<SimulationProblem> make_problem(const std::shared_ptr<SceneTask>& t, VecX p = VecX(),
                                                       int slots = 1) {
  if (p.size() == 0) p = t->scene.model->params().defaults();
  return std::make_unique<SimulationProblem>(*t->scene.model, t->objective, t->selection, p, slots, 1, t);
}

/// Final position of the particle throw at initial velocity v.
inline Vec3 particle_throw_end(const Vec3& v) {
  Scene s = load_scene_text(kParticleThrow, "test.json");
  VecX p = s.model->params().defaults();
  p.segment<3>(s.model->params().require("bodies.0.velocities").offset) = v;
  Simulator sim(*s.model, 1);
  const Trajectory traj = sim.run(p);
  return traj.q.back().head<3>();
}

}  // namespace addsim::test
