#pragma once
// Shared set-up for the rigid-body tests: one model with contact parameters
// (contact.kn, contact.kd, optional contact.kt), plane obstacles with their friction
// parameters, and rigid bodies added through add_rigid_body().

#include <memory>
#include <string>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/obstacle.h"

namespace addsim::test {

struct RigidScene {
  std::unique_ptr<Model> model = std::make_unique<Model>();
  ContactSettings contact;
  std::vector<std::shared_ptr<const Obstacle>> obstacles;

  // Adds contact coefficients k_n, k_d (and k_t if kt > 0) to the parameter table.
  void add_contact(ContactModel kind, double kn, double kd, double kt = -1.0) {
    ParameterTable& t = model->params();
    contact.model = kind;
    contact.kn_param = t.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, kn), 1, 1);
    contact.kd_param = t.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, kd), 1, 1);
    if (kt > 0.0) contact.kt_param = t.add("contact.kt", "", ParamKind::kContact, VecX::Constant(1, kt), 1, 1);
  }
  // Adds a plane through `point` with outward `normal` and friction coefficient cf.
  void add_plane(const Vec3& point, const Vec3& normal, double cf) {
    const int i = static_cast<int>(obstacles.size());
    const std::string path = "obstacles." + std::to_string(i) + ".friction";
    const int pf = model->params().add(path, "", ParamKind::kContact, VecX::Constant(1, cf), 1, 1);
    obstacles.push_back(std::make_shared<PlaneObstacle>("plane" + std::to_string(i), pf, point, normal));
  }
  int add_body(const RigidShape& shape, double mass, const RigidInit& init, RigidProxy proxy, const Vec3& gravity) {
    return add_rigid_body(*model, "", shape, RigidMassSpec::from_mass(mass), init, std::move(proxy), gravity,
                          obstacles, contact);
  }
  const Term& term(std::string_view name) const {
    for (const auto& t : model->terms())
      if (t->name() == name) return *t;
    throw std::runtime_error("no term " + std::string(name));
  }
};

}  // namespace addsim::test
