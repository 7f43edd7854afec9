#include "addsim/cli/sweep_command.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "addsim/batch/batch.h"
#include "addsim/cli/arguments.h"
#include "addsim/cli/output_paths.h"
#include "addsim/cli/commands.h"
#include "addsim/cli/process.h"
#include "addsim/cli/progress.h"
#include "addsim/core/error.h"
#include "addsim/io/task.h"

namespace addsim::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Largest batch a sweep accepts: each point keeps a few numbers, but 10⁷ rollouts are days.
constexpr long kMaxPoints = 10'000'000;

// A whole integer in [lo, hi]; InputError naming `what` otherwise.
long parse_count(const std::string& text, long lo, long hi, const std::string& what) {
  try {
    std::size_t used = 0;
    const long n = std::stol(text, &used);
    if (used == text.size() && n >= lo && n <= hi) return n;
  } catch (const std::exception&) {
  }
  throw InputError(what + ": must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got \"" +
                   text + "\"");
}

// Progress of a batch on stderr (cli/progress.h), and a last line when it is done.
class BatchProgress {
 public:
  explicit BatchProgress(bool quiet) : line_(quiet) {}
  void operator()(int done, int total) {
    const bool last = done == total;
    if (!line_.due(last)) return;
    const double t = line_.elapsed();
    const double rate = done / std::max(t, 1e-9);
    const double eta = (total - done) / std::max(rate, 1e-12);
    char text[160];
    std::snprintf(text, sizeof text, "sweep %d/%d points, %.2f points/s, %.1f s elapsed, ETA %.1f s", done, total,
                  rate, t, eta);
    if (last)
      line_.message(text);
    else
      line_.update(text);
  }

 private:
  ProgressLine line_;
};

struct Options {
  std::string task;
  std::string scheduler;
  std::string out;
  std::string axes, grid, range;
  long samples = 0;
  unsigned seed = 1;
  int threads = 0;
  int steps = 0;
  bool no_gradient = false;
  bool quiet = false;
  std::vector<std::string> sets;
};

// The points of the sweep: indices into p of the varied scalars, their names, and the values.
struct Design {
  std::vector<int> index;
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;  // one row per point, one value per varied scalar
};

Design grid_design(const Task& task, const Options& opt) {
  const Model& model = *task.scene.model;
  Design d;
  const auto axes = split(opt.axes, ',');
  if (axes.empty() || axes.size() > 2) throw InputError("--axes: name one or two parameter paths, got \"" + opt.axes + "\"");
  for (const std::string& a : axes) {
    const ParamRange r = model.params().require(a);
    if (r.size != 1)
      throw InputError("--axes: " + a + " has " + std::to_string(r.size) + " values; name one scalar (e.g. " +
                       model.params().name_of(r.offset) + ")");
    for (int j : d.index)
      if (j == r.offset) throw InputError("--axes: the two axes are the same parameter");
    d.index.push_back(r.offset);
    d.names.push_back(model.params().name_of(r.offset));
  }
  std::string g = opt.grid;
  for (const std::string mult : {"\xC3\x97", "X"})
    if (const auto pos = g.find(mult); pos != std::string::npos) g.replace(pos, mult.size(), "x");
  const auto counts = split(g, 'x');
  if (counts.size() != axes.size())
    throw InputError("--grid: give one count per axis (N or NxM), got \"" + opt.grid + "\"");
  const auto ranges = split(opt.range, ',');
  if (ranges.size() != axes.size())
    throw InputError("--range: give one range a:b per axis, got \"" + opt.range + "\"");
  std::vector<long> n;
  std::vector<std::pair<double, double>> r;
  long total = 1;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    n.push_back(parse_count(counts[a], 2, kMaxPoints, "--grid"));
    total *= n.back();
    if (total > kMaxPoints)
      throw InputError("--grid: " + opt.grid + " is more than " + std::to_string(kMaxPoints) + " points");
    r.push_back(parse_range(ranges[a], axes[a]));
  }
  for (long k = 0; k < total; ++k) {
    std::vector<double> row;
    long rest = k;
    for (std::size_t a = axes.size(); a-- > 0;) {
      const long i = rest % n[a];
      rest /= n[a];
      // (1 − t) a + t b hits both ends of the range exactly.
      const double t = static_cast<double>(i) / static_cast<double>(n[a] - 1);
      row.insert(row.begin(), (1.0 - t) * r[a].first + t * r[a].second);
    }
    d.values.push_back(std::move(row));
  }
  return d;
}

// Uniform samples of every selected scalar within its bounds (uniform in ln p for log-scaled ones).
Design sample_design(const Task& task, const Options& opt) {
  Design d;
  const ParameterSelection& s = task.selection;
  for (int k = 0; k < s.size(); ++k) {
    if (!std::isfinite(s.lower(k)) || !std::isfinite(s.upper(k)))
      throw InputError(task.source + ": parameters: --samples needs finite bounds; " + s.names()[k] +
                       " has [" + std::to_string(s.lower(k)) + ", " + std::to_string(s.upper(k)) +
                       "] (give \"lower\" and \"upper\" in the task)");
    if (s.log_scale(k) && !(s.lower(k) > 0.0))
      throw InputError(task.source + ": parameters: " + s.names()[k] + " is log-scaled: --samples needs lower > 0");
    d.index.push_back(s.indices()[k]);
    d.names.push_back(s.names()[k]);
  }
  std::mt19937_64 rng(opt.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (long i = 0; i < opt.samples; ++i) {
    std::vector<double> row;
    for (int k = 0; k < s.size(); ++k) {
      const double u = unit(rng);
      row.push_back(s.log_scale(k) ? std::exp(std::log(s.lower(k)) + u * (std::log(s.upper(k)) - std::log(s.lower(k))))
                                   : s.lower(k) + u * (s.upper(k) - s.lower(k)));
    }
    d.values.push_back(std::move(row));
  }
  return d;
}

// The shortest text that reads back as the same double ("0.7", not "0.69999999999999996").
std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Writes `text` to `file` through a temporary next to it, so a reader never sees half a file.
void write_atomically(const fs::path& file, const std::string& text) {
  const fs::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) throw InputError(tmp.string() + ": cannot write");
  }
  fs::rename(tmp, file);
}

// Hexadecimal text of a double ("0x1.8p+0"): exact in both directions, read by Python's
// float.fromhex and by strtod.
std::string hex(double v) {
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::hex);
  const std::string digits(buf, r.ptr);
  if (!std::isfinite(v)) return digits;
  return digits[0] == '-' ? "-0x" + digits.substr(1) : "0x" + digits;
}

// The batch on a Dask cluster: `python3 -m addsim.dask` (python/addsim/dask.py) runs the
// points on the scheduler's workers with the same C++ batch function and writes one row per
// point (completed, failed step, Φ and dΦ/dp as hexadecimal floats, tab, reason).
std::vector<BatchItemResult> run_on_scheduler(const Options& opt, const Model& model, const std::vector<VecX>& ps,
                                              const fs::path& out) {
  const char* env_dir = std::getenv("ADDSIM_PYTHON_PACKAGE_DIR");
  const fs::path package = env_dir ? fs::path(env_dir) : fs::path(ADDSIM_PYTHON_PACKAGE_DIR_DEFAULT);
  if (!fs::exists(package / "addsim" / "dask.py"))
    throw InputError("--scheduler: the addsim Python package is not built (" + package.string() +
                     "); build with pybind11-dev and python3-dev installed (bash scripts/install-deps.sh)");
  const fs::path points = out / ".sweep_points.txt", results = out / ".sweep_results.txt",
                 errors = out / ".sweep_errors.txt";
  {
    std::ofstream f(points);
    for (const VecX& p : ps) {
      for (Eigen::Index j = 0; j < p.size(); ++j) f << (j ? " " : "") << hex(p[j]);
      f << "\n";
    }
    if (!f) throw InputError("--out: cannot write " + points.string());
  }
  fs::remove(results);
  fs::remove(errors);
  std::vector<std::string> argv = {ADDSIM_PYTHON_EXECUTABLE, "-m", "addsim.dask", "--scheduler", opt.scheduler,
                                   "--task", fs::absolute(opt.task).string(), "--points", points.string(),
                                   "--out", results.string(), "--errors", errors.string()};
  for (const std::string& s : opt.sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  if (opt.no_gradient) argv.push_back("--no-gradient");
  const char* old_path = std::getenv("PYTHONPATH");
  const std::string python_path = package.string() + (old_path && *old_path ? ":" + std::string(old_path) : "");
  setenv("PYTHONPATH", python_path.c_str(), 1);
  const ProgramResult run = run_program(argv);
  fs::remove(points);
  if (run.exit_code == 2 && fs::exists(errors)) {
    std::ifstream e(errors);
    std::string why;
    std::getline(e, why);
    fs::remove(errors);
    throw InputError("--scheduler " + opt.scheduler + ": " + why);
  }
  if (!run.ok())
    throw InternalError("--scheduler: " + argv[0] + " -m addsim.dask " + run.describe());
  std::ifstream in(results);
  std::vector<BatchItemResult> out_rows;
  const int values = 1 + (opt.no_gradient ? 0 : static_cast<int>(model.params().size()));
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    std::istringstream row(line.substr(0, tab));
    BatchItemResult r;
    int completed = 0;
    row >> completed >> r.failed_step;
    std::vector<double> v;
    for (std::string cell; row >> cell;) v.push_back(std::strtod(cell.c_str(), nullptr));
    if (!row.eof() || static_cast<int>(v.size()) != values)
      throw InternalError("--scheduler: malformed result row " + std::to_string(out_rows.size()) + " in " +
                          results.string());
    r.completed = completed == 1;
    r.phi = v[0];
    if (!opt.no_gradient) r.dphi_dp = Eigen::Map<const VecX>(v.data() + 1, values - 1);
    r.failure = tab == std::string::npos ? "" : line.substr(tab + 1);
    out_rows.push_back(std::move(r));
  }
  fs::remove(results);
  if (out_rows.size() != ps.size())
    throw InternalError("--scheduler: " + std::to_string(out_rows.size()) + " result rows for " +
                        std::to_string(ps.size()) + " points");
  return out_rows;
}

}  // namespace

std::function<int()> setup_sweep(CLI::App& app) {
  auto opt = std::make_shared<Options>();
  app.add_option("task", opt->task, "Task file (JSON, see docs/task-format.md)")->required();
  app.add_option("--out,-o", opt->out, "Output directory (sweep.csv)")->required()->check(non_empty_path());
  app.add_option("--axes", opt->axes, "Grid: one or two scalar parameter paths P1[,P2]");
  app.add_option("--grid", opt->grid, "Grid: N or NxM points (>= 2 per axis)");
  app.add_option("--range", opt->range, "Grid: a:b[,c:d] per axis (parameter units); write --range=-1:1 for a minus");
  app.add_option("--samples", opt->samples, "Random samples of the task's parameters within their bounds")
      ->check(CLI::Range(1L, kMaxPoints));
  app.add_option("--seed", opt->seed, "Seed of --samples")->capture_default_str();
  app.add_option("--threads", opt->threads, "Worker threads (default: all cores)")->check(non_negative_integer());
  app.add_flag("--no-gradient", opt->no_gradient, "Only the objective, no adjoint gradients");
  app.add_option("--scheduler", opt->scheduler,
                 "Run the points on a Dask cluster: the scheduler's address (tcp://host:port; docs/scale-out.md)");
  app.add_flag("--quiet,-q", opt->quiet, "No progress on stderr");
  add_task_override_options(app, opt->sets, opt->steps);
  return [opt, &app]() {
    opt->sets = overrides_in_order(app, opt->sets, opt->steps, "scene.steps");
    const bool grid = !opt->axes.empty() || !opt->grid.empty() || !opt->range.empty();
    if (grid == (opt->samples > 0))
      throw InputError("sweep: give either a grid (--axes, --grid, --range) or --samples N, not both or neither");
    if (grid && (opt->axes.empty() || opt->grid.empty() || opt->range.empty()))
      throw InputError("sweep: a grid needs all of --axes, --grid and --range");
    // The output folder is made and probed before the task is meshed.
    const fs::path out(opt->out);
    prepare_output_dir(out);
    note_input_file(opt->task);
    const Task task = [&] {
      const MeshProgress meshes(opt->quiet);
      return load_task_file(opt->task, opt->sets);
    }();
    const Model& model = *task.scene.model;
    const Design d = grid ? grid_design(task, *opt) : sample_design(task, *opt);

    std::vector<VecX> ps;
    ps.reserve(d.values.size());
    for (std::size_t k = 0; k < d.values.size(); ++k) {
      VecX p = task.p();
      for (std::size_t a = 0; a < d.index.size(); ++a) p[d.index[a]] = d.values[k][a];
      try {
        model.params().check(p);
      } catch (const InputError& e) {
        throw InputError(std::string(grid ? "--range: " : "sweep: ") + e.what());
      }
      ps.push_back(std::move(p));
    }
    BatchOptions bo;
    bo.threads = opt->threads;
    bo.gradients = !opt->no_gradient;
    BatchProgress progress(opt->quiet);
    bo.progress = [&](int done, int total) { progress(done, total); };
    const auto start = Clock::now();
    const std::vector<BatchItemResult> results =
        opt->scheduler.empty() ? run_batch(model, ps, &task.objective, bo) : run_on_scheduler(*opt, model, ps, out);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

    // sweep.csv: one row per point; failed points have NaN values, completed = 0 and the reason.
    std::ostringstream csv;
    csv << "k";
    for (const auto& n : d.names) csv << "," << n;
    csv << ",phi";
    if (!opt->no_gradient)
      for (const auto& n : d.names) csv << ",dphi_d" << n;
    csv << ",completed,failure\n";
    int failed = 0;
    for (std::size_t k = 0; k < results.size(); ++k) {
      const BatchItemResult& r = results[k];
      csv << k;
      for (double v : d.values[k]) csv << "," << number(v);
      csv << "," << (r.completed ? number(r.phi) : "nan");
      if (!opt->no_gradient)
        for (int j : d.index) csv << "," << (r.completed ? number(r.dphi_dp[j]) : "nan");
      std::string why = r.failure;
      for (char& c : why)
        if (c == '"') c = '\'';
        else if (c == '\n') c = ' ';
      csv << "," << (r.completed ? 1 : 0) << ",\"" << why << "\"\n";
      failed += r.completed ? 0 : 1;
    }
    write_atomically(out / "sweep.csv", csv.str());
    const int used_threads = batch_threads(opt->threads, static_cast<int>(results.size()));
    const std::string where = opt->scheduler.empty()
                                  ? std::to_string(used_threads) + (used_threads == 1 ? " thread" : " threads")
                                  : "the Dask cluster at " + opt->scheduler;
    if (!opt->quiet)
      std::printf("%s: %zu point%s on %s in %.2f s (%d failed); wrote %s\n", task.name.c_str(), results.size(),
                  results.size() == 1 ? "" : "s", where.c_str(),
                  seconds, failed, (out / "sweep.csv").string().c_str());
    return failed > 0 ? static_cast<int>(kSimulationFailed) : static_cast<int>(kOk);
  };
}

}  // namespace addsim::cli
