#include "addsim/io/output.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "addsim/core/error.h"
#include "addsim/fem/fem_view.h"
#include "addsim/io/npy.h"
#include "addsim/rigid/rigid_body.h"

namespace addsim {

using nlohmann::json;

namespace {

json to_json(const Vec3& x) { return json::array({x.x(), x.y(), x.z()}); }

// Display name of body k: its scene name, else its key path.
std::string body_name(const Scene& scene, std::size_t k) {
  return scene.bodies[k].name.empty() ? scene.bodies[k].path : scene.bodies[k].name;
}

void write_json(const std::filesystem::path& file, const json& j) {
  std::ofstream out(file);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out << j.dump(2) << "\n";
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

json make_meta(const Scene& scene) {
  const Model& model = *scene.model;
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
  }
  j["bodies"] = bodies;
  json handles = json::array();
  for (std::size_t k = 0; k < model.handles().size(); ++k) {
    const std::string& name = model.handles()[k].name;
    handles.push_back({{"name", name.empty() ? "handles." + std::to_string(k) : name}});
  }
  j["handles"] = handles;
  return j;
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
  write_json(dir / "meta.json", make_meta(scene));
}

}  // namespace addsim
