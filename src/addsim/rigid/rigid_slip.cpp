#include "addsim/rigid/rigid_slip.h"

#include "addsim/rigid/so3.h"
#include "addsim/terms/contact_force.h"

namespace addsim {

namespace {

using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
using Mat36 = Eigen::Matrix<double, 3, 6>;

// Proxy point k of the term's body at ctx (as RigidContactTerm::evaluate): contact point x,
// material velocity ẋ = ṗ + X_v θ̇, offset y = x − p, P_c = ∂x/∂q = [I X_c], P_v = ∂ẋ/∂v =
// [I X_v], and ∂X_v/∂θ_j.
struct SlipKinematics {
  Vec3 x, xdot, y, thetadot;
  Mat36 Pc, Pv;
  std::array<Mat3, 3> dXv;
};

SlipKinematics slip_kinematics(const RigidContactTerm& term, const TermContext& ctx, int k, int o) {
  SlipKinematics s;
  const int d = term.body().dof();
  const Vec3 p = ctx.q.segment<3>(d);
  s.thetadot = ctx.v.segment<3>(d + 3);
  Mat3 R;
  ExpJacobian jac;
  exp_rotation_and_jacobian(ctx.q.segment<3>(d + 3), 1, R, jac);
  const Vec3 yc = R * term.proxy().centers_B[k];
  Vec3 n = Vec3::Zero();
  if (term.proxy().radius > 0.0) {
    Mat3 H;
    term.obstacles()[o]->gap(p + yc, n, H);  // planes only (hybrid): n is constant
  }
  s.y = yc - term.proxy().radius * n;
  s.x = p + s.y;
  const Mat3 Xc = -skew(yc) * jac.J;
  const Mat3 Xv = -skew(s.y) * jac.J;
  s.xdot = ctx.v.segment<3>(d) + Xv * s.thetadot;
  s.Pc << Mat3::Identity(), Xc;
  s.Pv << Mat3::Identity(), Xv;
  for (int j = 0; j < 3; ++j) s.dXv[j] = -skew(Xc.col(j)) * jac.J - skew(s.y) * jac.dJ[j];
  return s;
}

}  // namespace

void add_rigid_slip_correction(const RigidContactTerm& term, const TermContext& ctx, int k, int o, Assembly& out,
                               const Vec3& lagged_direction) {
  const Obstacle& obstacle = *term.obstacles()[o];
  const ContactCoefficients c = coefficients(term.settings(), obstacle, ctx.p, ctx.scheme.h);
  const SlipKinematics s = slip_kinematics(term, ctx, k, o);
  const ContactForce pen = friction_force(s.x, s.xdot, obstacle, c, FrictionMode::kPenalty);
  if (pen.regime == ContactRegime::kSeparated) return;
  const bool lagged = lagged_direction.squaredNorm() > 0.0;
  const ContactForce slip =
      friction_force(s.x, s.xdot, obstacle, c, lagged ? FrictionMode::kLagged : FrictionMode::kCoulomb, lagged_direction);
  // Point force Δf = f_slide − f_pen; the residual carries −f̂ = −(Δf, X_vᵀ Δf) (eq. rbMf).
  const Vec3 df = slip.f - pen.f;
  const Vec6 r = -(s.Pv.transpose() * df);
  if (!out.wants_jacobians()) {
    out.add<6>(term.stencil(), r, nullptr, nullptr, nullptr);
    return;
  }
  const Mat3 df_dx = slip.df_dx - pen.df_dx;
  const Mat3 df_dxdot = slip.df_dxdot - pen.df_dxdot;
  // ∂ẋ/∂θ_j = (∂X_v/∂θ_j) θ̇; ∂(X_vᵀ Δf)/∂θ_j also has (∂X_v/∂θ_j)ᵀ Δf.
  Mat36 dxdot_dq = Mat36::Zero();
  Mat6 dq = Mat6::Zero();
  for (int j = 0; j < 3; ++j) {
    dxdot_dq.col(3 + j) = s.dXv[j] * s.thetadot;
    dq.block<3, 1>(3, 3 + j) = -(s.dXv[j].transpose() * df);
  }
  dq -= s.Pv.transpose() * (df_dx * s.Pc + df_dxdot * dxdot_dq);
  const Mat6 dv = -(s.Pv.transpose() * df_dxdot * s.Pv);
  out.add<6>(term.stencil(), r, &dq, &dv, nullptr);
}

void rigid_slip_correction_param_derivatives(const RigidContactTerm& term, const TermContext& ctx, int k, int o,
                                             ParamSink& sink) {
  const Obstacle& obstacle = *term.obstacles()[o];
  const ContactSettings& settings = term.settings();
  const ContactCoefficients c = coefficients(settings, obstacle, ctx.p, ctx.scheme.h);
  const SlipKinematics s = slip_kinematics(term, ctx, k, o);
  const ContactForce pen = friction_force(s.x, s.xdot, obstacle, c, FrictionMode::kPenalty);
  if (pen.regime == ContactRegime::kSeparated) return;
  const ContactForce slip = friction_force(s.x, s.xdot, obstacle, c, FrictionMode::kCoulomb);
  // k_t = k_n h when derived: the penalty's ∂/∂k_t enters the k_n column.
  const Vec3 pen_dkn = settings.kt_param >= 0 ? pen.df_dkn : Vec3(pen.df_dkn + tangential_step(settings, ctx.scheme.h) * pen.df_dkt);
  int idx[4];
  Eigen::Matrix<double, 6, 4> block;
  int m = 0;
  idx[m] = settings.kn_param, block.col(m++) = s.Pv.transpose() * (pen_dkn - slip.df_dkn);
  idx[m] = obstacle.friction_param(), block.col(m++) = s.Pv.transpose() * (pen.df_dcf - slip.df_dcf);
  if (settings.kt_param >= 0) idx[m] = settings.kt_param, block.col(m++) = s.Pv.transpose() * pen.df_dkt;
  // The smoothed normal force (contact.smoothing = w) scales both friction forces' limits.
  if (settings.smoothing_param >= 0)
    idx[m] = settings.smoothing_param, block.col(m++) = s.Pv.transpose() * (pen.df_dw - slip.df_dw);
  sink.add(term.stencil(), std::span<const int>(idx, m), block.leftCols(m));
}

void add_rigid_slip_corrections(const std::vector<RigidSlipPoint>& sliding, const TermContext& ctx, Assembly& out) {
  for (const RigidSlipPoint& s : sliding) add_rigid_slip_correction(*s.term, ctx, s.k, s.obstacle, out);
}

void rigid_slip_corrections_param_derivatives(const std::vector<RigidSlipPoint>& sliding, const TermContext& ctx,
                                              ParamSink& sink) {
  for (const RigidSlipPoint& s : sliding) rigid_slip_correction_param_derivatives(*s.term, ctx, s.k, s.obstacle, sink);
}

}  // namespace addsim
