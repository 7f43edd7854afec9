#include "addsim/cli/commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "addsim/cli/demo_scene.h"
#include "addsim/cli/gradient_commands.h"
#include "addsim/cli/optimize_command.h"
#include "addsim/cli/sweep_command.h"
#include "addsim/cli/notices.h"
#include "addsim/io/output.h"
#include "addsim/io/scene.h"
#include "addsim/io/vtk.h"
#include "addsim/solver/simulator.h"

namespace addsim::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// When stderr is not a tty, runs print a progress line per 10 % once they take longer than this, s.
constexpr double kLongRunSeconds = 5.0;
// Minimum time between two progress updates on a tty, s.
constexpr double kTtyRefreshSeconds = 0.1;

// Progress on stderr: a self-overwriting line on a tty, else a line per 10 % on long runs.
class Progress {
 public:
  Progress(int steps, bool quiet)
      : steps_(steps), tty_(!quiet && isatty(STDERR_FILENO)), lines_(!quiet && !tty_) {}
  ~Progress() {
    if (tty_ && shown_) std::fprintf(stderr, "\r\033[K");
  }
  void operator()(const StepReport& r) {
    if (tty_) {
      const auto now = Clock::now();
      if (shown_ && std::chrono::duration<double>(now - last_).count() < kTtyRefreshSeconds && r.step < steps_) return;
      last_ = now;
      shown_ = true;
      std::fprintf(stderr, "\r\033[Kstep %d/%d  newton %d  |r| %.2e", r.step, steps_, r.iterations, r.residual_norm);
      std::fflush(stderr);
    } else if (lines_ && (r.step * 10) / steps_ != ((r.step - 1) * 10) / steps_ &&
               std::chrono::duration<double>(Clock::now() - start_).count() > kLongRunSeconds) {
      std::fprintf(stderr, "addsim: step %d/%d\n", r.step, steps_);
    }
  }

 private:
  int steps_;
  bool tty_;
  bool lines_;
  bool shown_ = false;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_ = start_;
};

// Simulates a loaded scene, writes its outputs into `out` and reports; returns the exit code.
// With `vtk`, also writes a ParaView series (trajectory.pvd + vtk/frame_*.vtu).
int run_scene(const Scene& scene, const fs::path& out, bool quiet, const VtkOptions* vtk = nullptr) {
  const Model& model = *scene.model;
  Simulator sim(model);
  Trajectory traj;
  {
    Progress progress(model.scheme().steps, quiet);
    traj = sim.run(model.params().defaults(), [&](const StepReport& r) { progress(r); });
  }
  write_outputs(out, scene, traj, sim.linear_solver_name());
  if (vtk) write_vtk_series(out, scene, traj, *vtk);
  if (!traj.completed()) {
    std::cerr << "addsim: error: " << scene.source << ": " << traj.failure << "; outputs of the "
              << traj.q.size() - 1 << " completed steps are in " << out.string() << "\n";
    return kSimulationFailed;
  }
  if (!quiet) {
    int iterations = 0, max_iterations = 0;
    for (const StepReport& r : traj.reports) {
      iterations += r.iterations;
      max_iterations = std::max(max_iterations, r.iterations);
    }
    std::printf("%s: %d steps of %g s (%s, %s contact, %s) in %.3f s wall, %d Newton iterations (max %d per step)\n",
                scene.name.c_str(), model.scheme().steps, model.scheme().h, to_string(model.scheme().integrator),
                to_string(scene.contact_model), sim.linear_solver_name(), traj.wall_seconds, iterations,
                max_iterations);
    std::printf("wrote %s: summary.json steps.csv trajectory.npy meta.json%s\n", out.string().c_str(),
                vtk ? " trajectory.pvd vtk/" : "");
  }
  return kOk;
}

std::function<int()> setup_simulate(CLI::App& app) {
  struct Options {
    std::string scene;
    std::string out;
    std::vector<std::string> sets;
    bool quiet = false;
    bool vtk = false;
    bool vtk_volume = false;
    int vtk_every = 1;
    int steps = 0;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("scene", opt->scene, "Scene file (JSON, see docs/scene-format.md)")->required();
  app.add_option("--out,-o", opt->out, "Output directory (default: ./out/<scene file stem>)");
  app.add_option("--set", opt->sets, "Override a scene value before validation: PATH=JSON, e.g. contact.kn=2000")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--steps", opt->steps,
                 "Run only N steps: --set steps=N, which also cuts per-step lists (handles, poses, motor targets)")
      ->check(CLI::Range(1, 1000000000));
  app.add_flag("--quiet,-q", opt->quiet, "Print nothing but errors");
  app.add_flag("--vtk", opt->vtk, "Also write a ParaView series: trajectory.pvd and vtk/frame_<step>.vtu");
  app.add_flag("--vtk-volume", opt->vtk_volume, "With --vtk: write FEM bodies as tetrahedra, not surface triangles");
  app.add_option("--vtk-every", opt->vtk_every, "With --vtk: write every n-th step (the last is always written)")
      ->check(CLI::Range(1, 1000000));
  return [opt]() {
    if (opt->steps > 0) opt->sets.push_back("steps=" + std::to_string(opt->steps));
    const Scene scene = load_scene_file(opt->scene, opt->sets);
    print_notices(scene);
    const fs::path out = opt->out.empty() ? fs::path("out") / fs::path(opt->scene).stem() : fs::path(opt->out);
    VtkOptions vtk;
    vtk.cells = opt->vtk_volume ? VtkCells::kVolume : VtkCells::kSurface;
    vtk.every = opt->vtk_every;
    return run_scene(scene, out, opt->quiet, opt->vtk ? &vtk : nullptr);
  };
}

std::function<int()> setup_demo(CLI::App& app) {
  struct Options {
    std::string out = "demo-output";
    bool quiet = false;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("--out,-o", opt->out, "Output directory")->capture_default_str();
  app.add_flag("--quiet,-q", opt->quiet, "Print nothing but errors");
  return [opt]() {
    const Scene scene = load_scene_text(kDemoSceneJson, "demo.json");
    if (!opt->quiet) std::printf("addsim demo: %s\n", scene.description.c_str());
    return run_scene(scene, opt->out, opt->quiet);
  };
}

std::function<int()> setup_version(CLI::App&) {
  return []() {
    std::printf("addsim %s\n", ADDSIM_VERSION_STRING);
    return kOk;
  };
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"simulate", "Simulate a scene file and write summary.json, steps.csv, trajectory.npy, meta.json",
       setup_simulate},
      {"demo", "Simulate the built-in demo (a mass-spring sheet pulled over a tilted plane)", setup_demo},
      {"version", "Print the version", setup_version},
      {"gradient", "Print the objective and its gradient of a task file as JSON (adjoint or direct)", setup_gradient},
      {"gradcheck", "Compare adjoint, direct and finite-difference gradients of a task file", setup_gradcheck},
      {"landscape", "Sample a task's objective and gradient on a 2-D parameter grid (CSV + PNG)", setup_landscape},
      {"optimize", "Optimise a task (L-BFGS-B, Gauss-Newton, ADAM, CMA-ES; stages) into DIR", setup_optimize},
      {"sweep", "Objective and gradient of a task on a grid or random samples, as one batch over all cores (CSV)",
       setup_sweep},
  };
  return table;
}

}  // namespace addsim::cli
