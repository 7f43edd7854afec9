// Trajectory-optimisation costs of the paper's Table 2 experiments that ship as tasks
// (docs/validation/trajectory-optimization.md): per task, the time of one simulation, of one
// gradient by the adjoint (all parameters), of one Gauss–Newton Jacobian dρ/dx by the
// multi-parameter direct sweep (sensitivity/direct_jacobian.h; the sweep alone and with the
// residual columns) and by the reverse sweep (sensitivity/reverse_jacobian.h; with the terms'
// ∂ρ/∂p and state rows), the whole Jacobian as SimulationProblem::add_jacobian forms it in
// either mode and the mode kAuto picks, optionally the old way (one direct pass per
// parameter), and the task's own `optimize` run to its stopping rule.
// A plain timed program (medians of repeated runs), not a Google Benchmark: the optimisation
// runs are one-off measurements.
//
//   bench_trajopt [--repeat N] [--optimize] [--per-parameter] [--sweep-only] [--sim-only] [--threads N] [--fork-join] [--dense-dofs N] [TASK ...]
//
// TASK: a task name under tasks/ (default: cube_drag cube_drag_11cm kr5_cube_drag sheet_flip
// quadruped_short; kr5_cube_drag needs scripts/fetch-robots.sh and is skipped without it).
// --optimize also runs `addsim optimize`'s method with the task's options (iterations,
// simulations, wall time, Φ/Φ₀, stop reason); --per-parameter also times the Jacobian as
// |p| single-parameter direct passes (slow: minutes for the larger tasks); --sweep-only times
// only the simulation and the sweep (for a profiler); --sim-only only the simulation (median,
// minimum and maximum CPU and wall time in ms; for a profiler or alternating comparisons); --threads N
// runs the simulator on N (1 or 2) threads instead of the scene's solver.threads; --fork-join
// times what a second thread splits (an empty fork–join, one evaluation and one block-LU
// factorisation at the last state, one thread and two; run_fork_join); --dense-dofs N
// moves the sweep's switch from the dense LU to the model's sparse solver (default 300 DOFs).

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/io/task.h"
#include "addsim/optim/optimizer.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/direct_jacobian.h"
#include "addsim/sensitivity/reverse_jacobian.h"
#include "addsim/solver/block_schur_lu.h"
#include "addsim/solver/worker_thread.h"

namespace {

using namespace addsim;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU time of the process, all its threads (s).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Options {
  int repeat = 5;
  bool optimize = false;
  bool per_parameter = false;
  bool sweep_only = false;
  bool sim_only = false;
  bool fork_join = false;
  int threads = 0;  ///< --threads: the simulator's threads (0: the scene's solver.threads)
  int dense_dofs = kDenseSensitivityDofs;
  std::vector<std::string> tasks;
};

// --fork-join: the pieces a second thread splits, timed in a loop at the task's last state
// (minimum and median of `repeat` × 50 calls, µs; minima are robust on a loaded machine):
// an empty fork–join, one evaluation with the step Jacobian on one and on two threads, and
// one block-LU factorisation of that Jacobian on one and on two threads.
void run_fork_join(const std::string& name, const Task& task, const Options& o) {
  const Model& model = *task.scene.model;
  const VecX& p = task.p();
  Simulator one(model, 1), two(model, 2);
  const Trajectory t = one.run(p);
  if (!t.completed()) return;
  const int i = model.scheme().steps;
  const TermContext ctx{t.q[i], t.velocity(model.scheme(), i), t.acceleration(model.scheme(), i), p, i,
                        model.scheme()};
  Assembly out(&model.pattern(), &model.stencils());
  const auto time_us = [&](auto&& f) {
    std::vector<double> us;
    for (int r = 0; r < 50 * o.repeat; ++r) {
      const auto t0 = Clock::now();
      f();
      us.push_back(1e6 * seconds_since(t0));
    }
    return std::make_pair(*std::min_element(us.begin(), us.end()), median(us));
  };
  const auto report = [&](const char* what, std::pair<double, double> v) {
    std::printf("%-16s %-28s min %8.2f us, median %8.2f us\n", name.c_str(), what, v.first, v.second);
  };
  WorkerThread worker;
  report("empty fork-join", time_us([&] { worker.run_alongside([] {}, [] {}); }));
  const auto evaluate = [&](const Simulator& sim) {
    return time_us([&] {
      out.reset(EvalMode::kResidualAndStepJacobian, bdf_weights(model.scheme(), i, 0));
      sim.evaluate(ctx, out);
    });
  };
  report("evaluate, 1 thread", evaluate(one));
  report("evaluate, 2 threads", evaluate(two));
  const auto shares = [&](WorkerThread& w, auto&& f) {
    w.set_profiling(true);
    for (int r = 0; r < 50 * o.repeat; ++r) f();
    const WorkerThread::Profile pr = w.profile();
    w.set_profiling(false);
    std::printf("%-16s   thread CPU per call: caller's share %.2f us, worker's %.2f us\n", name.c_str(),
                1e6 * pr.own / pr.forks, 1e6 * pr.task / pr.forks);
  };
  shares(*two.worker(), [&] {
    out.reset(EvalMode::kResidualAndStepJacobian, bdf_weights(model.scheme(), i, 0));
    two.evaluate(ctx, out);
  });
  out.reset(EvalMode::kResidualAndStepJacobian, bdf_weights(model.scheme(), i, 0));
  one.evaluate(ctx, out);
  BlockSchurLu lu1(&model.pattern()), lu2(&model.pattern());
  lu2.set_worker(&worker);
  if (lu2.parallel_blocks() == 0) return;
  std::printf("%-16s block LU: %d of %d blocks in subtrees, %.0f %% of the flops\n", name.c_str(),
              lu2.parallel_blocks(), lu2.blocks(), 100.0 * lu2.parallel_flop_share());
  report("block LU, 1 thread", time_us([&] { lu1.factorize(out.jac); }));
  report("block LU, 2 threads", time_us([&] { lu2.factorize(out.jac); }));
  shares(worker, [&] { lu2.factorize(out.jac); });
}

void run_task(const std::string& name, const Options& o) {
  const fs::path file = fs::path(ADDSIM_SOURCE_DIR) / "tasks" / (name + ".json");
  std::unique_ptr<Task> loaded;
  try {
    loaded = std::make_unique<Task>(load_task_file(file));
  } catch (const InputError& e) {
    std::printf("%-16s skipped: %s\n", name.c_str(), e.what());
    return;
  }
  const Task& task = *loaded;
  if (o.fork_join) {
    run_fork_join(name, task, o);
    return;
  }
  const Model& model = *task.scene.model;
  const VecX& p = task.p();
  const std::vector<int>& params = task.selection.indices();
  Simulator sim(model, o.threads);
  // Wall times and CPU times (the ratios under load: the machines are shared, and CPU time
  // does not count the waits for a core; it adds up a helper thread's work).
  std::vector<double> t_sim, t_grad, t_sweep, t_resjac, t_reverse, c_sim, c_sweep, c_resjac, c_reverse;
  long factorizations = 0, reverse_factorizations = 0;
  int seeds = 0;
  // The sweeps as the optimiser runs them: one workspace each kept across evaluations.
  DirectSensitivitySweep sweep(model, o.dense_dofs);
  ReverseJacobianSweep reverse(model, o.dense_dofs);
  MatX jacobian, reverse_jacobian;
  std::vector<MatX> parts;
  std::vector<ResidualStateRows> rows;
  // Two threads: the critical path with a core for each thread, estimated from thread CPU
  // times (the calling thread's, without its waits, plus what the worker's tasks took beyond
  // the caller's shares; WorkerThread::Profile). Measured in runs of their own after the
  // timed ones: the profile reads four thread-CPU clocks per fork–join (system calls of
  // ≈ 0.5–1 µs each), which would inflate the wall times of short fork–joins.
  std::vector<double> t_path;
  for (int r = 0; r < o.repeat; ++r) {
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    const Trajectory traj = sim.run(p);
    t_sim.push_back(seconds_since(t0));
    c_sim.push_back(cpu_seconds() - c0);
    if (!traj.completed()) {
      std::printf("%-16s forward run failed: %s\n", name.c_str(), traj.failure.c_str());
      return;
    }
    if (o.sim_only) continue;
    if (!o.sweep_only) {
      t0 = Clock::now();
      gradient_adjoint(model, traj, task.objective);
      t_grad.push_back(seconds_since(t0));
    }
    t0 = Clock::now();
    c0 = cpu_seconds();
    const TrajectorySensitivities& sens = sweep.run(traj, params);
    t_sweep.push_back(seconds_since(t0));
    c_sweep.push_back(cpu_seconds() - c0);
    factorizations = sens.factorizations;
    if (o.sweep_only) continue;
    // The residual blocks dρ/dp from the stored sensitivities.
    t0 = Clock::now();
    c0 = cpu_seconds();
    task.objective.residual_jacobian(model, traj, sens, jacobian);
    t_resjac.push_back(seconds_since(t0));
    c_resjac.push_back(cpu_seconds() - c0);
    // The same dρ/dp by the reverse sweep: ∂ρ/∂p and the state rows from the terms, then one
    // backward sweep with a seed per row.
    t0 = Clock::now();
    c0 = cpu_seconds();
    const TrajectorySensitivities zero = no_sensitivities(model, traj, params);
    if (task.objective.residual_partials(model, traj, zero, reverse_jacobian, parts, rows) >= 0) {
      std::printf("%-16s reverse sweep skipped: a term gives no state rows\n", name.c_str());
      continue;
    }
    reverse.run(traj, params, rows, reverse_jacobian);
    t_reverse.push_back(seconds_since(t0));
    c_reverse.push_back(cpu_seconds() - c0);
    reverse_factorizations = reverse.factorizations();
    seeds = reverse.seeds();
    if (r == 0) {
      const double dev = (reverse_jacobian - jacobian).cwiseAbs().maxCoeff() / jacobian.cwiseAbs().maxCoeff();
      std::printf("%-16s reverse vs direct dρ/dp: max deviation %.2e of the largest entry\n", name.c_str(), dev);
    }
  }
  if (sim.worker() && o.sim_only) {
    for (int r = 0; r < o.repeat; ++r) {
      sim.worker()->set_profiling(true);
      const double m0 = WorkerThread::thread_cpu_seconds();
      sim.run(p);
      const WorkerThread::Profile f = sim.worker()->profile();
      t_path.push_back(WorkerThread::thread_cpu_seconds() - m0 - f.wait + f.excess);
      sim.worker()->set_profiling(false);
    }
  }
  if (o.sim_only) {
    std::printf("%-16s sim CPU time: median %7.3f ms, min %7.3f ms, max %7.3f ms (%d runs)\n", name.c_str(),
                1e3 * median(c_sim), 1e3 * *std::min_element(c_sim.begin(), c_sim.end()),
                1e3 * *std::max_element(c_sim.begin(), c_sim.end()), o.repeat);
    // Wall time: what a second thread shortens (CPU time adds up both threads' work). The
    // threads the forward run used: a scene without a splittable term (no FEM body) gets no
    // helper thread even when two are asked for.
    const int requested = o.threads > 0 ? o.threads : model.solver().threads;
    std::printf("%-16s sim wall time: median %7.3f ms, min %7.3f ms, max %7.3f ms (%s)\n", name.c_str(),
                1e3 * median(t_sim), 1e3 * *std::min_element(t_sim.begin(), t_sim.end()),
                1e3 * *std::max_element(t_sim.begin(), t_sim.end()),
                sim.worker() ? "2 threads"
                : requested == 2 ? "1 thread: 2 asked for, but no term splits between threads"
                                 : "1 thread");
    if (!t_path.empty())
      std::printf("%-16s two-thread critical path (thread CPU): median %7.3f ms, min %7.3f ms\n", name.c_str(),
                  1e3 * median(t_path), 1e3 * *std::min_element(t_path.begin(), t_path.end()));
    return;
  }
  if (o.sweep_only) {
    std::printf("%-16s sim %9.4f s | sweep %9.4f s (%5.2fx, %ld LU) | CPU time: sim %9.4f s | sweep %9.4f s (%5.2fx)\n",
                name.c_str(), median(t_sim), median(t_sweep), median(t_sweep) / median(t_sim), factorizations,
                median(c_sim), median(c_sweep), median(c_sweep) / median(c_sim));
    return;
  }
  // The whole Gauss–Newton Jacobian as the optimiser gets it: the Jacobian of the point last
  // evaluated by evaluate_residuals (no second simulation; sweep, residual blocks, scaling),
  // in each mode, and the mode kAuto picks.
  std::vector<double> t_jac[3], c_jac[3];
  JacobianMode picked = JacobianMode::kAuto;
  const JacobianMode modes[3] = {JacobianMode::kDirect, JacobianMode::kAdjoint, JacobianMode::kAuto};
  for (int k = 0; k < 3; ++k) {
    SimulationProblem problem(model, task.objective, task.selection, p, 1, 0);
    problem.set_jacobian_mode(modes[k]);
    const VecX x0 = problem.x0();
    for (int r = 0; r < o.repeat; ++r) {
      LeastSquaresEvaluation e = problem.evaluate_residuals(x0, false);
      const auto t0 = Clock::now();
      const double c0 = cpu_seconds();
      if (!e.failed) problem.add_jacobian(e);
      t_jac[k].push_back(seconds_since(t0));
      c_jac[k].push_back(cpu_seconds() - c0);
      if (e.failed) {
        std::printf("%-16s residual evaluation failed: %s\n", name.c_str(), e.failure.c_str());
        return;
      }
    }
    if (modes[k] == JacobianMode::kAuto) picked = problem.last_jacobian_mode();
  }
  const double ts = median(t_sim), tg = median(t_grad), tw = median(t_sweep), tr = median(t_resjac),
               tv = median(t_reverse), tjd = median(t_jac[0]), tja = median(t_jac[1]);
  const double cs = median(c_sim), cw = median(c_sweep), cr = median(c_resjac), cv = median(c_reverse),
               cjd = median(c_jac[0]), cja = median(c_jac[1]), cjx = median(c_jac[2]);
  std::printf("%-16s |q| %4d  |p| %5zu  steps %4d | sim %9.4f s | adjoint %9.4f s (%5.2fx) | sweep %9.4f s (%5.2fx, "
              "%ld LU) | residual blocks %9.4f s | reverse %9.4f s (%5.2fx, %ld LU, %d seeds) | GN Jacobian direct "
              "%9.4f s (%5.2fx), adjoint %9.4f s (%5.2fx)\n",
              name.c_str(), model.num_dofs(), params.size(), model.scheme().steps, ts, tg, tg / ts, tw, tw / ts,
              factorizations, tr, tv, tv / ts, reverse_factorizations, seeds, tjd, tjd / ts, tja, tja / ts);
  std::printf("%-16s CPU time: sim %9.4f s | sweep %9.4f s (%5.2fx) | residual blocks %9.4f s (%5.2fx) | reverse "
              "%9.4f s (%5.2fx) | GN Jacobian direct %9.4f s (%5.2fx), adjoint %9.4f s (%5.2fx), auto (%s) %9.4f s "
              "(%5.2fx)\n",
              name.c_str(), cs, cw, cw / cs, cr, cr / cs, cv, cv / cs, cjd, cjd / cs, cja, cja / cs, to_string(picked),
              cjx, cjx / cs);
  if (o.per_parameter) {
    // The Jacobian before the sweep: one direct pass per parameter, each keeping its s^i.
    const Trajectory traj = sim.run(p);
    const auto t0 = Clock::now();
    for (int j : params) {
      DirectOptions d;
      d.keep_sensitivities_of = j;
      gradient_direct(model, traj, task.objective, std::vector<int>{j}, d);
    }
    const double tp = seconds_since(t0);
    std::printf("%-16s per-parameter direct passes %9.4f s (%6.1fx the simulation, %5.1fx the sweep)\n", name.c_str(),
                tp, tp / ts, tp / tw);
  }
  if (o.optimize) {
    SimulationProblem opt_problem(model, task.objective, task.selection, p, 1, 0);
    const auto t0 = Clock::now();
    const OptimizationResult r = minimize(opt_problem, opt_problem.x0(), task.optimize);
    const double t = seconds_since(t0);
    std::printf("%-16s optimize (%s): %d iterations, %ld simulations, %.3f s, phi %.4g -> %.4g (ratio %.3g), stop %s%s%s\n",
                name.c_str(), to_string(task.optimize.method), r.iterations, r.simulations, t, r.phi0, r.phi_best,
                r.phi_best / r.phi0, to_string(r.reason), r.message.empty() ? "" : ": ", r.message.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--repeat" && k + 1 < argc) {
      o.repeat = std::max(1, std::atoi(argv[++k]));
    } else if (a == "--optimize") {
      o.optimize = true;
    } else if (a == "--per-parameter") {
      o.per_parameter = true;
    } else if (a == "--sweep-only") {
      o.sweep_only = true;
    } else if (a == "--sim-only") {
      o.sim_only = true;
    } else if (a == "--fork-join") {
      o.fork_join = true;
    } else if (a == "--threads" && k + 1 < argc) {
      o.threads = std::atoi(argv[++k]);
    } else if (a == "--dense-dofs" && k + 1 < argc) {
      o.dense_dofs = std::atoi(argv[++k]);
    } else if (a == "--help" || a == "-h" || a.starts_with("--")) {
      std::printf("usage: bench_trajopt [--repeat N] [--optimize] [--per-parameter] [--sweep-only] [--sim-only] [--threads N] [--fork-join] [--dense-dofs N] [TASK ...]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    } else {
      o.tasks.push_back(a);
    }
  }
  if (o.tasks.empty()) o.tasks = {"cube_drag", "cube_drag_11cm", "kr5_cube_drag", "sheet_flip", "quadruped_short"};
  for (const std::string& t : o.tasks) run_task(t, o);
  return 0;
}
