#include <cmath>
#include <memory>

#include "addsim/objectives/markers.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/terms/obstacle.h"
#include "gradcheck_scenes.h"

namespace addsim::testing {

namespace {
std::vector<int> range_of(int offset, int size) {
  std::vector<int> r(size);
  for (int k = 0; k < size; ++k) r[k] = offset + k;
  return r;
}

// Contact parameters and one plane through `point` with `normal`.
std::vector<std::shared_ptr<const Obstacle>> add_plane(Scene& s, ContactSettings& cs, const Vec3& point,
                                                       const Vec3& normal, double kn, double kd, double cf) {
  ParameterTable& t = s.model->params();
  cs.kn_param = t.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, kn), 1, 1, 0.0, 1e300, true);
  cs.kd_param = t.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, kd), 1, 1, 0.0, 1e300);
  const int pf = t.add("obstacles.0.friction", "", ParamKind::kContact, VecX::Constant(1, cf), 1, 1, 0.0, 1e300);
  s.groups["kn"] = {cs.kn_param};
  s.groups["kd"] = {cs.kd_param};
  s.groups["friction"] = {pf};
  s.relative_groups.insert(s.relative_groups.end(), {"kn", "kd", "friction"});
  s.has_contact = true;
  return {std::make_shared<PlaneObstacle>("plane", pf, point, normal)};
}

void add_initial_condition_groups(Scene& s, const RigidBody& rb, const std::string& prefix, bool mass) {
  s.groups[prefix + "position"] = range_of(rb.position_param(), 3);
  s.groups[prefix + "orientation"] = range_of(rb.orientation_param(), 3);
  s.groups[prefix + "velocity"] = range_of(rb.velocity_param(), 3);
  s.groups[prefix + "angular_velocity"] = range_of(rb.angular_velocity_param(), 3);
  if (mass) {
    s.groups[prefix + "mass"] = {rb.mass_param()};
    s.relative_groups.push_back(prefix + "mass");
  }
}

// Objective: centre of mass at the end plus an off-centre marker over the last steps (rotation).
void add_rigid_objective(Scene& s, int body, const Vec3& target) {
  const Model& m = *s.model;
  const int n = m.scheme().steps;
  std::vector<MarkerFrame> frames;
  for (int i : {n / 2, n - 3, n}) {
    MarkerFrame f;
    f.step = i;
    f.positions = {target + Vec3(0.0, 0.1, 0.2)};
    f.visible = {true};
    frames.push_back(f);
  }
  s.objective.add(1.0, std::make_unique<CenterOfMassTarget>(body, target));
  s.objective.add(2.0, std::make_unique<MarkerTrajectories>(
                           std::vector<Marker>{rigid_marker(m, body, Vec3(0.05, -0.03, 0.08))}, frames));
}
}  // namespace

Scene make_rigid_sphere(bool contact, Integrator integrator, ContactModel friction, int steps) {
  Scene s;
  s.model = std::make_unique<Model>();
  Model& m = *s.model;
  m.scheme_mut() = TimeScheme::make(integrator, 0.01, steps > 0 ? steps : (contact ? 60 : 40));
  ContactSettings cs;
  cs.model = friction;
  std::vector<std::shared_ptr<const Obstacle>> obstacles;
  if (contact) obstacles = add_plane(s, cs, Vec3::Zero(), Vec3::UnitZ(), 2000.0, 0.2, 0.4);
  RigidInit init;
  init.position = contact ? Vec3(0.0, 0.0, 0.15) : Vec3(0.0, 0.0, 1.0);
  init.orientation = Vec3(0.2, -0.1, 0.3);
  init.velocity = Vec3(1.5, 0.3, -0.5);
  init.angular_velocity = Vec3(2.0, -8.0, 1.0);
  const int b = add_rigid_body(m, "sphere", RigidShape::sphere(0.1), RigidMassSpec::from_mass(0.5), init,
                               contact ? RigidProxy::sphere(Vec3::Zero(), 0.1) : RigidProxy{}, Vec3(0, 0, -9.81),
                               obstacles, cs);
  m.finalize();
  // In free flight the mass cancels (gravity ∝ m): only initial conditions act.
  add_initial_condition_groups(s, rigid_body(m, b), "", contact);
  add_rigid_objective(s, b, Vec3(0.6, 0.1, 0.1));
  return s;
}

Scene make_rigid_cube_incline(Integrator integrator, ContactModel friction, int steps) {
  Scene s;
  s.model = std::make_unique<Model>();
  Model& m = *s.model;
  m.scheme_mut() = TimeScheme::make(integrator, 0.01, steps > 0 ? steps : 60);
  ContactSettings cs;
  cs.model = friction;
  // A 20° incline through the origin, normal tilted towards −x: the cube slides towards +x.
  const double a = 20.0 * 3.14159265358979323846 / 180.0;
  const Vec3 normal(std::sin(a), 0.0, std::cos(a));
  const auto obstacles = add_plane(s, cs, Vec3::Zero(), normal, 3000.0, 0.1, 0.3);
  RigidInit init;
  init.orientation = Vec3(0.0, a, 0.0);
  init.position = 0.051 * normal;
  init.velocity = Vec3(0.4 * std::cos(a), 0.05, -0.4 * std::sin(a));
  init.angular_velocity = Vec3(0.0, 0.0, 0.5);
  const Vec3 size(0.1, 0.1, 0.1);
  const int b = add_rigid_body(m, "cube", RigidShape::box(size), RigidMassSpec::from_mass(1.0), init,
                               RigidProxy::box_corners(size), Vec3(0, 0, -9.81), obstacles, cs);
  m.finalize();
  add_initial_condition_groups(s, rigid_body(m, b), "", true);
  add_rigid_objective(s, b, Vec3(0.4, 0.0, -0.1));
  return s;
}

Scene make_hinge_chain(Integrator integrator, int steps) {
  Scene s;
  s.model = std::make_unique<Model>();
  Model& m = *s.model;
  m.scheme_mut() = TimeScheme::make(integrator, 0.01, steps > 0 ? steps : 40);
  ParameterTable& t = m.params();
  const int pk = t.add("couplings.stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 2000.0), 1, 1, 0.0, 1e300);
  const int pa = t.add("couplings.axis_stiffness", "", ParamKind::kCoupling, VecX::Constant(1, 50.0), 1, 1, 0.0, 1e300);
  s.groups["stiffness"] = {pk};
  s.groups["axis_stiffness"] = {pa};
  s.relative_groups.insert(s.relative_groups.end(), {"stiffness", "axis_stiffness"});
  // Three 0.2 m links along +x, hinged about y at their ends; link 0 hangs from the world at the origin.
  const Vec3 size(0.2, 0.04, 0.04);
  std::vector<int> bodies;
  for (int k = 0; k < 3; ++k) {
    RigidInit init;
    init.position = Vec3(0.1 + 0.2 * k, 0.0, 0.0);
    init.velocity = Vec3(0.0, 0.1 * k, 0.2);
    init.angular_velocity = Vec3(0.3 * k, 0.5, 0.0);
    bodies.push_back(add_rigid_body(m, "link" + std::to_string(k), RigidShape::box(size),
                                    RigidMassSpec::from_mass(0.5 + 0.1 * k), init, {}, Vec3(0, 0, -9.81), {}, {}));
  }
  std::vector<RigidJoint> joints;
  for (int k = 0; k < 3; ++k) {
    RigidJoint j;
    j.kind = RigidJoint::Kind::kHinge;
    j.body_a = &rigid_body(m, bodies[k]);
    j.body_b = k == 0 ? nullptr : &rigid_body(m, bodies[k - 1]);
    j.point_a = Vec3(-0.1, 0, 0);
    j.point_b = k == 0 ? Vec3::Zero() : Vec3(0.1, 0, 0);
    j.axis_a = Vec3::UnitY();
    j.axis_b = Vec3::UnitY();
    j.stiffness_param = pk;
    j.axis_stiffness_param = pa;
    j.label = "joints." + std::to_string(k);
    joints.push_back(j);
  }
  m.add_term(std::make_unique<RigidJointTerm>(joints));
  m.finalize();
  add_initial_condition_groups(s, rigid_body(m, bodies[2]), "link2.", true);
  add_rigid_objective(s, bodies[2], Vec3(0.3, 0.0, -0.4));
  return s;
}

}  // namespace addsim::testing
