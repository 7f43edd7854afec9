#include "addsim/cli/gradient_commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "addsim/batch/batch.h"
#include "addsim/cli/arguments.h"
#include "addsim/cli/commands.h"
#include "addsim/cli/notices.h"
#include "addsim/cli/output_paths.h"
#include "addsim/cli/process.h"
#include "addsim/cli/progress.h"
#include "addsim/core/error.h"
#include "addsim/io/task.h"
#include "addsim/io/viewer.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/contact_signature.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"

namespace addsim::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Relative gradcheck tolerances (adjoint vs central FD): smooth rollouts and contact-rich ones.
constexpr double kSmoothTolerance = 1e-6;
constexpr double kContactTolerance = 1e-4;
// Adjoint and direct solve the same linear systems in a different order: they agree to round-off.
constexpr double kAdjointDirectTolerance = 1e-9;
// Largest landscape grid (points).
constexpr long long kMaxLandscapePoints = 1000000;
// Relative errors against FD use an absolute floor of this fraction of the selected gradient's norm.
constexpr double kFloorFraction = 1e-8;

void add_quiet_option(CLI::App& app, bool& quiet) {
  app.add_flag("--quiet,-q", quiet, "No progress on stderr");
}

// Loads the task with --steps applied (reporting its meshes) and prints the scene's notices.
Task load_task(const CLI::App& app, const std::string& file, const std::vector<std::string>& given_sets, int steps,
               bool quiet) {
  const std::vector<std::string> sets = overrides_in_order(app, given_sets, steps, "scene.steps");
  note_input_file(file);
  Task task = [&] {
    const MeshProgress meshes(quiet);
    return load_task_file(file, sets);
  }();
  print_notices(task.scene);
  return task;
}

// Writes an --out file (its folder was prepared before the run, prepare_output_file).
void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out) throw InputError(file.string() + ": cannot write");
}

// Runs the task's forward rollout at p; a failed run is an error (its gradient does not exist).
// Then the --out file `out` (if any) says so: completed false, the failed step and why, so no
// earlier result in it looks like this run's.
// Runs the task's forward rollout at p, its steps counted on `line`. A failed run is an error (its
// gradient does not exist); with --out, the file then says which step failed and why.
Trajectory run_forward(const Task& task, Simulator& sim, const VecX& p, ProgressLine& line, const std::string& out) {
  const auto count = line.counter("forward step", "steps");
  const int n = task.scene.model->scheme().steps;
  Trajectory traj = sim.run(p, [&](const StepReport& r) { count(r.step, n); });
  line.clear();
  if (!traj.completed() && !out.empty())
    write_text(out, json{{"task", task.name},
                         {"completed", false},
                         {"steps_completed", traj.q.size() - 1},
                         {"failed_step", traj.failed_step},
                         {"failure", traj.failure}}
                        .dump(2) +
                        "\n");
  if (!traj.completed())
    throw SimulationError(task.source + ": forward run failed at step " + std::to_string(traj.failed_step) + ": " +
                          traj.failure,
                          traj.failed_step);
  return traj;
}

json term_report(const Task& task, const Trajectory& traj) {
  json terms = json::array();
  const std::vector<double> values = task.objective.term_values(*task.scene.model, traj);
  for (int k = 0; k < task.objective.size(); ++k)
    terms.push_back({{"type", task.term_types[k]}, {"value", values[k]}});
  return terms;
}

// The viewer's extra panels of a gradient (docs/viewer.md "plots.json"): dΦ/dp per selected
// scalar as a plot over its index and as a table with the names and values.
nlohmann::json gradient_plots(const Task& task, const std::string& method, bool scaled, double phi, const VecX& g) {
  nlohmann::json x = nlohmann::json::array(), y = nlohmann::json::array(), rows = nlohmann::json::array();
  const VecX& p = task.p();
  for (int k = 0; k < task.selection.size(); ++k) {
    x.push_back(k);
    y.push_back(std::isfinite(g[k]) ? nlohmann::json(g[k]) : nlohmann::json(nullptr));
    rows.push_back({task.selection.names()[k], p[task.selection.indices()[k]], y.back()});
  }
  const std::string what = scaled ? "d\u03a6/dx" : "d\u03a6/dp";
  char title[160];
  std::snprintf(title, sizeof title, "%s per parameter (%s), \u03a6 = %.6g", what.c_str(), method.c_str(), phi);
  return nlohmann::json::array({{{"title", title},
                                 {"x_label", "parameter"},
                                 {"y_log", false},
                                 {"x", x},
                                 {"series", {{{"name", what}, {"y", y}}}}},
                                {{"title", "gradient components (" + method + ")"},
                                 {"columns", {"parameter", "value", what}},
                                 {"rows", rows}}});
}

std::function<int()> make_gradient(CLI::App& app) {
  struct Options {
    std::string task;
    std::string method = "adjoint";
    std::string out;
    std::string view;
    std::vector<std::string> sets;
    int steps = 0;
    bool scaled = false;
    bool quiet = false;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("task", opt->task, "Task file (JSON, see docs/task-format.md)")->required();
  app.add_option("--method", opt->method, "adjoint (all parameters, one backward pass) or direct")
      ->check(CLI::IsMember({"adjoint", "direct"}))
      ->capture_default_str();
  app.add_option("--out,-o", opt->out, "Also write the JSON to this file")->check(non_empty_path());
  app.add_option("--view", opt->view,
                 "Also write DIR/index.html: the forward rollout and the gradient components (docs/viewer.md)")
      ->check(non_empty_path());
  app.add_flag("--scaled", opt->scaled, "Report dPhi/dx in the task's scaling (x = ln p for log parameters)");
  add_quiet_option(app, opt->quiet);
  add_task_override_options(app, opt->sets, opt->steps);
  return [opt, &app]() {
    if (!opt->out.empty()) prepare_output_file(opt->out);
    if (!opt->view.empty()) prepare_output_dir(opt->view, "--view");
    const Task task = load_task(app, opt->task, opt->sets, opt->steps, opt->quiet);
    const Model& model = *task.scene.model;
    const VecX& p = task.p();
    Simulator sim(model);
    ProgressLine line(opt->quiet);
    const Trajectory traj = run_forward(task, sim, p, line, opt->out);
    double phi = 0.0, seconds = 0.0;
    VecX g;
    if (opt->method == "adjoint") {
      const GradientResult r = gradient_adjoint(model, traj, task.objective, line.counter("adjoint sweep step", "steps"));
      phi = r.phi;
      seconds = r.wall_seconds;
      g = opt->scaled ? task.selection.scaled_gradient(p, r.dphi_dp) : task.selection.select(r.dphi_dp);
    } else {
      DirectOptions direct;
      direct.progress = line.counter("direct sensitivities step", "steps");
      const DirectResult r = gradient_direct(model, traj, task.objective, task.selection.indices(), direct);
      phi = r.phi;
      seconds = r.wall_seconds;
      VecX full = VecX::Zero(p.size());
      for (int k = 0; k < task.selection.size(); ++k) full[task.selection.indices()[k]] = r.dphi_dp[k];
      g = opt->scaled ? task.selection.scaled_gradient(p, full) : task.selection.select(full);
    }
    json gradient = json::object(), values = json::object();
    for (int k = 0; k < task.selection.size(); ++k) {
      gradient[task.selection.names()[k]] = g[k];
      values[task.selection.names()[k]] = p[task.selection.indices()[k]];
    }
    json out = {{"task", task.name},
                {"completed", true},
                {"method", opt->method},
                {"scaled", opt->scaled},
                {"phi", phi},
                {"terms", term_report(task, traj)},
                {"parameters", values},
                {"gradient", gradient},
                {"forward_seconds", traj.wall_seconds},
                {"gradient_seconds", seconds}};
    const std::string text = out.dump(2) + "\n";
    line.clear();
    std::fputs(text.c_str(), stdout);
    if (!opt->out.empty()) write_text(opt->out, text);
    if (!opt->view.empty()) {
      const ViewerResult page = write_viewer(opt->view, task.scene, traj, gradient_plots(task, opt->method, opt->scaled, phi, g));
      if (!page.has_three && !opt->quiet) std::fprintf(stderr, "addsim: warning: %s\n", page.notice.c_str());
      if (!opt->quiet) std::fprintf(stderr, "addsim: open %s in a browser to watch the rollout\n", page.page.string().c_str());
    }
    return static_cast<int>(kOk);
  };
}

// Relative error |a − b| / max(|a|, |b|, floor): symmetric, and an exactly zero pair is 0.
double relative_error(double a, double b, double floor) {
  const double scale = std::max({std::abs(a), std::abs(b), floor});
  return scale > 0.0 ? std::abs(a - b) / scale : 0.0;
}

// Adjoint `a` against the sweep's chosen value: relative error with the floor
// max(kFloorFraction ‖g‖, noise / tolerance) — a difference within the FD's own noise
// passes — against fd_tolerance(kind, central tolerance). Straddling sweeps are not compared.
FdCheck compare_with_fd(double a, const FdSweep& fd, double g_norm, double noise, double central_tolerance) {
  FdCheck out;
  out.kind = fd.kind;
  out.tolerance = fd_tolerance(fd.kind, central_tolerance);
  if (fd.kind == FdKind::kStraddling) {
    out.rel_error = std::numeric_limits<double>::infinity();
    out.pass = true;
    return out;
  }
  out.compared = true;
  out.rel_error = relative_error(a, fd.derivative, std::max(kFloorFraction * g_norm, noise / out.tolerance));
  out.pass = out.rel_error <= out.tolerance;
  return out;
}

// The sweep of one parameter: per step the three quotients, the contact-signature changes of
// the perturbed rollouts, the quotient they allow and its relative error against the adjoint.
void print_sweep(const FdSweep& fd, double adjoint, double floor) {
  std::printf("    %-10s %20s %20s %20s %9s %11s %10s\n", "step", "central", "forward", "backward", "changed+/-",
              "usable", "rel error");
  for (const FdSample& s : fd.samples) {
    if (!s.failure.empty()) {
      std::printf("    %-10.1e rollout failed: %s\n", s.step, s.failure.c_str());
      continue;
    }
    const FdKind u = s.usable();
    const double e = relative_error(adjoint, u == FdKind::kStraddling ? s.central : s.value(u), floor);
    const std::string changed = std::to_string(s.events_plus) + "/" + std::to_string(s.events_minus);
    std::printf("    %-10.1e %20.12e %20.12e %20.12e %9s %11s %10.2e%s\n", s.step, s.central, s.forward, s.backward,
                changed.c_str(), to_string(u), e,
                fd.kind != FdKind::kStraddling && s.step == fd.step ? "  <- chosen" : "");
    if (!s.first_event.empty()) std::printf("      first change: %s\n", s.first_event.c_str());
  }
}

std::function<int()> make_gradcheck(CLI::App& app) {
  struct Options {
    std::string task;
    std::string out;
    std::vector<std::string> sets;
    int steps = 0;
    double fd_step = 0.0;
    bool contact = false;
    double tolerance = 0.0;
    bool quiet = false;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("task", opt->task, "Task file (JSON, see docs/task-format.md)")->required();
  app.add_option("--fd-step", opt->fd_step,
                 "One relative finite-difference step h (absolute step h*max(1,|p|)); default: a sweep")
      ->check(positive_number());
  app.add_flag("--contact", opt->contact,
               "Treat the rollout as contact-rich (tolerance 1e-4) even if the unperturbed run has no contact");
  app.add_option("--tolerance", opt->tolerance, "Relative tolerance adjoint vs central FD (overrides the default)")
      ->check(positive_number());
  app.add_option("--out,-o", opt->out, "Also write the results as JSON to this file")->check(non_empty_path());
  add_quiet_option(app, opt->quiet);
  add_task_override_options(app, opt->sets, opt->steps);
  return [opt, &app]() {
    if (!opt->out.empty()) prepare_output_file(opt->out);
    const Task task = load_task(app, opt->task, opt->sets, opt->steps, opt->quiet);
    const Model& model = *task.scene.model;
    const VecX& p = task.p();
    Simulator sim(model);
    ProgressLine line(opt->quiet);
    const Trajectory traj = run_forward(task, sim, p, line, opt->out);
    const GradientResult adj = gradient_adjoint(model, traj, task.objective, line.counter("adjoint sweep step", "steps"));
    DirectOptions direct;
    direct.progress = line.counter("direct sensitivities step", "steps");
    const DirectResult dir = gradient_direct(model, traj, task.objective, task.selection.indices(), direct);
    line.clear();
    // Contact-rich: some contact pair is in contact in some step of the unperturbed run.
    const int contact_steps = contact_signature(model, traj).contact_steps();
    const bool contact_rich = opt->contact || contact_steps > 0;
    const double tol = opt->tolerance > 0.0 ? opt->tolerance : contact_rich ? kContactTolerance : kSmoothTolerance;
    const double tol_one_sided = fd_tolerance(FdKind::kForward, tol);
    // Contact-rich runs also try small steps, which are more likely to stay on one contact branch.
    std::vector<double> steps;
    if (opt->fd_step > 0.0)
      steps = {2.0 * opt->fd_step, opt->fd_step};
    else if (contact_rich)
      steps = {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8};
    else
      steps = {1e-3, 1e-4, 1e-5, 1e-6};
    const VecX g_adj = task.selection.select(adj.dphi_dp);
    const double g_norm = g_adj.norm();
    const double floor = kFloorFraction * g_norm;
    bool ok = true;
    int straddling = 0, inconclusive_count = 0;
    json rows = json::array();
    std::printf("%s: Phi = %.12e, %d parameters, %s (%d of %d steps with contact)\n", task.name.c_str(), adj.phi,
                task.selection.size(), contact_rich ? "contact-rich" : "contact-free", contact_steps,
                static_cast<int>(traj.q.size()) - 1);
    std::printf("tolerances: adjoint vs central FD %.1e, vs one-sided FD %.1e, adjoint vs direct %.1e\n", tol,
                tol_one_sided, kAdjointDirectTolerance);
    std::printf("%-32s %14s %20s %20s %20s %10s %10s %10s %8s\n", "parameter", "value", "adjoint", "direct",
                "finite difference", "FD mode", "rel(dir)", "rel(FD)", "FD step");
    const auto fd_start = std::chrono::steady_clock::now();
    for (int k = 0; k < task.selection.size(); ++k) {
      const int j = task.selection.indices()[k];
      FdSweep fd;
      std::string fd_failure;
      try {
        // Progress: parameter k of n, the rollout of its finite-difference sweep, and the
        // time left estimated from the parameters done so far.
        const auto count = [&](int done, int total) {
          if (!line.due()) return;
          const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - fd_start).count();
          const double finished = k + static_cast<double>(done) / total;
          const std::string text = "parameter " + std::to_string(k + 1) + "/" + std::to_string(task.selection.size()) +
                                   " (" + task.selection.names()[k] + "): finite-difference rollout " +
                                   std::to_string(done) + "/" + std::to_string(total) + ", " + duration(seconds) +
                                   " elapsed, ETA " + duration((task.selection.size() - finished) * seconds / finished);
          line.update(text);
        };
        fd = gradient_fd_sweep_events(sim, task.objective, p, j, steps, count);
      } catch (const SimulationError& e) {
        fd_failure = e.what();
      }
      line.clear();
      const double a = g_adj[k], d = dir.dphi_dp[k];
      const double e_dir = adjoint_direct_error(a, d, g_norm);
      // A parameter whose every step straddles a contact event has no usable difference:
      // reported, not counted as a failure (adjoint vs direct is still checked).
      const double noise = fd_failure.empty() ? fd_noise(fd, adj.phi) : 0.0;
      const FdCheck check = fd_failure.empty() ? compare_with_fd(a, fd, g_norm, noise, tol) : FdCheck{};
      const bool straddles = fd_failure.empty() && !check.compared;
      const bool fd_valid = check.compared;
      const double e_fd = fd_valid ? check.rel_error : std::numeric_limits<double>::infinity();
      const double tol_k = fd_valid ? check.tolerance : tol;
      // Inconclusive: the FD noise ν is at least the compared values themselves (and they are
      // not negligible against ‖g‖), so the noise floor ν / tol would let any adjoint value
      // pass — typically a --fd-step so small that the difference of Φ is round-off.
      const double magnitude = std::max(std::abs(a), fd_valid ? std::abs(fd.derivative) : 0.0);
      const bool inconclusive = fd_valid && check.pass && magnitude > floor && noise >= magnitude;
      const bool pass = e_dir <= kAdjointDirectTolerance && fd_failure.empty() && check.pass && !inconclusive;
      const std::string status = inconclusive && e_dir <= kAdjointDirectTolerance ? "inconclusive"
                                 : !pass                                          ? "fail"
                                 : straddles                                      ? "straddling"
                                                                                  : "pass";
      const std::string mode = !fd_failure.empty() ? "failed" : to_string(fd.kind);
      ok = ok && pass;
      straddling += straddles ? 1 : 0;
      inconclusive_count += status == "inconclusive" ? 1 : 0;
      const double scale = std::max(1.0, std::abs(p[j]));
      if (fd_valid)
        std::printf("%-32s %14.6e %20.12e %20.12e %20.12e %10s %10.2e %10.2e %8.0e%s\n",
                    task.selection.names()[k].c_str(), p[j], a, d, fd.derivative, mode.c_str(), e_dir, e_fd,
                    fd.step / scale, status == "inconclusive" ? "  INCONCLUSIVE" : pass ? "" : "  FAIL");
      else
        std::printf("%-32s %14.6e %20.12e %20.12e %20s %10s %10.2e %10s %8s%s\n", task.selection.names()[k].c_str(),
                    p[j], a, d, "-", mode.c_str(), e_dir, "-", "-", pass ? "" : "  FAIL");
      if (!fd_failure.empty()) std::printf("  finite differences failed: %s\n", fd_failure.c_str());
      if (status == "inconclusive")
        std::printf("  %s: inconclusive: the finite difference's noise estimate %.2e (at the relative step %.1e) is "
                    "at least |dPhi/dp| = %.2e, so it cannot confirm or refute the adjoint; use a larger --fd-step "
                    "(e.g. 1e-6) or leave it out for the default sweep\n",
                    task.selection.names()[k].c_str(), noise, fd.step / scale, magnitude);
      if (straddles)
        std::printf("  %s: event-straddling at every step tried (both perturbed rollouts change the contact "
                    "signature); not compared, not counted as a failure\n",
                    task.selection.names()[k].c_str());
      if ((!pass || straddles) && fd_failure.empty()) print_sweep(fd, a, floor);
      json sweep = json::array();
      for (const FdSample& s : fd.samples) {
        if (!s.failure.empty()) {
          sweep.push_back({{"step", s.step}, {"failure", s.failure}});
          continue;
        }
        const FdKind u = s.usable();
        sweep.push_back({{"step", s.step},
                         {"central", s.central},
                         {"forward", s.forward},
                         {"backward", s.backward},
                         {"changed_steps_plus", s.events_plus},
                         {"changed_steps_minus", s.events_minus},
                         {"usable", to_string(u)},
                         {"rel_error", u == FdKind::kStraddling ? json(nullptr)
                                                                : json(relative_error(a, s.value(u), floor))}});
      }
      rows.push_back({{"name", task.selection.names()[k]},
                      {"value", p[j]},
                      {"adjoint", a},
                      {"direct", d},
                      {"fd", fd_valid ? json(fd.derivative) : json(nullptr)},
                      {"fd_step", fd_valid ? json(fd.step) : json(nullptr)},
                      {"fd_noise", fd_valid ? json(noise) : json(nullptr)},
                      {"fd_mode", mode},
                      {"tolerance_fd", tol_k},
                      {"rel_error_direct", e_dir},
                      {"rel_error_fd", fd_valid ? json(e_fd) : json(nullptr)},
                      {"status", status},
                      {"pass", pass},
                      {"sweep", sweep}});
    }
    if (!opt->out.empty()) {
      const json out = {{"task", task.name},
                        {"completed", true},
                        {"phi", adj.phi},
                        {"contact_rich", contact_rich},
                        {"contact_steps", contact_steps},
                        {"tolerance_fd", tol},
                        {"tolerance_fd_one_sided", tol_one_sided},
                        {"tolerance_direct", kAdjointDirectTolerance},
                        {"passed", ok},
                        {"straddling", straddling},
                        {"inconclusive", inconclusive_count},
                        {"parameters", rows}};
      write_text(opt->out, out.dump(2) + "\n");
    }
    if (!ok && inconclusive_count > 0 && !std::any_of(rows.begin(), rows.end(), [](const json& r) {
          return r["status"] == "fail";
        })) {
      std::cerr << "addsim: error: " << task.source << ": gradient check inconclusive: for " << inconclusive_count
                << " of " << task.selection.size()
                << " parameters the finite difference is within its own noise (see the table on stdout); use a "
                   "larger --fd-step\n";
      return kGradcheckFailed;
    }
    // A finite difference that disagrees with the adjoint on a smooth, tight plateau may be the
    // derivative of the forward's Newton iterates rather than of the converged solution, which
    // the adjoint and the direct pass differentiate (tasks/cube_drag.json: 1e-3 off at the
    // default tolerance, 5e-8 at 1e-13 N; docs/task-format.md "gradcheck").
    if (std::any_of(rows.begin(), rows.end(), [](const json& r) {
          return r["status"] == "fail" && r["rel_error_direct"].get<double>() <= kAdjointDirectTolerance;
        }))
      std::printf("note: where adjoint and direct agree but the finite differences do not, rerun with tighter forward "
                  "solves (e.g. --set scene.solver.tolerance=1e-13 --set scene.solver.relative_tolerance=1e-12): "
                  "if the finite differences then move to the adjoint, the forward tolerance limited them\n");
    if (!ok) {
      std::cerr << "addsim: error: " << task.source << ": gradient check failed (see the table on stdout)";
      if (inconclusive_count > 0)
        std::cerr << "; " << inconclusive_count << " of " << task.selection.size()
                  << " parameters inconclusive (the finite difference is within its own noise): use a larger --fd-step";
      std::cerr << "\n";
      return kGradcheckFailed;
    }
    if (straddling > 0)
      std::printf("gradcheck passed (%d of %d parameters event-straddling at every step tried, not compared)\n",
                  straddling, task.selection.size());
    else
      std::printf("gradcheck passed\n");
    return static_cast<int>(kOk);
  };
}

std::function<int()> make_landscape(CLI::App& app) {
  struct Options {
    std::string task;
    std::string axes;
    std::string grid;
    std::string range;
    std::string out;
    std::vector<std::string> sets;
    int steps = 0;
    int threads = 0;
    bool no_png = false;
    bool quiet = false;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("task", opt->task, "Task file (JSON, see docs/task-format.md)")->required();
  app.add_option("--axes", opt->axes, "Two scalar parameter paths P1,P2, e.g. bodies.0.velocity.0.0,contact.kn")
      ->required();
  app.add_option("--grid", opt->grid, "Grid size NxM (N values of P1, M of P2)")->required();
  app.add_option("--range", opt->range, "Ranges a:b,c:d of P1 and P2 (parameter units)")->required();
  app.add_option("--out,-o", opt->out, "Output directory (landscape.csv, landscape.png)")
      ->required()
      ->check(non_empty_path());
  app.add_option("--threads", opt->threads, "Worker threads (default: all cores)")->check(non_negative_integer());
  app.add_flag("--no-png", opt->no_png, "Write only the CSV");
  add_quiet_option(app, opt->quiet);
  add_task_override_options(app, opt->sets, opt->steps);
  return [opt, &app]() {
    // The output folder is made and probed before the task is meshed.
    const fs::path out(opt->out);
    prepare_output_dir(out);
    const Task task = load_task(app, opt->task, opt->sets, opt->steps, opt->quiet);
    const Model& model = *task.scene.model;
    const VecX p = task.p();
    // Axes: two scalar parameters.
    const std::vector<std::string> axes = split(opt->axes, ',');
    if (axes.size() != 2) throw InputError("--axes: need two parameter paths P1,P2, got \"" + opt->axes + "\"");
    int idx[2];
    for (int a = 0; a < 2; ++a) {
      const ParamRange r = model.params().require(axes[a]);
      if (r.size != 1)
        throw InputError("--axes: " + axes[a] + " has " + std::to_string(r.size) +
                         " values; name one scalar (e.g. " + model.params().name_of(r.offset) + ")");
      idx[a] = r.offset;
    }
    if (idx[0] == idx[1]) throw InputError("--axes: the two axes are the same parameter");
    // Grid NxM (also N×M).
    std::string g = opt->grid;
    for (const std::string mult : {"\xC3\x97", "X"}) {
      const auto pos = g.find(mult);
      if (pos != std::string::npos) g.replace(pos, mult.size(), "x");
    }
    const auto xs = split(g, 'x');
    int n[2] = {0, 0};
    try {
      if (xs.size() != 2) throw std::invalid_argument("");
      for (int a = 0; a < 2; ++a) {
        std::size_t used = 0;
        n[a] = std::stoi(xs[a], &used);
        if (used != xs[a].size() || n[a] < 2) throw std::invalid_argument("");
      }
    } catch (const std::exception&) {
      throw InputError("--grid: must be NxM with integers >= 2, got \"" + opt->grid + "\"");
    }
    // Each grid point is a forward and an adjoint run: a million is days of work already.
    const long long points_requested = static_cast<long long>(n[0]) * n[1];
    if (points_requested > kMaxLandscapePoints)
      throw InputError("--grid: " + opt->grid + " is " + std::to_string(points_requested) +
                       " grid points, more than the limit of " + std::to_string(kMaxLandscapePoints) +
                       " (each point is a forward and an adjoint run)");
    const auto ranges = split(opt->range, ',');
    if (ranges.size() != 2) throw InputError("--range: must be a:b,c:d, got \"" + opt->range + "\"");
    const auto r0 = parse_range(ranges[0], axes[0]), r1 = parse_range(ranges[1], axes[1]);
    const double lo[2] = {r0.first, r1.first}, hi[2] = {r0.second, r1.second};
    // Every grid point must be a valid parameter value.
    for (int a = 0; a < 2; ++a)
      for (double v : {lo[a], hi[a]}) {
        VecX q = p;
        q[idx[a]] = v;
        try {
          model.params().check(q);
        } catch (const InputError& e) {
          throw InputError(std::string("--range: ") + e.what());
        }
      }

    // Evaluate the grid as one batch over all cores (batch/batch.h): one fresh simulator per
    // point, so the CSV is the same for any thread count.
    const int total = static_cast<int>(points_requested);
    struct Point {
      double x = 0, y = 0, phi = 0, g0 = 0, g1 = 0;
      std::string failure;
      int failed_step = -1;
    };
    std::vector<Point> points(total);
    std::vector<VecX> ps(total, p);
    for (int k = 0; k < total; ++k) {
      Point& pt = points[k];
      const int i = k / n[1], j = k % n[1];
      pt.x = lo[0] + (hi[0] - lo[0]) * i / (n[0] - 1);
      pt.y = lo[1] + (hi[1] - lo[1]) * j / (n[1] - 1);
      ps[k][idx[0]] = pt.x;
      ps[k][idx[1]] = pt.y;
    }
    const int threads = batch_threads(opt->threads, total);
    const auto start = std::chrono::steady_clock::now();
    BatchOptions batch;
    batch.threads = threads;
    batch.gradients = true;
    std::vector<BatchItemResult> results;
    {
      ProgressLine line(opt->quiet);
      batch.progress = line.counter("landscape", "points");
      results = run_batch(model, ps, &task.objective, batch);
    }
    for (int k = 0; k < total; ++k) {
      Point& pt = points[k];
      if (!results[k].completed) {
        pt.failure = results[k].failure;
        pt.failed_step = results[k].failed_step;
        continue;
      }
      pt.phi = results[k].phi;
      pt.g0 = results[k].dphi_dp[idx[0]];
      pt.g1 = results[k].dphi_dp[idx[1]];
    }

    // CSV: one row per grid point; failed points have NaN values, completed = 0 and the step
    // that did not converge (−1 for a completed point or a failed gradient).
    std::ostringstream csv;
    csv.precision(17);
    csv << "i,j," << axes[0] << "," << axes[1] << ",phi,dphi_d" << axes[0] << ",dphi_d" << axes[1] << ",completed,failed_step\n";
    int failed = 0;
    std::string first_failure;
    for (int k = 0; k < total; ++k) {
      const Point& pt = points[k];
      const bool okp = pt.failure.empty();
      if (!okp && failed++ == 0) first_failure = pt.failure;
      csv << k / n[1] << "," << k % n[1] << "," << pt.x << "," << pt.y << ",";
      if (okp)
        csv << pt.phi << "," << pt.g0 << "," << pt.g1 << ",1,-1\n";
      else
        csv << "nan,nan,nan,0," << pt.failed_step << "\n";
    }
    write_text(out / "landscape.csv", csv.str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!opt->quiet)
      std::printf("%s: %d grid points on %d thread%s in %.2f s; wrote %s\n", task.name.c_str(), total, threads,
                  threads == 1 ? "" : "s", seconds, (out / "landscape.csv").string().c_str());
    if (!opt->no_png) {
      const char* env = std::getenv("ADDSIM_SOURCE_DIR");
      const fs::path script = fs::path(env ? env : ADDSIM_SOURCE_DIR_DEFAULT) / "scripts" / "plot_landscape.py";
      // Run without a shell: the task name and paths go to the plotter verbatim ("--title=..."
      // so that a title starting with '-' is not read as an option).
      const std::vector<std::string> argv = {"/usr/bin/python3", script.string(), (out / "landscape.csv").string(),
                                             (out / "landscape.png").string(), "--title=" + task.name};
      const ProgramResult plot = run_program(argv);
      if (!plot.ok())
        throw InternalError("plotting failed: /usr/bin/python3 " + script.string() + " " + plot.describe() +
                            " (landscape.csv is written; use --no-png to skip the PNG)");
      if (!opt->quiet) std::printf("wrote %s\n", (out / "landscape.png").string().c_str());
    }
    if (failed > 0)
      throw SimulationError(task.source + ": " + std::to_string(failed) + " of " + std::to_string(total) +
                            " grid points failed (NaN rows in landscape.csv); first: " + first_failure,
                            -1);
    return static_cast<int>(kOk);
  };
}

}  // namespace

std::function<int()> setup_gradient(CLI::App& app) { return make_gradient(app); }
std::function<int()> setup_gradcheck(CLI::App& app) { return make_gradcheck(app); }
std::function<int()> setup_landscape(CLI::App& app) { return make_landscape(app); }

}  // namespace addsim::cli
