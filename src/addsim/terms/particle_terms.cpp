#include "addsim/terms/particle_terms.h"

namespace addsim {

void ParticleInertiaTerm::declare(StencilSet& stencils) {
  stencil_.clear();
  for (int k = 0; k < body_->count(); ++k) {
    const int d = body_->dof(k);
    stencil_.push_back(stencils.add({d, d + 1, d + 2}));
  }
}

void ParticleInertiaTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  // ∂r/∂a = m I added as its diagonal only (Assembly::add_isotropic_a): the same values as
  // scattering the 3 × 3 block, whose off-diagonal entries are +0.
  Eigen::Matrix<double, 1, 1> mass;
  for (int k = 0; k < body_->count(); ++k) {
    const double m = ctx.p[body_->mass_param() + k];
    const Vec3 r = m * ctx.a.segment<3>(body_->dof(k));
    mass(0, 0) = m;
    out.add_isotropic_a<1>(stencil_[k], r, mass);
  }
}

void ParticleInertiaTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  for (int k = 0; k < body_->count(); ++k) {
    const int pm = body_->mass_param() + k;
    if (!sink.wants(pm)) continue;
    const Vec3 col = ctx.a.segment<3>(body_->dof(k));
    sink.add(stencil_[k], std::span<const int>(&pm, 1), col);
  }
}

void ParticleGravityTerm::declare(StencilSet& stencils) {
  stencil_.clear();
  for (int k = 0; k < body_->count(); ++k) {
    const int d = body_->dof(k);
    stencil_.push_back(stencils.add({d, d + 1, d + 2}));
  }
}

void ParticleGravityTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  if (out.completing()) return;  // a constant force: no partials, and its residual is assembled
  for (int k = 0; k < body_->count(); ++k) {
    const Vec3 r = -ctx.p[body_->mass_param() + k] * gravity_;
    out.add<3>(stencil_[k], r, nullptr, nullptr, nullptr);
  }
}

void ParticleGravityTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  for (int k = 0; k < body_->count(); ++k) {
    const int pm = body_->mass_param() + k;
    if (!sink.wants(pm)) continue;
    const Vec3 col = -gravity_;
    sink.add(stencil_[k], std::span<const int>(&pm, 1), col);
  }
}

double ParticleGravityTerm::energy(const TermContext& ctx) const {
  double e = 0.0;
  for (int k = 0; k < body_->count(); ++k)
    e -= ctx.p[body_->mass_param() + k] * gravity_.dot(ctx.q.segment<3>(body_->dof(k)));
  return e;
}

}  // namespace addsim
