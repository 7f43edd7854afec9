// Gradient cost relative to the forward rollout (DESIGN.md §6, docs/validation/gradients.md):
// one adjoint gradient (all parameters) vs its forward rollout, and direct sensitivities per
// parameter, for the soft ball throw (scenes/soft_ball_throw.json), the cylinder drop
// (scenes/cylinder_drop.json) and the mass-spring sheet with per-step controls
// (tasks/sheet_controls.json), each also with solver.threads = 2 ("_2threads": forward
// element loops split; the adjoint linearises step i − 1 and forms the parameter products
// of step i + 1 on a helper thread while it solves step i; the direct pass linearises
// step i + 1 ahead); and one adjoint evaluation of the bunny throw's own task
// (tasks/bunny_to_pose.json: every node to a target pose; needs data/bunny.obj and gmsh),
// which is what one evaluation of `addsim optimize` on it costs. Counters: ratio =
// gradient time / forward time; process CPU time of each pass (the wall times are inflated
// by the shared machine's load); minor page faults of forward + adjoint; LU factorisations
// and GMRES iterations of each pass.

#include <benchmark/benchmark.h>

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "addsim/io/task.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/solver/linear_solver.h"

namespace {

using namespace addsim;
namespace fs = std::filesystem;

// A scene, its objective (centre of mass of body 0 at the end, or the sheet task's) and one forward run.
struct Case {
  std::unique_ptr<Task> task;   // set when loaded from a task file
  Scene scene;                  // otherwise
  Objective objective;
  const Model* model = nullptr;
  const ObjectiveFunction* phi = nullptr;
  std::vector<int> params;      // parameters for the direct pass
};

Case& get_case(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Case>> cases;
  auto& c = cases[name];
  if (c) return *c;
  c = std::make_unique<Case>();
  const fs::path src(ADDSIM_SOURCE_DIR);
  // "<scene>_2threads": the same with solver.threads = 2 (forward element loops split, the
  // adjoint's linearisation of step i − 1 overlapped with the solve of step i).
  const std::string suffix = "_2threads";
  const bool two = name.size() > suffix.size() && name.ends_with(suffix);
  const std::string base = two ? name.substr(0, name.size() - suffix.size()) : name;
  if (base == "sheet_controls" || base == "bunny_to_pose") {
    c->task = std::make_unique<Task>(load_task_file(src / "tasks" / (base + ".json")));
    if (two) c->task->scene.model->solver_mut().threads = 2;
    c->model = c->task->scene.model.get();
    c->phi = &c->task->objective;
    c->params = {c->task->selection.indices()[0]};
  } else {
    c->scene = load_scene_file(src / "scenes" / (base + ".json"), {two ? "solver.threads=2" : "solver.threads=1"});
    c->model = c->scene.model.get();
    c->objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3(1.0, 0.0, 0.1)));
    c->phi = &c->objective;
    c->params = {c->model->params().require("contact.kn").offset};
  }
  return *c;
}

// Process CPU time (all threads), s: on the shared machine the wall times are inflated by
// the load, the CPU times much less so.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// The bunny task needs data/bunny.obj (scripts/install-deps.sh) and gmsh.
bool skip_unavailable(benchmark::State& state, const std::string& name) {
  if (name.starts_with("bunny_to_pose") &&
      (!gmsh_available() || !fs::exists(fs::path(ADDSIM_SOURCE_DIR) / "data" / "bunny.obj"))) {
    state.SkipWithError("bunny_to_pose needs gmsh and data/bunny.obj (scripts/install-deps.sh)");
    return true;
  }
  return false;
}

void run_adjoint(benchmark::State& state, const std::string& name) {
  if (skip_unavailable(state, name)) return;
  Case& c = get_case(name);
  Simulator sim(*c.model);
  double forward = 0.0, gradient = 0.0, forward_cpu = 0.0, gradient_cpu = 0.0;
  long faults = 0;
  long factorizations = 0, krylov = 0;
  int runs = 0;
  for (auto _ : state) {
    const long faults0 = minor_page_faults();
    const double cpu0 = cpu_seconds();
    const Trajectory traj = sim.run(c.model->params().defaults());
    const double cpu1 = cpu_seconds();
    if (!traj.completed()) {
      state.SkipWithError(("forward run failed: " + traj.failure).c_str());
      return;
    }
    const GradientResult g = gradient_adjoint(*c.model, traj, *c.phi);
    forward_cpu += cpu1 - cpu0;
    gradient_cpu += cpu_seconds() - cpu1;
    faults += minor_page_faults() - faults0;
    forward += traj.wall_seconds;
    gradient += g.wall_seconds;
    factorizations = g.factorizations;
    krylov = g.krylov_iterations;
    long forward_factorizations = 0, forward_krylov = 0;
    for (const StepReport& r : traj.reports) {
      forward_factorizations += r.factorizations;
      forward_krylov += r.krylov_iterations;
    }
    state.counters["forward_factorizations"] = forward_factorizations;
    state.counters["forward_krylov"] = forward_krylov;
    ++runs;
    benchmark::DoNotOptimize(g.dphi_dp.data());
  }
  state.counters["forward_s"] = forward / runs;
  state.counters["adjoint_s"] = gradient / runs;
  state.counters["forward_cpu_s"] = forward_cpu / runs;
  state.counters["adjoint_cpu_s"] = gradient_cpu / runs;
  state.counters["minor_faults"] = static_cast<double>(faults) / runs;
  state.counters["ratio"] = gradient / forward;
  state.counters["params"] = c.model->params().size();
  state.counters["adjoint_factorizations"] = factorizations;
  state.counters["adjoint_krylov"] = krylov;
}

void run_direct(benchmark::State& state, const std::string& name) {
  if (skip_unavailable(state, name)) return;
  Case& c = get_case(name);
  Simulator sim(*c.model);
  const Trajectory traj = sim.run(c.model->params().defaults());
  if (!traj.completed()) {
    state.SkipWithError(("forward run failed: " + traj.failure).c_str());
    return;
  }
  double direct = 0.0;
  int runs = 0;
  for (auto _ : state) {
    const DirectResult d = gradient_direct(*c.model, traj, *c.phi, c.params);
    direct += d.wall_seconds;
    state.counters["direct_factorizations"] = d.factorizations;
    state.counters["direct_krylov"] = d.krylov_iterations;
    ++runs;
    benchmark::DoNotOptimize(d.dphi_dp.data());
  }
  state.counters["forward_s"] = traj.wall_seconds;
  state.counters["direct_per_param_s"] = direct / runs / c.params.size();
  state.counters["ratio_per_param"] = direct / runs / c.params.size() / traj.wall_seconds;
}

BENCHMARK_CAPTURE(run_adjoint, soft_ball_throw, std::string("soft_ball_throw"))->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(run_adjoint, cylinder_drop, std::string("cylinder_drop"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(run_adjoint, sheet_controls, std::string("sheet_controls"))->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(run_adjoint, bunny_to_pose, std::string("bunny_to_pose"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(run_adjoint, soft_ball_throw_2threads, std::string("soft_ball_throw_2threads"))->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(run_adjoint, cylinder_drop_2threads, std::string("cylinder_drop_2threads"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(run_adjoint, sheet_controls_2threads, std::string("sheet_controls_2threads"))->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(run_direct, soft_ball_throw, std::string("soft_ball_throw"))->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(run_direct, cylinder_drop, std::string("cylinder_drop"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(run_direct, sheet_controls, std::string("sheet_controls"))->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(run_direct, soft_ball_throw_2threads, std::string("soft_ball_throw_2threads"))->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(run_direct, cylinder_drop_2threads, std::string("cylinder_drop_2threads"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(run_direct, sheet_controls_2threads, std::string("sheet_controls_2threads"))->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

// The allocator setting of the `addsim` executable (linear_solver.h), so that the numbers
// are those of the CLI.
int main(int argc, char** argv) {
  addsim::keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
