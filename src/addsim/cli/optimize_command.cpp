#include "addsim/cli/optimize_command.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/cli/arguments.h"
#include "addsim/cli/commands.h"
#include "addsim/cli/notices.h"
#include "addsim/cli/output_paths.h"
#include "addsim/cli/process.h"
#include "addsim/cli/progress.h"
#include "addsim/core/error.h"
#include "addsim/io/json_path.h"
#include "addsim/io/task.h"
#include "addsim/io/viewer.h"
#include "addsim/optim/continuation.h"

namespace addsim::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr const char* kCheckpoint = "checkpoint.json";
constexpr const char* kIterations = "iterations.csv";
constexpr const char* kResult = "result.json";
constexpr const char* kScene = "optimized_scene.json";
constexpr const char* kPlot = "convergence.png";

// Set by SIGINT: the run stops after the current iteration (a second Ctrl-C kills it).
std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted = true;
  std::signal(SIGINT, SIG_DFL);
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to DIR/.NAME.tmp and renames it over DIR/NAME, so that a reader (or a
// killed run) never sees a half-written file under the final name.
void write_atomic(const fs::path& file, const std::string& text) {
  const fs::path tmp = file.parent_path() / ("." + file.filename().string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw InputError(tmp.string() + ": cannot write");
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) throw InputError(file.string() + ": cannot write (" + ec.message() + ")");
}

// A number for JSON: non-finite values become null.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string fmt(double v, const char* f = "%.6e") {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The value at a dotted key path (numeric segments index lists, other segments select keys
// or the list element with that "name"), or null if there is none.
const nlohmann::json* find_json_path(const nlohmann::json& root, const std::string& path) {
  const nlohmann::json* at = &root;
  std::istringstream segments(path);
  std::string seg;
  while (std::getline(segments, seg, '.')) {
    if (at->is_object()) {
      if (!at->contains(seg)) return nullptr;
      at = &(*at)[seg];
    } else if (at->is_array()) {
      const bool digits = !seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos;
      const nlohmann::json* next = nullptr;
      if (digits && std::stoul(seg) < at->size()) next = &(*at)[std::stoul(seg)];
      for (const auto& e : *at)
        if (!next && e.is_object() && e.contains("name") && e["name"] == seg) next = &e;
      if (!next) return nullptr;
      at = next;
    } else {
      return nullptr;
    }
  }
  return at;
}

// The same in a document that may be changed there.
nlohmann::json* find_json_path(nlohmann::json& root, const std::string& path) {
  return const_cast<nlohmann::json*>(find_json_path(std::as_const(root), path));
}

// Relative mesh and URDF files of the scene become absolute (the optimised scene lives elsewhere).
void absolutize_files(json& scene, const fs::path& scene_dir) {
  auto fix = [&](json& v) {
    if (!v.is_string()) return;
    fs::path p(v.get<std::string>());
    if (p.is_relative()) v = fs::absolute(scene_dir / p).lexically_normal().string();
  };
  if (!scene.contains("bodies") || !scene["bodies"].is_array()) return;
  for (json& b : scene["bodies"]) {
    if (!b.is_object()) continue;
    if (b.contains("mesh")) {
      if (b["mesh"].is_string()) fix(b["mesh"]);
      if (b["mesh"].is_object() && b["mesh"].contains("file")) fix(b["mesh"]["file"]);
    }
    if (b.contains("shape") && b["shape"].is_object() && b["shape"].contains("file")) fix(b["shape"]["file"]);
    if (b.contains("type") && b["type"] == "urdf" && b.contains("file")) fix(b["file"]);
  }
}

// The Python that draws convergence.png from iterations.csv (argv: csv, png, title).
constexpr const char* kPlotScript = R"PY(
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
fig, ax = plt.subplots(figsize=(6, 4))
stages = sorted(set(int(r["stage"]) for r in rows))
for s in stages:
    pts = [(int(r["sims"]), float(r["phi_ratio"])) for r in rows
           if int(r["stage"]) == s and r["phi_ratio"] not in ("", "nan", "inf") and float(r["phi_ratio"]) > 0]
    best, xs, ys = float("inf"), [], []
    for x, y in pts:
        best = min(best, y)
        xs.append(x)
        ys.append(best)
    if xs:
        line, = ax.step(xs, ys, where="post", label="stage %d (best)" % (s + 1))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], ".", ms=3, alpha=0.4, color=line.get_color())
ax.set_yscale("log")
ax.set_xlabel("simulations")
ax.set_ylabel("Phi / Phi0")
ax.set_title(sys.argv[3])
ax.grid(True, which="both", alpha=0.3)
if len(stages) > 1:
    ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
)PY";

// The viewer's extra plots of an optimisation (docs/viewer.md "plots.json"): Φ/Φ₀ and ‖∇Φ‖
// per simulation from iterations.csv (all stages; a failed simulation or a method without
// gradients leaves a gap).
nlohmann::json convergence_plots(const fs::path& csv) {
  std::istringstream in(read_text(csv));
  std::string line;
  std::getline(in, line);  // header: stage,iteration,sims,phi,phi_ratio,grad_norm,failed,elapsed,...
  nlohmann::json sims = nlohmann::json::array(), ratio = nlohmann::json::array(), grad = nlohmann::json::array();
  auto value = [](const std::string& cell) -> nlohmann::json {
    char* end = nullptr;
    const double v = std::strtod(cell.c_str(), &end);
    return end != cell.c_str() && std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; cells.size() < 7 && std::getline(row, cell, ',');) cells.push_back(cell);
    if (cells.size() < 7) continue;
    const bool failed = cells[6] == "1";
    sims.push_back(value(cells[2]));
    ratio.push_back(failed ? nlohmann::json(nullptr) : value(cells[4]));
    grad.push_back(failed ? nlohmann::json(nullptr) : value(cells[5]));
  }
  // Log scale when every value is positive (an objective may be negative, e.g. −distance).
  auto positive = [](const nlohmann::json& ys) {
    for (const auto& y : ys)
      if (!y.is_null() && !(y.get<double>() > 0.0)) return false;
    return true;
  };
  return nlohmann::json::array(
      {{{"title", "\u03a6/\u03a6\u2080 per simulation (\u03a6\u2080: the first of its stage)"},
        {"x_label", "simulations"},
        {"y_log", positive(ratio)},
        {"x", sims},
        {"series", {{{"name", "\u03a6/\u03a6\u2080"}, {"y", ratio}}}}},
       {{"title", "\u2016\u2207\u03a6\u2016 per simulation"},
        {"x_label", "simulations"},
        {"y_log", positive(grad)},
        {"x", sims},
        {"series", {{{"name", "\u2016\u2207\u03a6\u2016"}, {"y", grad}}}}}});
}

// The error of loading stage k's task with its overrides, named by the stage's key: an objective
// key ("<task>: objective.0.target: …") becomes stages.k.objective_set.0.target; anything else is
// put under stages.k. (A bad stage `set` never gets here: the task's first load checks every
// stage's scene with it and names stages.k.set.<key>, load_task_file.)
std::string stage_override_error(const std::string& task_file, int k, std::string message) {
  const std::string stage = "stages." + std::to_string(k);
  if (message.rfind(task_file + ": ", 0) == 0) message.erase(0, task_file.size() + 2);
  if (message.rfind("objective.", 0) == 0) return task_file + ": " + stage + ".objective_set." + message.substr(10);
  return task_file + ": " + stage + ": " + message;
}

struct Options {
  std::string task;
  std::string out;
  std::string method;
  long max_sims = 0;
  int steps = 0;
  bool resume = false;
  bool quiet = false;
  std::vector<std::string> sets;
};

// Everything one stage needs while it runs.
struct StageState {
  std::shared_ptr<Task> task;
  SimulationProblem* problem = nullptr;
  std::vector<int> column_offsets;  // index in the stage's p of every CSV parameter column
};

int run_optimize(const Options& opt) {
  const fs::path out(opt.out);
  const fs::path task_file = fs::absolute(opt.task).lexically_normal();
  note_input_file(opt.task);
  // The checkpoint of an interrupted run, or a fresh start.
  json checkpoint;
  std::vector<std::string> sets = opt.sets;
  std::string method = opt.method;
  long max_sims = opt.max_sims;
  if (opt.resume) {
    if (!fs::exists(out / kCheckpoint))
      throw InputError((out / kCheckpoint).string() + ": no checkpoint to resume (was the run started with this --out?)");
    try {
      checkpoint = json::parse(read_text(out / kCheckpoint));
    } catch (const json::exception& e) {
      throw InputError((out / kCheckpoint).string() + ": unreadable checkpoint (" + e.what() + ")");
    }
    if (checkpoint.value("complete", false))
      throw InputError((out / kCheckpoint).string() + ": the run is complete (result.json); nothing to resume");
    if (checkpoint.at("task").get<std::string>() != task_file.string())
      throw InputError(opt.task + ": the run in " + out.string() + " optimised " +
                       checkpoint.at("task").get<std::string>());
    // The run continues with the options it was started with; options given again are ignored (said once).
    std::vector<std::string> ignored;
    if (!opt.method.empty()) ignored.push_back("--method");
    if (opt.max_sims > 0) ignored.push_back("--max-sims");
    if (opt.sets.size() > (opt.steps > 0 ? 1u : 0u)) ignored.push_back("--set");
    if (opt.steps > 0) ignored.push_back("--steps");
    if (!ignored.empty()) {
      std::string list;
      for (const std::string& o : ignored) list += (list.empty() ? "" : ", ") + o;
      std::fprintf(stderr, "addsim: warning: --resume continues with the options the run was started with (%s); ignored: %s\n",
                   (out / kCheckpoint).string().c_str(), list.c_str());
    }
    sets = checkpoint.at("sets").get<std::vector<std::string>>();
    method = checkpoint.at("method").get<std::string>();
    max_sims = checkpoint.at("max_sims").get<long>();
  } else {
    for (const char* f : {kCheckpoint, kResult, kIterations})
      if (fs::exists(out / f))
        throw InputError((out / f).string() + ": the folder holds an earlier run (use --resume, or another --out)");
  }

  // The output folder is made and probed before the task is meshed.
  prepare_output_dir(out);
  // Meshes generated while the tasks load are reported on stderr.
  const MeshProgress meshes(opt.quiet);
  auto first = std::make_shared<Task>(load_task_file(task_file, sets));
  print_notices(first->scene);

  // Stages: the task's list, or the task itself as the one stage.
  std::vector<TaskStage> task_stages = first->stages;
  if (task_stages.empty()) {
    TaskStage main;
    main.name = "main";
    main.specs = first->specs;
    main.options = first->optimize;
    task_stages.push_back(main);
  }
  std::vector<StageSpec> stages;
  for (TaskStage& s : task_stages) {
    if (!method.empty()) s.options.method = parse_optimizer_method(method, "--method");
    if (max_sims > 0) s.options.max_simulations = max_sims;
    stages.push_back({s.name, s.options, s.fallback, s.fallback_after, s.fallback_from_best, s.join, s.run_after});
  }
  const std::vector<std::string> columns = first->selection.names();
  const int num_stages = static_cast<int>(stages.size());

  // The task as stage `stage` runs it: its `scene` (stages[k].scene, a task-key override applied before
  // the others), then the command line's overrides, the stage's scene overrides and objective overrides.
  auto load_stage_task = [&](int stage) {
    const TaskStage& ts = task_stages[stage];
    if (stage == 0 && ts.scene.empty() && ts.scene_overrides.empty() && ts.objective_overrides.empty()) return first;
    std::vector<std::string> stage_sets;
    if (!ts.scene.empty()) stage_sets.push_back("scene=" + json(ts.scene).dump());
    stage_sets.insert(stage_sets.end(), sets.begin(), sets.end());
    for (const std::string& o : ts.scene_overrides) stage_sets.push_back("scene." + o);
    for (const std::string& o : ts.objective_overrides) stage_sets.push_back(o);
    // The first load checked every stage's scene with its set (load_task_file); this load holds
    // this stage's, which the other stages' checks must not be combined with.
    auto task = std::make_shared<Task>(load_task_file(task_file, stage_sets, false));
    print_notices(task->scene);
    return task;
  };
  auto stage_selection = [&](int stage, const Task& task) {
    try {
      return ParameterSelection(task.scene.model->params(), task_stages[stage].specs);
    } catch (const InputError& e) {
      throw InputError(task_file.string() + ": stages." + std::to_string(stage) + ".parameters: " + e.what());
    }
  };
  // A stage on its own scene is loaded (and its parameters resolved) before anything runs, so that a
  // scene that does not load or lacks a parameter stops the run with nothing written; the factory
  // then uses the loaded task.
  std::map<int, std::shared_ptr<Task>> stage_tasks;
  for (int k = 0; k < num_stages; ++k) {
    if (task_stages[k].scene.empty()) continue;
    try {
      stage_tasks[k] = load_stage_task(k);
    } catch (const InputError& e) {
      throw InputError(task_file.string() + ": stages." + std::to_string(k) + ".scene \"" + task_stages[k].scene +
                       "\": " + e.what());
    }
    stage_selection(k, *stage_tasks[k]);
  }
  // Every stage that will run is loaded and checked before anything is written to --out (a bad
  // input leaves no checkpoint that would lock a corrected rerun out): its `set` overrides, its
  // parameters, and a Gauss-Newton method against its objective.
  const int first_stage = opt.resume ? checkpoint.value("stage", 0) : 0;
  for (int k = std::max(first_stage, 0); k < num_stages; ++k) {
    if (!stage_tasks.count(k)) {
      try {
        stage_tasks[k] = load_stage_task(k);
      } catch (const InputError& e) {
        throw InputError(stage_override_error(task_file.string(), k, e.what()));
      }
    }
    stage_selection(k, *stage_tasks[k]);
    const Task& t = *stage_tasks[k];
    if (stages[k].options.method == OptimizerMethod::kGaussNewton && t.objective.first_non_least_squares_term() >= 0) {
      const int bad = t.objective.first_non_least_squares_term();
      std::string key = "optimize.method";
      if (!method.empty()) {
        key = "--method";
      } else if (!first->stages.empty()) {
        const nlohmann::json sj = first->json.contains("stages") ? first->json["stages"][k] : nlohmann::json();
        if (sj.is_object() && sj.contains("optimize") && sj["optimize"].contains("method"))
          key = "stages." + std::to_string(k) + ".optimize.method";
      }
      throw InputError(task_file.string() + ": " + key + ": gauss_newton needs a sum-of-squares objective; objective." +
                       std::to_string(bad) + " (" + t.term_types[bad] + ") is not one" +
                       (num_stages > 1 ? " (stage " + std::to_string(k) + ")" : std::string()));
    }
  }

  // iterations.csv: a fresh file, or on resume the rows up to the checkpoint.
  ContinuationStart start;
  if (opt.resume) {
    start.stage = checkpoint.at("stage").get<int>();
    start.simulations = checkpoint.at("simulations").get<long>();
    start.seconds = checkpoint.at("seconds").get<double>();
    start.iteration = checkpoint.at("iteration").get<int>();
    start.stage_start_simulations = checkpoint.at("stage_start_simulations").get<long>();
    start.stage_start_seconds = checkpoint.at("stage_start_seconds").get<double>();
    start.phi0 = checkpoint.at("phi0").is_null() ? std::numeric_limits<double>::quiet_NaN()
                                                 : checkpoint.at("phi0").get<double>();
    for (const auto& [name, value] : checkpoint.at("carried").items()) start.carried.emplace_back(name, value.get<double>());
    if (start.stage < 0 || start.stage >= num_stages) throw InputError((out / kCheckpoint).string() + ": bad stage");
    std::istringstream old(fs::exists(out / kIterations) ? read_text(out / kIterations) : std::string());
    std::string line, kept;
    bool header = true;
    while (std::getline(old, line)) {
      if (header) {
        kept += line + "\n";
        header = false;
        continue;
      }
      const auto c1 = line.find(','), c2 = line.find(',', c1 + 1), c3 = line.find(',', c2 + 1);
      if (c3 == std::string::npos) continue;  // a torn last line
      if (std::stol(line.substr(c2 + 1, c3 - c2 - 1)) <= start.simulations) kept += line + "\n";
    }
    write_atomic(out / kIterations, kept);
  } else {
    std::string header = "stage,iteration,sims,phi,phi_ratio,grad_norm,failed,elapsed";
    for (const std::string& c : columns) header += "," + c;
    write_atomic(out / kIterations, header + "\n");
  }
  std::FILE* csv = std::fopen((out / kIterations).c_str(), "a");
  if (!csv) throw InputError((out / kIterations).string() + ": cannot append");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> csv_guard(csv, std::fclose);

  StageState st;
  NamedValues carried_before_stage = start.carried;
  // Totals when the running stage started (its budget counts from there).
  long stage_start_sims = opt.resume ? start.stage_start_simulations : 0;
  // Failed simulations over the whole run (continued from the checkpoint when resumed).
  long failed_total = opt.resume ? checkpoint.value("failed_simulations", 0L) : 0L;
  double stage_start_seconds = opt.resume ? start.stage_start_seconds : 0.0;
  double stage_phi0 = start.phi0;
  auto write_checkpoint = [&](int stage, long sims, double seconds, int iteration, double phi0, const NamedValues& carried,
                              bool complete) {
    json c = {{"task", task_file.string()}, {"sets", sets},          {"method", method},
              {"max_sims", max_sims},       {"stage", stage},        {"simulations", sims},
              {"seconds", seconds},         {"iteration", iteration}, {"phi0", number(phi0)},
              {"stage_start_simulations", stage_start_sims}, {"stage_start_seconds", stage_start_seconds},
              {"failed_simulations", failed_total},
              {"complete", complete}};
    json cv = json::object();
    for (const auto& [name, value] : carried) cv[name] = value;
    c["carried"] = cv;
    write_atomic(out / kCheckpoint, c.dump(2) + "\n");
  };

  const StageFactory factory = [&](int stage, const NamedValues& carried) {
    auto pre = stage_tasks.find(stage);
    if (pre != stage_tasks.end()) {
      st.task = pre->second;  // loaded when the stage's scene was checked
      stage_tasks.erase(pre);
    } else {
      st.task = load_stage_task(stage);
    }
    const Model& model = *st.task->scene.model;
    const ParameterSelection selection = stage_selection(stage, *st.task);
    VecX p = apply_named_values(model.params(), model.params().defaults(), carried);
    // Carried values are clamped into this stage's bounds (a stage may bound tighter).
    for (int k = 0; k < selection.size(); ++k) {
      double& v = p[selection.indices()[k]];
      v = std::min(std::max(v, selection.lower(k)), selection.upper(k));
    }
    st.column_offsets.clear();
    for (const std::string& c : columns) {
      const std::optional<ParamRange> r = model.params().resolve(c);
      st.column_offsets.push_back(r && r->size == 1 ? r->offset : -1);
    }
    // CMA-ES simulates a generation on both cores (two single-threaded simulators); the
    // gradient methods run one simulator with the scene's solver.threads.
    const bool cmaes = stages[stage].options.method == OptimizerMethod::kCmaes;
    auto problem = std::make_unique<SimulationProblem>(model, st.task->objective, selection, p, cmaes ? 2 : 1,
                                                       cmaes ? 1 : 0, st.task);
    st.problem = problem.get();
    carried_before_stage = carried;
    return problem;
  };

  std::signal(SIGINT, on_sigint);
  const bool tty = isatty(STDERR_FILENO);
  ContinuationCallbacks cb;
  cb.on_evaluation = [&](int stage, const EvaluationRecord& r) {
    failed_total += r.failed ? 1 : 0;
    // Φ₀ of the stage: its first evaluation (or the checkpoint's, when resumed).
    if (std::isnan(stage_phi0)) stage_phi0 = r.phi;
    const VecX p = st.problem->parameters(r.x);
    std::string row = std::to_string(stage) + "," + std::to_string(r.iteration) + "," + std::to_string(r.simulations) +
                      "," + fmt(r.phi, "%.17g") + "," + fmt(r.phi / stage_phi0, "%.17g") + "," +
                      fmt(r.gradient_norm, "%.17g") + "," + (r.failed ? "1" : "0") + "," + fmt(r.elapsed, "%.3f");
    for (int off : st.column_offsets) row += "," + (off >= 0 ? fmt(p[off], "%.17g") : std::string("nan"));
    row += "\n";
    std::fputs(row.c_str(), csv);
    std::fflush(csv);
  };
  cb.on_iteration = [&](int stage, const IterationRecord& r) {
    NamedValues carried = carried_before_stage;
    merge_named_values(carried, named_values(st.problem->selection(), st.problem->values(r.x_best)));
    write_checkpoint(stage, r.simulations, r.elapsed, r.iteration, r.phi0, carried, false);
    if (!opt.quiet) {
      std::string line = "iter " + std::to_string(r.iteration) + "  sims " + std::to_string(r.simulations) + "  phi " +
                         fmt(r.phi, "%.4e") + "  phi/phi0 " + fmt(r.phi / r.phi0, "%.3e") + "  |grad| " +
                         fmt(r.gradient_norm, "%.3e") + "  " + fmt(r.elapsed, "%.1f") + " s  stage " +
                         std::to_string(stage + 1) + "/" + std::to_string(num_stages) + " (" + stages[stage].name + ")";
      // On a terminal the line is bold; elsewhere plain text without escape codes.
      std::fprintf(stderr, tty ? "\033[1m%s\033[0m\n" : "%s\n", line.c_str());
    }
    return !g_interrupted.load();
  };
  std::vector<json> stage_reports;
  cb.on_stage_end = [&](int stage, const StageResult& sr) {
    const OptimizationResult& r = sr.result;
    stage_reports.push_back({{"stage", stage},
                             {"name", sr.name},
                             {"method", to_string(stages[stage].options.method)},
                             {"phi0", number(r.phi0)},
                             {"phi", number(r.phi_best)},
                             {"phi_ratio", number(r.phi_best / r.phi0)},
                             {"simulations", r.simulations},
                             {"failed_simulations", r.failed_simulations},
                             {"iterations", r.iterations},
                             {"seconds", r.seconds},
                             {"stop_reason", to_string(r.reason)},
                             {"message", r.message}});
    // L-BFGS-B's restarts (optimize.lbfgsb.restart_iterations), only where the rule fired.
    if (r.restarts > 0) stage_reports.back()["restarts"] = r.restarts;
    // The next stage starts from this stage's best point with the counters continued.
    NamedValues carried = carried_before_stage;
    merge_named_values(carried, sr.best);
    stage_start_sims = r.simulations;
    stage_start_seconds = r.seconds;
    if (stage + 1 < num_stages && r.reason != StopReason::kInterrupted && r.reason != StopReason::kInitialFailure)
      write_checkpoint(stage + 1, r.simulations, r.seconds, r.iterations, std::numeric_limits<double>::quiet_NaN(),
                       carried, false);
    stage_phi0 = std::numeric_limits<double>::quiet_NaN();
  };
  if (!opt.resume)
    write_checkpoint(0, 0, 0.0, 0, std::numeric_limits<double>::quiet_NaN(), {}, false);
  const ContinuationResult result = run_continuation(stages, factory, cb, start);
  std::signal(SIGINT, SIG_DFL);
  csv_guard.reset();

  const StageResult& last = result.stages.back();
  const OptimizationResult& lr = last.result;
  const bool interrupted = result.reason == StopReason::kInterrupted;
  // A failed simulation at a stage's starting point ends the run with nothing optimised: no
  // optimized_scene.json, result.json says completed false, exit code 3.
  const bool failed_start = result.reason == StopReason::kInitialFailure;

  // optimized_scene.json: the last stage's scene with the best parameters written back to
  // their scene keys, verified by loading it again.
  const Task& final_task = *st.task;
  const Model& model = *final_task.scene.model;
  // The last stage's problem is gone with run_continuation (st.problem dangles here): the best
  // point is the scene's defaults with the optimised values written over them.
  const VecX best_p = apply_named_values(model.params(), model.params().defaults(), result.best);
  json scene = final_task.scene.json;
  // The evaluations ran with sub-step retry unless the scene set solver.substep_retry
  // (SimulationProblem): the replay gets it too, so a retried optimum simulates the same.
  if (model.solver().substep_retry < 0)
    scene["solver"]["substep_retry"] = json{{"max_depth", kOptimizationSubstepDepth}};
  std::string scene_note = failed_start ? "the simulation at the starting point failed" : "";
  if (!failed_start) {
    absolutize_files(scene, fs::absolute(fs::path(final_task.scene.source)).parent_path());
    std::vector<const ParamEntry*> entries;
    for (const auto& [name, value] : result.best) {
      const std::optional<ParamRange> r = model.params().resolve(name);
      if (r && std::find(entries.begin(), entries.end(), r->entry) == entries.end()) entries.push_back(r->entry);
    }
    // Entries with a scene key of their own (Scene::param_keys: a URDF robot's joints) go to
    // that JSON pointer, together with every entry whose key shares its parent (so that a
    // gain given as one number for all joints becomes {joint: value} with each joint's value
    // and per-joint keys stay complete). An empty key: the entry has none (a robot link's
    // initial state, computed from the URDF).
    const std::map<std::string, std::string>& keys = final_task.scene.param_keys;
    std::set<std::string> key_parents;
    std::vector<const ParamEntry*> plain_entries;
    for (const ParamEntry* e : entries) {
      const auto it = keys.find(e->path);
      if (it == keys.end()) {
        plain_entries.push_back(e);
      } else if (it->second.empty()) {
        scene_note = (e->alias.empty() ? e->path : e->alias) + " has no scene key (computed from the URDF)";
      } else {
        key_parents.insert(nlohmann::json::json_pointer(it->second).parent_pointer().to_string());
      }
    }
    // The value of `e` from best_p: a number, or a flat list (per-step targets).
    auto keyed_value = [&](const ParamEntry& e) {
      if (e.size() == 1) return nlohmann::json(best_p[e.offset]);
      nlohmann::json v = nlohmann::json::array();
      for (int k = 0; k < e.size(); ++k) v.push_back(best_p[e.offset + k]);
      return v;
    };
    // Each other entry goes back to its scene key in the shape the scene uses there (a
    // number, a 3-vector, or a list of 3-vectors); a key the scene left out is tried flat,
    // then nested. The result counts only if reloading it gives exactly the optimised values.
    auto attempt = [&](bool nested_when_absent) -> std::optional<std::string> {
      nlohmann::json plain = nlohmann::json::parse(scene.dump());
      for (const ParamEntry& e : model.params().entries()) {
        const auto it = keys.find(e.path);
        if (it == keys.end() || it->second.empty()) continue;
        const nlohmann::json::json_pointer ptr(it->second);
        if (!key_parents.count(ptr.parent_pointer().to_string())) continue;
        // Containers on the way that hold a value (a gain as one number, "limits": true)
        // become objects; the entries of the same parent fill them completely.
        std::vector<nlohmann::json::json_pointer> ancestors;
        for (auto a = ptr.parent_pointer(); !a.empty(); a = a.parent_pointer()) ancestors.push_back(a);
        for (auto a = ancestors.rbegin(); a != ancestors.rend(); ++a)
          if (plain.contains(*a) && !plain[*a].is_object() && !plain[*a].is_array()) plain[*a] = nlohmann::json::object();
        plain[ptr] = keyed_value(e);
      }
      for (const ParamEntry* e : plain_entries) {
        const nlohmann::json* existing = find_json_path(plain, e->path);
        const bool nested = existing ? (existing->is_array() && !existing->empty() && (*existing)[0].is_array())
                                     : (e->rows > 1 || nested_when_absent);
        nlohmann::json v;
        if (e->size() == 1 && !(existing && existing->is_array())) {
          v = best_p[e->offset];
        } else if (!nested) {
          v = nlohmann::json::array();
          for (int k = 0; k < e->size(); ++k) v.push_back(best_p[e->offset + k]);
        } else {
          v = nlohmann::json::array();
          for (int r = 0; r < e->rows; ++r) {
            nlohmann::json row = nlohmann::json::array();
            for (int c = 0; c < e->cols; ++c) row.push_back(best_p[e->offset + r * e->cols + c]);
            v.push_back(row);
          }
        }
        // The written key replaces the scene's other form of the same value: a rigid body's
        // `mass` its `density`, a handle's per-step `positions` its `position`/`velocity`, a
        // sheet's per-particle `velocities` its `velocity`.
        static const std::map<std::pair<std::string, std::string>, std::vector<std::string>> kReplaces = {
            {{"bodies", "mass"}, {"density"}},
            {{"handles", "positions"}, {"position", "velocity"}},
            {{"bodies", "velocities"}, {"velocity"}}};
        const std::size_t dot = e->path.rfind('.');
        const auto rep = kReplaces.find({e->path.substr(0, e->path.find('.')), e->path.substr(dot + 1)});
        if (dot != std::string::npos && rep != kReplaces.end())
          if (nlohmann::json* owner = find_json_path(plain, e->path.substr(0, dot)); owner && owner->is_object())
            for (const std::string& k : rep->second) owner->erase(k);
        set_json_path(plain, e->path, v);
      }
      const std::string text = plain.dump(2) + "\n";
      const Scene check = load_scene_text(text, (out / kScene).string());
      // Every parameter, optimised or not, must come back bit for bit.
      const VecX& q = check.model->params().defaults();
      if (q.size() != best_p.size() || q != best_p) return std::nullopt;
      return text;
    };
    const std::string unkeyed = scene_note;
    for (bool nested : {false, true}) {
      if (!unkeyed.empty()) break;
      try {
        if (const std::optional<std::string> text = attempt(nested)) {
          write_atomic(out / kScene, *text);
          scene_note.clear();
          break;
        }
        scene_note = "a parameter has no scene key that reproduces it";
      } catch (const InputError& e) {
        scene_note = e.what();
      }
    }
    if (!scene_note.empty())
      std::fprintf(stderr, "addsim: warning: %s not written: %s\n", kScene, scene_note.c_str());
  }

  json parameters = json::object();
  for (const std::string& c : columns) {
    const std::optional<ParamRange> r = model.params().resolve(c);
    parameters[c] = r ? number(best_p[r->offset]) : json(nullptr);
  }
  json res = {{"task", first->name},
              {"task_file", task_file.string()},
              {"parameters", parameters},
              {"phi", number(lr.phi_best)},
              {"phi0", number(lr.phi0)},
              {"phi_ratio", number(lr.phi_best / lr.phi0)},
              {"simulations", result.simulations},
              {"failed_simulations", 0},
              {"iterations", result.iterations},
              {"seconds", result.seconds},
              {"completed", !interrupted && !failed_start},
              {"stop_reason", to_string(result.reason)},
              {"message", result.message},
              {"resumed", opt.resume},
              {"optimized_scene", scene_note.empty() ? json(kScene) : json(nullptr)},
              {"stages", stage_reports}};
  res["failed_simulations"] = failed_total;
  write_atomic(out / kResult, res.dump(2) + "\n");
  if (!interrupted && !failed_start)
    write_checkpoint(num_stages - 1, result.simulations, result.seconds, result.iterations, lr.phi0, result.best, true);
  if (failed_start)
    throw SimulationError(first->source + ": stage " + std::to_string(result.stages.size()) + " (" + last.name +
                              "): " + result.message + "; nothing optimised (" + (out / kResult).string() + ")",
                          -1);

  // convergence.png by /usr/bin/python3 with matplotlib, without a shell.
  if (access("/usr/bin/python3", X_OK) != 0 ||
      !run_program({"/usr/bin/python3", "-c", kPlotScript, (out / kIterations).string(),
                    (out / ".convergence.tmp.png").string(), first->name})
           .ok()) {
    std::fprintf(stderr, "addsim: warning: %s not drawn (needs /usr/bin/python3 with matplotlib)\n", kPlot);
  } else {
    std::error_code ec;
    fs::rename(out / ".convergence.tmp.png", out / kPlot, ec);
  }
  if (!opt.quiet)
    std::printf("%s: phi %.6e  phi/phi0 %.3e  %ld simulations  %.2f s  stop: %s\n", first->name.c_str(), lr.phi_best,
                lr.phi_best / lr.phi0, result.simulations, result.seconds, to_string(result.reason));

  // index.html: the rollout at the best parameters (one more simulation) with the
  // convergence plots (docs/viewer.md); the viewer's files go next to the run's.
  {
    Simulator sim(model);
    Trajectory traj;
    {
      ProgressLine line(opt.quiet);
      const auto count = line.counter("rollout at the best parameters, step", "steps");
      const int n = model.scheme().steps;
      traj = sim.run(best_p, [&](const StepReport& r) { count(r.step, n); });
    }
    const ViewerResult page = write_viewer(out, final_task.scene, traj, convergence_plots(out / kIterations));
    if (!page.has_three && !opt.quiet) std::fprintf(stderr, "addsim: warning: %s\n", page.notice.c_str());
    if (!traj.completed())
      std::fprintf(stderr, "addsim: warning: the rollout at the best parameters failed at step %d (%s); %s shows it up to there\n",
                   traj.failed_step, traj.failure.c_str(), page.page.string().c_str());
    if (!opt.quiet) std::printf("open %s in a browser to watch the best rollout\n", page.page.string().c_str());
  }
  return kOk;
}

}  // namespace

std::function<int()> setup_optimize(CLI::App& app) {
  auto opt = std::make_shared<Options>();
  app.add_option("task", opt->task, "Task file (JSON with an optional optimize section and stages)")->required();
  app.add_option("--out,-o", opt->out, "Output folder (iterations.csv, result.json, optimized_scene.json, convergence.png, index.html)")
      ->required()
      ->check(non_empty_path());
  app.add_option("--method", opt->method, "Override every stage's method: lbfgsb, gauss_newton, adam or cmaes")
      ->check(CLI::IsMember({"lbfgsb", "gauss_newton", "adam", "cmaes"}));
  app.add_option("--max-sims", opt->max_sims, "Override every stage's simulation budget")->check(positive_integer());
  app.add_flag("--resume", opt->resume, "Continue the interrupted run in --out from its last completed iteration");
  app.add_flag("--quiet,-q", opt->quiet, "Print nothing but errors and warnings (no progress, no summary)");
  add_task_override_options(app, opt->sets, opt->steps);
  return [opt, &app]() {
    opt->sets = overrides_in_order(app, opt->sets, opt->steps, "scene.steps");
    return run_optimize(*opt);
  };
}

}  // namespace addsim::cli
