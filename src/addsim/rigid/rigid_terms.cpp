#include "addsim/rigid/rigid_terms.h"

#include "addsim/rigid/body_frame_cache.h"
#include "addsim/rigid/so3.h"

namespace addsim {

namespace {
using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
}  // namespace

namespace {

using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;

// Rotational residual per unit mass, r_θ/m, and on request its partials (per unit mass).
struct RotationalInertia {
  Vec3 r = Vec3::Zero();
  Mat3 dq = Mat3::Zero(), dv = Mat3::Zero(), da = Mat3::Zero();
};

// f: the body's rotation frame at θ, built with ∂J/∂θ (order 1).
// Compiled for AVX2 and the baseline, chosen at load time: the same IEEE operations (GCC's avx2
// target has no FMA; no sums regrouped), so both clones give the same bits (docs/solver.md,
// "one evaluation's kernels for AVX2").
__attribute__((target_clones("avx2", "default")))
RotationalInertia rotational_inertia(const Mat3& Ib, const RotationFrame& f, const Vec3& thetadot,
                                     const Vec3& thetaddot, bool jacobians) {
  Mat3 K2;  // K2.col(j) = Σ_k θ̇_k (∂²J/∂θ_k∂θ_j)ᵀ θ̇, with Jacobians
  if (jacobians) exp_contraction(f.theta, f.e, thetadot, K2);
  // Body-frame Jacobian G = Jᵀ and its derivatives G_k = (∂J/∂θ_k)ᵀ.
  const Mat3 G = f.J.transpose();
  std::array<Mat3, 3> Gk;
  for (int k = 0; k < 3; ++k) Gk[k] = f.dJ[k].transpose();
  // Ġ = Σ_k G_k θ̇_k; K = [G_1 θ̇, G_2 θ̇, G_3 θ̇] = ∂ω_B/∂θ.
  Mat3 Gdot = Mat3::Zero(), K;
  for (int k = 0; k < 3; ++k) {
    Gdot += Gk[k] * thetadot[k];
    if (jacobians) K.col(k) = Gk[k] * thetadot;
  }
  // Euler's equation in the body frame.
  const Vec3 w = G * thetadot;
  const Vec3 alpha = G * thetaddot + Gdot * thetadot;
  const Vec3 h = Ib * w;
  const Vec3 tau = Ib * alpha + w.cross(h);
  RotationalInertia out;
  out.r = G.transpose() * tau;
  if (!jacobians) return out;
  // C = ∂τ/∂ω_B = [ω]× I_B − [I_B ω]×.
  const Mat3 C = skew(w) * Ib - skew(h);
  out.da = G.transpose() * Ib * G;
  // ∂α/∂θ̇ = Ġ + K; ∂ω/∂θ̇ = G.
  out.dv = G.transpose() * (Ib * (Gdot + K) + C * G);
  // ∂α/∂θ_j = G_j θ̈ + Σ_k (∂²G/∂θ_k∂θ_j) θ̇_k θ̇ (column j of L); ∂ω/∂θ = K.
  Mat3 L;
  for (int j = 0; j < 3; ++j) {
    L.col(j) = Gk[j] * thetaddot + K2.col(j);
  }
  out.dq = G.transpose() * (Ib * L + C * K);
  for (int j = 0; j < 3; ++j) out.dq.col(j) += Gk[j].transpose() * tau;
  return out;
}

}  // namespace

void RigidInertiaTerm::declare(StencilSet& stencils) {
  const int d = body_->dof();
  stencil_ = stencils.add({d, d + 1, d + 2, d + 3, d + 4, d + 5});
}

void RigidInertiaTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const int d = body_->dof();
  const double m = body_->mass(ctx.p);
  const bool jac = out.wants_jacobians();
  const RotationalInertia rot = rotational_inertia(body_->unit_inertia(), body_frame(*body_, ctx.q, 1),
                                                   ctx.v.segment<3>(d + 3), ctx.a.segment<3>(d + 3), jac);
  Vec6 r;
  r << m * ctx.a.segment<3>(d), m * rot.r;
  if (!jac) {
    out.add<6>(stencil_, r, nullptr, nullptr, nullptr);
    return;
  }
  Mat6 dq = Mat6::Zero(), dv = Mat6::Zero(), da = Mat6::Zero();
  da.topLeftCorner<3, 3>() = m * Mat3::Identity();
  da.bottomRightCorner<3, 3>() = m * rot.da;
  dv.bottomRightCorner<3, 3>() = m * rot.dv;
  dq.bottomRightCorner<3, 3>() = m * rot.dq;
  out.add<6>(stencil_, r, &dq, &dv, &da);
}

void RigidInertiaTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pm = body_->mass_param();
  if (!sink.wants(pm)) return;
  const int d = body_->dof();
  // r is linear in m: ∂r/∂m = (a_p, r_θ/m).
  const RotationalInertia rot = rotational_inertia(body_->unit_inertia(), body_frame(*body_, ctx.q, 1),
                                                   ctx.v.segment<3>(d + 3), ctx.a.segment<3>(d + 3), false);
  Vec6 col;
  col << ctx.a.segment<3>(d), rot.r;
  sink.add(stencil_, std::span<const int>(&pm, 1), col);
}

void RigidGravityTerm::declare(StencilSet& stencils) {
  const int d = body_->dof();
  stencil_ = stencils.add({d, d + 1, d + 2});
}

void RigidGravityTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const Vec3 r = -body_->mass(ctx.p) * gravity_;
  out.add<3>(stencil_, r, nullptr, nullptr, nullptr);
}

void RigidGravityTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  const int pm = body_->mass_param();
  if (!sink.wants(pm)) return;
  const Vec3 col = -gravity_;
  sink.add(stencil_, std::span<const int>(&pm, 1), col);
}

double RigidGravityTerm::energy(const TermContext& ctx) const {
  return -body_->mass(ctx.p) * gravity_.dot(ctx.q.segment<3>(body_->dof()));
}

RigidPoseTerm::RigidPoseTerm(const RigidBody* body) : body_(body) {
  ADDSIM_CHECK(body && body->kinematic(), "RigidPoseTerm needs a kinematic rigid body");
}

void RigidPoseTerm::declare(StencilSet& stencils) {
  std::vector<DofIndex> dofs;
  for (int c = 0; c < 6; ++c) dofs.push_back(body_->dof() + c);
  stencil_ = stencils.add(dofs);
}

void RigidPoseTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const Vec6 r = ctx.q.segment<6>(body_->dof()) - ctx.p.segment<6>(body_->poses_param() + 6 * ctx.step);
  const Mat6 I = Mat6::Identity();
  out.add<6>(stencil_, r, out.wants_jacobians() ? &I : nullptr, nullptr, nullptr);
}

void RigidPoseTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  for (int c = 0; c < 6; ++c) {
    const int pidx = body_->poses_param() + 6 * ctx.step + c;
    if (!sink.wants(pidx)) continue;
    const Vec6 col = -Vec6::Unit(c);
    sink.add(stencil_, std::span<const int>(&pidx, 1), col);
  }
}

}  // namespace addsim
