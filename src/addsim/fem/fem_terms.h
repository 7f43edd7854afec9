#pragma once
/// Terms of FEM soft bodies (paper §5.1), one stencil of 12 DOFs per tetrahedron:
///   inertia     r += M a                        (consistent or lumped M, ∝ ρ)
///   gravity     r −= (m_e/4) g per node         (equals M g for either mass matrix)
///   stress      r += V Gᵀ vec(P(F) + P_visc(F, Ḟ))
///               (Neo-Hookean P, μ, λ from E, ν; P_visc: paper eq. rotInvViscStress, or linear)
/// All partials are exact; parameter derivatives cover ρ, E, ν and ν_visc.

#include <mutex>
#include <string_view>
#include <vector>

#include "addsim/fem/fem_body.h"
#include "addsim/model/term.h"

namespace addsim {

/// r += M a with M the consistent (m_e/20 (1 + δ_kl) I₃) or lumped (m_e/4 I₃ per node)
/// element mass, m_e = ρ V_e; ∂r/∂a = M, ∂r/∂ρ = (M/ρ) a.
/// M = ρ (S ⊗ I₃) with S the node-coupling matrix at unit density, summed over the elements
/// once (constructor); an evaluation walks S row by row (one item per node): r_k = ρ Σ_l
/// S_kl a_l, and S_kl is added to the three diagonal entries of the (k, l) block. Per node
/// pair, not per element and node pair: the tori drop's 1,930 tets scatter 48 values each,
/// their 728 nodes about 18 pairs × 3.
class FemInertiaTerm final : public Term {
 public:
  FemInertiaTerm(const FemBody* body, MassMatrixKind kind);
  std::string_view name() const override { return "fem_inertia"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  int item_count() const override { return body_->num_nodes(); }
  void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

 private:
  // evaluate_items' loop, compiled for AVX2 and the baseline (same numbers; a virtual function
  // cannot be cloned).
  void evaluate_range(const TermContext& ctx, Assembly& out, int begin, int end) const;
  // (S a)_k for node k, at unit density.
  Vec3 unit_mass_times(const VecX& a, int k) const;
  // Value-array positions of the (k, l) blocks on the model's pattern (first use; thread-safe).
  void bind(const SparsePattern& pattern) const;

  const FemBody* body_;
  std::vector<int> stencil_;  ///< element stencils: they put the (k, l) blocks in the pattern
  std::vector<int> row_start_, col_node_;  ///< S in compressed rows over nodes (diagonal included)
  std::vector<double> unit_mass_;          ///< S_kl (m³: the mass per unit density)
  mutable std::once_flag bound_;
  mutable std::vector<int> block_index_;  ///< per S entry: value index of (3k, 3l)
  mutable std::vector<int> column_length_;  ///< per node l: entries of column 3l (= 3l + 1, 3l + 2)
  mutable const SparsePattern* bound_pattern_ = nullptr;
};

/// r_k −= Σ_e (ρ V_e / 4) g over the tets e of node k (g: m/s²); energy −Σ m_k g·x_k.
/// The node volumes V_k = Σ_e V_e / 4 are summed once; an evaluation is one pass over the
/// nodes (one item per node). It adds no Jacobian and needs no stencil.
class FemGravityTerm final : public Term {
 public:
  FemGravityTerm(const FemBody* body, const Vec3& gravity);
  std::string_view name() const override { return "fem_gravity"; }
  void declare(StencilSet&) override {}
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  int item_count() const override { return body_->num_nodes(); }
  void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;

 private:
  const FemBody* body_;
  Vec3 gravity_;
  std::vector<double> node_volume_;  ///< V_k (m³)
};

/// The internal stress of a soft body, elastic plus viscous, in one element loop:
///   r_e += V_e Gᵀ vec(P(F_e)) + V_e Gᵀ vec(P_visc(F_e, Ḟ_e)),  Ḟ = Σ_k v_k g_kᵀ,
/// Neo-Hookean P with μ, λ from (E, ν); P_visc per ViscosityModel: kRotationInvariant
/// (paper eq. rotInvViscStress, P = 64 ν_visc F Ė) exerts no force under rigid motion,
/// kLinear (P = ν_visc (Ḟ + Ḟᵀ)) damps rigid rotation, kNone adds nothing. Partials:
/// ∂r/∂q = V Gᵀ (dP/dF + dP_visc/dF) G, ∂r/∂v = V Gᵀ (dP_visc/dḞ) G, exact; parameter
/// derivatives for E, ν (through μ, λ) and ν_visc (P_visc is linear in it).
/// Both stresses share F, the element's positions and shape gradients, and their local
/// Jacobians are summed before one 12 × 12 scatter per element (the scatter dominated
/// the evaluation when elasticity and viscosity were separate terms); in step-Jacobian mode
/// the viscous ∂r/∂v enters that block as (wv/wq) Kv (one block, weighted once). The viscous part
/// is linear in ν_visc: at ν_visc = 0 it adds exactly nothing and is skipped.
/// An element with J = det F ≤ 0 makes the state inadmissible (admissible() names body
/// and element); evaluate() then skips its elastic part, so the residual stays finite,
/// and energy() (the elastic energy Σ_e V_e W(F_e)) returns +∞.
class FemStressTerm final : public Term {
 public:
  FemStressTerm(const FemBody* body, NeoHookeanVariant variant, ViscosityModel viscosity)
      : body_(body), variant_(variant), viscosity_(viscosity) {}
  std::string_view name() const override { return "fem_stress"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  int item_count() const override { return body_->num_tets(); }
  void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;
  bool admissible(const TermContext& ctx, std::string* why) const override;
  NeoHookeanVariant variant() const { return variant_; }
  ViscosityModel viscosity_model() const { return viscosity_; }

 private:
  // evaluate_items' loop, compiled for AVX2 and the baseline (same numbers; a virtual function
  // cannot be cloned).
  void evaluate_range(const TermContext& ctx, Assembly& out, int begin, int end) const;
  // Jacobian modes (step Jacobian with wq = 1, or local partials), no linear viscosity:
  // residuals through Assembly, the blocks scattered column by column by StressBlockColumns
  // into the value arrays (the same values as evaluate_items' general loop, bit for bit).
  void evaluate_columns(const TermContext& ctx, Assembly& out, int begin, int end, const LameParameters& lame,
                        double nu_visc) const;

  const FemBody* body_;
  NeoHookeanVariant variant_;
  ViscosityModel viscosity_;
  std::vector<int> stencil_;
};

}  // namespace addsim
