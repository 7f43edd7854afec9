#include "addsim/model/body.h"

namespace addsim {

ParticleBody::ParticleBody(std::string name, int dof_offset, int count, int positions_param, int velocities_param,
                           int mass_param)
    : Body(BodyKind::kParticles, std::move(name), dof_offset, 3 * count),
      count_(count),
      positions_param_(positions_param),
      velocities_param_(velocities_param),
      mass_param_(mass_param) {}

void ParticleBody::initial_state(const VecX& p, VecX& q0, VecX& v0) const {
  q0.segment(dof_offset(), dof_count()) = p.segment(positions_param_, dof_count());
  v0.segment(dof_offset(), dof_count()) = p.segment(velocities_param_, dof_count());
}

void ParticleBody::initial_state_vjp(const VecX& p, const VecX& gq0, const VecX& gv0, VecX& grad) const {
  grad.segment(positions_param_, dof_count()) += gq0.segment(dof_offset(), dof_count());
  grad.segment(velocities_param_, dof_count()) += gv0.segment(dof_offset(), dof_count());
}

void ParticleBody::initial_state_jvp(const VecX& p, int j, VecX& dq0, VecX& dv0) const {
  if (j >= positions_param_ && j < positions_param_ + dof_count()) dq0[dof_offset() + (j - positions_param_)] += 1.0;
  if (j >= velocities_param_ && j < velocities_param_ + dof_count()) dv0[dof_offset() + (j - velocities_param_)] += 1.0;
}

Vec3 ParticleBody::center_of_mass(const VecX& q, const VecX& p) const {
  Vec3 c = Vec3::Zero();
  for (int k = 0; k < count_; ++k) c += p[mass_param_ + k] * q.segment<3>(dof(k));
  return c / total_mass(p);
}

double ParticleBody::total_mass(const VecX& p) const { return p.segment(mass_param_, count_).sum(); }

double ParticleBody::kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const {
  double e = 0.0;
  for (int k = 0; k < count_; ++k) e += 0.5 * p[mass_param_ + k] * v.segment<3>(dof(k)).squaredNorm();
  return e;
}

std::vector<std::string> ParticleBody::dof_labels() const {
  std::vector<std::string> labels;
  labels.reserve(dof_count());
  for (int k = 0; k < count_; ++k)
    for (const char axis : {'x', 'y', 'z'}) {
      std::string label(1, 'p');
      label += std::to_string(k);
      label += '.';
      label += axis;
      labels.push_back(std::move(label));
    }
  return labels;
}

}  // namespace addsim
