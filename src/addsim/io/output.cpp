#include "addsim/io/output.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <cstdio>
#include <fstream>

#include "addsim/core/error.h"
#include "addsim/fem/fem_view.h"
#include "addsim/io/npy.h"
#include "addsim/io/run_checks.h"
#include "addsim/io/scene_geometry.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/terms/contact_term.h"

namespace addsim {

using nlohmann::json;

namespace {

json to_json(const Vec3& x) { return json::array({x.x(), x.y(), x.z()}); }

// Display name of body k: its scene name, else its key path.
std::string body_name(const Scene& scene, std::size_t k) {
  return scene.bodies[k].name.empty() ? scene.bodies[k].path : scene.bodies[k].name;
}

// indent −1: compact (meta.json, whose mesh arrays would be one number per line otherwise).
void write_json(const std::filesystem::path& file, const json& j, int indent = 2) {
  std::ofstream out(file);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out << j.dump(indent) << "\n";
  if (!out) throw InputError(file.string() + ": write failed");
}

// Writes `file` through a temporary file and a rename, so a reader never sees half of it.
void write_json_atomically(const std::filesystem::path& file, const json& j) {
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  write_json(tmp, j);
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw InputError(file.string() + ": cannot write: " + ec.message());
}

// Velocity of body's centre of mass at (q, v): ṗ_WB for a rigid body, else the centre of mass
// of the velocity field (it is linear in q).
Vec3 center_of_mass_velocity(const Body& body, const VecX& v, const VecX& p) {
  if (body.kind() == BodyKind::kRigid) return v.segment<3>(static_cast<const RigidBody&>(body).dof());
  return body.center_of_mass(v, p);
}

// Energy group of a term: "gravity", "elastic" (FEM), "joints", or the term's name.
std::string energy_group(std::string_view term) {
  if (term.find("gravity") != std::string_view::npos) return "gravity";
  if (term == "fem_stress") return "elastic";
  if (term == "rigid_joints") return "joints";
  return std::string(term);
}

// Energies of the states in `states`, dropping the potential groups that are zero throughout.
Energies energies_of(const std::vector<std::string>& columns, const std::vector<StateDiagnostics>& states) {
  Energies e;
  e.columns = columns;
  for (const StateDiagnostics& d : states) {
    e.values.push_back(d.energies);
    e.contact_points.push_back(d.contact_points);
  }
  for (std::size_t c = e.columns.size(); c-- > 1;) {
    bool zero = true;
    for (const auto& row : e.values) zero = zero && row[c] == 0.0;
    if (!zero) continue;
    e.columns.erase(e.columns.begin() + static_cast<std::ptrdiff_t>(c));
    for (auto& row : e.values) row.erase(row.begin() + static_cast<std::ptrdiff_t>(c));
  }
  return e;
}

// A body name usable in a CSV column name: characters other than letters, digits, '_', '-'
// and '.' become '_'.
std::string column_name(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return name;
}

// Appends ",<x>" to a CSV row: "%.17g" ("nan", "inf" as C prints them).
void append_cell(std::string& row, double x) {
  char text[32];
  std::snprintf(text, sizeof text, ",%.17g", x);
  row += text;
}

// steps.csv header: the solver's report per step, then the diagnostics of the state reached.
std::string steps_header(const Scene& scene) {
  std::string h =
      "step,time,newton_iterations,residual_norm,line_search_halvings,factorizations,krylov_iterations,wall_ms,"
      "accepted_at_floor,relative_residual,kinetic_energy,potential_energy,contact_points";
  if (scene.contact_model == ContactModel::kHybrid) h += ",sticking_points,sliding_points";
  h += ",min_gap";
  for (std::size_t k = 0; k < scene.bodies.size(); ++k) {
    const std::string b = column_name(body_name(scene, k));
    for (const char* what : {"com", "vcom"})
      for (const char* axis : {"x", "y", "z"}) h += "," + b + "." + what + "_" + axis;
  }
  return h + "\n";
}

// One steps.csv row: report r, and the diagnostics d of the state it reached (null: failed, nan).
std::string steps_row(const Scene& scene, const StepReport& r, const StateDiagnostics* d) {
  char head[256];
  std::snprintf(head, sizeof head, "%d,%.17g,%d,%.17g,%d,%d,%d,%.6g,%d,%.6g", r.step, r.step * scene.model->scheme().h,
                r.iterations, r.residual_norm, r.line_search_halvings, r.factorizations, r.krylov_iterations,
                r.wall_ms, r.accepted_at_floor() ? 1 : 0, r.relative_residual);
  std::string row = head;
  const bool hybrid = scene.contact_model == ContactModel::kHybrid;
  if (!d) {
    const std::size_t cells = 4 + (hybrid ? 2 : 0) + 6 * scene.bodies.size();
    for (std::size_t c = 0; c < cells; ++c) row += ",nan";
    return row + "\n";
  }
  double potential = 0.0;
  for (std::size_t c = 1; c < d->energies.size(); ++c) potential += d->energies[c];
  append_cell(row, d->energies[0]);
  append_cell(row, potential);
  append_cell(row, d->contact_points);
  if (hybrid) {
    append_cell(row, static_cast<double>(r.contact.sticking.size() + r.contact.rigid_sticking.size()));
    append_cell(row, static_cast<double>(r.contact.sliding.size() + r.contact.rigid_sliding.size()));
  }
  append_cell(row, d->min_gap);
  for (std::size_t k = 0; k < d->com.size(); ++k)
    for (const Vec3* x : {&d->com[k], &d->com_velocity[k]})
      for (int a = 0; a < 3; ++a) append_cell(row, (*x)[a]);
  return row + "\n";
}

}  // namespace

json make_summary(const Scene& scene, const Trajectory& traj, const std::string& linear_solver) {
  const Model& model = *scene.model;
  const TimeScheme& s = model.scheme();
  const int completed_steps = static_cast<int>(traj.q.size()) - 1;
  int total_iterations = 0, max_iterations = 0, halvings = 0, factorizations = 0, background = 0, krylov = 0;
  for (const StepReport& r : traj.reports) {
    total_iterations += r.iterations;
    factorizations += r.factorizations;
    background += r.background_factorizations;
    krylov += r.krylov_iterations;
    max_iterations = std::max(max_iterations, r.iterations);
    halvings += r.line_search_halvings;
  }
  json j;
  j["scene"] = scene.name;
  j["steps_requested"] = s.steps;
  j["steps_completed"] = completed_steps;
  j["dt"] = s.h;
  j["integrator"] = to_string(s.integrator);
  j["contact_model"] = to_string(scene.contact_model);
  j["linear_solver"] = linear_solver;
  j["wall_time_s"] = traj.wall_seconds;
  j["newton_iterations_total"] = total_iterations;
  j["newton_iterations_max"] = max_iterations;
  j["line_search_halvings_total"] = halvings;
  j["factorizations_total"] = factorizations;
  j["background_factorizations_total"] = background;
  j["krylov_iterations_total"] = krylov;
  j["integrator_startup"] = to_string(s.startup);
  // Steps retried as sub-steps (solver.substep_retry, docs/solver.md) and the internal steps run.
  j["substepped_steps"] = std::count_if(traj.reports.begin(), traj.reports.end(),
                                        [](const StepReport& r) { return r.substeps > 1; });
  j["internal_steps"] = traj.internal_steps();
  j["completed"] = traj.completed();
  j["failure"] = traj.completed() ? json(nullptr) : json(traj.failure);
  j["failed_step"] = traj.failed_step >= 0 ? json(traj.failed_step) : json(nullptr);
  // Floor-accepted steps, energy growth, initial penetration (io/run_checks.h).
  const RunChecks checks = check_run(scene, traj);
  add_run_checks(j, checks);
  j["status"] = !traj.completed()         ? (traj.failed_step >= 0 ? "failed" : "interrupted")
                : checks.warnings.empty() ? "completed"
                                          : "completed_with_warnings";
  // Final state: the last converged q and its BDF velocity (v⁰ if no step converged).
  json bodies = json::array();
  if (!traj.q.empty()) {
    const VecX& q = traj.q.back();
    const VecX v = completed_steps >= 1 ? traj.velocity(s, completed_steps) : traj.v0;
    for (std::size_t k = 0; k < model.bodies().size(); ++k) {
      const Body& body = *model.bodies()[k];
      // The centre-of-mass velocity is the centre of mass of the velocity field (linear in q).
      json b;
      b["name"] = body_name(scene, k);
      b["type"] = scene.bodies[k].type;
      b["final_center_of_mass"] = to_json(body.center_of_mass(q, traj.p));
      b["mass"] = body.total_mass(traj.p);
      // Energies: kinetic, and gravitational potential −m g·x_com relative to the origin.
      b["kinetic_energy"] = body.kinetic_energy(q, v, traj.p);
      b["potential_energy"] = -body.total_mass(traj.p) * scene.gravity.dot(body.center_of_mass(q, traj.p));
      if (body.kind() == BodyKind::kRigid) {
        // Rigid bodies: ṗ_WB is the centre-of-mass velocity; θ is reported in the chart of the last step.
        const auto& rb = static_cast<const RigidBody&>(body);
        b["final_center_of_mass_velocity"] = to_json(v.segment<3>(rb.dof()));
        b["final_orientation"] = to_json(q.segment<3>(rb.dof() + 3));
        b["final_angular_velocity"] = to_json(rb.angular_velocity_W(q, v));
        b["final_angular_momentum"] = to_json(rb.angular_momentum_W(q, v, traj.p));
      } else {
        b["final_center_of_mass_velocity"] = to_json(center_of_mass_velocity(body, v, traj.p));
      }
      bodies.push_back(b);
    }
  }
  j["bodies"] = bodies;
  return j;
}

json make_meta(const Scene& scene, const VecX* p) {
  const Model& model = *scene.model;
  const VecX defaults = p ? VecX() : model.params().defaults();
  json j;
  j["num_dofs"] = model.num_dofs();
  j["dt"] = model.scheme().h;
  j["trajectory_shape"] = "(steps_completed + 1, num_dofs); row i = q at time i*dt";
  json bodies = json::array();
  for (std::size_t k = 0; k < model.bodies().size(); ++k) {
    const Body& body = *model.bodies()[k];
    bodies.push_back({{"name", body_name(scene, k)},
                      {"type", scene.bodies[k].type},
                      {"dof_offset", body.dof_offset()},
                      {"dof_count", body.dof_count()},
                      {"dof_labels", body.dof_labels()}});
    // FEM bodies: the node ids (0-based) that carry contact points, i.e. the boundary nodes.
    if (const auto fem = fem_mesh_view(body)) bodies.back()["contact_nodes"] = *fem->surface_nodes;
    bodies.back()["geometry"] = body_geometry(scene, k);
  }
  j["bodies"] = bodies;
  const json positions = handle_positions(scene, p ? *p : defaults);
  json handles = json::array();
  for (std::size_t k = 0; k < model.handles().size(); ++k) {
    const std::string& name = model.handles()[k].name;
    handles.push_back({{"name", name.empty() ? "handles." + std::to_string(k) : name}, {"positions", positions[k]}});
  }
  j["handles"] = handles;
  j["obstacles"] = obstacle_geometry(scene);
  j["springs"] = spring_geometry(scene);
  j["joints"] = joint_geometry(scene);
  return j;
}

std::vector<std::string> energy_columns(const Model& model) {
  std::vector<std::string> columns = {"kinetic"};
  for (const auto& term : model.terms()) {
    const std::string g = energy_group(term->name());
    if (std::find(columns.begin(), columns.end(), g) == columns.end()) columns.push_back(g);
  }
  return columns;
}

StateDiagnostics state_diagnostics(const Scene& scene, const Trajectory& traj, int i,
                                   const std::vector<std::string>& columns) {
  const Model& model = *scene.model;
  const TimeScheme& s = model.scheme();
  const VecX& q = traj.q[i];
  const VecX v = i == 0 ? traj.v0 : traj.velocity(s, i);
  const VecX a = VecX::Zero(model.num_dofs());
  StateDiagnostics d;
  d.energies.assign(columns.size(), 0.0);
  d.energies[0] = model.kinetic_energy(q, v, traj.p);
  d.min_gap = std::numeric_limits<double>::infinity();
  const TermContext ctx{q, v, a, traj.p, std::max(1, i), s};
  Vec3 n;
  Mat3 H;
  // Contact points: point–obstacle pairs with a negative gap (a positive normal force, paper eq. linPenN).
  auto count = [&](double gap) {
    d.min_gap = std::min(d.min_gap, gap);
    d.contact_points += gap < 0.0;
  };
  for (const auto& term : model.terms()) {
    const std::size_t c = std::find(columns.begin(), columns.end(), energy_group(term->name())) - columns.begin();
    if (c < columns.size()) d.energies[c] += term->energy(ctx);
    if (const auto* pc = dynamic_cast<const PointContactTerm*>(term.get())) {
      for (DofIndex dof : pc->dofs())
        for (const auto& o : pc->obstacles()) count(o->gap(q.segment<3>(dof), n, H));
    } else if (const auto* rc = dynamic_cast<const RigidContactTerm*>(term.get())) {
      const RigidBody& rb = rc->body();
      const Mat3 R = rb.rotation(q);
      for (const Vec3& c_B : rc->proxy().centers_B)
        for (const auto& o : rc->obstacles()) count(o->gap(q.segment<3>(rb.dof()) + R * c_B, n, H) - rc->proxy().radius);
    }
  }
  for (const auto& body : model.bodies()) {
    d.com.push_back(body->center_of_mass(q, traj.p));
    d.com_velocity.push_back(center_of_mass_velocity(*body, v, traj.p));
  }
  return d;
}

Energies make_energies(const Scene& scene, const Trajectory& traj) {
  const std::vector<std::string> columns = energy_columns(*scene.model);
  std::vector<StateDiagnostics> states;
  for (std::size_t i = 0; i < traj.q.size(); ++i)
    states.push_back(state_diagnostics(scene, traj, static_cast<int>(i), columns));
  return energies_of(columns, states);
}

void write_energies_csv(const std::filesystem::path& file, const Energies& e, double dt) {
  std::ofstream out(file);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out << "step,time";
  for (const std::string& c : e.columns) out << "," << c;
  out << ",total,contact_points\n";
  char number[32];
  for (std::size_t i = 0; i < e.values.size(); ++i) {
    std::snprintf(number, sizeof number, "%.17g", i * dt);
    out << i << "," << number;
    double total = 0.0;
    for (double x : e.values[i]) {
      std::snprintf(number, sizeof number, "%.17g", x);
      out << "," << number;
      total += x;
    }
    std::snprintf(number, sizeof number, "%.17g", total);
    out << "," << number << "," << e.contact_points[i] << "\n";
  }
  if (!out) throw InputError(file.string() + ": write failed");
}

void write_steps_csv(const std::filesystem::path& file, const Scene& scene, const Trajectory& traj) {
  std::ofstream out(file);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out << steps_header(scene);
  const std::vector<std::string> columns = energy_columns(*scene.model);
  for (const StepReport& r : traj.reports) {
    const bool stored = r.step >= 1 && static_cast<std::size_t>(r.step) < traj.q.size();
    const StateDiagnostics d = stored ? state_diagnostics(scene, traj, r.step, columns) : StateDiagnostics{};
    out << steps_row(scene, r, stored ? &d : nullptr);
  }
  if (!out) throw InputError(file.string() + ": write failed");
}

RunWriter::RunWriter(const std::filesystem::path& dir, const Scene& scene, const VecX& p, std::string linear_solver,
                     bool summary)
    : dir_(dir), scene_(scene), linear_solver_(std::move(linear_solver)), summary_(summary),
      energy_columns_(energy_columns(*scene.model)) {
  // Until the run ends, summary.json says that it has not (a killed run leaves it so).
  if (summary_) {
    const TimeScheme& s = scene.model->scheme();
    write_json_atomically(dir_ / "summary.json",
                          {{"scene", scene.name},
                           {"steps_requested", s.steps},
                           {"steps_completed", nullptr},
                           {"dt", s.h},
                           {"completed", false},
                           {"status", "running"},
                           {"failure", "the run has not finished (if it no longer runs, it was killed): steps.csv and "
                                       "trajectory.npy hold the steps done"}});
  }
  write_json(dir_ / "meta.json", make_meta(scene, &p), -1);
  const std::filesystem::path steps = dir_ / "steps.csv";
  steps_ = std::fopen(steps.c_str(), "w");
  if (!steps_) throw InputError(steps.string() + ": cannot open for writing");
  pending_rows_ = steps_header(scene);
  npy_ = std::make_unique<NpyRowWriter>(dir_ / "trajectory.npy", static_cast<std::size_t>(scene.model->num_dofs()));
  flush();
}

RunWriter::~RunWriter() {
  if (steps_) std::fclose(steps_);
}

void RunWriter::append(const Trajectory& traj) {
  // States first (the rows of steps.csv need their diagnostics), then the step reports.
  while (npy_->rows() < traj.q.size()) {
    const int i = static_cast<int>(npy_->rows());
    states_.push_back(state_diagnostics(scene_, traj, i, energy_columns_));
    npy_->append(traj.q[i]);
  }
  for (; reports_written_ < traj.reports.size(); ++reports_written_) {
    const StepReport& r = traj.reports[reports_written_];
    const bool stored = r.step >= 1 && static_cast<std::size_t>(r.step) < states_.size();
    pending_rows_ += steps_row(scene_, r, stored ? &states_[r.step] : nullptr);
  }
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush_).count() >= kFlushSeconds) flush();
}

void RunWriter::flush() {
  // steps.csv gets whole rows only, at the same moments as trajectory.npy its states; the
  // states go first, so a reader who sees k rows in steps.csv finds q⁰ … q^k in the .npy.
  npy_->flush();
  if (std::fputs(pending_rows_.c_str(), steps_) < 0 || std::fflush(steps_) != 0)
    throw InputError((dir_ / "steps.csv").string() + ": write failed");
  pending_rows_.clear();
  last_flush_ = std::chrono::steady_clock::now();
}

void RunWriter::finish(const Trajectory& traj) {
  append(traj);
  flush();
  write_energies_csv(dir_ / "energies.csv", energies_of(energy_columns_, states_), scene_.model->scheme().h);
  if (summary_) write_json_atomically(dir_ / "summary.json", make_summary(scene_, traj, linear_solver_));
}

void write_outputs(const std::filesystem::path& dir, const Scene& scene, const Trajectory& traj,
                   const std::string& linear_solver) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) throw InputError(dir.string() + ": cannot create output directory");
  RunWriter writer(dir, scene, traj.p, linear_solver);
  writer.finish(traj);
}

}  // namespace addsim
