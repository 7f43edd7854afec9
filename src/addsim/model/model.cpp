#include "addsim/model/model.h"

#include "addsim/core/error.h"

namespace addsim {

void Model::require_building() const {
  ADDSIM_CHECK(!finalized_, "the model is finalised and can no longer change");
}

int Model::add_particles(const std::string& name, const std::vector<Vec3>& positions,
                         const std::vector<Vec3>& velocities, const std::vector<double>& masses) {
  require_building();
  const int n = static_cast<int>(positions.size());
  ADDSIM_CHECK(static_cast<int>(velocities.size()) == n && static_cast<int>(masses.size()) == n,
               "particle arrays differ in length");
  const int index = static_cast<int>(bodies_.size());
  const std::string base = "bodies." + std::to_string(index);
  const std::string alias = name.empty() ? base : "bodies." + name;
  VecX pos(3 * n), vel(3 * n), mass(n);
  for (int k = 0; k < n; ++k) {
    pos.segment<3>(3 * k) = positions[k];
    vel.segment<3>(3 * k) = velocities[k];
    mass[k] = masses[k];
  }
  const int pp = params_.add(base + ".positions", alias + ".positions", ParamKind::kInitialCondition, pos, n, 3);
  const int pv = params_.add(base + ".velocities", alias + ".velocities", ParamKind::kInitialCondition, vel, n, 3);
  const int pm = params_.add(base + ".mass", alias + ".mass", ParamKind::kMass, mass, n, 1, 1e-300,
                             std::numeric_limits<double>::infinity(), true);
  return add_body(std::make_unique<ParticleBody>(name, num_dofs_, n, pp, pv, pm));
}

int Model::add_body(std::unique_ptr<Body> body) {
  require_building();
  ADDSIM_CHECK(body->dof_offset() == num_dofs_, "bodies must be added in DOF order");
  num_dofs_ += body->dof_count();
  bodies_.push_back(std::move(body));
  return static_cast<int>(bodies_.size()) - 1;
}

int Model::add_handle(const std::string& name, const std::vector<Vec3>& positions) {
  require_building();
  ADDSIM_CHECK(static_cast<int>(positions.size()) == scheme_.steps + 1, "a handle needs steps + 1 positions");
  const int index = static_cast<int>(handles_.size());
  const std::string base = "handles." + std::to_string(index);
  VecX values(3 * positions.size());
  for (size_t k = 0; k < positions.size(); ++k) values.segment<3>(3 * k) = positions[k];
  Handle h;
  h.name = name;
  h.positions_param = params_.add(base + ".positions", name.empty() ? base + ".positions" : "handles." + name + ".positions",
                                  ParamKind::kControl, values, static_cast<int>(positions.size()), 3);
  handles_.push_back(h);
  return index;
}

void Model::add_term(std::unique_ptr<Term> term) {
  require_building();
  terms_.push_back(std::move(term));
}

void Model::finalize() {
  require_building();
  for (auto& t : terms_) t->declare(stencils_);
  pattern_ = SparsePattern(num_dofs_, stencils_);
  // Each body's DOF block, for solvers that eliminate body by body (linear_solver = "schur").
  std::vector<int> starts;
  for (const auto& b : bodies_) starts.push_back(b->dof_offset());
  starts.push_back(num_dofs_);
  pattern_.set_blocks(std::move(starts));
  finalized_ = true;
}

void Model::initial_state(const VecX& p, VecX& q0, VecX& v0) const {
  q0.setZero(num_dofs_);
  v0.setZero(num_dofs_);
  for (const auto& b : bodies_) b->initial_state(p, q0, v0);
}

double Model::kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const {
  double e = 0.0;
  for (const auto& b : bodies_) e += b->kinetic_energy(q, v, p);
  return e;
}

}  // namespace addsim
