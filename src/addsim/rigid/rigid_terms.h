#pragma once
/// Terms acting on one rigid body (paper §3.1, §5.2; [Liu and Jain 2012]):
///   inertia  r_p = m a_p,
///            r_θ = J_Bᵀ (I_B α_B + ω_B × I_B ω_B),  ω_B = J_B θ̇,  α_B = J_B θ̈ + J̇_B θ̇,
///   gravity  r_p −= m g,
/// with J_B = J(θ)ᵀ the body-frame angular-velocity Jacobian (rigid/so3.h). r_θ is the
/// Euler equation mapped to θ; it equals M(θ) θ̈ + c(θ, θ̇) with M = J_Bᵀ I_B J_B
/// (= J_Wᵀ I_W J_W, written in the body frame so that no derivative of R is needed).

#include <vector>

#include "addsim/model/term.h"
#include "addsim/rigid/rigid_body.h"

namespace addsim {

/// Generalised inertia and Coriolis/centrifugal forces of one rigid body; exact ∂r/∂q
/// (through ∂J/∂θ, ∂²J/∂θ²), ∂r/∂v, ∂r/∂a (6 × 6) and ∂r/∂m.
class RigidInertiaTerm final : public Term {
 public:
  explicit RigidInertiaTerm(const RigidBody* body) : body_(body) {}
  std::string_view name() const override { return "rigid_inertia"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

 private:
  const RigidBody* body_;
  int stencil_ = -1;
};

/// r_p −= m g on one rigid body (g: m/s², world frame); energy −m g·p_WB.
class RigidGravityTerm final : public Term {
 public:
  RigidGravityTerm(const RigidBody* body, const Vec3& gravity) : body_(body), gravity_(gravity) {}
  std::string_view name() const override { return "rigid_gravity"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;

 private:
  const RigidBody* body_;
  Vec3 gravity_;
  int stencil_ = -1;
};

/// Prescribed pose of a kinematic rigid body: r = q_B − pose^i (6 rows, m and rad) with
/// pose^i = p[poses_param + 6i … +6], so q_B^i equals its control exactly; ∂r/∂q = I and
/// ∂r/∂pose^i = −I.
class RigidPoseTerm final : public Term {
 public:
  explicit RigidPoseTerm(const RigidBody* body);
  std::string_view name() const override { return "rigid_pose"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

 private:
  const RigidBody* body_;
  int stencil_ = -1;
};

}  // namespace addsim
