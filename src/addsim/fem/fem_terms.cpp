#include "addsim/fem/fem_terms.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>

namespace addsim {

namespace {

void declare_elements(const FemBody& body, StencilSet& stencils, std::vector<int>& ids) {
  ids.clear();
  ids.reserve(body.num_tets());
  for (int e = 0; e < body.num_tets(); ++e) ids.push_back(stencils.add(body.element_dofs(e)));
}

// Node-coupling matrix S of the element mass for unit m_e (mass matrix S ⊗ I₃): consistent
// (1 + δ_kl)/20, lumped δ_kl/4.
Eigen::Matrix4d unit_node_mass(MassMatrixKind kind) {
  return kind == MassMatrixKind::kConsistent ? Eigen::Matrix4d(0.05 * (Eigen::Matrix4d::Ones() + Eigen::Matrix4d::Identity()))
                                             : Eigen::Matrix4d(0.25 * Eigen::Matrix4d::Identity());
}

// Column mode: ∂r/∂p_pidx += `block` on node k's three rows (no allocation: fixed size).
void add_node_column(const FemBody& body, int k, int pidx, const Vec3& block, ParamSink& sink) {
  const std::array<DofIndex, 3> dofs{body.dof(k), body.dof(k) + 1, body.dof(k) + 2};
  sink.add_rows(dofs, std::span<const int>(&pidx, 1), block);
}

}  // namespace

// ---------------------------------------------------------------- inertia

FemInertiaTerm::FemInertiaTerm(const FemBody* body, MassMatrixKind kind) : body_(body) {
  // S = Σ_e V_e (unit element coupling) over the elements, gathered per node row.
  const int n = body->num_nodes();
  const Eigen::Matrix4d unit = unit_node_mass(kind);
  std::vector<std::vector<std::pair<int, double>>> rows(n);
  for (int e = 0; e < body->num_tets(); ++e) {
    const auto& tet = body->mesh().tets[e];
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 4; ++l)
        if (unit(k, l) != 0.0) rows[tet[k]].emplace_back(tet[l], body->rest_volume(e) * unit(k, l));
  }
  row_start_.assign(n + 1, 0);
  for (int k = 0; k < n; ++k) {
    auto& row = rows[k];
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t j = 0; j < row.size(); ++j) {
      if (j > 0 && row[j].first == row[j - 1].first) {
        unit_mass_.back() += row[j].second;
        continue;
      }
      col_node_.push_back(row[j].first);
      unit_mass_.push_back(row[j].second);
    }
    row_start_[k + 1] = static_cast<int>(col_node_.size());
  }
}

void FemInertiaTerm::declare(StencilSet& stencils) { declare_elements(*body_, stencils, stencil_); }

void FemInertiaTerm::bind(const SparsePattern& pattern) const {
  std::call_once(bound_, [&] {
    const auto& outer = pattern.outer();
    const auto& inner = pattern.inner();
    block_index_.resize(col_node_.size());
    column_length_.resize(body_->num_nodes());
    for (int l = 0; l < body_->num_nodes(); ++l) column_length_[l] = outer[body_->dof(l) + 1] - outer[body_->dof(l)];
    for (int k = 0; k < body_->num_nodes(); ++k)
      for (int j = row_start_[k]; j < row_start_[k + 1]; ++j) {
        const int col = body_->dof(col_node_[j]);
        const auto first = inner.begin() + outer[col], last = inner.begin() + outer[col + 1];
        const auto it = std::lower_bound(first, last, body_->dof(k));
        ADDSIM_CHECK(it != last && *it == body_->dof(k), "mass block outside the pattern");
        block_index_[j] = static_cast<int>(it - inner.begin());
      }
    bound_pattern_ = &pattern;
  });
  ADDSIM_CHECK(bound_pattern_ == &pattern, "FEM inertia evaluated on a pattern other than the model's");
}

Vec3 FemInertiaTerm::unit_mass_times(const VecX& a, int k) const {
  Vec3 sum = Vec3::Zero();
  for (int j = row_start_[k]; j < row_start_[k + 1]; ++j) sum += unit_mass_[j] * a.segment<3>(body_->dof(col_node_[j]));
  return sum;
}

// Compiled for AVX2 and the baseline, chosen at load time: the same IEEE operations (GCC's avx2
// target has no FMA; no sums regrouped), so both clones give the same bits (docs/solver.md,
// "one evaluation's kernels for AVX2").
__attribute__((target_clones("avx2", "default")))
void FemInertiaTerm::evaluate_range(const TermContext& ctx, Assembly& out, int begin, int end) const {
  const double rho = ctx.p[body_->params().density];
  // ∂r/∂a = M into ka (partials) or wa M into the step Jacobian; nothing for the residual alone.
  double* values = nullptr;
  double w = 0.0;
  if (out.mode() == EvalMode::kResidualAndJacobians) {
    values = out.ka.data();
    w = rho;
  } else if (out.mode() == EvalMode::kResidualAndStepJacobian && out.weights().wa != 0.0) {
    values = out.jac.data();
    w = rho * out.weights().wa;
  }
  if (values) bind(out.pattern());
  for (int k = begin; k < end; ++k) {
    Vec3 r = Vec3::Zero(), r_abs = Vec3::Zero();
    for (int j = row_start_[k]; j < row_start_[k + 1]; ++j) {
      const int l = col_node_[j];
      const Vec3 c = (rho * unit_mass_[j]) * ctx.a.segment<3>(body_->dof(l));
      r += c;
      r_abs += c.cwiseAbs();
      if (!values) continue;
      // Entry (3k + i, 3l + i) of column 3l + i sits i rows after row 3k; the node's three
      // columns have the same rows, stored one after the other.
      const int b = block_index_[j], len = column_length_[l];
      const double m = w * unit_mass_[j];
      values[b] += m;
      values[b + len + 1] += m;
      values[b + 2 * len + 2] += m;
    }
    out.r.segment<3>(body_->dof(k)) += r;
    out.r_abs.segment<3>(body_->dof(k)) += r_abs;
  }
}

// evaluate and evaluate_items after the multiversioned loop they call (clang accepts target_clones
// only on a function not yet used in the translation unit).
void FemInertiaTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  evaluate_items(ctx, out, 0, body_->num_nodes());
}

void FemInertiaTerm::evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const {
  evaluate_range(ctx, out, begin, end);
}

void FemInertiaTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pr = body_->params().density;
  if (!sink.wants(pr)) return;
  const int n = body_->num_nodes();
  if (const VecX* lambda = sink.adjoint()) {
    // λᵀ ∂r/∂ρ = λᵀ (S ⊗ I₃) a.
    double acc = 0.0;
    for (int k = 0; k < n; ++k) acc += lambda->segment<3>(body_->dof(k)).dot(unit_mass_times(ctx.a, k));
    sink.add_contracted(pr, acc);
    return;
  }
  for (int k = 0; k < n; ++k) add_node_column(*body_, k, pr, unit_mass_times(ctx.a, k), sink);
}

// ---------------------------------------------------------------- gravity

FemGravityTerm::FemGravityTerm(const FemBody* body, const Vec3& gravity) : body_(body), gravity_(gravity) {
  // Each tet gives a quarter of its volume to each of its nodes.
  node_volume_.assign(body->num_nodes(), 0.0);
  for (int e = 0; e < body->num_tets(); ++e)
    for (int k : body->mesh().tets[e]) node_volume_[k] += 0.25 * body->rest_volume(e);
}

void FemGravityTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  evaluate_items(ctx, out, 0, body_->num_nodes());
}

void FemGravityTerm::evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const {
  const double rho = ctx.p[body_->params().density];
  for (int k = begin; k < end; ++k) {
    const Vec3 r = (-rho * node_volume_[k]) * gravity_;
    out.r.segment<3>(body_->dof(k)) += r;
    out.r_abs.segment<3>(body_->dof(k)) += r.cwiseAbs();
  }
}

void FemGravityTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pr = body_->params().density;
  if (!sink.wants(pr)) return;
  const int n = body_->num_nodes();
  if (const VecX* lambda = sink.adjoint()) {
    // λᵀ ∂r/∂ρ = −Σ_k V_k g · λ_k.
    double acc = 0.0;
    for (int k = 0; k < n; ++k) acc -= node_volume_[k] * gravity_.dot(lambda->segment<3>(body_->dof(k)));
    sink.add_contracted(pr, acc);
    return;
  }
  for (int k = 0; k < n; ++k) add_node_column(*body_, k, pr, Vec3(-node_volume_[k] * gravity_), sink);
}

double FemGravityTerm::energy(const TermContext& ctx) const {
  const double rho = ctx.p[body_->params().density];
  double e_pot = 0.0;
  for (int k = 0; k < body_->num_nodes(); ++k) e_pot -= rho * node_volume_[k] * gravity_.dot(ctx.q.segment<3>(body_->dof(k)));
  return e_pot;
}

// ---------------------------------------------------------------- stress

void FemStressTerm::declare(StencilSet& stencils) { declare_elements(*body_, stencils, stencil_); }

namespace {
inline void set_matrix_column(Mat12& K, int l, int j, const StressBlockColumns::Column& col) {
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 3; ++i) K(3 * k + i, 3 * l + j) = col[i][k];
}
}  // namespace

__attribute__((target_clones("avx2", "default")))
void FemStressTerm::evaluate_columns(const TermContext& ctx, Assembly& out, int begin, int end,
                                     const LameParameters& lame, double nu_visc) const {
  const bool viscous = nu_visc != 0.0;
  const bool step = out.mode() == EvalMode::kResidualAndStepJacobian;
  const double c = out.weights().wv;  // wv / wq with wq = 1 (step mode)
  // Step mode: one block into jac; partials: ∂r/∂q into kq and, with viscosity, ∂r/∂v into kv.
  VecX& values_q = step ? out.jac : out.kq;
  const bool pairs = !step && viscous;
  NeoHookeanResult nh;
  ViscousResult vr;
  for (int e = begin; e < end; ++e) {
    const Mat43& grad = body_->shape_gradients(e);
    const Mat3 F = body_->element_positions(ctx.q, e) * grad;
    const double V = body_->rest_volume(e);
    // As in evaluate_items: inverted elements skip their elastic part.
    const bool elastic = neo_hookean_stress(F, lame.mu, lame.lambda, variant_, nh);
    if (!elastic && !viscous) continue;
    StressBlockColumns block;
    // The residuals as in evaluate_items (elastic and viscous added separately for r_abs).
    if (elastic) block.set_elastic(nh, grad, lame.mu, V);
    if (viscous) {
      const Mat3 Fdot = body_->element_positions(ctx.v, e) * grad;
      viscous_stress(F, Fdot, nu_visc, viscosity_, false, vr);
      const Vec12 r_visc = V * element_forces(vr.P, grad);
      if (elastic)
        out.add_residual_pair<12>(stencil_[e], Vec12(V * element_forces(nh.P, grad)), r_visc);
      else
        out.add<12>(stencil_[e], r_visc, nullptr, nullptr, nullptr);
      // Ė as viscous_stress just formed it (the same bits as forming it again).
      if (step)
        block.set_viscous_step(F, Fdot, grad, body_->shape_gram(e), vr.Edot, nu_visc, c, V);
      else
        block.set_viscous_partials(F, Fdot, grad, body_->shape_gram(e), vr.Edot, nu_visc, V);
    } else {
      out.add<12>(stencil_[e], Vec12(V * element_forces(nh.P, grad)), nullptr, nullptr, nullptr);
    }
    const Assembly::PointColumns<4> cols_q = out.point_columns<4>(stencil_[e], values_q);
    if (!cols_q.valid()) {
      // Not a stencil of whole points (never for an FEM body's element DOFs): via Assembly.
      Mat12 Kq, Kv;
      if (pairs)
        block.for_each_column_pair([&](int l, int j, const StressBlockColumns::Column& cq,
                                       const StressBlockColumns::Column& cv) {
          set_matrix_column(Kq, l, j, cq);
          set_matrix_column(Kv, l, j, cv);
        });
      else
        block.for_each_column([&](int l, int j, const StressBlockColumns::Column& col) { set_matrix_column(Kq, l, j, col); });
      out.add<12>(stencil_[e], Vec12(Vec12::Zero()), &Kq, pairs ? &Kv : nullptr, nullptr);
      continue;
    }
    if (pairs)
      block.scatter_partials(cols_q, out.point_columns<4>(stencil_[e], out.kv));
    else
      block.scatter_step(cols_q);
  }
}

__attribute__((target_clones("avx2", "default")))
void FemStressTerm::evaluate_range(const TermContext& ctx, Assembly& out, int begin, int end) const {
  const LameParameters lame =
      lame_parameters(ctx.p[body_->params().youngs_modulus], ctx.p[body_->params().poisson_ratio]);
  const double nu_visc = viscosity_ == ViscosityModel::kNone ? 0.0 : ctx.p[body_->params().viscosity];
  // The viscous stress and both its tangents are linear in ν_visc: at ν_visc = 0 it adds
  // exactly nothing, so it is skipped.
  const bool viscous = nu_visc != 0.0;
  const bool tangent = out.wants_jacobians();
  // Step mode (jac = wq ∂r/∂q + wv ∂r/∂v + wa ∂r/∂a): the viscous ∂r/∂v is folded into the
  // ∂r/∂q block as (wv/wq) Kv by the kernel, so Assembly forms and scatters one block.
  const JacobianWeights& w = out.weights();
  const bool step_block = out.mode() == EvalMode::kResidualAndStepJacobian && w.wq != 0.0;
  // The linear model has no viscous ∂r/∂q.
  const bool viscous_kq = viscous && viscosity_ == ViscosityModel::kRotationInvariant;
  // Both Jacobian modes, except linear viscosity and step Jacobians with wq ≠ 1 (Newton's has
  // wq = 1, so Assembly's weighting would only multiply by one): the blocks go column by
  // column straight into the value arrays (StressBlockColumns), without 12 × 12 locals, a
  // second pass for the viscous part or Assembly's weighted copy. Same values, bit for bit.
  const bool columns = tangent && viscosity_ != ViscosityModel::kLinear &&
                       (out.mode() == EvalMode::kResidualAndJacobians || (step_block && w.wq == 1.0));
  if (columns) {
    evaluate_columns(ctx, out, begin, end, lame, nu_visc);
    return;
  }
  NeoHookeanResult nh;
  ViscousResult vr;
  for (int e = begin; e < end; ++e) {
    const Mat43& grad = body_->shape_gradients(e);
    const Mat3 F = body_->element_positions(ctx.q, e) * grad;
    const double V = body_->rest_volume(e);
    // Inverted elements are reported by admissible(); skipping their elastic part keeps r
    // finite.
    const bool elastic = neo_hookean_stress(F, lame.mu, lame.lambda, variant_, nh);
    if (!viscous) {
      if (!elastic) continue;
      const Vec12 r = V * element_forces(nh.P, grad);
      if (!tangent) {
        out.add<12>(stencil_[e], r, nullptr, nullptr, nullptr);
        continue;
      }
      const Mat12 K = neo_hookean_stiffness(nh, grad, lame.mu, V);
      out.add<12>(stencil_[e], r, &K, nullptr, nullptr);
      continue;
    }
    // The two residuals are added separately so that r_abs sums |r_elastic| + |r_viscous|
    // per entry, as for two terms (residual only: in one pass, add_residual_pair, the same
    // bits); with tangents the summed local Jacobians ride on the second call.
    const Mat3 Fdot = body_->element_positions(ctx.v, e) * grad;
    viscous_stress(F, Fdot, nu_visc, viscosity_, false, vr);
    const Vec12 r = V * element_forces(vr.P, grad);
    if (!tangent) {
      if (elastic)
        out.add_residual_pair<12>(stencil_[e], Vec12(V * element_forces(nh.P, grad)), r);
      else
        out.add<12>(stencil_[e], r, nullptr, nullptr, nullptr);
      continue;
    }
    if (elastic) out.add<12>(stencil_[e], Vec12(V * element_forces(nh.P, grad)), nullptr, nullptr, nullptr);
    Mat12 Kq = elastic ? neo_hookean_stiffness(nh, grad, lame.mu, V) : Mat12(Mat12::Zero());
    if (step_block) {
      viscous_stiffness_combined_add(F, Fdot, grad, nu_visc, viscosity_, w.wv / w.wq, Kq, V);
      out.add<12>(stencil_[e], r, &Kq, nullptr, nullptr);
      continue;
    }
    // Kq = elastic + viscous ∂r/∂q, the viscous part added in place by viscous_stiffness.
    Mat12 Kv;
    viscous_stiffness(F, Fdot, grad, nu_visc, viscosity_, Kq, Kv, V, true);
    out.add<12>(stencil_[e], r, elastic || viscous_kq ? &Kq : nullptr, &Kv, nullptr);
  }
}

// evaluate and evaluate_items after the multiversioned loop they call (clang accepts target_clones
// only on a function not yet used in the translation unit).
void FemStressTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  evaluate_items(ctx, out, 0, body_->num_tets());
}

void FemStressTerm::evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const {
  evaluate_range(ctx, out, begin, end);
}

void FemStressTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pE = body_->params().youngs_modulus, pnu = body_->params().poisson_ratio;
  const int pv = body_->params().viscosity;
  const bool want_elastic = sink.wants(pE) || sink.wants(pnu);
  const bool want_viscous = viscosity_ != ViscosityModel::kNone && sink.wants(pv);
  if (!want_elastic && !want_viscous) return;
  const LameParameters lame = lame_parameters(ctx.p[pE], ctx.p[pnu]);
  const int idx[2] = {pE, pnu};
  const VecX* lambda = sink.adjoint();
  // vjp mode: Σ_e λ_eᵀ V_e vec(∂P/∂p G_eᵀ) = Σ_e ∂P/∂p : (V_e Λ_e G_e), accumulated per
  // Lamé parameter (chained to (E, ν) at the end) and for ν_visc.
  double dmu = 0.0, dlambda = 0.0, dvisc = 0.0;
  NeoHookeanResult nh;
  ViscousResult vr;
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Mat43& grad = body_->shape_gradients(e);
    const Mat3 F = body_->element_positions(ctx.q, e) * grad;
    const double V = body_->rest_volume(e);
    const Mat3 M = lambda ? Mat3(V * (body_->element_positions(*lambda, e) * grad)) : Mat3::Zero();
    if (want_elastic && neo_hookean(F, lame.mu, lame.lambda, variant_, false, nh)) {
      if (lambda) {
        dmu += nh.dP_dmu.cwiseProduct(M).sum();
        dlambda += nh.dP_dlambda.cwiseProduct(M).sum();
      } else {
        // ∂P/∂E and ∂P/∂ν through the Lamé parameters.
        const Mat3 dP_dE = lame.dmu_dE * nh.dP_dmu + lame.dlambda_dE * nh.dP_dlambda;
        const Mat3 dP_dnu = lame.dmu_dnu * nh.dP_dmu + lame.dlambda_dnu * nh.dP_dlambda;
        Eigen::Matrix<double, 12, 2> block;
        block.col(0) = V * element_forces(dP_dE, grad);
        block.col(1) = V * element_forces(dP_dnu, grad);
        sink.add(stencil_[e], std::span<const int>(idx, 2), block);
      }
    }
    if (!want_viscous) continue;
    // The viscous stress is linear in ν_visc: ∂P/∂ν_visc is the stress at unit viscosity.
    viscous_stress(F, body_->element_positions(ctx.v, e) * grad, 1.0, viscosity_, false, vr);
    if (lambda) {
      dvisc += vr.P.cwiseProduct(M).sum();
      continue;
    }
    const Vec12 col = V * element_forces(vr.P, grad);
    sink.add(stencil_[e], std::span<const int>(&pv, 1), col);
  }
  if (!lambda) return;
  if (want_elastic) {
    sink.add_contracted(pE, lame.dmu_dE * dmu + lame.dlambda_dE * dlambda);
    sink.add_contracted(pnu, lame.dmu_dnu * dmu + lame.dlambda_dnu * dlambda);
  }
  if (want_viscous) sink.add_contracted(pv, dvisc);
}

double FemStressTerm::energy(const TermContext& ctx) const {
  const LameParameters lame =
      lame_parameters(ctx.p[body_->params().youngs_modulus], ctx.p[body_->params().poisson_ratio]);
  double w = 0.0, density = 0.0;
  for (int e = 0; e < body_->num_tets(); ++e) {
    if (!neo_hookean_energy(body_->deformation_gradient(ctx.q, e), lame.mu, lame.lambda, variant_, density))
      return std::numeric_limits<double>::infinity();
    w += body_->rest_volume(e) * density;
  }
  return w;
}

bool FemStressTerm::admissible(const TermContext& ctx, std::string* why) const {
  for (int e = 0; e < body_->num_tets(); ++e) {
    const double J = body_->deformation_gradient(ctx.q, e).determinant();
    if (J > 0.0) continue;
    if (why) {
      std::ostringstream msg;
      msg << body_->label() << " ('" << body_->name() << "'): element " << e << " is inverted (J = " << J << ")";
      *why = msg.str();
    }
    return false;
  }
  return true;
}

}  // namespace addsim
