// Throughput of batches of independent rollouts (batch/batch.h, issue "Many rollouts at
// once"): the soft ball throw (scenes/soft_ball_throw.json, 451 tets) as 64 rollouts, and the
// rigid sphere throw (tasks/rigid_sphere_throw.json) as 256 rollouts + adjoint gradients, on
// 1 and 2 threads. Counters: items per second; compare the /threads:1 and /threads:2 rows of
// one run for the scaling (target ≥ 1.8× on 2 cores). The throws vary the initial velocity
// so no two items are the same rollout.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "addsim/batch/batch.h"
#include "addsim/io/task.h"
#include "addsim/objectives/objective_terms.h"

namespace {

using namespace addsim;
namespace fs = std::filesystem;

// n parameter vectors with the initial velocity of body `path` jittered by ±10 %.
std::vector<VecX> throws(const Model& model, const VecX& p0, const std::string& path, int n) {
  const ParamRange v = model.params().require(path);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> scale(0.9, 1.1);
  std::vector<VecX> out;
  for (int k = 0; k < n; ++k) {
    VecX p = p0;
    for (int j = 0; j < v.size; ++j) p[v.offset + j] *= scale(rng);
    out.push_back(p);
  }
  return out;
}

void BM_SoftBallRollouts(benchmark::State& state) {
  static const Scene scene =
      load_scene_file(fs::path(ADDSIM_SOURCE_DIR) / "scenes" / "soft_ball_throw.json", {"solver.threads=1"});
  const Model& model = *scene.model;
  const std::vector<VecX> ps = throws(model, model.params().defaults(), "bodies.ball.velocity", 64);
  BatchOptions o;
  o.threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const auto r = run_batch(model, ps, nullptr, o);
    benchmark::DoNotOptimize(r.data());
  }
  state.counters["items_per_s"] =
      benchmark::Counter(static_cast<double>(ps.size()) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SoftBallRollouts)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->UseRealTime()
    ->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(false);

void BM_RigidSphereRolloutsAndAdjoints(benchmark::State& state) {
  static const Task task = load_task_file(fs::path(ADDSIM_SOURCE_DIR) / "tasks" / "rigid_sphere_throw.json",
                                          {"scene.steps=300"});
  const Model& model = *task.scene.model;
  const std::vector<VecX> ps = throws(model, task.p(), "bodies.0.velocity", 256);
  BatchOptions o;
  o.threads = static_cast<int>(state.range(0));
  o.gradients = true;
  for (auto _ : state) {
    const auto r = run_batch(model, ps, &task.objective, o);
    benchmark::DoNotOptimize(r.data());
  }
  state.counters["items_per_s"] =
      benchmark::Counter(static_cast<double>(ps.size()) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RigidSphereRolloutsAndAdjoints)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kSecond)
    ->UseRealTime()->Iterations(1)->Repetitions(3);

}  // namespace

BENCHMARK_MAIN();
