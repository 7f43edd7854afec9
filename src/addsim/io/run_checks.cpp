#include "addsim/io/run_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "addsim/rigid/rigid_body.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/terms/contact_term.h"

namespace addsim {

using nlohmann::json;

namespace {

std::string body_label(const Scene& scene, std::size_t k) {
  return scene.bodies[k].name.empty() ? scene.bodies[k].path : scene.bodies[k].name;
}

// Index of the body owning DOF d (−1 if none).
int body_of_dof(const Model& model, DofIndex d) {
  for (std::size_t k = 0; k < model.bodies().size(); ++k) {
    const Body& b = *model.bodies()[k];
    if (d >= b.dof_offset() && d < b.dof_offset() + b.dof_count()) return static_cast<int>(k);
  }
  return -1;
}

std::string format(const char* fmt, double a, double b = 0.0, double c = 0.0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

void check_floor_steps(const Scene& scene, const Trajectory& traj, RunChecks& out) {
  std::size_t first_k = 0, worst_k = 0;
  for (std::size_t k = 0; k < traj.reports.size(); ++k) {
    const StepReport& r = traj.reports[k];
    if (!r.accepted_at_floor()) continue;
    if (out.floor_steps++ == 0) {
      out.first_floor_step = r.step;
      first_k = k;
    }
    if (r.relative_residual >= out.max_floor_relative_residual) {
      out.max_floor_relative_residual = r.relative_residual;
      out.max_floor_step = r.step;
      worst_k = k;
    }
  }
  if (out.floor_steps == 0) return;
  const StepReport& first = traj.reports[first_k];
  std::string line = std::to_string(out.floor_steps) + " of " + std::to_string(traj.reports.size()) +
                     " steps were accepted at the round-off floor or on a tiny Newton step, not on the tolerance "
                     "(first: step " + std::to_string(first.step) + ", " + to_string(first.acceptance) +
                     format(", |r| = %.3g N", first.residual_norm) +
                     format("; largest relative residual %.3g at step ", out.max_floor_relative_residual) +
                     std::to_string(out.max_floor_step);
  const StepReport& worst = traj.reports[worst_k];
  if (worst.relative_residual_body >= 0)
    line += ", body '" + body_label(scene, static_cast<std::size_t>(worst.relative_residual_body)) + "'";
  line += "); see steps.csv column accepted_at_floor";
  out.warnings.push_back(line);
}

void check_energy(const Scene& scene, const Trajectory& traj, RunChecks& out) {
  const Model& model = *scene.model;
  // A body that starts inside an obstacle injects the penalty energy, which E leaves out.
  out.passive = passive_scene(model) && out.penetrations.empty();
  if (!out.passive || traj.q.size() < 2) return;
  const TimeScheme& s = model.scheme();
  const VecX a = VecX::Zero(model.num_dofs());
  double t_max = 0.0, u_min = std::numeric_limits<double>::infinity(), u_max = -u_min;
  bool have_initial = false;
  for (std::size_t i = 0; i < traj.q.size(); ++i) {
    const VecX& q = traj.q[i];
    const VecX v = i == 0 ? traj.v0 : traj.velocity(s, static_cast<int>(i));
    const double t = model.kinetic_energy(q, v, traj.p);
    const TermContext ctx{q, v, a, traj.p, std::max(1, static_cast<int>(i)), s};
    double u = 0.0;
    for (const auto& term : model.terms()) u += term->energy(ctx);
    // Inverted elements have no elastic energy (+∞): such states are left out.
    if (!std::isfinite(t) || !std::isfinite(u)) continue;
    const double e = t + u;
    if (!have_initial) {
      if (i != 0) return;  // E_0 itself is not defined: nothing to compare with
      out.initial_energy = out.peak_energy = e;
      have_initial = true;
    }
    t_max = std::max(t_max, t);
    u_min = std::min(u_min, u);
    u_max = std::max(u_max, u);
    if (e > out.peak_energy) {
      out.peak_energy = e;
      out.peak_step = static_cast<int>(i);
    }
  }
  out.energy_scale = t_max + (u_max - u_min);
  const double growth = out.peak_energy - out.initial_energy;
  out.energy_growth = growth > kEnergyGrowthWarning * out.energy_scale && growth > 0.0;
  if (out.energy_growth)
    out.warnings.push_back(
        format("the total energy of this passive scene grew from %.6g J to %.6g J", out.initial_energy,
               out.peak_energy) +
        " (step " + std::to_string(out.peak_step) +
        format("; +%.3g of the %.3g J that moves in the run, warning above %.2g): the time step is too large for the "
               "stiffness or the steps were not converged",
               growth / out.energy_scale, out.energy_scale, kEnergyGrowthWarning));
}

// Deepest initial penetration per body beyond its tolerance: 1 % of the body's extent, or
// twice the depth at which one obstacle's penalty alone carries the body's weight (a body
// placed at its resting depth, e.g. m g / k_n below a plane, is not "inside").
void check_penetrations(const Scene& scene, const Trajectory& traj, RunChecks& out) {
  const Model& model = *scene.model;
  const VecX& q = traj.q0;
  const double h = model.scheme().h;
  const std::size_t nb = model.bodies().size();
  // Contact points (centre, sphere radius, obstacles, settings) by body.
  struct Point {
    Vec3 x;
    double radius;
    const std::vector<std::shared_ptr<const Obstacle>>* obstacles;
    const ContactSettings* settings;
  };
  std::vector<std::vector<Point>> points(nb);
  for (const auto& term : model.terms()) {
    if (const auto* pc = dynamic_cast<const PointContactTerm*>(term.get())) {
      for (DofIndex d : pc->dofs())
        if (const int b = body_of_dof(model, d); b >= 0)
          points[b].push_back({q.segment<3>(d), 0.0, &pc->obstacles(), &pc->settings()});
    } else if (const auto* rc = dynamic_cast<const RigidContactTerm*>(term.get())) {
      const RigidBody& rb = rc->body();
      const int b = body_of_dof(model, rb.dof());
      if (b < 0) continue;
      const Mat3 R = rb.rotation(q);
      for (const Vec3& c_B : rc->proxy().centers_B)
        points[b].push_back(
            {q.segment<3>(rb.dof()) + R * c_B, rc->proxy().radius, &rc->obstacles(), &rc->settings()});
    }
  }
  Vec3 n;
  Mat3 H;
  for (std::size_t b = 0; b < nb; ++b) {
    if (points[b].empty()) continue;
    Vec3 lo = Vec3::Constant(std::numeric_limits<double>::infinity()), hi = -lo;
    for (const Point& pt : points[b]) {
      lo = lo.cwiseMin(pt.x - Vec3::Constant(pt.radius));
      hi = hi.cwiseMax(pt.x + Vec3::Constant(pt.radius));
    }
    const double weight = model.bodies()[b]->total_mass(traj.p) * scene.gravity.norm();
    double worst_excess = 0.0;
    InitialPenetration found;
    for (const Point& pt : points[b])
      for (const auto& o : *pt.obstacles) {
        const double depth = -(o->gap(pt.x, n, H) - pt.radius);
        if (depth <= 0.0) continue;
        const double kn = coefficients(*pt.settings, *o, traj.p, h).kn;
        const double resting = kn > 0.0 ? 2.0 * weight / kn : 0.0;
        const double tolerance = std::max({kPenetrationFraction * (hi - lo).norm(), resting, kPenetrationFloor});
        if (depth - tolerance > worst_excess) {
          worst_excess = depth - tolerance;
          found = {body_label(scene, b), o->name(), depth, tolerance};
        }
      }
    if (worst_excess <= 0.0) continue;
    out.penetrations.push_back(found);
    out.warnings.push_back("body '" + found.body + "' starts inside obstacle '" + found.obstacle +
                           format("' (%.3g m deep, tolerance %.3g m): the first steps push it out with a large "
                                  "penalty force",
                                  found.depth, found.tolerance));
  }
}

}  // namespace

bool passive_scene(const Model& model) {
  if (!model.handles().empty()) return false;
  for (const auto& b : model.bodies())
    if (b->kind() == BodyKind::kRigid && static_cast<const RigidBody&>(*b).kinematic()) return false;
  for (const auto& term : model.terms())
    if (const auto* joints = dynamic_cast<const RigidJointTerm*>(term.get()))
      for (const RigidJoint& j : joints->joints())
        if (j.motor_stiffness_param >= 0) return false;
  return true;
}

RunChecks check_run(const Scene& scene, const Trajectory& traj) {
  RunChecks out;
  check_penetrations(scene, traj, out);
  check_floor_steps(scene, traj, out);
  check_energy(scene, traj, out);
  return out;
}

void add_run_checks(json& summary, const RunChecks& c) {
  summary["steps_accepted_at_floor"] = c.floor_steps;
  summary["first_step_accepted_at_floor"] = c.floor_steps > 0 ? json(c.first_floor_step) : json(nullptr);
  summary["max_relative_residual_at_floor"] = c.floor_steps > 0 ? json(c.max_floor_relative_residual) : json(nullptr);
  summary["passive"] = c.passive;
  if (c.passive)
    summary["energy"] = {{"initial", c.initial_energy}, {"peak", c.peak_energy}, {"peak_step", c.peak_step},
                         {"scale", c.energy_scale}, {"growth_warning", c.energy_growth}};
  else
    summary["energy"] = nullptr;
  json pen = json::array();
  for (const InitialPenetration& p : c.penetrations)
    pen.push_back({{"body", p.body}, {"obstacle", p.obstacle}, {"depth", p.depth}, {"tolerance", p.tolerance}});
  summary["initial_penetrations"] = pen;
  summary["warnings"] = c.warnings;
}

}  // namespace addsim
