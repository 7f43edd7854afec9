#include "addsim/rigid/rigid_builder.h"

#include "addsim/core/error.h"
#include "addsim/rigid/rigid_terms.h"

namespace addsim {

int add_rigid_body(Model& model, const std::string& name, const RigidShape& shape, const RigidMassSpec& mass,
                   const RigidInit& init, RigidProxy proxy, const Vec3& gravity,
                   std::vector<std::shared_ptr<const Obstacle>> obstacles, const ContactSettings& contact) {
  const int index = static_cast<int>(model.bodies().size());
  const std::string base = "bodies." + std::to_string(index);
  const std::string alias = name.empty() ? base : "bodies." + name;
  const double m = mass.resolve(shape);
  const Mat3 unit_inertia = shape.unit_inertia();
  for (const Vec3* v : {&init.position, &init.orientation, &init.velocity, &init.angular_velocity})
    if (!v->allFinite()) throw InputError(alias + ": initial state must be finite");
  if (!gravity.allFinite()) throw InputError(alias + ": gravity must be finite");
  RigidContactTerm::validate(alias, proxy, obstacles);

  ParameterTable& params = model.params();
  auto add3 = [&](const char* key, const Vec3& value) {
    return params.add(base + "." + key, alias + "." + key, ParamKind::kInitialCondition, value, 1, 3);
  };
  const int pp = add3("position", init.position);
  const int po = add3("orientation", init.orientation);
  const int pv = add3("velocity", init.velocity);
  const int pw = add3("angular_velocity", init.angular_velocity);
  VecX mv(1);
  mv[0] = m;
  const int pm = params.add(base + ".mass", alias + ".mass", ParamKind::kMass, mv, 1, 1, 1e-300,
                            std::numeric_limits<double>::infinity(), true);

  auto body = std::make_unique<RigidBody>(name, model.num_dofs(), unit_inertia, pp, po, pv, pw, pm);
  const RigidBody* b = body.get();
  model.add_body(std::move(body));
  model.add_term(std::make_unique<RigidInertiaTerm>(b));
  if (gravity.squaredNorm() > 0.0) model.add_term(std::make_unique<RigidGravityTerm>(b, gravity));
  if (!proxy.empty() && !obstacles.empty())
    model.add_term(std::make_unique<RigidContactTerm>(b, std::move(proxy), std::move(obstacles), contact));
  return index;
}

int add_kinematic_rigid_body(Model& model, const std::string& name, const RigidShape& shape,
                             const RigidMassSpec& mass, const std::vector<Eigen::Matrix<double, 6, 1>>& poses) {
  const int index = static_cast<int>(model.bodies().size());
  const std::string base = "bodies." + std::to_string(index);
  const std::string alias = name.empty() ? base : "bodies." + name;
  const TimeScheme& s = model.scheme();
  if (static_cast<int>(poses.size()) != s.steps + 1)
    throw InputError(alias + ".poses: needs steps + 1 = " + std::to_string(s.steps + 1) + " rows, got " +
                     std::to_string(poses.size()));
  VecX values(6 * poses.size());
  for (std::size_t i = 0; i < poses.size(); ++i) {
    if (!poses[i].allFinite()) throw InputError(alias + ".poses." + std::to_string(i) + ": must be finite");
    values.segment<6>(6 * i) = poses[i];
  }
  const double m = mass.resolve(shape);
  ParameterTable& params = model.params();
  const int pp = params.add(base + ".poses", alias + ".poses", ParamKind::kControl, values, s.steps + 1, 6);
  VecX mv(1);
  mv[0] = m;
  const int pm = params.add(base + ".mass", alias + ".mass", ParamKind::kMass, mv, 1, 1, 1e-300,
                            std::numeric_limits<double>::infinity(), true);
  auto body = std::make_unique<RigidBody>(name, model.num_dofs(), shape.unit_inertia(), pp, pp + 3, -1, -1, pm);
  body->make_kinematic(pp, s.h);
  const RigidBody* b = body.get();
  model.add_body(std::move(body));
  model.add_term(std::make_unique<RigidPoseTerm>(b));
  return index;
}

const RigidBody& rigid_body(const Model& model, int index) {
  if (index < 0 || index >= static_cast<int>(model.bodies().size()) ||
      model.bodies()[index]->kind() != BodyKind::kRigid)
    throw InputError("body " + std::to_string(index) + " is not a rigid body");
  return static_cast<const RigidBody&>(*model.bodies()[index]);
}

}  // namespace addsim
