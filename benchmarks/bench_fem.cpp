// Soft-body scenes of the paper (Table 1) through the scene loader: scenes/cylinder_drop.json
// (879 tets, 500 BDF1 steps), scenes/tori_drop.json (≈ 1930 tets, 400 BDF2 steps) and
// scenes/soft_ball_throw.json (≈ 451 tets, 100 BDF2 steps), each with UMFPACK, Eigen's
// SparseLU and the "auto" choice. Counters: wall time of the run (s), ms per step, Newton
// iterations, factorisations and GMRES iterations (reused LU) per step, the time of one
// assembly and of one factorisation (ms) and the Newton overhead
// step time / (one assembly + one factorisation).
// Meshing (gmsh) happens outside the timed region. Example:
//   OPENBLAS_NUM_THREADS=1 bench_fem --benchmark_filter='cylinder.*umfpack'

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/solver/simulator.h"

namespace {

using namespace addsim;

const char* const kScenes[] = {"cylinder_drop", "tori_drop", "soft_ball_throw"};
const char* const kSolvers[] = {"umfpack", "eigen", "auto"};

void BM_FemScene(benchmark::State& state) {
  if (!gmsh_available()) {
    state.SkipWithError("the FEM scenes need gmsh");
    return;
  }
  const std::string scene_name = kScenes[state.range(0)];
  const std::string solver = kSolvers[state.range(1)];
  const Scene scene = load_scene_file(std::string(ADDSIM_SOURCE_DIR) + "/scenes/" + scene_name + ".json",
                                      {"solver.linear_solver=" + solver});
  Simulator sim(*scene.model);
  const VecX p = scene.model->params().defaults();
  double steps = 0, iterations = 0, wall_ms = 0, assembly_ms = 0, factor_ms = 0, runs = 0;
  double assemblies = 0, factorizations = 0, krylov = 0;
  for (auto _ : state) {
    const Trajectory t = sim.run(p);
    if (!t.completed()) state.SkipWithError(t.failure.c_str());
    for (const StepReport& r : t.reports) {
      iterations += r.iterations;
      wall_ms += r.wall_ms;
      assembly_ms += r.assembly_ms;
      factor_ms += r.factor_ms;
      assemblies += r.assemblies;
      factorizations += r.factorizations;
      krylov += r.krylov_iterations;
    }
    steps += static_cast<double>(t.reports.size());
    runs += 1;
  }
  // One assembly = one evaluation of r and the partials (residual-only evaluations, being
  // cheaper, make this an underestimate); one factorisation = one numeric LU.
  const double per_assembly = assembly_ms / std::max(assemblies, 1.0);
  const double per_factorization = factor_ms / std::max(factorizations, 1.0);
  state.counters["run_s"] = wall_ms / 1e3 / runs;
  state.counters["ms_per_step"] = wall_ms / steps;
  state.counters["newton_per_step"] = iterations / steps;
  state.counters["assembly_ms"] = per_assembly;
  state.counters["factor_ms"] = per_factorization;
  state.counters["factorizations_per_step"] = factorizations / steps;
  state.counters["krylov_per_step"] = krylov / steps;
  state.counters["overhead"] = (wall_ms / steps) / (per_assembly + per_factorization);
  state.SetLabel(scene_name + " " + sim.linear_solver_name() + ", " +
                 std::to_string(scene.model->num_dofs()) + " DOFs");
}

void register_all() {
  for (int s = 0; s < 3; ++s)
    for (int l = 0; l < 3; ++l)
      benchmark::RegisterBenchmark((std::string("fem/") + kScenes[s] + "/" + kSolvers[l]).c_str(), BM_FemScene)
          ->Args({s, l})
          ->Iterations(1)
          ->Unit(benchmark::kSecond)
          ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
