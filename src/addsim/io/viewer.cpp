#include "addsim/io/viewer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
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

// A CSV file of numbers with a header row → {"header": [...], "columns": {name: [values]}}.
json read_numeric_csv(const fs::path& file) {
  std::istringstream in(read_text(file));
  std::string line;
  if (!std::getline(in, line)) throw InputError(file.string() + ": empty, expected a header row");
  std::vector<std::string> header;
  for (std::stringstream cells(line); std::getline(cells, line, ',');) header.push_back(line);
  std::vector<json> columns(header.size(), json::array());
  int row = 1;
  while (std::getline(in, line)) {
    ++row;
    if (line.empty()) continue;
    std::stringstream cells(line);
    std::string cell;
    for (std::size_t c = 0; c < header.size(); ++c) {
      if (!std::getline(cells, cell, ','))
        throw InputError(file.string() + ": row " + std::to_string(row) + " has fewer than " +
                         std::to_string(header.size()) + " values");
      char* end = nullptr;
      const double x = std::strtod(cell.c_str(), &end);
      if (end == cell.c_str()) throw InputError(file.string() + ": row " + std::to_string(row) + ": \"" + cell + "\" is not a number");
      // JSON has no inf/nan: such values (a failed step's residual) become null.
      columns[c].push_back(std::isfinite(x) ? json(x) : json(nullptr));
    }
  }
  json out = {{"header", header}, {"columns", json::object()}};
  for (std::size_t c = 0; c < header.size(); ++c) out["columns"][header[c]] = std::move(columns[c]);
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
  data["steps"] = fs::exists(dir / "steps.csv") ? read_numeric_csv(dir / "steps.csv") : json(nullptr);
  data["energies"] = fs::exists(dir / "energies.csv") ? read_numeric_csv(dir / "energies.csv") : json(nullptr);
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
