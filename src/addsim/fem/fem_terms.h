#pragma once
/// Terms of FEM soft bodies (paper §5.1), one stencil of 12 DOFs per tetrahedron:
///   inertia     r += M a                        (consistent or lumped M, ∝ ρ)
///   gravity     r −= (m_e/4) g per node         (equals M g for either mass matrix)
///   elasticity  r += V Gᵀ vec(P(F))             (Neo-Hookean, μ, λ from E, ν)
///   viscosity   r += V Gᵀ vec(P_visc(F, Ḟ))     (paper eq. rotInvViscStress, or linear)
/// All partials are exact; parameter derivatives cover ρ, E, ν and ν_visc.

#include <string_view>
#include <vector>

#include "addsim/fem/fem_body.h"
#include "addsim/model/term.h"

namespace addsim {

/// r += M a with M the consistent (m_e/20 (1 + δ_kl) I₃) or lumped (m_e/4 I₃ per node)
/// element mass, m_e = ρ V_e; ∂r/∂a = M, ∂r/∂ρ = (M/ρ) a.
class FemInertiaTerm final : public Term {
 public:
  FemInertiaTerm(const FemBody* body, MassMatrixKind kind) : body_(body), kind_(kind) {}
  std::string_view name() const override { return "fem_inertia"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  int item_count() const override { return body_->num_tets(); }
  void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

 private:
  const FemBody* body_;
  MassMatrixKind kind_;
  std::vector<int> stencil_;
};

/// r_k −= Σ_e (ρ V_e / 4) g over the tets e of node k (g: m/s²); energy −Σ m_k g·x_k.
class FemGravityTerm final : public Term {
 public:
  FemGravityTerm(const FemBody* body, const Vec3& gravity) : body_(body), gravity_(gravity) {}
  std::string_view name() const override { return "fem_gravity"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  int item_count() const override { return body_->num_tets(); }
  void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;

 private:
  const FemBody* body_;
  Vec3 gravity_;
  std::vector<int> stencil_;
};

/// Neo-Hookean elasticity r_e += V_e Gᵀ vec(P(F_e)) with ∂r/∂q = V Gᵀ (dP/dF) G and
/// ∂r/∂E, ∂r/∂ν through μ(E, ν), λ(E, ν). An element with J = det F ≤ 0 makes the state
/// inadmissible (admissible() names body and element); evaluate() then skips it, so the
/// residual stays finite, and energy() returns +∞.
class FemElasticTerm final : public Term {
 public:
  FemElasticTerm(const FemBody* body, NeoHookeanVariant variant) : body_(body), variant_(variant) {}
  std::string_view name() const override { return "fem_elasticity"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  int item_count() const override { return body_->num_tets(); }
  void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;
  bool admissible(const TermContext& ctx, std::string* why) const override;
  NeoHookeanVariant variant() const { return variant_; }

 private:
  const FemBody* body_;
  NeoHookeanVariant variant_;
  std::vector<int> stencil_;
};

/// Viscous damping r_e += V_e Gᵀ vec(P_visc(F_e, Ḟ_e)), Ḟ = Σ_k v_k g_kᵀ, with
/// ∂r/∂q, ∂r/∂v and ∂r/∂ν_visc exact. kRotationInvariant (paper eq. rotInvViscStress,
/// P = 64 ν F Ė) exerts no force under rigid motion; kLinear (P = ν (Ḟ + Ḟᵀ)) damps
/// rigid rotation.
class FemViscosityTerm final : public Term {
 public:
  FemViscosityTerm(const FemBody* body, ViscosityModel model) : body_(body), model_(model) {}
  std::string_view name() const override { return "fem_viscosity"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  int item_count() const override { return body_->num_tets(); }
  void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  ViscosityModel model() const { return model_; }

 private:
  const FemBody* body_;
  ViscosityModel model_;
  std::vector<int> stencil_;
};

}  // namespace addsim
