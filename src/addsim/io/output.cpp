#include "addsim/io/output.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "addsim/core/error.h"
#include "addsim/fem/fem_view.h"
#include "addsim/io/npy.h"
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
  j["failed_step"] = traj.completed() ? json(nullptr) : json(traj.failed_step);
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
        b["final_center_of_mass_velocity"] = to_json(body.center_of_mass(v, traj.p));
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

Energies make_energies(const Scene& scene, const Trajectory& traj) {
  const Model& model = *scene.model;
  const TimeScheme& s = model.scheme();
  // Potential energies grouped by what they come from; a group is reported if it is ever non-zero.
  auto group = [](std::string_view term) -> std::string {
    if (term.find("gravity") != std::string_view::npos) return "gravity";
    if (term == "fem_stress") return "elastic";
    if (term == "rigid_joints") return "joints";
    return std::string(term);
  };
  Energies e;
  e.columns = {"kinetic"};
  for (const auto& term : model.terms()) {
    const std::string g = group(term->name());
    if (std::find(e.columns.begin(), e.columns.end(), g) == e.columns.end()) e.columns.push_back(g);
  }
  const VecX a = VecX::Zero(model.num_dofs());
  for (std::size_t i = 0; i < traj.q.size(); ++i) {
    const VecX& q = traj.q[i];
    const VecX v = i == 0 ? traj.v0 : traj.velocity(s, static_cast<int>(i));
    std::vector<double> row(e.columns.size(), 0.0);
    row[0] = model.kinetic_energy(q, v, traj.p);
    const TermContext ctx{q, v, a, traj.p, std::max(1, static_cast<int>(i)), s};
    int contacts = 0;
    Vec3 n;
    Mat3 H;
    for (const auto& term : model.terms()) {
      const std::size_t c = std::find(e.columns.begin(), e.columns.end(), group(term->name())) - e.columns.begin();
      row[c] += term->energy(ctx);
      // Contact points: point–obstacle pairs with a negative gap (a positive normal force, paper eq. linPenN).
      if (const auto* pc = dynamic_cast<const PointContactTerm*>(term.get())) {
        for (DofIndex d : pc->dofs())
          for (const auto& o : pc->obstacles()) contacts += o->gap(q.segment<3>(d), n, H) < 0.0;
      } else if (const auto* rc = dynamic_cast<const RigidContactTerm*>(term.get())) {
        const RigidBody& rb = rc->body();
        const Mat3 R = rb.rotation(q);
        for (const Vec3& c_B : rc->proxy().centers_B)
          for (const auto& o : rc->obstacles())
            contacts += o->gap(q.segment<3>(rb.dof()) + R * c_B, n, H) - rc->proxy().radius < 0.0;
      }
    }
    e.values.push_back(std::move(row));
    e.contact_points.push_back(contacts);
  }
  // Drop the groups that are zero throughout (inertia, contact, …).
  for (std::size_t c = e.columns.size(); c-- > 1;) {
    bool zero = true;
    for (const auto& row : e.values) zero = zero && row[c] == 0.0;
    if (!zero) continue;
    e.columns.erase(e.columns.begin() + static_cast<std::ptrdiff_t>(c));
    for (auto& row : e.values) row.erase(row.begin() + static_cast<std::ptrdiff_t>(c));
  }
  return e;
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

void write_steps_csv(const std::filesystem::path& file, const Trajectory& traj, double dt) {
  std::ofstream out(file);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out << "step,time,newton_iterations,residual_norm,line_search_halvings,factorizations,krylov_iterations,wall_ms\n";
  char line[256];
  for (const StepReport& r : traj.reports) {
    std::snprintf(line, sizeof line, "%d,%.17g,%d,%.17g,%d,%d,%d,%.6g\n", r.step, r.step * dt, r.iterations,
                  r.residual_norm, r.line_search_halvings, r.factorizations, r.krylov_iterations, r.wall_ms);
    out << line;
  }
  if (!out) throw InputError(file.string() + ": write failed");
}

void write_outputs(const std::filesystem::path& dir, const Scene& scene, const Trajectory& traj,
                   const std::string& linear_solver) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) throw InputError(dir.string() + ": cannot create output directory");
  write_json(dir / "summary.json", make_summary(scene, traj, linear_solver));
  write_steps_csv(dir / "steps.csv", traj, scene.model->scheme().h);
  write_npy(dir / "trajectory.npy", traj.q, static_cast<std::size_t>(scene.model->num_dofs()));
  write_json(dir / "meta.json", make_meta(scene, &traj.p), -1);
  write_energies_csv(dir / "energies.csv", make_energies(scene, traj), scene.model->scheme().h);
}

}  // namespace addsim
