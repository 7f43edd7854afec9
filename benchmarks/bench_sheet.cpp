// Mass-spring sheet benchmark (issue: foundation): ms per step, Newton iterations per
// step, and the time of one assembly (residual + partials) and one LU factorisation, for
// a 5×5 (75 DOF) and a 30×30 (2,700 DOF) sheet dragged by two handles over a tilted,
// frictional plane. Report: step time / (assembly + factorisation).

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace {

using namespace addsim;

// A sheet of n×n particles, 1 m wide, 0.3 kg, on a plane tilted 10° about y, two
// corners pulled by zero-length springs to handles moving at 0.3 m/s; 60 steps of 1/60 s.
// Spring stiffness k = 1000 N/m for 5×5 (paper Table 2) and 100 N/m for 30×30: with
// k = 1000 the 30×30 sheet (0.33 g particles, ω h ≈ 29) buckles into configurations where
// Newton on ‖r‖ stalls in a spurious local minimum of ‖r‖ (docs/solver.md).
Scene sheet_scene(int n, const char* linear_solver = "auto") {
  const double k = n <= 5 ? 1000.0 : 100.0;
  nlohmann::json s;
  s["name"] = "bench_sheet_" + std::to_string(n);
  s["dt"] = 1.0 / 60.0;
  s["steps"] = 60;
  s["integrator"] = "bdf2";
  s["solver"] = {{"linear_solver", linear_solver}};
  s["contact"] = {{"model", "linear"}, {"kn", 1e3}};
  s["obstacles"] = {{{"type", "plane"}, {"normal", {0.17365, 0.0, 0.98481}}, {"friction", 0.5}}};
  s["bodies"] = {{{"type", "sheet"},
                  {"name", "sheet"},
                  {"origin", {0.0, 0.0, 0.05}},
                  {"size", {1.0, 1.0}},
                  {"resolution", {n, n}},
                  {"mass", 0.3},
                  {"stiffness", k},
                  {"damping", 0.05}}};
  s["handles"] = {{{"name", "a"}, {"position", {0.0, 0.0, 0.1}}, {"velocity", {0.3, 0.0, 0.1}}},
                  {{"name", "b"}, {"position", {0.0, 1.0, 0.1}}, {"velocity", {0.3, 0.0, 0.1}}}};
  s["springs"] = {
      {{"type", "zero_length"}, {"anchors", {{{"body", "sheet"}, {"point", 0}}, {{"handle", "a"}}}}, {"stiffness", 500.0}},
      {{"type", "zero_length"},
       {"anchors", {{{"body", "sheet"}, {"point", n * (n - 1)}}, {{"handle", "b"}}}},
       {"stiffness", 500.0}}};
  return build_scene(s, "bench_sheet");
}

// Second argument: 0 = the default linear solver, 1 = Eigen's SparseLU.
void BM_SheetRollout(benchmark::State& state) {
  const Scene scene = sheet_scene(static_cast<int>(state.range(0)), state.range(1) ? "eigen" : "auto");
  Simulator sim(*scene.model);
  const VecX p = scene.model->params().defaults();
  double iterations = 0, steps = 0, wall_ms = 0;
  for (auto _ : state) {
    const Trajectory t = sim.run(p);
    if (!t.completed()) state.SkipWithError(t.failure.c_str());
    for (const auto& r : t.reports) iterations += r.iterations;
    steps += static_cast<double>(t.reports.size());
    wall_ms += 1e3 * t.wall_seconds;
  }
  state.counters["dofs"] = scene.model->num_dofs();
  state.counters["ms_per_step"] = wall_ms / steps;
  state.counters["newton_per_step"] = iterations / steps;
  state.SetLabel(sim.linear_solver_name());
}
BENCHMARK(BM_SheetRollout)->Args({5, 0})->Args({5, 1})->Args({30, 0})->Args({30, 1})->Unit(benchmark::kMillisecond)->MinTime(1.0);

// One residual + partials evaluation at a mid-run state.
void BM_SheetAssembly(benchmark::State& state) {
  const Scene scene = sheet_scene(static_cast<int>(state.range(0)));
  Simulator sim(*scene.model);
  const VecX p = scene.model->params().defaults();
  const Trajectory t = sim.run(p);
  const int i = static_cast<int>(t.q.size()) / 2;
  const VecX v = t.velocity(scene.model->scheme(), i), a = t.acceleration(scene.model->scheme(), i);
  const TermContext ctx{t.q[i], v, a, p, i, scene.model->scheme()};
  Assembly& out = sim.assembly();
  for (auto _ : state) {
    out.reset(EvalMode::kResidualAndJacobians);
    sim.evaluate(ctx, out);
    benchmark::DoNotOptimize(out.r.data());
  }
  state.counters["nnz"] = scene.model->pattern().nnz();
}
BENCHMARK(BM_SheetAssembly)->Arg(5)->Arg(30)->Unit(benchmark::kMicrosecond);

// One numeric LU factorisation of the step Jacobian (symbolic analysis done once).
void BM_SheetFactorize(benchmark::State& state) {
  const Scene scene = sheet_scene(static_cast<int>(state.range(0)));
  Simulator sim(*scene.model);
  const VecX p = scene.model->params().defaults();
  const Trajectory t = sim.run(p);
  const int i = static_cast<int>(t.q.size()) / 2;
  const TimeScheme& s = scene.model->scheme();
  const VecX v = t.velocity(s, i), a = t.acceleration(s, i);
  const TermContext ctx{t.q[i], v, a, p, i, s};
  Assembly& out = sim.assembly();
  out.reset(EvalMode::kResidualAndJacobians);
  sim.evaluate(ctx, out);
  const StepCoefficients& c = s.at(i);
  const VecX jac = out.kq + (c.cv[0] / s.h) * out.kv + (c.ca[0] / (s.h * s.h)) * out.ka;
  const auto lu = make_linear_solver(scene.model->solver().linear_solver, &scene.model->pattern());
  for (auto _ : state) benchmark::DoNotOptimize(lu->factorize(jac));
  state.SetLabel(lu->name());
}
BENCHMARK(BM_SheetFactorize)->Arg(5)->Arg(30)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
