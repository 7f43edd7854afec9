#include "addsim/io/scene.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"
#include "addsim/io/json_path.h"
#include "addsim/io/scene_builder.h"
#include "addsim/solver/linear_solver.h"
#include "addsim/terms/particle_terms.h"

namespace addsim {

using nlohmann::json;

namespace {

std::string alias_of(const std::string& list, const std::string& name, int index) {
  return list + "." + (name.empty() ? std::to_string(index) : name);
}

// The object at list[index], checked, with its key path.
ObjectReader entry(const json& list, std::size_t index, const std::string& list_path, const std::string& source) {
  return ObjectReader(list[index], list_path + "." + std::to_string(index), source);
}

void parse_contact(ObjectReader& top, SceneBuilder& b) {
  static const json kEmpty = json::object();
  const bool present = top.has("contact");
  ObjectReader r(present ? top.raw("contact") : kEmpty, "contact", b.source);
  const std::string model = r.choice("model", "linear", {"linear", "tanh", "hybrid", "sqp"});
  b.contact.model = model == "tanh"     ? ContactModel::kTanh
                    : model == "hybrid" ? ContactModel::kHybrid
                    : model == "sqp"    ? ContactModel::kSqp
                                        : ContactModel::kLinear;
  b.scene->contact_model = b.contact.model;
  const double kn = r.number("kn", 1e3, Bound::kPositive);
  const double kd = r.number("kd", 0.0, Bound::kNonNegative);
  b.contact.damping_ramp = r.number("damping_ramp", kDefaultDampingRamp, Bound::kNonNegative);
  b.contact.hybrid_release =
      r.choice("hybrid_release", "coulomb", {"coulomb", "penalty"}) == "penalty" ? HybridRelease::kPenalty
                                                                              : HybridRelease::kCoulomb;
  b.contact.slip_regularization = r.number("slip_regularization", kDefaultSlipRegularization, Bound::kPositive);
  ParameterTable& params = b.model->params();
  const double inf = std::numeric_limits<double>::infinity();
  b.contact.kn_param = params.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, kn), 1, 1, 0.0, inf, true);
  b.contact.kd_param = params.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, kd), 1, 1, 0.0, inf);
  if (r.has("kt")) {
    const double kt = r.number("kt", std::nullopt, Bound::kNonNegative);
    b.contact.kt_param = params.add("contact.kt", "", ParamKind::kContact, VecX::Constant(1, kt), 1, 1, 0.0, inf);
    if (r.has("kt_rule")) r.fail("kt_rule", "applies only without contact.kt (k_t = k_n h_t); remove one of the two");
  }
  // k_t = k_n h ("h", the paper's text) or k_n h / cv[0] ("effective_step": (2/3) h for BDF2,
  // the step in BDF2's velocity v = (3/2)(q^i − …)/h; the authors' code) — docs/contact.md.
  if (r.choice("kt_rule", "h", {"h", "effective_step"}) == "effective_step")
    b.contact.kt_step_factor = 1.0 / b.model->scheme().cv[0];
  // C¹ normal-penalty width (m, docs/contact.md); absent = 0 = eq. linPenN exactly, and no entry in p.
  if (r.has("smoothing")) {
    const double w = r.number("smoothing", std::nullopt, Bound::kNonNegative);
    if (w > 0.0 && b.contact.model == ContactModel::kSqp)
      fail_at(b.source, "contact.smoothing",
              "the sqp model has no penalty force to smooth; use linear, tanh or hybrid, or remove the key");
    b.contact.smoothing_param =
        params.add("contact.smoothing", "", ParamKind::kContact, VecX::Constant(1, w), 1, 1, 0.0, inf);
  }
  r.finish();
}

// Deepest sub-step retry a scene may ask for: a step split 2^10 ways is already 1,024 solves.
constexpr int kMaxSubstepDepth = 10;

void parse_solver(ObjectReader& top, Model& model, const std::string& source) {
  static const json kEmpty = json::object();
  ObjectReader r(top.has("solver") ? top.raw("solver") : kEmpty, "solver", source);
  SolverSettings& s = model.solver_mut();
  s.tolerance = r.number("tolerance", 1e-10, Bound::kPositive);
  s.relative_tolerance = r.number("relative_tolerance", 1e-8, Bound::kPositive);
  if (s.relative_tolerance >= 1.0) r.fail("relative_tolerance", "must be below 1 (a fraction of the summed force magnitudes)");
  s.max_iterations = r.integer("max_iterations", 50, 1);
  const std::string ls = r.choice("linear_solver", "auto", {"auto", "umfpack", "klu", "eigen", "cholmod", "dense", "banded", "schur"});
  s.linear_solver = ls == "umfpack"   ? LinearSolverKind::kUmfpack
                    : ls == "klu"     ? LinearSolverKind::kKlu
                    : ls == "eigen"   ? LinearSolverKind::kEigenLu
                    : ls == "cholmod" ? LinearSolverKind::kCholmodBicgstab
                    : ls == "dense"   ? LinearSolverKind::kDense
                    : ls == "banded"  ? LinearSolverKind::kBanded
                    : ls == "schur"   ? LinearSolverKind::kSchur
                                      : LinearSolverKind::kAuto;
  const bool single = r.choice("factorization_precision", "double", {"double", "single"}) == "single";
  s.factorization.precision = single ? FactorizationPrecision::kSingle : FactorizationPrecision::kDouble;
  if (single && !supports_factorization_options(s.linear_solver))
    r.fail("factorization_precision", std::string("\"single\" ") + kFactorizationOptionNeedsBanded + ", got \"" + ls + "\"");
  s.factorization.pivot_threshold = r.number("pivot_threshold", 1.0, Bound::kPositive);
  if (s.factorization.pivot_threshold > 1.0)
    r.fail("pivot_threshold", "must be in (0, 1] (1: partial pivoting), got " + std::to_string(s.factorization.pivot_threshold));
  if (s.factorization.pivot_threshold != 1.0 && !supports_factorization_options(s.linear_solver))
    r.fail("pivot_threshold", std::string("below 1 ") + kFactorizationOptionNeedsBanded + ", got \"" + ls + "\"");
  s.reuse_factorization = r.boolean("reuse_factorization", true);
  s.clamped_first_iteration = r.boolean("clamped_first_iteration", false);
  s.stick_predictor_ratio = r.number("stick_predictor_ratio", 0.0, Bound::kNonNegative);
  if (s.stick_predictor_ratio > 0.0 && s.stick_predictor_ratio < 1.0)
    r.fail("stick_predictor_ratio", "must be 0 (off) or at least 1 (a multiple of the Coulomb limit), got " +
                                        std::to_string(s.stick_predictor_ratio));
  s.chord_contraction = r.number("chord_contraction", 0.0, Bound::kNonNegative);
  if (s.chord_contraction >= 1.0)
    r.fail("chord_contraction", "must be 0 (off) or below 1 (the least shrink factor of ‖r‖ per chord step), got " +
                                    std::to_string(s.chord_contraction));
  s.chord_acceleration = r.integer("chord_acceleration", 0, 0);
  if (s.chord_acceleration > kMaxChordAcceleration)
    r.fail("chord_acceleration", "must be 0 (off) or the number of earlier chord iterates mixed in, at most " +
                                     std::to_string(kMaxChordAcceleration) + ", got " +
                                     std::to_string(s.chord_acceleration));
  s.contact_correction = r.boolean("contact_correction", false);
  s.fresh_factorization_iterations = r.integer("fresh_factorization_iterations", 0, 0);
  s.refine_to_tolerance = r.boolean("refine_to_tolerance", false);
  s.threads = r.integer("threads", 1, 1);
  if (s.threads > 2) r.fail("threads", "must be 1 or 2 (one helper thread splits the element loops), got " + std::to_string(s.threads));
  if (r.has("substep_retry")) {
    ObjectReader retry(r.raw("substep_retry"), "solver.substep_retry", source);
    s.substep_retry = retry.integer("max_depth", std::nullopt, 0);
    if (s.substep_retry > kMaxSubstepDepth)
      retry.fail("max_depth", "must be at most " + std::to_string(kMaxSubstepDepth) + " (sub-steps of h/" +
                                  std::to_string(1 << kMaxSubstepDepth) + "), got " + std::to_string(s.substep_retry));
    retry.finish();
  }
  r.finish();
}

void parse_obstacles(ObjectReader& top, SceneBuilder& b) {
  const json& list = top.list("obstacles");
  std::vector<std::string> names;
  for (std::size_t k = 0; k < list.size(); ++k) {
    ObjectReader r = entry(list, k, "obstacles", b.source);
    r.choice("type", std::nullopt, {"plane"});
    const std::string name = r.string("name", "");
    check_name(r, name, names);
    const Vec3 point = r.vec3("point", Vec3::Zero());
    const Vec3 normal = r.vec3("normal", Vec3::UnitZ());
    if (!(normal.norm() > 0.0)) r.fail("normal", "must be non-zero");
    const double friction = r.number("friction", 0.5, Bound::kNonNegative);
    r.finish();
    const int index = static_cast<int>(k);
    const std::string base = "obstacles." + std::to_string(index);
    const int fp = b.model->params().add(base + ".friction", alias_of("obstacles", name, index) + ".friction",
                                         ParamKind::kContact, VecX::Constant(1, friction), 1, 1, 0.0,
                                         std::numeric_limits<double>::infinity());
    // Messages name an obstacle by its name, an unnamed one by its key path.
    b.obstacles.push_back(std::make_shared<PlaneObstacle>(name.empty() ? base : name, fp, point, normal));
    b.scene->obstacle_names.push_back(name);
  }
}

void parse_bodies(ObjectReader& top, SceneBuilder& b) {
  const json& list = top.list("bodies");
  std::vector<std::string> names;
  for (std::size_t k = 0; k < list.size(); ++k) {
    ObjectReader r = entry(list, k, "bodies", b.source);
    std::string allowed;
    for (const auto& [type, parser] : body_parsers()) allowed += (allowed.empty() ? "\"" : ", \"") + type + "\"";
    const std::string type = r.string("type", std::nullopt);
    const auto it = body_parsers().find(type);
    if (it == body_parsers().end()) r.fail("type", "must be one of " + allowed + ", got \"" + type + "\"");
    check_name(r, r.string("name", ""), names);
    // A robot adds one model body per link group, so the scene index k is the model body
    // index only for bodies listed before the first robot (docs/robots.md).
    if (type != "urdf" && b.model->bodies().size() != k)
      r.fail("type", "\"" + type + "\" bodies must be listed before the \"urdf\" robots");
    const std::size_t before = b.model->bodies().size();
    it->second(r, static_cast<int>(k), b);
    // A "urdf" body adds one model body per link group; every other type exactly one.
    ADDSIM_CHECK(type == "urdf" ? b.model->bodies().size() > before : b.model->bodies().size() == before + 1,
                 "a body parser must add exactly one body (a robot: at least one)");
    r.finish();
  }
}

void parse_handles(ObjectReader& top, SceneBuilder& b, std::vector<Vec3>& initial) {
  const json& list = top.list("handles");
  std::vector<std::string> names;
  const TimeScheme& s = b.model->scheme();
  for (std::size_t k = 0; k < list.size(); ++k) {
    ObjectReader r = entry(list, k, "handles", b.source);
    const std::string name = r.string("name", "");
    check_name(r, name, names);
    std::vector<Vec3> positions;
    if (r.has("positions")) {
      if (r.has("position") || r.has("velocity")) r.fail("positions", "give either positions or position/velocity");
      positions = r.vec3_list("positions");
      if (static_cast<int>(positions.size()) != s.steps + 1)
        r.fail("positions", "needs steps + 1 = " + std::to_string(s.steps + 1) + " entries, got " +
                                std::to_string(positions.size()));
    } else {
      const Vec3 x0 = r.vec3("position", std::nullopt);
      const Vec3 v = r.vec3("velocity", Vec3::Zero());
      for (int i = 0; i <= s.steps; ++i) positions.push_back(x0 + v * (i * s.h));
    }
    r.finish();
    b.model->add_handle(name, positions);
    initial.push_back(positions.front());
  }
}

// Resolves "name-or-index" in `list_path` against `names`; returns the index.
int resolve_ref(const json& v, const std::vector<std::string>& names, const std::string& what,
                const std::string& source, const std::string& path) {
  if (v.is_number_integer()) {
    const long long k = v.get<long long>();
    if (k < 0 || k >= static_cast<long long>(names.size()))
      fail_at(source, path, "no " + what + " with index " + describe(v) + " (there are " +
                                std::to_string(names.size()) + ")");
    return static_cast<int>(k);
  }
  if (v.is_string()) {
    for (std::size_t k = 0; k < names.size(); ++k)
      if (!names[k].empty() && names[k] == v.get<std::string>()) return static_cast<int>(k);
    fail_at(source, path, "no " + what + " named " + describe(v));
  }
  fail_at(source, path, "expected a " + what + " name or index, got " + describe(v));
}

// An anchor and its initial position.
std::pair<Anchor, Vec3> parse_anchor(const json& v, const std::string& path, SceneBuilder& b,
                                     const std::vector<Vec3>& handle_initial) {
  ObjectReader r(v, path, b.source);
  const int kinds = int(r.has("body")) + int(r.has("handle")) + int(r.has("world"));
  if (kinds != 1) fail_at(b.source, path, "an anchor needs exactly one of \"body\", \"handle\", \"world\"");
  std::pair<Anchor, Vec3> out;
  if (r.has("body")) {
    std::vector<std::string> names;
    for (const SceneBody& sb : b.scene->bodies) names.push_back(sb.name);
    const int body = resolve_ref(r.raw("body"), names, "body", b.source, join_path(path, "body"));
    if (has_embedded_keys(r)) {
      const EmbeddedPoint e = parse_embedded_point(r, body, b);
      r.finish();
      return {Anchor::embedded(e.dofs, e.weights, path), e.initial};
    }
    const BodyPoints& pts = b.points[body];
    const json& pv = r.raw("point");
    if (!pv.is_number_integer() || pv.get<long long>() < 0 ||
        pv.get<long long>() >= static_cast<long long>(pts.dofs.size()))
      r.fail("point", "expected a point index in [0, " + std::to_string(pts.dofs.size()) + "), got " + describe(pv));
    const int k = pv.get<int>();
    out = {Anchor::particle(pts.dofs[k], b.scene->bodies[body].path + ".points." + std::to_string(k)), pts.initial[k]};
  } else if (r.has("handle")) {
    std::vector<std::string> names;
    for (const Handle& h : b.model->handles()) names.push_back(h.name);
    const int h = resolve_ref(r.raw("handle"), names, "handle", b.source, join_path(path, "handle"));
    out = {Anchor::handle_point(h, "handles." + std::to_string(h)), handle_initial[h]};
  } else {
    const Vec3 x = r.vec3("world", std::nullopt);
    out = {Anchor::world_point(x, path), x};
  }
  r.finish();
  return out;
}

void parse_springs(ObjectReader& top, SceneBuilder& b, const std::vector<Vec3>& handle_initial) {
  const json& list = top.list("springs");
  std::vector<std::string> names;
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < list.size(); ++k) {
    ObjectReader r = entry(list, k, "springs", b.source);
    const std::string kind = r.choice("type", std::nullopt, {"distance", "zero_length", "unilateral"});
    const std::string name = r.string("name", "");
    check_name(r, name, names);
    const json& anchors = r.raw("anchors");
    if (!anchors.is_array() || anchors.size() != 2)
      r.fail("anchors", "expected a list of 2 anchors, got " + describe(anchors));
    const std::string apath = join_path(r.path(), "anchors");
    const auto [a, xa] = parse_anchor(anchors[0], apath + ".0", b, handle_initial);
    const auto [bb, xb] = parse_anchor(anchors[1], apath + ".1", b, handle_initial);
    if (a.num_nodes() == 0 && bb.num_nodes() == 0) r.fail("anchors", "at least one anchor must be a body point");
    if (a.kind == Anchor::Kind::kParticle && bb.kind == Anchor::Kind::kParticle && a.dof == bb.dof)
      r.fail("anchors", "both anchors are the same point");
    const double stiffness = r.number("stiffness", std::nullopt, Bound::kNonNegative);
    const double damping = r.number("damping", 0.0, Bound::kNonNegative);
    Spring s;
    s.kind = kind == "zero_length" ? SpringKind::kZeroLength
             : kind == "unilateral" ? SpringKind::kUnilateral
                                    : SpringKind::kDistance;
    if (s.kind == SpringKind::kZeroLength) {
      if (r.has("rest_length")) r.fail("rest_length", "zero_length springs have no rest length");
    } else {
      s.rest_length = r.number("rest_length", (xa - xb).norm(), Bound::kNonNegative);
      if (s.kind == SpringKind::kDistance && !(s.rest_length > 0.0) && (xa - xb).norm() == 0.0)
        r.fail("rest_length", "a distance spring with coincident anchors needs a rest length > 0");
    }
    r.finish();
    const int index = static_cast<int>(k);
    const std::string base = "springs." + std::to_string(index);
    const std::string alias = alias_of("springs", name, index);
    ParameterTable& params = b.model->params();
    s.a = a;
    s.b = bb;
    s.label = base;
    s.stiffness_param = params.add(base + ".stiffness", alias + ".stiffness", ParamKind::kCoupling,
                                   VecX::Constant(1, stiffness), 1, 1, 0.0, inf);
    s.damping_param = params.add(base + ".damping", alias + ".damping", ParamKind::kCoupling,
                                 VecX::Constant(1, damping), 1, 1, 0.0, inf);
    b.springs.push_back(s);
  }
}

std::string read_file(const std::filesystem::path& file) { return read_input_file(file, "scene file"); }

}  // namespace

void check_name(ObjectReader& r, const std::string& name, std::vector<std::string>& seen) {
  if (!r.has("name")) return;
  if (name.empty()) r.fail("name", "must not be empty (leave the key out for an unnamed entry)");
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f)
      r.fail("name", "must not contain a control character (byte " + std::to_string(c) + " at position " +
                         std::to_string(i) + ")");
  }
  if (name.find('.') != std::string::npos || name.find_first_not_of("0123456789") == std::string::npos)
    r.fail("name", "must not contain '.' or be a number, got \"" + name + "\"");
  for (const std::string& s : seen)
    if (s == name) r.fail("name", "duplicate name \"" + name + "\"");
  seen.push_back(name);
}

int SceneBuilder::add_particle_body(const std::string& name, const std::string& type,
                                    const std::vector<Vec3>& positions, const std::vector<Vec3>& velocities,
                                    const std::vector<double>& masses) {
  const int index = model->add_particles(name, positions, velocities, masses);
  const auto* body = static_cast<const ParticleBody*>(model->bodies()[index].get());
  scene->bodies.push_back({name, type, "bodies." + std::to_string(index)});
  BodyPoints pts;
  for (int k = 0; k < body->count(); ++k) pts.dofs.push_back(body->dof(k));
  pts.initial = positions;
  model->add_term(std::make_unique<ParticleInertiaTerm>(body));
  model->add_term(std::make_unique<ParticleGravityTerm>(body, gravity));
  if (!obstacles.empty()) model->add_term(std::make_unique<PointContactTerm>(pts.dofs, obstacles, contact));
  points.push_back(std::move(pts));
  return index;
}

const std::map<std::string, BodyParser>& body_parsers() {
  static const std::map<std::string, BodyParser> table = {
      {"particles", parse_particles_body},
      {"sheet", parse_sheet_body},
      {"rigid", parse_rigid_body},
      {"fem", parse_fem_body},
      {"urdf", parse_urdf_body},
  };
  return table;
}

namespace {

// The readers check each key against its documented range ("> 0"); the parameter table can
// be tighter (a mass of at least 1e-300, so that 1/m stays finite). A value between the two
// is an error here, naming this file and the key, rather than at the first rollout, naming
// neither.
void check_parameter_bounds(const ParameterTable& params, const std::string& source) {
  const VecX& p = params.defaults();
  for (int i = 0; i < params.size(); ++i) {
    const ParamEntry& e = params.entry_of(i);
    if (p[i] >= e.lower && p[i] <= e.upper) continue;
    std::ostringstream msg;
    if (e.kind == ParamKind::kMass && p[i] < e.lower)
      msg << "must be >= " << e.lower << " (below it 1/m overflows), got " << p[i];
    else
      msg << "must lie in [" << e.lower << ", " << e.upper << "], got " << p[i];
    fail_at(source, params.name_of(i), msg.str());
  }
}

}  // namespace

Scene build_scene(const json& doc, const std::string& source) {
  Scene scene;
  scene.model = std::make_unique<Model>();
  scene.json = doc;
  scene.source = source;
  Model& model = *scene.model;
  SceneBuilder b;
  b.scene = &scene;
  b.model = &model;
  b.source = source;

  ObjectReader top(doc, "", source);
  scene.name = top.string("name", std::filesystem::path(source).stem().string());
  scene.description = top.string("description", "");
  const double dt = top.number("dt", 0.01, Bound::kPositive);
  const int steps = top.integer("steps", 100, 1);
  const std::string integrator = top.choice("integrator", "bdf2", {"bdf1", "bdf2"});
  const std::string startup = top.choice(
      "integrator_startup", "trapezoidal", {"trapezoidal", "constant_velocity", "constant_acceleration", "bdf1_first_step"});
  const Startup su = startup == "constant_velocity"       ? Startup::kConstantVelocity
                     : startup == "constant_acceleration" ? Startup::kConstantAcceleration
                     : startup == "bdf1_first_step"       ? Startup::kBdf1FirstStep
                                                          : Startup::kTrapezoidal;
  model.scheme_mut() = TimeScheme::make(integrator == "bdf1" ? Integrator::kBdf1 : Integrator::kBdf2, dt, steps, su);
  b.gravity = top.vec3("gravity", Vec3(0.0, 0.0, -9.81));
  scene.gravity = b.gravity;
  parse_solver(top, model, source);
  parse_contact(top, b);
  parse_obstacles(top, b);
  parse_bodies(top, b);
  std::vector<Vec3> handle_initial;
  parse_handles(top, b, handle_initial);
  parse_springs(top, b, handle_initial);
  parse_joints(top, b, handle_initial);
  top.finish();
  if (model.bodies().empty()) fail_at(source, "bodies", "a scene needs at least one body");

  if (!b.springs.empty()) model.add_term(std::make_unique<SpringTerm>(&model, std::move(b.springs)));
  std::ostringstream g;
  g << "[" << b.gravity.x() << ", " << b.gravity.y() << ", " << b.gravity.z() << "]";
  model.info.emplace_back("gravity", g.str());
  model.info.emplace_back("contact model", to_string(b.contact.model));
  model.finalize();
  check_parameter_bounds(model.params(), source);
  // A run stores q for every step plus a step report (about 512 bytes with its residual
  // history): refuse a trajectory the machine cannot hold before the run starts.
  const double trajectory_bytes = (steps + 1.0) * (8.0 * model.num_dofs() + 512.0);
  check_memory(trajectory_bytes, source + ": steps",
               "a trajectory of " + std::to_string(steps) + " steps of " + std::to_string(model.num_dofs()) +
                   " coordinates");
  return scene;
}

Scene load_scene_text(const std::string& text, const std::string& source, const std::vector<std::string>& overrides) {
  json doc = parse_json_text(text, source);
  bool steps_set = false;
  for (const std::string& o : overrides) {
    try {
      apply_override(doc, o);
    } catch (const InputError& e) {
      throw InputError(source + ": " + e.what());
    }
    steps_set = steps_set || o.rfind("steps=", 0) == 0;
  }
  // "steps=N" shortens the per-step lists too, so that any scene can be run for a few steps.
  std::vector<std::string> notices;
  if (steps_set && doc.is_object() && doc["steps"].is_number_integer() && doc["steps"].get<long long>() >= 1 &&
      doc["steps"].get<long long>() <= 1000000000LL)
    notices = truncate_scene_steps(doc, doc["steps"].get<int>());
  Scene scene = build_scene(doc, source);
  scene.notices = std::move(notices);
  return scene;
}

Scene load_scene_file(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  return load_scene_text(read_file(file), file.string(), overrides);
}

}  // namespace addsim
