#include "addsim/fem/fem_terms.h"

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

// Gathers the 12 stencil-ordered values of tet e from a global vector.
Vec12 gather(const FemBody& body, const VecX& x, int e) {
  Vec12 out;
  for (int k = 0; k < 4; ++k) out.segment<3>(3 * k) = x.segment<3>(body.dof(body.mesh().tets[e][k]));
  return out;
}

// Consistent element mass for unit m_e: (1 + δ_kl)/20 per component.
Mat12 unit_consistent_mass() {
  Mat12 M = Mat12::Zero();
  for (int k = 0; k < 4; ++k)
    for (int l = 0; l < 4; ++l) M.block<3, 3>(3 * k, 3 * l) = (k == l ? 0.1 : 0.05) * Mat3::Identity();
  return M;
}

Mat12 unit_mass(MassMatrixKind kind) {
  return kind == MassMatrixKind::kConsistent ? unit_consistent_mass() : Mat12(0.25 * Mat12::Identity());
}

}  // namespace

// ---------------------------------------------------------------- inertia

void FemInertiaTerm::declare(StencilSet& stencils) { declare_elements(*body_, stencils, stencil_); }

void FemInertiaTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const double rho = ctx.p[body_->params().density];
  const Mat12 unit = unit_mass(kind_);
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Mat12 M = (rho * body_->rest_volume(e)) * unit;
    const Vec12 r = M * gather(*body_, ctx.a, e);
    out.add<12>(stencil_[e], r, nullptr, nullptr, &M);
  }
}

void FemInertiaTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pr = body_->params().density;
  if (!sink.wants(pr)) return;
  const Mat12 unit = unit_mass(kind_);
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Vec12 col = body_->rest_volume(e) * (unit * gather(*body_, ctx.a, e));
    sink.add(stencil_[e], std::span<const int>(&pr, 1), col);
  }
}

// ---------------------------------------------------------------- gravity

void FemGravityTerm::declare(StencilSet& stencils) { declare_elements(*body_, stencils, stencil_); }

void FemGravityTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const double rho = ctx.p[body_->params().density];
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Vec12 r = (-0.25 * rho * body_->rest_volume(e)) * gravity_.replicate<4, 1>();
    out.add<12>(stencil_[e], r, nullptr, nullptr, nullptr);
  }
}

void FemGravityTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pr = body_->params().density;
  if (!sink.wants(pr)) return;
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Vec12 col = (-0.25 * body_->rest_volume(e)) * gravity_.replicate<4, 1>();
    sink.add(stencil_[e], std::span<const int>(&pr, 1), col);
  }
}

double FemGravityTerm::energy(const TermContext& ctx) const {
  const double rho = ctx.p[body_->params().density];
  double e_pot = 0.0;
  for (int e = 0; e < body_->num_tets(); ++e)
    e_pot -= 0.25 * rho * body_->rest_volume(e) * gravity_.dot(body_->element_positions(ctx.q, e).rowwise().sum());
  return e_pot;
}

// ---------------------------------------------------------------- elasticity

void FemElasticTerm::declare(StencilSet& stencils) { declare_elements(*body_, stencils, stencil_); }

void FemElasticTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const LameParameters lame =
      lame_parameters(ctx.p[body_->params().youngs_modulus], ctx.p[body_->params().poisson_ratio]);
  const bool tangent = out.wants_jacobians();
  NeoHookeanResult nh;
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Mat3 F = body_->deformation_gradient(ctx.q, e);
    // Inverted elements are reported by admissible(); skipping keeps r finite.
    if (!neo_hookean(F, lame.mu, lame.lambda, variant_, tangent, nh)) continue;
    const Mat9x12 G = deformation_gradient_operator(body_->shape_gradients(e));
    const double V = body_->rest_volume(e);
    const Vec12 r = V * (G.transpose() * Eigen::Map<const Vec9>(nh.P.data()));
    if (!tangent) {
      out.add<12>(stencil_[e], r, nullptr, nullptr, nullptr);
      continue;
    }
    const Mat12 K = V * sandwich(G, nh.dP_dF);
    out.add<12>(stencil_[e], r, &K, nullptr, nullptr);
  }
}

void FemElasticTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pE = body_->params().youngs_modulus, pnu = body_->params().poisson_ratio;
  if (!sink.wants(pE) && !sink.wants(pnu)) return;
  const LameParameters lame = lame_parameters(ctx.p[pE], ctx.p[pnu]);
  const int idx[2] = {pE, pnu};
  NeoHookeanResult nh;
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Mat3 F = body_->deformation_gradient(ctx.q, e);
    if (!neo_hookean(F, lame.mu, lame.lambda, variant_, true, nh)) continue;
    const Mat9x12 G = deformation_gradient_operator(body_->shape_gradients(e));
    const double V = body_->rest_volume(e);
    // ∂P/∂E and ∂P/∂ν through the Lamé parameters.
    const Mat3 dP_dE = lame.dmu_dE * nh.dP_dmu + lame.dlambda_dE * nh.dP_dlambda;
    const Mat3 dP_dnu = lame.dmu_dnu * nh.dP_dmu + lame.dlambda_dnu * nh.dP_dlambda;
    Eigen::Matrix<double, 12, 2> block;
    block.col(0) = V * (G.transpose() * Eigen::Map<const Vec9>(dP_dE.data()));
    block.col(1) = V * (G.transpose() * Eigen::Map<const Vec9>(dP_dnu.data()));
    sink.add(stencil_[e], std::span<const int>(idx, 2), block);
  }
}

double FemElasticTerm::energy(const TermContext& ctx) const {
  const LameParameters lame =
      lame_parameters(ctx.p[body_->params().youngs_modulus], ctx.p[body_->params().poisson_ratio]);
  NeoHookeanResult nh;
  double w = 0.0;
  for (int e = 0; e < body_->num_tets(); ++e) {
    if (!neo_hookean(body_->deformation_gradient(ctx.q, e), lame.mu, lame.lambda, variant_, false, nh))
      return std::numeric_limits<double>::infinity();
    w += body_->rest_volume(e) * nh.energy_density;
  }
  return w;
}

bool FemElasticTerm::admissible(const TermContext& ctx, std::string* why) const {
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

// ---------------------------------------------------------------- viscosity

void FemViscosityTerm::declare(StencilSet& stencils) { declare_elements(*body_, stencils, stencil_); }

void FemViscosityTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  if (model_ == ViscosityModel::kNone) return;
  const double nu = ctx.p[body_->params().viscosity];
  const bool tangent = out.wants_jacobians();
  ViscousResult vr;
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Mat3 F = body_->deformation_gradient(ctx.q, e);
    const Mat3 Fdot = body_->element_positions(ctx.v, e) * body_->shape_gradients(e);
    viscous_stress(F, Fdot, nu, model_, tangent, vr);
    const Mat9x12 G = deformation_gradient_operator(body_->shape_gradients(e));
    const double V = body_->rest_volume(e);
    const Vec12 r = V * (G.transpose() * Eigen::Map<const Vec9>(vr.P.data()));
    if (!tangent) {
      out.add<12>(stencil_[e], r, nullptr, nullptr, nullptr);
      continue;
    }
    const Mat12 Kv = V * sandwich(G, vr.dP_dFdot);
    if (model_ == ViscosityModel::kLinear) {
      out.add<12>(stencil_[e], r, nullptr, &Kv, nullptr);
      continue;
    }
    const Mat12 Kq = V * sandwich(G, vr.dP_dF);
    out.add<12>(stencil_[e], r, &Kq, &Kv, nullptr);
  }
}

void FemViscosityTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pv = body_->params().viscosity;
  if (model_ == ViscosityModel::kNone || !sink.wants(pv)) return;
  ViscousResult vr;
  for (int e = 0; e < body_->num_tets(); ++e) {
    const Mat3 F = body_->deformation_gradient(ctx.q, e);
    const Mat3 Fdot = body_->element_positions(ctx.v, e) * body_->shape_gradients(e);
    // The stress is linear in ν: ∂P/∂ν is the stress at unit viscosity.
    viscous_stress(F, Fdot, 1.0, model_, false, vr);
    const Mat9x12 G = deformation_gradient_operator(body_->shape_gradients(e));
    const Vec12 col = body_->rest_volume(e) * (G.transpose() * Eigen::Map<const Vec9>(vr.P.data()));
    sink.add(stencil_[e], std::span<const int>(&pv, 1), col);
  }
}

}  // namespace addsim
