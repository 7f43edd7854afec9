#include "addsim/io/viewer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "addsim/core/error.h"
#include "addsim/io/npy.h"
#include "addsim/io/output.h"
#include "addsim/io/viewer_assets.h"

namespace addsim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The command that installs three.js (the page and the CLI name it when it is missing).
constexpr const char* kInstallCommand = "bash scripts/install-deps.sh";

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json read_json_file(const fs::path& file) {
  try {
    return json::parse(read_text(file));
  } catch (const json::parse_error& e) {
    throw InputError(file.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// A CSV file of numbers with a header row, as columns (inf/nan kept as non-finite values).
struct Columns {
  std::vector<std::string> header;
  std::vector<std::vector<double>> values;  // one per header column
  std::size_t rows() const { return values.empty() ? 0 : values[0].size(); }
};

Columns read_csv_columns(const fs::path& file) {
  std::istringstream in(read_text(file));
  std::string line;
  if (!std::getline(in, line)) throw InputError(file.string() + ": empty, expected a header row");
  Columns csv;
  for (std::stringstream cells(line); std::getline(cells, line, ',');) csv.header.push_back(line);
  csv.values.resize(csv.header.size());
  int row = 1;
  while (std::getline(in, line)) {
    ++row;
    if (line.empty()) continue;
    std::stringstream cells(line);
    std::string cell;
    for (std::size_t c = 0; c < csv.header.size(); ++c) {
      if (!std::getline(cells, cell, ','))
        throw InputError(file.string() + ": row " + std::to_string(row) + " has fewer than " +
                         std::to_string(csv.header.size()) + " values");
      char* end = nullptr;
      const double x = std::strtod(cell.c_str(), &end);
      if (end == cell.c_str()) throw InputError(file.string() + ": row " + std::to_string(row) + ": \"" + cell + "\" is not a number");
      csv.values[c].push_back(x);
    }
  }
  return csv;
}

// The per-step series of a CSV file for the page's plots → {"header": [...], "columns":
// {name: [values]}, "rows": rows in the file, "bucket": rows per bucket}. Within
// `max_bytes` (estimated at 24 bytes per JSON number) every row is embedded (bucket 1).
// Beyond it, runs of `bucket` consecutive rows become two rows, the column-wise minimum and
// maximum of their finite values (null when a column has none), so that a spike in a residual
// or an energy stays visible at any length; step and time, which increase, give each bucket's
// first and last. JSON has no inf/nan: such values (a failed step's residual) become null.
json plot_series(const fs::path& file, std::size_t max_bytes) {
  const Columns csv = read_csv_columns(file);
  const std::size_t rows = csv.rows(), cols = std::max<std::size_t>(1, csv.header.size());
  const std::size_t max_rows = std::max<std::size_t>(4, max_bytes / (24 * cols));
  const std::size_t bucket = rows <= max_rows ? 1 : (rows + max_rows / 2 - 1) / (max_rows / 2);
  auto value = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json out = {{"header", csv.header}, {"columns", json::object()}, {"rows", rows}, {"bucket", bucket}};
  for (std::size_t c = 0; c < csv.header.size(); ++c) {
    const std::vector<double>& v = csv.values[c];
    json column = json::array();
    if (bucket == 1) {
      for (double x : v) column.push_back(value(x));
    } else {
      for (std::size_t first = 0; first < rows; first += bucket) {
        const std::size_t last = std::min(rows, first + bucket);
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (std::size_t i = first; i < last; ++i)
          if (std::isfinite(v[i])) {
            lo = std::min(lo, v[i]);
            hi = std::max(hi, v[i]);
          }
        column.push_back(value(lo));
        column.push_back(value(hi));
      }
    }
    out["columns"][csv.header[c]] = std::move(column);
  }
  return out;
}

std::string base64(const unsigned char* data, std::size_t n) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve(4 * ((n + 2) / 3));
  for (std::size_t i = 0; i < n; i += 3) {
    const unsigned v = (unsigned(data[i]) << 16) | (i + 1 < n ? unsigned(data[i + 1]) << 8 : 0u) |
                       (i + 2 < n ? unsigned(data[i + 2]) : 0u);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// The DOFs the page draws: points of particle bodies and sheets, FEM surface nodes, rigid
// poses and the DOFs springs and joints hang on (sorted, each x, y, z of a point).
std::vector<int> drawn_dofs(const json& meta) {
  std::set<int> dofs;
  auto point = [&](int dof) {
    for (int c = 0; c < 3; ++c) dofs.insert(dof + c);
  };
  for (const json& b : meta.at("bodies")) {
    const int offset = b.at("dof_offset").get<int>();
    const json& g = b.value("geometry", json::object());
    const std::string kind = g.value("kind", "");
    if (kind == "fem") {
      for (const json& t : g.at("surface_triangles"))
        for (const json& node : t) point(offset + 3 * node.get<int>());
    } else if (kind == "rigid") {
      for (int c = 0; c < 6; ++c) dofs.insert(offset + c);
    } else {
      for (int c = 0; c < b.at("dof_count").get<int>(); ++c) dofs.insert(offset + c);
    }
  }
  for (const char* list : {"springs", "joints"})
    for (const json& s : meta.value(list, json::array()))
      for (const char* end : {"a", "b"})
        if (s.at(end).contains("dofs"))
          for (const json& d : s.at(end).at("dofs")) point(d.get<int>());
  return {dofs.begin(), dofs.end()};
}

// Replaces the one occurrence of `marker` in `text`.
void fill(std::string& text, const std::string& marker, const std::string& value) {
  const std::size_t at = text.find(marker);
  ADDSIM_CHECK(at != std::string::npos, "viewer template lacks " + marker);
  text.replace(at, marker.size(), value);
}

// JSON that can sit inside a <script> element: "</" would end it.
std::string script_json(const json& j) {
  std::string s = j.dump();
  for (std::size_t at = s.find("</"); at != std::string::npos; at = s.find("</", at)) s.replace(at, 2, "<\\/");
  return s;
}

}  // namespace

fs::path default_three_js() {
  if (const char* env = std::getenv("ADDSIM_THREE_JS"); env && *env) return env;
  return fs::path(ADDSIM_SOURCE_DIR_DEFAULT) / "third_party/npm/node_modules/three/build/three.cjs";
}

ViewerResult write_viewer(const fs::path& dir, const ViewerOptions& options) {
  if (!fs::exists(dir / "meta.json"))
    throw InputError(dir.string() + ": not an addsim output folder (no meta.json); write one with `addsim simulate SCENE --out " +
                     dir.string() + "`");
  const json meta = read_json_file(dir / "meta.json");
  if (!meta.contains("bodies") || !meta.contains("num_dofs"))
    throw InputError((dir / "meta.json").string() + ": lacks \"bodies\" or \"num_dofs\"");
  if (!meta["bodies"].empty() && !meta["bodies"][0].contains("geometry"))
    throw InputError((dir / "meta.json").string() +
                     ": written by an older addsim without geometry; rerun the simulation to draw it");
  const NpyArray traj = read_npy(dir / "trajectory.npy");
  if (traj.cols != meta["num_dofs"].get<std::size_t>())
    throw InputError((dir / "trajectory.npy").string() + ": has " + std::to_string(traj.cols) +
                     " columns, meta.json says num_dofs = " + std::to_string(meta["num_dofs"].get<int>()));

  ViewerResult result;
  result.page = dir / "index.html";
  result.states_stored = static_cast<int>(traj.rows);

  // Decimate the states to the budget; the last state is always kept.
  const std::vector<int> dofs = drawn_dofs(meta);
  const std::size_t bytes_per_state = std::max<std::size_t>(1, 4 * dofs.size());
  const std::size_t budget_states = std::max<std::size_t>(2, options.max_trajectory_bytes / bytes_per_state);
  const std::size_t stride = traj.rows <= budget_states ? 1 : (traj.rows - 1 + budget_states - 2) / (budget_states - 1);
  std::vector<int> states;
  for (std::size_t i = 0; i < traj.rows; i += stride) states.push_back(static_cast<int>(i));
  if (traj.rows > 0 && states.back() != static_cast<int>(traj.rows) - 1) states.push_back(static_cast<int>(traj.rows) - 1);
  result.states_embedded = static_cast<int>(states.size());
  std::vector<float> frames;
  frames.reserve(states.size() * dofs.size());
  for (int i : states)
    for (int d : dofs) frames.push_back(static_cast<float>(traj.values[static_cast<std::size_t>(i) * traj.cols + d]));
  static_assert(sizeof(float) == 4, "Float32 frames");
  std::string frames64 = base64(reinterpret_cast<const unsigned char*>(frames.data()), 4 * frames.size());

  json data;
  data["meta"] = meta;
  data["columns"] = dofs;
  data["states"] = states;
  data["states_stored"] = traj.rows;
  data["steps"] = fs::exists(dir / "steps.csv") ? plot_series(dir / "steps.csv", options.max_series_bytes) : json(nullptr);
  data["energies"] =
      fs::exists(dir / "energies.csv") ? plot_series(dir / "energies.csv", options.max_series_bytes) : json(nullptr);
  for (const char* key : {"steps", "energies"})
    if (data[key].is_object()) {
      result.series_rows = std::max(result.series_rows, data[key]["rows"].get<std::size_t>());
      result.series_bucket = std::max(result.series_bucket, data[key]["bucket"].get<std::size_t>());
    }
  data["summary"] = fs::exists(dir / "summary.json") ? read_json_file(dir / "summary.json") : json(nullptr);
  data["plots"] = fs::exists(dir / "plots.json") ? read_json_file(dir / "plots.json") : json(nullptr);
  data["install_command"] = kInstallCommand;

  const fs::path three = options.three_js.empty() ? default_three_js() : options.three_js;
  std::string three_script;
  if (fs::is_regular_file(three)) {
    // The CommonJS build assigns to `exports`; one function scope turns it into the global THREE.
    three_script = "var THREE = (function () { var exports = {}; var module = { exports: exports };\n" + read_text(three) +
                   "\nreturn exports; })();";
    result.has_three = true;
  } else {
    result.notice = "three.js not found at " + three.string() + "; install it with `" + kInstallCommand +
                    "` (npm package three), then run `addsim view " + dir.string() + "`";
    data["notice"] = result.notice;
  }

  std::string page = viewer_assets::kHtml;
  std::string title = data["summary"].is_object() ? data["summary"].value("scene", "addsim") : "addsim";
  for (const char c : std::string("<>&\"")) std::replace(title.begin(), title.end(), c, ' ');
  fill(page, "<!--ADDSIM_TITLE-->", "addsim: " + title);
  fill(page, "/*ADDSIM_STYLE*/", viewer_assets::kCss);
  fill(page, "/*ADDSIM_THREE*/", three_script);
  fill(page, "/*ADDSIM_DATA*/", "window.ADDSIM_DATA = " + script_json(data) + ";\nwindow.ADDSIM_FRAMES = \"" +
                                    frames64 + "\";");
  fill(page, "/*ADDSIM_VIEWER*/", viewer_assets::kJs);

  std::ofstream out(result.page, std::ios::binary);
  if (!out) throw InputError(result.page.string() + ": cannot open for writing");
  out << page;
  if (!out) throw InputError(result.page.string() + ": write failed");
  return result;
}

ViewerResult write_viewer(const fs::path& dir, const Scene& scene, const Trajectory& traj, const json& plots,
                          const ViewerOptions& options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw InputError(dir.string() + ": cannot create output directory");
  // The run's data files (no summary.json: the caller writes its own).
  RunWriter(dir, scene, traj.p, "", /*summary=*/false).finish(traj);
  if (!plots.is_null()) {
    std::ofstream out(dir / "plots.json");
    if (!out) throw InputError((dir / "plots.json").string() + ": cannot open for writing");
    out << plots.dump(1) << "\n";
  } else {
    fs::remove(dir / "plots.json", ec);
  }
  return write_viewer(dir, options);
}

}  // namespace addsim
