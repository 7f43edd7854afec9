#include "addsim/io/task.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"
#include "addsim/io/json_path.h"
#include "addsim/io/json_reader.h"
#include "addsim/fem/fem_body.h"
#include "addsim/objectives/markers.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/objectives/tracking_terms.h"

namespace addsim {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& file, const std::string& what) { return read_input_file(file, what); }

// Everything a term parser needs.
struct TaskContext {
  Task* task = nullptr;
  fs::path dir;  // directory of the task file (data paths are relative to it)
  VecX q0;       // initial state at the scene defaults (markers given by position embed here)
  // Embeds the markers given by position at q0; builds each FEM body's tet grid once per load.
  std::unique_ptr<MarkerEmbedder> embedder;
};

// An integer that fits in int: larger JSON integers (4294967296) would wrap in get<int>().
int integer_value(const json& v, const std::string& source, const std::string& path) {
  if (!v.is_number_integer()) fail_at(source, path, "must be an integer, got " + describe(v));
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                             : (v.get<std::int64_t>() < std::numeric_limits<int>::min() ||
                                v.get<std::int64_t>() > std::numeric_limits<int>::max()))
    fail_at(source, path, "integer " + describe(v) + " is out of range");
  return v.get<int>();
}

// A body named by index or by its scene name.
int body_ref(ObjectReader& r, const Task& t, const std::string& key = "body") {
  const auto& bodies = t.scene.bodies;
  const json& v = r.has(key) ? r.raw(key) : json(0);
  if (v.is_number_integer()) {
    const int i = integer_value(v, r.source(), join_path(r.path(), key));
    if (i < 0 || i >= static_cast<int>(bodies.size()))
      r.fail(key, "body " + std::to_string(i) + " does not exist (the scene has " + std::to_string(bodies.size()) +
                      ")");
    return i;
  }
  if (v.is_string()) {
    for (size_t i = 0; i < bodies.size(); ++i)
      if (bodies[i].name == v.get<std::string>()) return static_cast<int>(i);
    r.fail(key, "no body named " + describe(v));
  }
  r.fail(key, "must be a body index or name, got " + describe(v));
}

int handle_ref(ObjectReader& r, const Task& t) {
  const auto& handles = t.scene.model->handles();
  const json& v = r.has("handle") ? r.raw("handle") : json(0);
  if (v.is_number_integer()) {
    const int i = integer_value(v, r.source(), join_path(r.path(), "handle"));
    if (i < 0 || i >= static_cast<int>(handles.size())) r.fail("handle", "handle " + std::to_string(i) + " does not exist");
    return i;
  }
  if (v.is_string()) {
    for (size_t i = 0; i < handles.size(); ++i)
      if (handles[i].name == v.get<std::string>()) return static_cast<int>(i);
    r.fail("handle", "no handle named " + describe(v));
  }
  r.fail("handle", "must be a handle index or name, got " + describe(v));
}

// "steps": [first, last] or "step": i (negative: from the end); `fallback` when neither.
StepWindow window(ObjectReader& r, StepWindow fallback, int n) {
  const bool has_steps = r.has("steps"), has_step = r.has("step");
  if (has_steps && has_step) r.fail("step", "give either step or steps, not both");
  StepWindow w = fallback;
  if (has_step) {
    const int i = integer_value(r.raw("step"), r.source(), join_path(r.path(), "step"));
    w = StepWindow::at(i);
  } else if (has_steps) {
    const json& v = r.raw("steps");
    const std::string p = join_path(r.path(), "steps");
    if (!v.is_array() || v.size() != 2) fail_at(r.source(), p, "must be [first, last], got " + describe(v));
    w = StepWindow::range(integer_value(v[0], r.source(), p + ".0"), integer_value(v[1], r.source(), p + ".1"));
  }
  try {
    w.resolve(n, "window");
  } catch (const InputError&) {
    r.fail(has_step ? "step" : "steps", "is empty or outside steps [0, " + std::to_string(n) + "] (negative counts from the end)");
  }
  return w;
}

int absolute_step(ObjectReader& r, const std::string& key, int n) {
  int i = integer_value(r.raw(key), r.source(), join_path(r.path(), key));
  if (i < 0) i += n + 1;
  if (i < 0 || i > n) r.fail(key, "is outside steps [0, " + std::to_string(n) + "]");
  return i;
}

// One marker given as an object under `key`: {"node": k}, {"local": [x, y, z]} (a point in a
// rigid body's frame) or {"position": [x, y, z]} (embedded at that step-0 world position).
// Errors name the key.
Marker marker_spec(ObjectReader& r, const std::string& key, int body, const TaskContext& c) {
  const Model& model = *c.task->scene.model;
  ObjectReader m(r.raw(key), join_path(r.path(), key), r.source());
  std::optional<Marker> marker;
  try {
    marker = m.has("node") ? node_marker(model, body, m.integer("node", std::nullopt, 0))
             : m.has("local") ? rigid_marker(model, body, m.vec3("local", std::nullopt))
                              : c.embedder->embed(body, m.vec3("position", std::nullopt));
  } catch (const InputError& e) {
    if (std::string_view(e.what()).find(m.path()) != std::string_view::npos) throw;
    fail_at(r.source(), m.path(), e.what());
  }
  m.finish();
  return *marker;
}

std::vector<Marker> parse_markers(ObjectReader& r, int body, const TaskContext& c) {
  const Model& model = *c.task->scene.model;
  const json& list = r.list("markers");
  if (list.empty()) r.fail("markers", "needs at least one marker");
  std::vector<Marker> markers;
  for (size_t k = 0; k < list.size(); ++k) {
    ObjectReader m(list[k], join_path(r.path(), "markers." + std::to_string(k)), r.source());
    const int given = m.has("position") + m.has("node") + m.has("tet") + m.has("local");
    if (given != 1) fail_at(m.source(), m.path(), "give exactly one of position, node, tet (with weights) or local");
    try {
      if (m.has("position")) {
        markers.push_back(c.embedder->embed(body, m.vec3("position", std::nullopt)));
      } else if (m.has("node")) {
        markers.push_back(node_marker(model, body, m.integer("node", std::nullopt, 0)));
      } else if (m.has("local")) {
        markers.push_back(rigid_marker(model, body, m.vec3("local", std::nullopt)));
      } else {
        const int tet = m.integer("tet", std::nullopt, 0);
        const json& w = m.raw("weights");
        if (!w.is_array() || w.size() != 4) m.fail("weights", "must be 4 barycentric weights, got " + describe(w));
        std::array<double, 4> ws{};
        for (int a = 0; a < 4; ++a)
          ws[a] = to_number(w[a], m.source(), join_path(m.path(), "weights." + std::to_string(a)), Bound::kAny);
        markers.push_back(tet_marker(model, body, tet, ws));
      }
    } catch (const InputError& e) {
      if (std::string(e.what()).find(m.source()) == 0) throw;
      fail_at(m.source(), m.path(), e.what());
    }
    m.finish();
  }
  return markers;
}

// Marker data from CSV: columns step, marker, x, y, z[, visible]; missing rows are invisible.
std::vector<MarkerFrame> marker_frames_from_csv(ObjectReader& r, size_t num_markers, const TaskContext& c, int n) {
  const fs::path file = c.dir / r.string("data", std::nullopt);
  const auto [header, rows, lines] = read_numeric_csv(file);
  const std::vector<std::string> need = {"step", "marker", "x", "y", "z"};
  if (header.size() < 5 || !std::equal(need.begin(), need.end(), header.begin()) ||
      (header.size() == 6 && header[5] != "visible") || header.size() > 6)
    r.fail("data", file.string() + ": header must be step,marker,x,y,z[,visible]");
  std::map<int, MarkerFrame> frames;
  std::map<std::pair<int, int>, size_t> seen;  // (step, marker) → line of its row
  int visible_rows = 0;
  for (size_t l = 0; l < rows.size(); ++l) {
    const auto& row = rows[l];
    const std::string where = file.string() + ":" + std::to_string(lines[l]);
    const double step = row[0], marker = row[1];
    if (step != std::floor(step) || step < 0 || step > n)
      throw InputError(where + ": step must be an integer in [0, " + std::to_string(n) + "]");
    if (marker != std::floor(marker) || marker < 0 || marker >= static_cast<double>(num_markers))
      throw InputError(where + ": marker must be an integer in [0, " + std::to_string(num_markers - 1) + "]");
    // A second row for the same marker and step would silently replace the first.
    const auto [it, fresh] = seen.emplace(std::make_pair(static_cast<int>(step), static_cast<int>(marker)), lines[l]);
    if (!fresh)
      throw InputError(where + ": marker " + std::to_string(static_cast<int>(marker)) + " at step " +
                       std::to_string(static_cast<int>(step)) + " is already given on line " +
                       std::to_string(it->second));
    MarkerFrame& f = frames[static_cast<int>(step)];
    if (f.positions.empty()) {
      f.step = static_cast<int>(step);
      f.positions.assign(num_markers, Vec3::Zero());
      f.visible.assign(num_markers, false);
    }
    // `visible` is a 0/1 flag: any other value (0.5, -1, 2, an empty field) is a typo or a
    // confidence weight, which the objective does not take.
    if (header.size() == 6 && row[5] != 0.0 && row[5] != 1.0) {
      std::ostringstream v;
      v << row[5];
      throw InputError(where + ": column 6 (visible) must be 0 or 1, got " +
                       (std::isnan(row[5]) ? std::string("an empty field or nan") : v.str()));
    }
    const bool visible = header.size() == 6 ? row[5] == 1.0 : true;
    const Vec3 x(row[2], row[3], row[4]);
    if (visible && !x.allFinite()) throw InputError(where + ": a visible marker needs finite x, y, z");
    f.positions[static_cast<int>(marker)] = visible ? x : Vec3::Zero();
    f.visible[static_cast<int>(marker)] = visible;
    visible_rows += visible ? 1 : 0;
  }
  // No visible observation: Φ would be 0 for every parameter and an optimiser would stop at
  // once, "converged".
  if (visible_rows == 0)
    r.fail("data", file.string() + ": has no visible marker row (" + std::to_string(rows.size()) + " rows)");
  std::vector<MarkerFrame> out;
  for (auto& [s, f] : frames) out.push_back(std::move(f));
  return out;
}

std::vector<MarkerFrame> marker_frames_inline(ObjectReader& r, size_t num_markers, int n) {
  const json& list = r.list("frames");
  std::vector<MarkerFrame> frames;
  for (size_t k = 0; k < list.size(); ++k) {
    ObjectReader f(list[k], join_path(r.path(), "frames." + std::to_string(k)), r.source());
    MarkerFrame frame;
    frame.step = absolute_step(f, "step", n);
    frame.positions = f.vec3_list("positions");
    if (frame.positions.size() != num_markers)
      f.fail("positions", "has " + std::to_string(frame.positions.size()) + " entries for " +
                              std::to_string(num_markers) + " markers");
    frame.visible.assign(num_markers, true);
    if (f.has("visible")) {
      const json& v = f.raw("visible");
      if (!v.is_array() || v.size() != num_markers) f.fail("visible", "must list one true/false per marker");
      for (size_t m = 0; m < num_markers; ++m) {
        if (!v[m].is_boolean()) fail_at(f.source(), join_path(f.path(), "visible." + std::to_string(m)), "must be true or false");
        frame.visible[m] = v[m].get<bool>();
      }
    }
    f.finish();
    frames.push_back(std::move(frame));
  }
  if (frames.empty()) r.fail("frames", "needs at least one frame");
  return frames;
}

std::vector<PointCloudFrame> point_cloud_frames(ObjectReader& r, const TaskContext& c, int n) {
  std::map<int, PointCloudFrame> frames;
  if (r.has("data")) {
    const fs::path file = c.dir / r.string("data", std::nullopt);
    const auto [header, rows, lines] = read_numeric_csv(file);
    if (header != std::vector<std::string>{"step", "x", "y", "z"}) r.fail("data", file.string() + ": header must be step,x,y,z");
    for (size_t l = 0; l < rows.size(); ++l) {
      const auto& row = rows[l];
      const std::string where = file.string() + ":" + std::to_string(lines[l]);
      if (row[0] != std::floor(row[0]) || row[0] < 0 || row[0] > n)
        throw InputError(where + ": step must be an integer in [0, " + std::to_string(n) + "]");
      const Vec3 x(row[1], row[2], row[3]);
      if (!x.allFinite()) throw InputError(where + ": x, y, z must be finite");
      PointCloudFrame& f = frames[static_cast<int>(row[0])];
      f.step = static_cast<int>(row[0]);
      f.points.push_back(x);
    }
  } else {
    const json& list = r.list("frames");
    for (size_t k = 0; k < list.size(); ++k) {
      ObjectReader f(list[k], join_path(r.path(), "frames." + std::to_string(k)), r.source());
      const int step = absolute_step(f, "step", n);
      PointCloudFrame& frame = frames[step];
      frame.step = step;
      for (const Vec3& x : f.vec3_list("points")) frame.points.push_back(x);
      f.finish();
    }
  }
  if (frames.empty()) r.fail("data", "needs point-cloud data (data file or frames)");
  std::vector<PointCloudFrame> out;
  for (auto& [s, f] : frames) out.push_back(std::move(f));
  return out;
}

// The point a target term tracks: the body's centre of mass, or with "tracked":
// {"nodes": "boundary" | "all" | [k, ...], "weights": "area" | "uniform" | [w, ...]} a weighted
// mean of a node set (tracked_point.h). "boundary" (FEM bodies) defaults to area weights,
// every other node set to uniform ones; "area" needs boundary nodes.
TrackedPoint tracked_point(ObjectReader& r, int body, const Model& model) {
  if (!r.has("tracked")) return TrackedPoint::center_of_mass(body);
  ObjectReader t(r.raw("tracked"), join_path(r.path(), "tracked"), r.source());
  const Body& b = *model.bodies()[body];
  if (b.kind() == BodyKind::kRigid) r.fail("tracked", "needs an FEM or particle body (body '" + b.name() + "' is rigid)");
  const auto* fb = b.kind() == BodyKind::kFem ? static_cast<const FemBody*>(&b) : nullptr;
  const int count = fb ? fb->num_nodes() : static_cast<const ParticleBody&>(b).count();
  // Rest boundary area per node (FEM bodies only): the "area" weights.
  std::map<int, double> area;
  if (fb) {
    std::vector<int> bn;
    std::vector<double> bw;
    boundary_area_weights(*fb, bn, bw);
    for (size_t k = 0; k < bn.size(); ++k) area[bn[k]] = bw[k];
  }
  const json& nv = t.raw("nodes");
  const std::string np = join_path(t.path(), "nodes");
  std::vector<int> nodes;
  bool boundary = false;
  if (nv.is_string()) {
    const std::string which = nv.get<std::string>();
    if (which == "boundary") {
      if (!fb) fail_at(t.source(), np, "\"boundary\" needs an FEM body");
      boundary = true;
      for (const auto& [k, a] : area) nodes.push_back(k);
    } else if (which == "all") {
      for (int k = 0; k < count; ++k) nodes.push_back(k);
    } else {
      fail_at(t.source(), np, "must be \"boundary\", \"all\" or a list of node indices, got " + describe(nv));
    }
  } else if (nv.is_array() && !nv.empty()) {
    for (size_t k = 0; k < nv.size(); ++k) {
      const std::string kp = join_path(np, std::to_string(k));
      const int node = integer_value(nv[k], t.source(), kp);
      if (node < 0 || node >= count)
        fail_at(t.source(), kp, "node " + std::to_string(node) + " is outside [0, " + std::to_string(count - 1) + "]");
      if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) fail_at(t.source(), kp, "repeats node " + std::to_string(node));
      nodes.push_back(node);
    }
  } else {
    fail_at(t.source(), np, "must be \"boundary\", \"all\" or a non-empty list of node indices, got " + describe(nv));
  }
  std::vector<double> weights;
  const std::string wp = join_path(t.path(), "weights");
  const json wv = t.has("weights") ? t.raw("weights") : json(boundary ? "area" : "uniform");
  if (wv.is_string() && wv.get<std::string>() == "uniform") {
    weights.assign(nodes.size(), 1.0);
  } else if (wv.is_string() && wv.get<std::string>() == "area") {
    if (!fb) fail_at(t.source(), wp, "\"area\" needs an FEM body");
    for (int k : nodes) {
      const auto it = area.find(k);
      if (it == area.end()) fail_at(t.source(), wp, "\"area\" needs boundary nodes; node " + std::to_string(k) + " is interior");
      weights.push_back(it->second);
    }
  } else if (wv.is_array()) {
    if (wv.size() != nodes.size())
      fail_at(t.source(), wp, "has " + std::to_string(wv.size()) + " entries for " + std::to_string(nodes.size()) + " nodes");
    for (size_t k = 0; k < wv.size(); ++k)
      weights.push_back(to_number(wv[k], t.source(), join_path(wp, std::to_string(k)), Bound::kNonNegative));
  } else {
    fail_at(t.source(), wp, "must be \"area\", \"uniform\" or a list of numbers >= 0, got " + describe(wv));
  }
  t.finish();
  try {
    return TrackedPoint::node_mean(body, std::move(nodes), std::move(weights));
  } catch (const InputError& e) {
    fail_at(t.source(), t.path(), e.what());
  }
}

void parse_term(ObjectReader& r, TaskContext& c) {
  Task& t = *c.task;
  const Model& model = *t.scene.model;
  const int n = model.scheme().steps;
  const std::string type =
      r.choice("type", std::nullopt,
               {"com_target", "com_coordinate", "com_line", "markers", "feature_points", "point_cloud", "pose", "control_smoothness",
                "soft_min_distance", "upright"});
  const double weight = r.number("weight", 1.0, Bound::kNonNegative);
  std::unique_ptr<ObjectiveTerm> term;
  std::unique_ptr<ObjectiveTerm> extra;  // the upright regulariser of a pose term
  double extra_weight = 0.0;
  if (type == "com_target") {
    const int body = body_ref(r, t);
    term = std::make_unique<CenterOfMassTarget>(tracked_point(r, body, model), r.vec3("target", std::nullopt),
                                                window(r, StepWindow::final_step(), n));
  } else if (type == "com_coordinate") {
    const int body = body_ref(r, t);
    const Vec3 axis = r.vec3("axis", std::nullopt);
    if (!(axis.norm() > 0.0)) r.fail("axis", "must be non-zero");
    term = std::make_unique<CenterOfMassCoordinate>(tracked_point(r, body, model), axis,
                                                    window(r, StepWindow::final_step(), n));
  } else if (type == "com_line") {
    const int body = body_ref(r, t);
    const Vec3 point = r.vec3("point", std::nullopt);
    const Vec3 dir = r.vec3("direction", std::nullopt);
    if (!(dir.norm() > 0.0)) r.fail("direction", "must be non-zero");
    term = std::make_unique<CenterOfMassLine>(tracked_point(r, body, model), point, dir,
                                              window(r, StepWindow::range(0, -1), n));
  } else if (type == "markers" || type == "feature_points") {
    const int body = body_ref(r, t);
    std::vector<Marker> markers = parse_markers(r, body, c);
    std::vector<MarkerFrame> frames = type == "markers" ? marker_frames_from_csv(r, markers.size(), c, n)
                                                        : marker_frames_inline(r, markers.size(), n);
    term = std::make_unique<MarkerTrajectories>(std::move(markers), std::move(frames));
  } else if (type == "point_cloud") {
    const int body = body_ref(r, t);
    if (model.bodies()[body]->kind() != BodyKind::kFem) r.fail("body", "must be an FEM body (it has no boundary triangles)");
    term = std::make_unique<PointCloudDistance>(body, point_cloud_frames(r, c, n));
  } else if (type == "pose") {
    const int body = body_ref(r, t);
    if (model.bodies()[body]->kind() == BodyKind::kRigid) r.fail("body", "must be a particle or FEM body (pose targets nodes)");
    const json& nodes = r.list("nodes");
    const std::vector<Vec3> targets = r.vec3_list("targets");
    if (nodes.size() != targets.size())
      r.fail("targets", "has " + std::to_string(targets.size()) + " entries for " + std::to_string(nodes.size()) + " nodes");
    std::vector<DofIndex> dofs;
    for (size_t k = 0; k < nodes.size(); ++k) {
      const std::string p = join_path(r.path(), "nodes." + std::to_string(k));
      const int node = integer_value(nodes[k], r.source(), p);
      try {
        dofs.push_back(node_marker(model, body, node).dofs[0]);
      } catch (const InputError& e) {
        fail_at(r.source(), p, e.what());
      }
    }
    const StepWindow w = window(r, StepWindow::final_step(), n);
    term = std::make_unique<PointTargets>(std::move(dofs), targets, w);
    if (r.has("upright")) {
      ObjectReader u(r.raw("upright"), join_path(r.path(), "upright"), r.source());
      const Marker bottom = node_marker(model, body, u.integer("bottom", std::nullopt, 0));
      const Marker top = node_marker(model, body, u.integer("top", std::nullopt, 0));
      const Vec3 up = u.vec3("direction", Vec3::UnitZ());
      if (!(up.norm() > 0.0)) u.fail("direction", "must be non-zero");
      const double uw = u.number("weight", 1.0, Bound::kNonNegative);
      const StepWindow uwin = window(u, w, n);
      u.finish();
      extra = std::make_unique<UprightAxis>(bottom, top, up, uwin);
      extra_weight = weight * uw;
    }
  } else if (type == "upright") {
    // The "stay upright" regulariser on its own: the axis between two markers, each a node
    // ({"node": k}), a point fixed in a rigid body ({"local": [x, y, z]}) or a point embedded
    // in the body at its step-0 position ({"position": [x, y, z]}).
    const int body = body_ref(r, t);
    const Marker bottom = marker_spec(r, "bottom", body, c);
    const Marker top = marker_spec(r, "top", body, c);
    const Vec3 up = r.vec3("direction", Vec3::UnitZ());
    if (!(up.norm() > 0.0)) r.fail("direction", "must be non-zero");
    term = std::make_unique<UprightAxis>(bottom, top, up, window(r, StepWindow::final_step(), n));
  } else if (type == "control_smoothness") {
    // "control": one parameter path or a list of them (per-step controls), else "handle".
    std::vector<ControlRows> controls;
    if (r.has("control")) {
      if (r.has("handle")) r.fail("control", "give either control or handle");
      const json& v = r.raw("control");
      const std::string cp = join_path(r.path(), "control");
      const json list = v.is_array() ? v : json::array({v});
      if (list.empty()) fail_at(r.source(), cp, "needs at least one parameter path");
      for (std::size_t k = 0; k < list.size(); ++k) {
        const std::string kp = v.is_array() ? join_path(cp, std::to_string(k)) : cp;
        if (!list[k].is_string()) fail_at(r.source(), kp, "expected a parameter path, got " + describe(list[k]));
        const auto range = model.params().resolve(list[k].get<std::string>());
        if (!range || range->entry->kind != ParamKind::kControl || range->size != range->entry->size() ||
            range->entry->rows < 2)
          fail_at(r.source(), kp, "must name a whole per-step control (e.g. handles.0.positions, " +
                                      std::string("joints.2.target_angles, bodies.1.poses), got ") + describe(list[k]));
        controls.push_back({range->offset, range->entry->rows, range->entry->cols, range->entry->path});
      }
    }
    const int handle = controls.empty() ? handle_ref(r, t) : -1;
    StepWindow rows = StepWindow::range(0, -1);
    if (r.has("rows")) {
      const json& v = r.raw("rows");
      const std::string p = join_path(r.path(), "rows");
      if (!v.is_array() || v.size() != 2) fail_at(r.source(), p, "must be [first, last], got " + describe(v));
      rows = StepWindow::range(integer_value(v[0], r.source(), p + ".0"), integer_value(v[1], r.source(), p + ".1"));
      try {
        rows.resolve(n, "rows");
      } catch (const InputError&) {
        r.fail("rows", "is empty or outside rows [0, " + std::to_string(n) + "]");
      }
    }
    term = controls.empty() ? std::make_unique<ControlSmoothness>(handle, rows)
                            : std::make_unique<ControlSmoothness>(std::move(controls), rows);
  } else {
    const int body = body_ref(r, t);
    const Vec3 target = r.vec3("target", std::nullopt);
    const double alpha = r.number("alpha", std::nullopt, Bound::kPositive);
    const StepWindow w = window(r, StepWindow::range(0, -1), n);
    if (r.has("marker")) {
      if (r.has("tracked")) r.fail("tracked", "give either marker or tracked");
      term = std::make_unique<SoftMinDistance>(marker_spec(r, "marker", body, c), target, alpha, w);
    } else {
      term = std::make_unique<SoftMinDistance>(tracked_point(r, body, model), target, alpha, w);
    }
  }
  r.finish();
  t.objective.add(weight, std::move(term));
  t.term_types.push_back(type);
  if (extra) {
    t.objective.add(extra_weight, std::move(extra));
    t.term_types.push_back("upright");
  }
}

std::vector<ParameterSpec> parse_parameters(ObjectReader& top, std::vector<std::pair<bool, bool>>& given) {
  const json& list = top.list("parameters");
  if (list.empty()) top.fail("parameters", "needs at least one parameter path");
  std::vector<ParameterSpec> specs;
  for (size_t k = 0; k < list.size(); ++k) {
    const std::string path = "parameters." + std::to_string(k);
    ParameterSpec s;
    if (list[k].is_string()) {
      s.path = list[k].get<std::string>();
      given.emplace_back(false, false);
    } else {
      ObjectReader r(list[k], path, top.source());
      s.path = r.string("path", std::nullopt);
      s.log_scale = r.boolean("log", false);
      given.emplace_back(r.has("lower"), r.has("upper"));
      s.lower = r.number("lower", -std::numeric_limits<double>::infinity());
      s.upper = r.number("upper", std::numeric_limits<double>::infinity());
      s.scale = r.number("scale", 1.0, Bound::kPositive);
      r.finish();
    }
    specs.push_back(std::move(s));
  }
  return specs;
}

// Bounds a task gives must lie inside the parameter's own valid range (ParamEntry bounds):
// a bound outside it is a mistake, not something to intersect silently.
void check_spec_bounds(const ParameterTable& table, const ParameterSpec& s, const std::string& source,
                       const std::string& path, bool given_lower, bool given_upper) {
  const std::optional<ParamRange> r = table.resolve(s.path);
  if (!r) return;  // ParameterSelection names unknown paths
  const ParamEntry& e = *r->entry;
  auto range = [&] {
    std::ostringstream o;
    o << "[" << e.lower << ", " << e.upper << "]";
    return o.str();
  };
  if (given_lower && (s.lower < e.lower || s.lower > e.upper))
    fail_at(source, path + ".lower", "is outside the parameter's valid range " + range());
  if (given_upper && (s.upper > e.upper || s.upper < e.lower))
    fail_at(source, path + ".upper", "is outside the parameter's valid range " + range());
}


// Keys of an `optimize` object applied onto `o` (the task's section, or a stage's changes).
void parse_optimize(ObjectReader& r, OptimizerOptions& o) {
  if (r.has("method")) o.method = parse_optimizer_method(r.choice("method", std::nullopt, {"lbfgsb", "gauss_newton", "adam", "cmaes"}), r.path());
  if (r.has("max_sims")) {
    const json& v = r.raw("max_sims");
    if (!v.is_number_integer() || v.get<long long>() < 1)
      r.fail("max_sims", "must be a positive integer (an empty budget cannot run), got " + describe(v));
    o.max_simulations = static_cast<long>(v.get<long long>());
  }
  if (r.has("max_seconds")) o.max_seconds = r.number("max_seconds", std::nullopt, Bound::kPositive);
  if (r.has("phi_ratio")) o.phi_ratio_tolerance = r.number("phi_ratio", std::nullopt, Bound::kNonNegative);
  if (r.has("phi_below")) o.phi_below = r.number("phi_below", std::nullopt, Bound::kNonNegative);
  if (r.has("gradient_norm")) o.gradient_tolerance = r.number("gradient_norm", std::nullopt, Bound::kNonNegative);
  if (r.has("phi_change")) o.phi_change_tolerance = r.number("phi_change", std::nullopt, Bound::kNonNegative);
  if (r.has("stall_sims")) {
    const json& v = r.raw("stall_sims");
    if (!v.is_number_integer() || v.get<long long>() < 0)
      r.fail("stall_sims", "must be an integer >= 0 (0: off), got " + describe(v));
    o.stall_simulations = static_cast<long>(v.get<long long>());
  }
  if (r.has("stall_factor")) {
    o.stall_factor = r.number("stall_factor", std::nullopt, Bound::kPositive);
    if (!(o.stall_factor > 1.0)) r.fail("stall_factor", "must be > 1 (the decrease of Phi that counts as progress)");
  }
  if (r.has("lbfgsb")) {
    ObjectReader m(r.raw("lbfgsb"), join_path(r.path(), "lbfgsb"), r.source());
    o.lbfgs_memory = m.integer("memory", o.lbfgs_memory, 1);
    o.lbfgs_max_linesearch = m.integer("max_linesearch", o.lbfgs_max_linesearch, 1);
    o.lbfgs_first_step = m.number("first_step", o.lbfgs_first_step, Bound::kNonNegative);
    o.lbfgs_first_step_phi = m.boolean("first_step_phi", o.lbfgs_first_step_phi);
    o.lbfgs_restart_iterations = m.integer("restart_iterations", static_cast<int>(o.lbfgs_restart_iterations), 0);
    if (m.has("line_search"))
      o.lbfgs_line_search = m.choice("line_search", std::nullopt, {"more_thuente", "weak_wolfe"}) == "weak_wolfe"
                                ? LbfgsLineSearch::kWeakWolfe
                                : LbfgsLineSearch::kMoreThuente;
    if (m.has("restart_factor")) {
      o.lbfgs_restart_factor = m.number("restart_factor", std::nullopt, Bound::kPositive);
      if (!(o.lbfgs_restart_factor > 1.0)) m.fail("restart_factor", "must be > 1 (the decrease of Phi that counts as progress)");
    }
    m.finish();
  }
  if (r.has("gauss_newton")) {
    ObjectReader m(r.raw("gauss_newton"), join_path(r.path(), "gauss_newton"), r.source());
    o.lm_damping = m.number("damping", o.lm_damping, Bound::kNonNegative);
    if (m.has("scale_floor")) {
      o.lm_scale_floor = m.number("scale_floor", std::nullopt, Bound::kNonNegative);
      if (!(o.lm_scale_floor <= 1.0)) m.fail("scale_floor", "must be in [0, 1] (a fraction of the largest column scale of J^T J)");
    }
    if (m.has("step_shrink")) {
      o.lm_step_shrink = m.number("step_shrink", std::nullopt, Bound::kNonNegative);
      if (!(o.lm_step_shrink < 1.0)) m.fail("step_shrink", "must be in [0, 1) (0: off; the scaled step after a rejection is at most this fraction of the rejected one)");
    }
    o.lm_shrink_after = m.integer("shrink_after", o.lm_shrink_after, 1);
    if (m.has("jacobian")) {
      const std::string mode = m.choice("jacobian", std::nullopt, {"auto", "direct", "adjoint"});
      o.gn_jacobian = mode == "direct" ? JacobianMode::kDirect : mode == "adjoint" ? JacobianMode::kAdjoint : JacobianMode::kAuto;
    }
    m.finish();
  }
  if (r.has("adam")) {
    ObjectReader m(r.raw("adam"), join_path(r.path(), "adam"), r.source());
    o.adam_learning_rate = m.number("learning_rate", o.adam_learning_rate, Bound::kPositive);
    o.adam_beta1 = m.number("beta1", o.adam_beta1, Bound::kNonNegative);
    o.adam_beta2 = m.number("beta2", o.adam_beta2, Bound::kNonNegative);
    if (o.adam_beta1 >= 1.0) m.fail("beta1", "must be in [0, 1)");
    if (o.adam_beta2 >= 1.0) m.fail("beta2", "must be in [0, 1)");
    o.adam_epsilon = m.number("epsilon", o.adam_epsilon, Bound::kPositive);
    o.adam_decay = m.number("decay", o.adam_decay, Bound::kPositive);
    if (o.adam_decay > 1.0) m.fail("decay", "must be in (0, 1] (the learning rate is multiplied by it every step)");
    m.finish();
  }
  if (r.has("cmaes")) {
    ObjectReader m(r.raw("cmaes"), join_path(r.path(), "cmaes"), r.source());
    o.cmaes_population = m.integer("population", o.cmaes_population, 5);
    o.cmaes_sigma = m.number("sigma", o.cmaes_sigma, Bound::kPositive);
    o.cmaes_seed = static_cast<unsigned>(m.integer("seed", static_cast<int>(o.cmaes_seed), 0));
    m.finish();
  }
  r.finish();
}

// `stages[k]`: name, parameters (paths of the task's parameters, optionally with their own
// bounds/log/scale), set (scene overrides), steps, scene (another scene file, relative to `dir`, the
// task file's folder; it must exist), optimize (changes to the task's section).
std::vector<TaskStage> parse_stages(ObjectReader& top, const Task& t, const std::vector<ParameterSpec>& task_specs,
                                     const fs::path& dir) {
  const json& list = top.list("stages");
  if (top.has("stages") && list.empty()) top.fail("stages", "needs at least one stage (or leave it out)");
  std::vector<TaskStage> stages;
  for (size_t k = 0; k < list.size(); ++k) {
    const std::string path = "stages." + std::to_string(k);
    ObjectReader r(list[k], path, top.source());
    TaskStage st;
    st.name = r.string("name", "stage " + std::to_string(k));
    st.options = t.optimize;
    if (r.has("parameters")) {
      const json& ps = r.list("parameters");
      if (ps.empty()) r.fail("parameters", "needs at least one parameter (or leave it out for all of the task's)");
      for (size_t j = 0; j < ps.size(); ++j) {
        const std::string ppath = join_path(path, "parameters." + std::to_string(j));
        std::optional<ObjectReader> pr;
        std::string name;
        if (ps[j].is_string()) {
          name = ps[j].get<std::string>();
        } else {
          pr.emplace(ps[j], ppath, top.source());
          name = pr->string("path", std::nullopt);
        }
        auto it = std::find_if(task_specs.begin(), task_specs.end(), [&](const ParameterSpec& s) { return s.path == name; });
        if (it == task_specs.end())
          fail_at(top.source(), ppath, "\"" + name + "\" is not one of the task's parameters");
        ParameterSpec s = *it;
        if (pr) {
          s.log_scale = pr->boolean("log", s.log_scale);
          const bool gl = pr->has("lower"), gu = pr->has("upper");
          s.lower = pr->number("lower", s.lower);
          s.upper = pr->number("upper", s.upper);
          s.scale = pr->number("scale", s.scale, Bound::kPositive);
          pr->finish();
          check_spec_bounds(t.scene.model->params(), s, top.source(), ppath, gl, gu);
        }
        st.specs.push_back(std::move(s));
      }
    } else {
      st.specs = task_specs;
    }
    if (r.has("set")) {
      const json& set = r.raw("set");
      if (!set.is_object()) r.fail("set", "must be an object of PATH: value overrides, got " + describe(set));
      for (const auto& [p, value] : set.items()) st.scene_overrides.push_back(p + "=" + value.dump());
    }
    if (r.has("steps")) st.scene_overrides.push_back("steps=" + std::to_string(r.integer("steps", std::nullopt, 1)));
    if (r.has("scene")) {
      st.scene = r.string("scene", std::nullopt);
      if (st.scene.empty()) r.fail("scene", "must name a scene file (relative to the task file)");
      const fs::path f = dir / st.scene;
      std::error_code ec;
      if (!fs::is_regular_file(f, ec)) r.fail("scene", "no scene file " + f.string());
    }
    if (r.has("objective_set")) {
      const json& set = r.raw("objective_set");
      if (!set.is_object())
        r.fail("objective_set", "must be an object of PATH: value overrides of the objective list, got " + describe(set));
      for (const auto& [p, value] : set.items()) st.objective_overrides.push_back("objective." + p + "=" + value.dump());
    }
    if (r.has("optimize")) {
      ObjectReader o(r.raw("optimize"), join_path(path, "optimize"), top.source());
      parse_optimize(o, st.options);
    }
    st.fallback = r.boolean("fallback", false);
    if (st.fallback && k == 0) r.fail("fallback", "the first stage cannot be a fallback (it runs when an earlier stage stops short)");
    if (st.fallback && !(stages.back().options.phi_ratio_tolerance > 0.0) && !(stages.back().options.phi_below > 0.0))
      r.fail("fallback", "the stage before it has no optimize.phi_ratio or phi_below, so it never counts as solved");
    // A list of stop reasons at `key` (`fallback_after`, `run_after`), each one of `allowed`.
    auto reasons_at = [&](const std::string& key, const std::vector<StopReason>& allowed) {
      const json& list = r.raw(key);
      if (!list.is_array() || list.empty()) r.fail(key, "must be a non-empty list of stop reasons, got " + describe(list));
      std::string names;
      for (StopReason reason : allowed) names += std::string(names.empty() ? "" : ", ") + to_string(reason);
      std::vector<StopReason> out;
      for (size_t i = 0; i < list.size(); ++i) {
        auto it = std::find_if(allowed.begin(), allowed.end(), [&](StopReason reason) {
          return list[i].is_string() && list[i].get<std::string>() == to_string(reason);
        });
        if (it == allowed.end())
          fail_at(top.source(), join_path(path, key + "." + std::to_string(i)),
                  "must be one of " + names + ", got " + describe(list[i]));
        out.push_back(*it);
      }
      return out;
    };
    const std::vector<StopReason> short_of_goal{StopReason::kSimulationBudget, StopReason::kTimeBudget,
                                                StopReason::kStall,            StopReason::kNoProgress,
                                                StopReason::kLineSearch,       StopReason::kPhiChange,
                                                StopReason::kGradient};
    if (r.has("fallback_after")) {
      if (!st.fallback) r.fail("fallback_after", "needs \"fallback\": true (it says when a fallback attempt runs)");
      st.fallback_after = reasons_at("fallback_after", short_of_goal);
    }
    if (r.has("run_after")) {
      if (k == 0) r.fail("run_after", "the first stage has no stage before it");
      if (st.fallback) r.fail("run_after", "a fallback stage says when it runs with fallback_after");
      std::vector<StopReason> any = short_of_goal;
      any.insert(any.begin(), {StopReason::kPhiRatio, StopReason::kPhiBelow});
      st.run_after = reasons_at("run_after", any);
    }
    st.join = r.boolean("join", false);
    if (st.join && k == 0) r.fail("join", "the first stage cannot be a join (it ends the attempts before it)");
    if (st.join && st.fallback) r.fail("join", "a stage is either a fallback (begins an attempt) or a join (ends them)");
    if (r.has("fallback_from")) {
      if (!st.fallback) r.fail("fallback_from", "needs \"fallback\": true (it says where a fallback attempt starts)");
      st.fallback_from_best = r.choice("fallback_from", std::nullopt, {"start", "best"}) == "best";
    }
    r.finish();
    stages.push_back(std::move(st));
  }
  return stages;
}

// A stage's `set` and `steps` change the scene it runs on. Each such scene is loaded here, so
// that a bad value is an error of the task naming the stage's key (stages.0.set.dt), at load,
// rather than one naming the scene file (where the value is fine) when the stage starts.
// Identical stage scenes are loaded once.
void load_stage_scenes(const Task& t, const fs::path& scene_file, const std::vector<std::string>& scene_sets,
                        const fs::path& dir) {
  static const json kNone = json::array();
  const json& list = t.json.contains("stages") ? t.json.at("stages") : kNone;
  std::set<std::vector<std::string>> loaded;
  for (size_t k = 0; k < t.stages.size() && k < list.size(); ++k) {
    const TaskStage& st = t.stages[k];
    if (st.scene_overrides.empty()) continue;
    const std::string path = "stages." + std::to_string(k);
    // (override path, the task's key that gave it)
    std::vector<std::pair<std::string, std::string>> keys;
    if (list[k].contains("set"))
      for (const auto& [p, value] : list[k].at("set").items()) keys.emplace_back(p, path + ".set." + p);
    if (list[k].contains("steps")) keys.emplace_back("steps", path + ".steps");
    const fs::path file = st.scene.empty() ? scene_file : dir / st.scene;
    std::vector<std::string> sets = scene_sets;
    sets.insert(sets.end(), st.scene_overrides.begin(), st.scene_overrides.end());
    std::vector<std::string> id = sets;
    id.push_back(file.string());
    if (!loaded.insert(id).second) continue;
    try {
      load_scene_file(file, sets);
    } catch (const InputError& e) {
      std::string what = e.what();
      if (what.starts_with(file.string() + ": ")) what = what.substr(file.string().size() + 2);
      // The stage key whose override the message names (the longest, for "contact" and
      // "contact.kn" both given): an override's own error ("--set P: ...") or a reader's
      // ("P: ...", "P.sub: ...").
      const std::pair<std::string, std::string>* best = nullptr;
      std::size_t cut = 0;
      for (const auto& kp : keys) {
        const std::string own = "--set " + kp.first + ": ";
        std::size_t n = 0;
        if (what.starts_with(own)) n = own.size();
        else if (what.starts_with(kp.first + ": ") || what.starts_with(kp.first + ".")) n = kp.first.size();
        if (n > 0 && (!best || kp.first.size() > best->first.size())) {
          best = &kp;
          cut = n;
        }
      }
      if (!best) throw InputError(t.source + ": " + path + ": the scene with this stage's set: " + e.what());
      const std::string rest = what.substr(cut);
      throw InputError(t.source + ": " + best->second + (rest.starts_with(":") || rest.starts_with(".") ? "" : ": ") + rest);
    }
  }
}

}  // namespace

OptimizerMethod parse_optimizer_method(const std::string& name, const std::string& what) {
  if (name == "lbfgsb") return OptimizerMethod::kLbfgsb;
  if (name == "gauss_newton") return OptimizerMethod::kGaussNewton;
  if (name == "adam") return OptimizerMethod::kAdam;
  if (name == "cmaes") return OptimizerMethod::kCmaes;
  throw InputError(what + ": unknown method \"" + name + "\" (expected lbfgsb, gauss_newton, adam or cmaes)");
}

NumericCsv read_numeric_csv(const fs::path& file) { return parse_numeric_csv(read_text(file, "data file"), file); }

NumericCsv parse_numeric_csv(const std::string& text, const fs::path& file) {
  // Excel's "CSV UTF-8" starts with a byte-order mark, which would otherwise become part of
  // the first header column ("\xEF\xBB\xBFstep").
  const std::string_view bom = "\xEF\xBB\xBF";
  std::istringstream in(text.starts_with(bom) ? text.substr(bom.size()) : text);
  std::string line;
  NumericCsv csv;
  std::vector<std::string>& header = csv.header;
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::string cell;
    std::istringstream ls(s);
    while (std::getline(ls, cell, ',')) {
      const auto a = cell.find_first_not_of(" \t\r"), b = cell.find_last_not_of(" \t\r");
      out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
    }
    if (!s.empty() && s.back() == ',') out.push_back("");
    return out;
  };
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto cells = split(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (cells.size() != header.size())
      throw InputError(file.string() + ":" + std::to_string(lineno) + ": " + std::to_string(cells.size()) +
                       " columns, the header has " + std::to_string(header.size()));
    std::vector<double> row;
    for (const std::string& cell : cells) {
      if (cell.empty() || cell == "nan" || cell == "NaN") {
        row.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      std::size_t used = 0;
      double v = 0.0;
      try {
        v = std::stod(cell, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != cell.size() || !std::isfinite(v))
        throw InputError(file.string() + ":" + std::to_string(lineno) + ": \"" + cell + "\" is not a finite number");
      row.push_back(v);
    }
    csv.rows.push_back(std::move(row));
    csv.lines.push_back(lineno);
  }
  if (header.empty()) throw InputError(file.string() + ": empty data file (a header line is required)");
  return csv;
}

Task load_task_file(const fs::path& file, const std::vector<std::string>& overrides, bool check_stage_scenes) {
  return load_task_text(read_text(file, "task file"), file, overrides, check_stage_scenes);
}

Task load_task_text(const std::string& text, const fs::path& file, const std::vector<std::string>& overrides,
                    bool check_stage_scenes) {
  const std::string source = file.string();
  json doc = parse_json_text(text, source);
  if (!doc.is_object()) fail_at(source, "", "a task must be a JSON object");
  // Split the overrides: scene.<path> goes to the scene, everything else to the task.
  std::vector<std::string> scene_overrides;
  for (const std::string& o : overrides) {
    if (o.rfind("scene.", 0) == 0) {
      scene_overrides.push_back(o.substr(6));
      continue;
    }
    try {
      apply_override(doc, o);
    } catch (const InputError& e) {
      throw InputError(source + ": " + e.what());
    }
  }

  Task t;
  t.source = source;
  t.json = doc;
  ObjectReader top(t.json, "", source);
  t.name = top.string("name", file.stem().string());
  t.description = top.string("description", "");
  const fs::path scene_file = file.parent_path() / top.string("scene", std::nullopt);
  std::vector<std::string> scene_sets;
  if (top.has("set")) {
    const json& set = top.raw("set");
    if (!set.is_object()) top.fail("set", "must be an object of PATH: value overrides, got " + describe(set));
    for (const auto& [path, value] : set.items()) scene_sets.push_back(path + "=" + value.dump());
  }
  scene_sets.insert(scene_sets.end(), scene_overrides.begin(), scene_overrides.end());
  try {
    t.scene = load_scene_file(scene_file, scene_sets);
  } catch (const InputError& e) {
    // Name the task too: the problem may come from its "set" or its "scene" path.
    throw InputError(source + ": scene: " + e.what());
  }
  const Model& model = *t.scene.model;

  std::vector<std::pair<bool, bool>> given;
  t.specs = parse_parameters(top, given);
  for (size_t k = 0; k < t.specs.size(); ++k)
    check_spec_bounds(model.params(), t.specs[k], source, "parameters." + std::to_string(k), given[k].first,
                      given[k].second);
  try {
    t.selection = ParameterSelection(model.params(), t.specs);
    t.selection.check_bounds(model.params().defaults());
  } catch (const InputError& e) {
    top.fail("parameters", e.what());
  }

  TaskContext c;
  c.task = &t;
  c.dir = file.parent_path();
  VecX v0;
  model.initial_state(model.params().defaults(), c.q0, v0);
  c.embedder = std::make_unique<MarkerEmbedder>(model, c.q0);
  const json& terms = top.list("objective");
  if (terms.empty()) top.fail("objective", "needs at least one term");
  for (size_t k = 0; k < terms.size(); ++k) {
    ObjectReader r(terms[k], "objective." + std::to_string(k), source);
    parse_term(r, c);
  }
  if (top.has("optimize")) {
    t.has_optimize = true;
    ObjectReader o(top.raw("optimize"), "optimize", source);
    parse_optimize(o, t.optimize);
  }
  t.stages = parse_stages(top, t, t.specs, file.parent_path());
  top.finish();
  if (check_stage_scenes) load_stage_scenes(t, scene_file, scene_sets, file.parent_path());
  return t;
}

}  // namespace addsim
