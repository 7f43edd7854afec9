// Rigid-body benchmark (issue: rigid bodies, joints, motors): addsim's time per step on the
// thrown sphere and the cube on an incline at h = 0.01 and 0.001 s next to MuJoCo's on
// equivalent MJCF models (when built with MuJoCo), the 78-DOF quadruped (paper Table 2:
// 0.55 s for 192 steps) and a 12-DOF cube-dragging model (paper Table 2: 0.044 s for 60
// steps). Counters: us_per_step (addsim or MuJoCo), steps.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

#ifdef ADDSIM_HAVE_MUJOCO
#include <mujoco/mujoco.h>
#endif

namespace {

using namespace addsim;

std::string scene_file(const char* name) { return std::string(ADDSIM_SOURCE_DIR) + "/scenes/" + name; }

// Runs a whole scene per iteration and reports the time per step.
void run_scene(benchmark::State& state, const Scene& scene) {
  Simulator sim(*scene.model);
  const VecX p = scene.model->params().defaults();
  const int steps = scene.model->scheme().steps;
  for (auto _ : state) {
    const Trajectory traj = sim.run(p);
    if (!traj.completed()) state.SkipWithError(traj.failure.c_str());
    benchmark::DoNotOptimize(traj.q.back().data());
  }
  state.counters["steps"] = steps;
  state.counters["us_per_step"] =
      benchmark::Counter(static_cast<double>(steps) * state.iterations(), benchmark::Counter::kIsRate |
                                                                          benchmark::Counter::kInvert);
}

// 1 s of the scene at step h (arg 0: 10 = 0.01 s, 1 = 0.001 s).
void BM_addsim_one_second(benchmark::State& state, const char* file) {
  const double h = state.range(0) == 10 ? 0.01 : 0.001;
  const int steps = static_cast<int>(1.0 / h + 0.5);
  run_scene(state, load_scene_file(scene_file(file), {"dt=" + std::to_string(h), "steps=" + std::to_string(steps)}));
}
BENCHMARK_CAPTURE(BM_addsim_one_second, sphere_throw, "rigid_sphere_throw.json")->Arg(10)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_addsim_one_second, cube_incline, "rigid_cube_incline.json")->Arg(10)->Arg(1)->Unit(benchmark::kMillisecond);

// The 13-body, 12-motor quadruped (78 DOF), 192 steps.
void BM_addsim_quadruped(benchmark::State& state) { run_scene(state, load_scene_file(scene_file("quadruped.json"))); }
BENCHMARK(BM_addsim_quadruped)->Unit(benchmark::kMillisecond);

// Two 0.1 m cubes (12 DOF) on a frictional floor, the first dragged by a handle through a
// ball joint, the second tied to it by a cable; 60 steps of 1/60 s.
void BM_addsim_cube_drag(benchmark::State& state) {
  const char* text = R"({"dt": 0.016666666666666666, "steps": 60, "contact": {"kn": 1e4, "kd": 20},
    "obstacles": [{"type": "plane", "friction": 0.5}],
    "bodies": [{"type": "rigid", "name": "a", "shape": {"type": "box", "size": [0.1, 0.1, 0.1]}, "mass": 0.5, "position": [0, 0, 0.05]},
               {"type": "rigid", "name": "b", "shape": {"type": "box", "size": [0.1, 0.1, 0.1]}, "mass": 0.5, "position": [-0.2, 0, 0.05]}],
    "handles": [{"name": "h", "position": [0.05, 0, 0.05], "velocity": [0.3, 0, 0]}],
    "joints": [{"type": "ball", "anchors": [{"body": "a", "point": [0.05, 0, 0]}, {"handle": "h"}], "stiffness": 1e3},
               {"type": "unilateral", "anchors": [{"body": "a", "point": [-0.05, 0, 0]}, {"body": "b", "point": [0.05, 0, 0]}],
                "stiffness": 1e3}]})";
  run_scene(state, load_scene_text(text, "cube_drag.json"));
}
BENCHMARK(BM_addsim_cube_drag)->Unit(benchmark::kMillisecond);

#ifdef ADDSIM_HAVE_MUJOCO
// MJCF twins of the two scenes (same masses, sizes, initial state and friction; MuJoCo's own
// soft contact with default solref/solimp and elliptic-free pyramidal cones).
const char* kSphereXml = R"(<mujoco><option timestep="%g" gravity="0 0 -9.81"/><worldbody>
  <geom type="plane" size="10 10 0.1" friction="0.5 0.005 0.0001"/>
  <body pos="0 0 0.2"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.5 0.005 0.0001"/></body>
  </worldbody></mujoco>)";
const char* kCubeXml = R"(<mujoco><option timestep="%g" gravity="0 0 -9.81"/><worldbody>
  <geom type="plane" size="10 10 0.1" euler="0 20 0" friction="0.2 0.005 0.0001"/>
  <body pos="0.0342020143 0 0.0939692621" euler="0 20 0"><freejoint/>
    <geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.2 0.005 0.0001"/></body>
  </worldbody></mujoco>)";

void BM_mujoco_one_second(benchmark::State& state, const char* xml_format, bool sphere) {
  const double h = state.range(0) == 10 ? 0.01 : 0.001;
  const int steps = static_cast<int>(1.0 / h + 0.5);
  char xml[2048];
  std::snprintf(xml, sizeof(xml), xml_format, h);
  // MuJoCo parses the model from a file: one per process (concurrent runs do not share it),
  // removed as soon as it is parsed.
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("addsim_bench_rigid_" + std::to_string(getpid()) + ".xml");
  std::ofstream(file) << xml;
  char error[1000] = "";
  mjModel* m = mj_loadXML(file.string().c_str(), nullptr, error, sizeof(error));
  std::error_code ec;
  std::filesystem::remove(file, ec);
  if (!m) {
    state.SkipWithError(error);
    return;
  }
  mjData* d = mj_makeData(m);
  for (auto _ : state) {
    mj_resetData(m, d);
    if (sphere) {
      // Free joint: qvel = (v, ω) with ω in the world frame for the free joint's first body.
      d->qvel[0] = 1.0;
      d->qvel[2] = 2.0;
      d->qvel[4] = -5.0;
    }
    for (int i = 0; i < steps; ++i) mj_step(m, d);
    benchmark::DoNotOptimize(d->qpos[0]);
  }
  state.counters["steps"] = steps;
  state.counters["x_final"] = d->qpos[0];
  state.counters["us_per_step"] =
      benchmark::Counter(static_cast<double>(steps) * state.iterations(), benchmark::Counter::kIsRate |
                                                                          benchmark::Counter::kInvert);
  mj_deleteData(d);
  mj_deleteModel(m);
}
BENCHMARK_CAPTURE(BM_mujoco_one_second, sphere_throw, kSphereXml, true)->Arg(10)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_mujoco_one_second, cube_incline, kCubeXml, false)->Arg(10)->Arg(1)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
