#include "addsim/fem/fem_builder.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "addsim/core/error.h"

namespace addsim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void bad(const std::string& key, double value, const char* rule) {
  std::ostringstream msg;
  msg << key << " = " << value << " is invalid: " << rule;
  throw InputError(msg.str());
}
}  // namespace

void validate_material(const FemMaterial& m, const std::string& prefix) {
  const std::string base = prefix + ".material.";
  if (!(m.youngs_modulus > 0.0) || !std::isfinite(m.youngs_modulus))
    bad(base + "youngs_modulus", m.youngs_modulus, "must be positive and finite (Pa)");
  if (!(m.poisson_ratio > -1.0 && m.poisson_ratio < 0.5))
    bad(base + "poisson_ratio", m.poisson_ratio, "must lie in (-1, 0.5)");
  if (!(m.density > 0.0) || !std::isfinite(m.density))
    bad(base + "density", m.density, "must be positive and finite (kg/m^3)");
  if (!(m.viscosity >= 0.0) || !std::isfinite(m.viscosity))
    bad(base + "viscosity", m.viscosity, "must be non-negative and finite (Pa s)");
}

int add_fem_body(Model& model, const std::string& name, const TetMesh& mesh, const FemMaterial& material,
                 const FemInit& init, const FemOptions& options,
                 std::vector<std::shared_ptr<const Obstacle>> obstacles, const ContactSettings& contact) {
  const int index = static_cast<int>(model.bodies().size());
  const std::string base = "bodies." + std::to_string(index);
  const std::string alias = name.empty() ? base : "bodies." + name;
  validate_material(material, base);
  for (const Vec3* v : {&init.orientation, &init.velocity, &init.angular_velocity})
    if (!v->allFinite()) throw InputError(base + ": initial conditions must be finite");
  if (init.position && !init.position->allFinite()) throw InputError(base + ".position must be finite");
  if (!obstacles.empty() && contact.kn_param < 0)
    throw InputError(base + ": contact with obstacles needs a contact stiffness parameter");

  // Build the body first (validates the mesh) with parameter offsets reserved below.
  ParameterTable& pt = model.params();
  const int first = pt.size();
  FemParamIndices idx;
  idx.position = first;
  idx.orientation = first + 3;
  idx.velocity = first + 6;
  idx.angular_velocity = first + 9;
  idx.youngs_modulus = first + 12;
  idx.poisson_ratio = first + 13;
  idx.density = first + 14;
  idx.viscosity = first + 15;
  auto body = std::make_unique<FemBody>(name, base, model.num_dofs(), mesh, idx, options.mass);
  const FemBody* fem = body.get();

  auto add3 = [&](const char* key, const Vec3& value, int expected) {
    const int at = pt.add(base + "." + key, alias + "." + key, ParamKind::kInitialCondition, value, 1, 3);
    ADDSIM_CHECK(at == expected, "parameter layout of a soft body");
  };
  add3("position", init.position.value_or(fem->rest_center()), idx.position);
  add3("orientation", init.orientation, idx.orientation);
  add3("velocity", init.velocity, idx.velocity);
  add3("angular_velocity", init.angular_velocity, idx.angular_velocity);
  auto add1 = [&](const char* key, double value, double lo, double hi, bool log_scale, int expected) {
    const std::string k = std::string(".material.") + key;
    const int at = pt.add(base + k, alias + k, ParamKind::kMaterial, VecX::Constant(1, value), 1, 1, lo, hi, log_scale);
    ADDSIM_CHECK(at == expected, "parameter layout of a soft body");
  };
  // Open bounds become the nearest representable closed ones (the table's check is inclusive).
  add1("youngs_modulus", material.youngs_modulus, std::numeric_limits<double>::min(), kInf, true, idx.youngs_modulus);
  add1("poisson_ratio", material.poisson_ratio, std::nextafter(-1.0, 0.0), std::nextafter(0.5, 0.0), false,
       idx.poisson_ratio);
  add1("density", material.density, std::numeric_limits<double>::min(), kInf, true, idx.density);
  add1("viscosity", material.viscosity, 0.0, kInf, false, idx.viscosity);

  model.add_body(std::move(body));
  model.add_term(std::make_unique<FemInertiaTerm>(fem, options.mass));
  if (options.gravity != Vec3::Zero()) model.add_term(std::make_unique<FemGravityTerm>(fem, options.gravity));
  model.add_term(std::make_unique<FemStressTerm>(fem, options.elasticity, options.viscosity));
  if (!obstacles.empty()) {
    std::vector<DofIndex> dofs;
    dofs.reserve(fem->surface_nodes().size());
    for (int k : fem->surface_nodes()) dofs.push_back(fem->dof(k));
    model.add_term(std::make_unique<PointContactTerm>(std::move(dofs), std::move(obstacles), contact));
  }
  return index;
}

const FemBody& fem_body(const Model& model, int body) {
  if (body < 0 || body >= static_cast<int>(model.bodies().size()) || model.bodies()[body]->kind() != BodyKind::kFem)
    throw InputError("bodies." + std::to_string(body) + " is not a soft (FEM) body");
  return static_cast<const FemBody&>(*model.bodies()[body]);
}

}  // namespace addsim
