#include "scenes.h"

#include <cmath>
#include <random>

#include "addsim/objectives/objective_terms.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/obstacle.h"
#include "addsim/terms/particle_terms.h"
#include "addsim/terms/spring_term.h"

namespace addsim::testing {

const char* to_string(SceneKind kind) {
  switch (kind) {
    case SceneKind::kChain: return "chain";
    case SceneKind::kBouncingCluster: return "bouncing_cluster";
    case SceneKind::kDraggedSheet: return "dragged_sheet";
  }
  return "unknown";
}

namespace {

const Vec3 kGravity(0.0, 0.0, -9.81);

std::vector<int> range_of(int offset, int size) {
  std::vector<int> r(size);
  for (int k = 0; k < size; ++k) r[k] = offset + k;
  return r;
}

int add_scalar(Model& m, const std::string& path, ParamKind kind, double value) {
  return m.params().add(path, "", kind, VecX::Constant(1, value), 1, 1, 0.0,
                        std::numeric_limits<double>::infinity());
}

// Grid of nx × ny particles with spacing d at height z, structural and shear springs.
struct Grid {
  std::vector<Vec3> x;
  std::vector<std::pair<int, int>> springs;
};
Grid make_grid(int nx, int ny, double d, const Vec3& origin) {
  Grid g;
  auto id = [&](int i, int j) { return i + nx * j; };
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) g.x.push_back(origin + Vec3(i * d, j * d, 0.0));
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      if (i + 1 < nx) g.springs.push_back({id(i, j), id(i + 1, j)});
      if (j + 1 < ny) g.springs.push_back({id(i, j), id(i, j + 1)});
      if (i + 1 < nx && j + 1 < ny) g.springs.push_back({id(i, j), id(i + 1, j + 1)});
      if (i + 1 < nx && j + 1 < ny) g.springs.push_back({id(i + 1, j), id(i, j + 1)});
    }
  return g;
}

// Particle body + inertia + gravity; returns the body.
const ParticleBody* add_body(Scene& s, const std::vector<Vec3>& x, const std::vector<Vec3>& v,
                             const std::vector<double>& mass) {
  Model& m = *s.model;
  const int b = m.add_particles("body", x, v, mass);
  const auto* body = static_cast<const ParticleBody*>(m.bodies()[b].get());
  m.add_term(std::make_unique<ParticleInertiaTerm>(body));
  m.add_term(std::make_unique<ParticleGravityTerm>(body, kGravity));
  const ParamRange pos = m.params().require("bodies.0.positions");
  const ParamRange vel = m.params().require("bodies.0.velocities");
  const ParamRange ms = m.params().require("bodies.0.mass");
  s.groups["positions"] = range_of(pos.offset, pos.size);
  s.groups["velocities"] = range_of(vel.offset, vel.size);
  s.groups["mass"] = range_of(ms.offset, ms.size);
  s.relative_groups.push_back("mass");
  return body;
}

// Distance springs between particles of `body` with shared stiffness and damping.
void add_springs(Scene& s, const ParticleBody* body, const std::vector<std::pair<int, int>>& pairs,
                 const std::vector<Vec3>& x, double stiffness, double damping, std::vector<Spring> extra) {
  Model& m = *s.model;
  const int pk = add_scalar(m, "springs.stiffness", ParamKind::kCoupling, stiffness);
  const int pd = add_scalar(m, "springs.damping", ParamKind::kCoupling, damping);
  s.groups["stiffness"] = {pk};
  s.groups["damping"] = {pd};
  s.relative_groups.push_back("stiffness");
  s.relative_groups.push_back("damping");
  std::vector<Spring> springs;
  // Appending to a named string, not "p" + std::to_string(i): gcc 12's -Wrestrict reports a
  // false positive in the inlined operator+(const char*, std::string&&).
  auto label = [](int i) {
    std::string s = "p";
    s += std::to_string(i);
    return s;
  };
  for (size_t k = 0; k < pairs.size(); ++k) {
    Spring sp;
    sp.kind = SpringKind::kDistance;
    sp.a = Anchor::particle(body->dof(pairs[k].first), label(pairs[k].first));
    sp.b = Anchor::particle(body->dof(pairs[k].second), label(pairs[k].second));
    sp.rest_length = (x[pairs[k].first] - x[pairs[k].second]).norm();
    sp.stiffness_param = pk;
    sp.damping_param = pd;
    sp.label = "springs." + std::to_string(k);
    springs.push_back(sp);
  }
  for (Spring& sp : extra) {
    if (sp.stiffness_param < 0) sp.stiffness_param = pk;
    springs.push_back(sp);
  }
  m.add_term(std::make_unique<SpringTerm>(&m, springs));
}

// Floor plane z = 0 with contact on every particle of `body`.
void add_floor(Scene& s, const ParticleBody* body, ContactModel friction, double kn, double kd, double cf) {
  Model& m = *s.model;
  ContactSettings cs;
  cs.model = friction;
  cs.kn_param = add_scalar(m, "contact.kn", ParamKind::kContact, kn);
  cs.kd_param = add_scalar(m, "contact.kd", ParamKind::kContact, kd);
  const int pf = add_scalar(m, "obstacles.0.friction", ParamKind::kContact, cf);
  s.groups["kn"] = {cs.kn_param};
  s.groups["kd"] = {cs.kd_param};
  s.groups["friction"] = {pf};
  s.relative_groups.insert(s.relative_groups.end(), {"kn", "kd", "friction"});
  auto floor = std::make_shared<const PlaneObstacle>("floor", pf, Vec3::Zero(), Vec3::UnitZ());
  std::vector<DofIndex> dofs;
  for (int k = 0; k < body->count(); ++k) dofs.push_back(body->dof(k));
  m.add_term(std::make_unique<PointContactTerm>(dofs, std::vector<std::shared_ptr<const Obstacle>>{floor}, cs));
  s.has_contact = true;
}

Scene make_chain(Integrator integrator, int steps) {
  Scene s;
  s.model = std::make_unique<Model>();
  Model& m = *s.model;
  m.scheme_mut() = TimeScheme::make(integrator, 0.01, steps > 0 ? steps : 80);
  const int n = 4;
  std::vector<Vec3> x, v;
  std::vector<double> mass;
  for (int k = 0; k < n; ++k) {
    x.emplace_back(0.25 * (k + 1), 0.02 * k, 1.0);
    v.emplace_back(0.1 * k, -0.2 + 0.1 * k, 0.05 * k);
    mass.push_back(0.1 + 0.05 * k);
  }
  const ParticleBody* body = add_body(s, x, v, mass);
  std::vector<std::pair<int, int>> pairs;
  for (int k = 0; k + 1 < n; ++k) pairs.push_back({k, k + 1});
  // Anchor particle 0 to the world point (0, 0, 1).
  Spring anchor;
  anchor.kind = SpringKind::kDistance;
  anchor.a = Anchor::particle(body->dof(0), "p0");
  anchor.b = Anchor::world_point(Vec3(0.0, 0.0, 1.0), "world");
  anchor.rest_length = 0.25;
  anchor.damping_param = -1;
  anchor.label = "springs.anchor";
  add_springs(s, body, pairs, x, 150.0, 0.3, {anchor});
  m.finalize();

  const int nq = m.num_dofs();
  VecX w(nq);
  for (int k = 0; k < nq; ++k) w[k] = std::sin(1.7 * k + 0.3);
  s.objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0.3, 0.1, 0.4)));
  s.objective.add(0.5, std::make_unique<PointTargets>(std::vector<DofIndex>{body->dof(n - 1)},
                                                       std::vector<Vec3>{Vec3(0.8, 0.0, 0.6)},
                                                       StepWindow::range(-10, -1)));
  s.objective.add(0.2, std::make_unique<LinearState>(w, m.scheme().steps / 2));
  return s;
}

Scene make_bouncing_cluster(Integrator integrator, ContactModel friction, int steps) {
  Scene s;
  s.model = std::make_unique<Model>();
  Model& m = *s.model;
  m.scheme_mut() = TimeScheme::make(integrator, 0.005, steps > 0 ? steps : 120);
  // A tetrahedron of four particles (rigid in 3D with its six springs), tilted so that
  // its corners land one by one.
  std::vector<Vec3> x = {Vec3(0.0, 0.0, 0.05), Vec3(0.1, 0.0, 0.06), Vec3(0.05, 0.09, 0.055),
                         Vec3(0.05, 0.03, 0.13)};
  std::vector<Vec3> v;
  std::vector<double> mass;
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) pairs.push_back({a, b});
  for (size_t k = 0; k < x.size(); ++k) {
    v.emplace_back(1.0 + 0.05 * k, 0.3, -0.8);
    mass.push_back(0.05 + 0.01 * k);
  }
  const ParticleBody* body = add_body(s, x, v, mass);
  add_springs(s, body, pairs, x, 300.0, 0.2, {});
  add_floor(s, body, friction, 2000.0, 0.02, 0.4);
  m.finalize();

  std::vector<DofIndex> dofs;
  std::vector<Vec3> targets;
  for (int k = 0; k < body->count(); ++k) {
    dofs.push_back(body->dof(k));
    targets.push_back(x[k] + Vec3(0.5, 0.1, -0.05));
  }
  s.objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0.6, 0.2, 0.0)));
  s.objective.add(0.3, std::make_unique<PointTargets>(dofs, targets, StepWindow::range(-20, -1)));
  return s;
}

Scene make_dragged_sheet(Integrator integrator, ContactModel friction, int steps) {
  Scene s;
  s.model = std::make_unique<Model>();
  Model& m = *s.model;
  const int n = steps > 0 ? steps : 50;
  const double h = 0.01;
  m.scheme_mut() = TimeScheme::make(integrator, h, n);
  const Grid g = make_grid(3, 3, 0.1, Vec3(0.0, 0.0, 0.01));
  std::vector<Vec3> v(g.x.size(), Vec3(0.0, 0.0, -0.05));
  std::vector<double> mass;
  for (size_t k = 0; k < g.x.size(); ++k) mass.push_back(0.02 + 0.002 * k);
  const ParticleBody* body = add_body(s, g.x, v, mass);

  // Two handles above the corners 2 and 8, moving in +x with a small wiggle.
  const int corners[2] = {2, 8};
  std::vector<Spring> extra;
  const int pkh = add_scalar(m, "handles.stiffness", ParamKind::kCoupling, 40.0);
  s.groups["handle_stiffness"] = {pkh};
  s.relative_groups.push_back("handle_stiffness");
  s.groups["controls"] = {};
  for (int hnd = 0; hnd < 2; ++hnd) {
    std::vector<Vec3> path;
    for (int r = 0; r <= n; ++r) {
      const double t = r * h;
      path.push_back(g.x[corners[hnd]] + Vec3(0.6 * t, 0.02 * std::sin(20.0 * t + hnd), 0.01 + 0.01 * t));
    }
    const int index = m.add_handle("", path);
    const int offset = m.handles()[index].positions_param;
    for (int k = 0; k < 3 * (n + 1); ++k) s.groups["controls"].push_back(offset + k);
    Spring sp;
    sp.kind = SpringKind::kZeroLength;
    sp.a = Anchor::particle(body->dof(corners[hnd]), "p" + std::to_string(corners[hnd]));
    sp.b = Anchor::handle_point(index, "handles." + std::to_string(index));
    sp.stiffness_param = pkh;
    sp.label = "handle_springs." + std::to_string(hnd);
    extra.push_back(sp);
  }
  add_springs(s, body, g.springs, g.x, 200.0, 0.1, extra);
  add_floor(s, body, friction, 500.0, 0.005, 0.5);
  m.finalize();

  std::vector<DofIndex> dofs;
  std::vector<Vec3> targets;
  for (int k = 0; k < body->count(); ++k) {
    dofs.push_back(body->dof(k));
    targets.push_back(g.x[k] + Vec3(0.4, 0.05, 0.0));
  }
  s.objective.add(1.0, std::make_unique<PointTargets>(dofs, targets));
  s.objective.add(0.5, std::make_unique<CenterOfMassTarget>(0, Vec3(0.5, 0.1, 0.0), StepWindow::range(-5, -1)));
  s.objective.add(1e-2, std::make_unique<ControlSmoothness>(0));
  s.objective.add(1e-2, std::make_unique<ControlSmoothness>(1));
  return s;
}

}  // namespace

Scene make_scene(SceneKind kind, Integrator integrator, ContactModel friction, int steps) {
  Scene s;
  switch (kind) {
    case SceneKind::kChain: s = make_chain(integrator, steps); break;
    case SceneKind::kBouncingCluster: s = make_bouncing_cluster(integrator, friction, steps); break;
    case SceneKind::kDraggedSheet: s = make_dragged_sheet(integrator, friction, steps); break;
  }
  s.model->solver_mut().tolerance = 1e-10;
  return s;
}

}  // namespace addsim::testing
