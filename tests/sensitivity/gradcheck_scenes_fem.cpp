#include <memory>

#include "addsim/fem/fem_builder.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/terms/obstacle.h"
#include "gradcheck_scenes.h"

namespace addsim::testing {

namespace {
std::vector<int> range_of(int offset, int size) {
  std::vector<int> r(size);
  for (int k = 0; k < size; ++k) r[k] = offset + k;
  return r;
}
}  // namespace

Scene make_soft_ball(bool contact, Integrator integrator, ContactModel friction, int steps, int cells) {
  Scene s;
  s.model = std::make_unique<Model>();
  Model& m = *s.model;
  m.scheme_mut() = TimeScheme::make(integrator, 0.01, steps > 0 ? steps : 30);
  std::vector<std::shared_ptr<const Obstacle>> obstacles;
  ContactSettings cs;
  cs.model = friction;
  if (contact) {
    ParameterTable& t = m.params();
    cs.kn_param = t.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, 1000.0), 1, 1, 0.0, 1e300, true);
    cs.kd_param = t.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, 0.01), 1, 1, 0.0, 1e300);
    const int pf = t.add("obstacles.0.friction", "", ParamKind::kContact, VecX::Constant(1, 0.4), 1, 1, 0.0, 1e300);
    obstacles.push_back(std::make_shared<PlaneObstacle>("floor", pf, Vec3::Zero(), Vec3::UnitZ()));
    s.groups["kn"] = {cs.kn_param};
    s.groups["kd"] = {cs.kd_param};
    s.groups["friction"] = {pf};
    s.relative_groups.insert(s.relative_groups.end(), {"kn", "kd", "friction"});
    s.has_contact = true;
  }
  FemMaterial mat;
  mat.youngs_modulus = 2e4;
  mat.poisson_ratio = 0.3;
  mat.density = 150.0;
  mat.viscosity = 0.0125;
  FemInit init;
  init.position = contact ? Vec3(0.0, 0.0, 0.09) : Vec3(0.0, 0.0, 1.0);
  init.orientation = Vec3(0.1, -0.2, 0.3);
  init.velocity = Vec3(1.0, 0.2, -0.5);
  init.angular_velocity = Vec3(1.0, -6.0, 2.0);
  FemOptions opt;
  opt.gravity = Vec3(0, 0, -9.81);
  const int b = add_fem_body(m, "ball", make_box_mesh(Vec3(0.1, 0.1, 0.1), Eigen::Vector3i(cells, cells, cells)), mat, init, opt,
                             obstacles, cs);
  m.finalize();
  const FemBody& fb = fem_body(m, b);
  const FemParamIndices& pi = fb.params();
  s.groups["position"] = range_of(pi.position, 3);
  s.groups["orientation"] = range_of(pi.orientation, 3);
  s.groups["velocity"] = range_of(pi.velocity, 3);
  s.groups["angular_velocity"] = range_of(pi.angular_velocity, 3);
  if (contact) {
    // Material only acts through deformation, which contact causes (free flight stays rigid).
    s.groups["E"] = {pi.youngs_modulus};
    s.groups["nu"] = {pi.poisson_ratio};
    s.groups["rho"] = {pi.density};
    s.groups["viscosity"] = {pi.viscosity};
    s.relative_groups.insert(s.relative_groups.end(), {"E", "nu", "rho", "viscosity"});
  }
  // Objective: centre of mass at the end plus two corner nodes over the second half (rotation).
  s.objective.add(1.0, std::make_unique<CenterOfMassTarget>(b, Vec3(0.5, 0.1, 0.05)));
  s.objective.add(3.0, std::make_unique<PointTargets>(std::vector<DofIndex>{fb.dof(0), fb.dof(fb.num_nodes() - 1)},
                                                      std::vector<Vec3>{Vec3(0.3, 0, 0), Vec3(0.3, 0.1, 0.2)},
                                                      StepWindow::range(-10, -1)));
  return s;
}

}  // namespace addsim::testing
