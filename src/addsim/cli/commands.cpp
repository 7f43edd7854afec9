#include "addsim/cli/commands.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "addsim/cli/arguments.h"
#include "addsim/cli/demo_scene.h"
#include "addsim/cli/gradient_commands.h"
#include "addsim/cli/optimize_command.h"
#include "addsim/cli/progress.h"
#include "addsim/cli/sweep_command.h"
#include "addsim/cli/notices.h"
#include "addsim/cli/output_paths.h"
#include "addsim/cli/view_command.h"
#include "addsim/io/output.h"
#include "addsim/io/run_checks.h"
#include "addsim/io/scene.h"
#include "addsim/io/vtk.h"
#include "addsim/core/error.h"
#include "addsim/solver/simulator.h"

namespace addsim::cli {

namespace {

namespace fs = std::filesystem;
// Progress of a simulation on stderr (cli/progress.h): step i/n, simulated time, steps per
// second and the estimated time left (on a terminal also Newton iterations and residual).
class Progress {
 public:
  Progress(int steps, double h, bool quiet) : steps_(steps), h_(h), line_(quiet) {}
  void operator()(const StepReport& r) {
    if (!line_.due()) return;
    const double elapsed = line_.elapsed();
    const double rate = elapsed > 0.0 ? r.step / elapsed : 0.0;
    const std::string eta = rate > 0.0 ? duration((steps_ - r.step) / rate) : "?";
    char live[160], piped[160];
    std::snprintf(live, sizeof live, "step %d/%d  t = %.4g s  %.1f steps/s  ETA %s  newton %d  |r| %.2e", r.step,
                  steps_, r.step * h_, rate, eta.c_str(), r.iterations, r.residual_norm);
    std::snprintf(piped, sizeof piped, "step %d/%d, t = %.4g s, %.1f steps/s, ETA %s", r.step, steps_, r.step * h_,
                  rate, eta.c_str());
    line_.update(live, piped);
  }

 private:
  int steps_;
  double h_;
  ProgressLine line_;
};

// Loads a scene, reporting its meshes; on a terminal says so first, since meshing can take seconds.
Scene load_scene_with_notice(const std::string& file, const std::vector<std::string>& sets, bool quiet) {
  note_input_file(file);
  ProgressLine line(quiet);
  if (line.live()) line.update("building scene " + file + " ...", {}, true);
  const MeshProgress meshes(quiet);
  return load_scene_file(file, sets);
}

// The signal that asked a run to stop (SIGINT, SIGTERM), 0 while none did. The handler only
// sets it; the run checks it between steps.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  // A second signal while the run winds down ends the process the default way.
  if (g_stop_signal != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal = sig;
}

// Routes SIGINT and SIGTERM to on_stop_signal while it lives; restores the old handlers.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction act {};
    act.sa_handler = on_stop_signal;
    sigemptyset(&act.sa_mask);
    sigaction(SIGINT, &act, &old_int_);
    sigaction(SIGTERM, &act, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Simulates a loaded scene into `out` (prepared: prepare_output_dir), streaming steps.csv and
// trajectory.npy as steps complete; then writes the summary and the viewer page and reports.
// SIGINT/SIGTERM stop the run after the current step: the outputs then hold the steps done,
// summary.json says "interrupted by SIG… after step k of n", and the exit code is 128 + the
// signal (130, 143). With `vtk`, also writes a ParaView series (trajectory.pvd + vtk/frame_*.vtu).
int run_scene(const Scene& scene, const fs::path& out, bool quiet, const VtkOptions* vtk = nullptr) {
  const Model& model = *scene.model;
  Simulator sim(model);
  RunWriter writer(out, scene, model.params().defaults(), sim.linear_solver_name());
  Trajectory traj;
  {
    const StopSignals signals;
    Progress progress(model.scheme().steps, model.scheme().h, quiet);
    traj = sim.run(
        model.params().defaults(), [&](const StepReport& r) { progress(r); },
        [&](const Trajectory& t) {
          writer.append(t);
          return g_stop_signal == 0;
        });
  }
  const int stop_signal = g_stop_signal;
  if (stop_signal != 0 && traj.failed_step < 0 && !traj.completed())
    traj.failure = std::string("interrupted by ") + (stop_signal == SIGINT ? "SIGINT" : "SIGTERM") + " after step " +
                   std::to_string(traj.q.size() - 1) + " of " + std::to_string(model.scheme().steps);
  writer.finish(traj);
  if (vtk) write_vtk_series(out, scene, traj, *vtk);
  const ViewerResult page = write_viewer_page(out, quiet);
  // One line per finding (floor-accepted steps, energy growth, initial penetration), also in
  // summary.json; printed even with --quiet, like errors.
  for (const std::string& w : check_run(scene, traj).warnings)
    std::cerr << "addsim: warning: " << scene.source << ": " << w << "\n";
  if (!traj.completed()) {
    std::cerr << "addsim: " << (traj.failed_step < 0 ? "" : "error: ") << scene.source << ": " << traj.failure
              << "; outputs of the " << traj.q.size() - 1 << " completed steps are in " << out.string() << "\n";
    return traj.failed_step < 0 && stop_signal != 0 ? 128 + stop_signal : kSimulationFailed;
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
    std::printf("wrote %s: summary.json steps.csv trajectory.npy meta.json energies.csv%s index.html\n",
                out.string().c_str(), vtk ? " trajectory.pvd vtk/" : "");
    std::printf("open %s in a browser to watch the run\n", page.page.string().c_str());
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
  app.add_option("--out,-o", opt->out, "Output directory (default: ./out/<scene file stem>)")->check(non_empty_path());
  app.add_option("--set", opt->sets, "Override a scene value before validation: PATH=JSON, e.g. contact.kn=2000")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--steps", opt->steps,
                 "Run only N steps: --set steps=N, which also cuts per-step lists (handles, poses, motor targets)")
      ->check(CLI::Range(1, 1000000000));
  app.add_flag("--quiet,-q", opt->quiet, "Print nothing but errors and warnings (no progress, no summary)");
  app.add_flag("--vtk", opt->vtk, "Also write a ParaView series: trajectory.pvd and vtk/frame_<step>.vtu");
  app.add_flag("--vtk-volume", opt->vtk_volume, "With --vtk: write FEM bodies as tetrahedra, not surface triangles");
  app.add_option("--vtk-every", opt->vtk_every, "With --vtk: write every n-th step (the last is always written)")
      ->check(CLI::Range(1, 1000000));
  return [opt, &app]() {
    const std::vector<std::string> sets = overrides_in_order(app, opt->sets, opt->steps, "steps");
    // The VTK options only shape the series --vtk writes.
    for (const char* name : {"--vtk-every", "--vtk-volume"})
      if (!opt->vtk && app.get_option(name)->count() > 0) throw InputError(std::string(name) + ": needs --vtk");
    // The output folder is made and probed before the scene is meshed.
    const fs::path out = opt->out.empty() ? fs::path("out") / fs::path(opt->scene).stem() : fs::path(opt->out);
    prepare_output_dir(out);
    const Scene scene = load_scene_with_notice(opt->scene, sets, opt->quiet);
    print_notices(scene);
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
    bool no_png = false;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("--out,-o", opt->out, "Output directory")->capture_default_str()->check(non_empty_path());
  app.add_flag("--quiet,-q", opt->quiet, "Print nothing but errors and warnings");
  app.add_flag("--no-png", opt->no_png, "Do not save final_frame.png (a still of the viewer, needs chromium)");
  return [opt]() {
    prepare_output_dir(opt->out);
    const Scene scene = load_scene_text(kDemoSceneJson, "demo.json");
    if (!opt->quiet) std::printf("addsim demo: %s\n", scene.description.c_str());
    const int code = run_scene(scene, opt->out, opt->quiet);
    if (code != kOk || opt->no_png || !fs::exists(default_three_js())) return code;
    const fs::path png = fs::path(opt->out) / "final_frame.png";
    const std::string failure = write_still(fs::path(opt->out) / "index.html", png);
    if (!failure.empty())
      std::cerr << "addsim: warning: no still of the final frame: " << failure << "\n";
    else if (!opt->quiet)
      std::printf("still of the final frame: %s\n", png.string().c_str());
    return code;
  };
}

std::function<int()> setup_version(CLI::App&) {
  return []() {
    std::printf("addsim %s\n", ADDSIM_VERSION_STRING);
    return kOk;
  };
}

}  // namespace

namespace {
std::string& noted_input_file() {
  static std::string file;
  return file;
}
}  // namespace

void note_input_file(const std::string& file) { noted_input_file() = file; }

const std::string& input_file() { return noted_input_file(); }

std::string with_input_file(const std::string& message) {
  const std::string& file = input_file();
  if (file.empty() || message.empty() || message[0] == '-' || message.find(file) != std::string::npos) return message;
  const std::size_t field = message.find(": ");
  if (field != std::string::npos && message.substr(0, field).find('/') != std::string::npos) return message;
  return file + ": " + message;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"simulate", "Simulate a scene file and write summary.json, steps.csv, trajectory.npy, meta.json, energies.csv, index.html",
       setup_simulate},
      {"demo", "Simulate the built-in demo (a mass-spring sheet pulled over a tilted plane)", setup_demo},
      {"view", "Write DIR/index.html, the offline 3D viewer and plots of an output folder, and print its path",
       setup_view},
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
