#pragma once
// Programmatic particle models for tests: the parameter entries a scene loader would
// register (contact.kn, contact.kd, obstacles.k.friction, springs.k.stiffness/damping).

#include <memory>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/obstacle.h"
#include "addsim/terms/particle_terms.h"
#include "addsim/terms/spring_term.h"

namespace addsim::testing {

struct ParticleFixture {
  std::unique_ptr<Model> model = std::make_unique<Model>();
  std::vector<std::shared_ptr<const Obstacle>> obstacles;
  ContactSettings contact;
  const ParticleBody* body = nullptr;
  int spring_count = 0;

  ParticleFixture(Integrator integrator, double h, int steps) {
    model->scheme_mut() = TimeScheme::make(integrator, h, steps);
  }

  /// Adds the particle body (must be called once, before contact and springs).
  void particles(const std::vector<Vec3>& x, const std::vector<Vec3>& v, const std::vector<double>& m) {
    const int b = model->add_particles("p", x, v, m);
    body = static_cast<const ParticleBody*>(model->bodies()[b].get());
  }

  /// Registers contact coefficients (kt < 0: k_t = k_n h).
  void contact_params(ContactModel cm, double kn, double kd, double kt = -1.0) {
    auto& P = model->params();
    contact.model = cm;
    contact.kn_param = P.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, kn), 1, 1, 0.0);
    contact.kd_param = P.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, kd), 1, 1, 0.0);
    if (kt >= 0) contact.kt_param = P.add("contact.kt", "", ParamKind::kContact, VecX::Constant(1, kt), 1, 1, 0.0);
  }

  void plane(const Vec3& point, const Vec3& normal, double friction) {
    const int k = static_cast<int>(obstacles.size());
    const int pf = model->params().add("obstacles." + std::to_string(k) + ".friction", "", ParamKind::kContact,
                                       VecX::Constant(1, friction), 1, 1, 0.0);
    obstacles.push_back(std::make_shared<PlaneObstacle>("plane" + std::to_string(k), pf, point, normal));
  }

  /// Spring with its own stiffness/damping entries.
  Spring spring(SpringKind kind, Anchor a, Anchor b, double k, double kd, double rest) {
    const std::string base = "springs." + std::to_string(spring_count++);
    Spring s;
    s.kind = kind;
    s.a = std::move(a);
    s.b = std::move(b);
    s.rest_length = rest;
    s.stiffness_param = model->params().add(base + ".stiffness", "", ParamKind::kCoupling, VecX::Constant(1, k), 1, 1, 0.0);
    s.damping_param = model->params().add(base + ".damping", "", ParamKind::kCoupling, VecX::Constant(1, kd), 1, 1, 0.0);
    s.label = base;
    return s;
  }

  Anchor point(int k) const { return Anchor::particle(body->dof(k), "p." + std::to_string(k)); }

  /// Adds inertia, gravity and (if obstacles exist) contact terms for the body.
  void standard_terms(const Vec3& gravity) {
    model->add_term(std::make_unique<ParticleInertiaTerm>(body));
    model->add_term(std::make_unique<ParticleGravityTerm>(body, gravity));
    if (!obstacles.empty()) {
      std::vector<DofIndex> dofs;
      for (int k = 0; k < body->count(); ++k) dofs.push_back(body->dof(k));
      model->add_term(std::make_unique<PointContactTerm>(dofs, obstacles, contact));
    }
  }
};

}  // namespace addsim::testing
