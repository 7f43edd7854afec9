#pragma once
/// Terms acting on particle bodies: inertia r += m a and gravity r −= m g (paper eq. rDyn
/// with a constant diagonal mass), both reading the per-particle masses from p.

#include <memory>
#include <vector>

#include "addsim/model/body.h"
#include "addsim/model/term.h"

namespace addsim {

/// r_k += m_k a_k for every particle k of one body; ∂r/∂a = m_k I, ∂r/∂m_k = a_k.
class ParticleInertiaTerm final : public Term {
 public:
  explicit ParticleInertiaTerm(const ParticleBody* body) : body_(body) {}
  std::string_view name() const override { return "particle_inertia"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

 private:
  const ParticleBody* body_;
  std::vector<int> stencil_;
};

/// r_k −= m_k g for every particle k of one body (g: m/s²); energy −Σ m_k g·x_k.
class ParticleGravityTerm final : public Term {
 public:
  ParticleGravityTerm(const ParticleBody* body, const Vec3& gravity) : body_(body), gravity_(gravity) {}
  std::string_view name() const override { return "particle_gravity"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;

 private:
  const ParticleBody* body_;
  Vec3 gravity_;
  std::vector<int> stencil_;
};

}  // namespace addsim
