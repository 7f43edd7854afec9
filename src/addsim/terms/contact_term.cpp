#include "addsim/terms/contact_term.h"

namespace addsim {

ContactCoefficients coefficients(const ContactSettings& s, const Obstacle& o, const VecX& p, double h) {
  ContactCoefficients c;
  c.model = s.model;
  c.kn = p[s.kn_param];
  c.kd = s.kd_param >= 0 ? p[s.kd_param] : 0.0;
  c.damping_ramp = s.damping_ramp;
  c.slip_eps = s.slip_regularization;
  c.kt = s.kt_param >= 0 ? p[s.kt_param] : c.kn * tangential_step(s, h);
  c.cf = p[o.friction_param()];
  c.smoothing = s.smoothing_param >= 0 ? p[s.smoothing_param] : 0.0;
  return c;
}

PointContactTerm::PointContactTerm(std::vector<DofIndex> dofs, std::vector<std::shared_ptr<const Obstacle>> obstacles,
                                   ContactSettings settings)
    : dofs_(std::move(dofs)), obstacles_(std::move(obstacles)), settings_(settings) {
  for (const auto& o : obstacles_) planes_.push_back(dynamic_cast<const PlaneObstacle*>(o.get()));
}

void PointContactTerm::declare(StencilSet& stencils) {
  stencil_.clear();
  for (DofIndex d : dofs_) stencil_.push_back(stencils.add({d, d + 1, d + 2}));
}

ContactForce PointContactTerm::force(const TermContext& ctx, int k, int o) const {
  const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
  return contact_force(ctx.q.segment<3>(dofs_[k]), ctx.v.segment<3>(dofs_[k]), *obstacles_[o], c);
}

void PointContactTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  if (settings_.model == ContactModel::kSqp) return;  // forces are multipliers of solver/sqp_solver.h
  // Stick predictor (Assembly::stick_predictor_ratio): linear friction only.
  const double predictor =
      out.predicts_stick() && settings_.model != ContactModel::kTanh ? out.stick_predictor_ratio : 0.0;
  for (int o = 0; o < num_obstacles(); ++o) {
    const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
    const PlaneObstacle* plane = planes_[o];
    const double separated = 0.5 * c.smoothing;
    for (int k = 0; k < num_points(); ++k) {
      if (plane && plane->gap(ctx.q.segment<3>(dofs_[k])) >= separated) continue;
      // A plane's own overload: the same force without the products with its zero Hessian.
      const ContactForce f =
          plane ? contact_force(ctx.q.segment<3>(dofs_[k]), ctx.v.segment<3>(dofs_[k]), *plane, c, predictor)
                : contact_force(ctx.q.segment<3>(dofs_[k]), ctx.v.segment<3>(dofs_[k]), *obstacles_[o], c, predictor);
      if (f.regime == ContactRegime::kSeparated) continue;
      // The residual carries −f (r = M a − f).
      const Vec3 r = -f.f;
      const Mat3 dq = -f.df_dx;
      const Mat3 dv = -f.df_dxdot;
      out.add<3>(stencil_[k], r, &dq, &dv, nullptr);
      if (predictor > 0.0 && f.predictor_shift != Vec3::Zero()) out.add_predictor<3>(stencil_[k], Vec3(-f.predictor_shift));
    }
  }
}

void PointContactTerm::add_slip_correction(const TermContext& ctx, int k, int o, Assembly& out,
                                           const Vec3& lagged_direction) const {
  const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
  const Vec3 x = ctx.q.segment<3>(dofs_[k]), xdot = ctx.v.segment<3>(dofs_[k]);
  const ContactForce pen = friction_force(x, xdot, *obstacles_[o], c, FrictionMode::kPenalty);
  if (pen.regime == ContactRegime::kSeparated) return;
  const bool lagged = lagged_direction.squaredNorm() > 0.0;
  const ContactForce slip = friction_force(x, xdot, *obstacles_[o], c,
                                           lagged ? FrictionMode::kLagged : FrictionMode::kCoulomb, lagged_direction);
  // The residual carries −f: r += −(f_slip − f_pen).
  const Vec3 r = pen.f - slip.f;
  const Mat3 dq = pen.df_dx - slip.df_dx;
  const Mat3 dv = pen.df_dxdot - slip.df_dxdot;
  out.add<3>(stencil_[k], r, &dq, &dv, nullptr);
}

void PointContactTerm::slip_correction_param_derivatives(const TermContext& ctx, int k, int o,
                                                         ParamSink& sink) const {
  const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
  const Vec3 x = ctx.q.segment<3>(dofs_[k]), xdot = ctx.v.segment<3>(dofs_[k]);
  const ContactForce pen = friction_force(x, xdot, *obstacles_[o], c, FrictionMode::kPenalty);
  if (pen.regime == ContactRegime::kSeparated) return;
  const ContactForce slip = friction_force(x, xdot, *obstacles_[o], c, FrictionMode::kCoulomb);
  const double h = tangential_step(settings_, ctx.scheme.h);
  // k_t = k_n h when derived: the penalty's ∂/∂k_t enters the k_n column.
  const Vec3 pen_dkn = settings_.kt_param >= 0 ? pen.df_dkn : Vec3(pen.df_dkn + h * pen.df_dkt);
  int idx[4];
  Eigen::Matrix<double, 3, 4> block;
  int m = 0;
  idx[m] = settings_.kn_param, block.col(m++) = pen_dkn - slip.df_dkn;
  idx[m] = obstacles_[o]->friction_param(), block.col(m++) = pen.df_dcf - slip.df_dcf;
  if (settings_.kt_param >= 0) idx[m] = settings_.kt_param, block.col(m++) = pen.df_dkt;
  if (settings_.smoothing_param >= 0) idx[m] = settings_.smoothing_param, block.col(m++) = pen.df_dw - slip.df_dw;
  sink.add(stencil_[k], std::span<const int>(idx, m), block.leftCols(m));
}

void add_slip_corrections(const std::vector<SlipPoint>& sliding, const TermContext& ctx, Assembly& out) {
  for (const SlipPoint& s : sliding) s.term->add_slip_correction(ctx, s.k, s.obstacle, out);
}

void slip_corrections_param_derivatives(const std::vector<SlipPoint>& sliding, const TermContext& ctx,
                                        ParamSink& sink) {
  for (const SlipPoint& s : sliding) s.term->slip_correction_param_derivatives(ctx, s.k, s.obstacle, sink);
}

void PointContactTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  if (settings_.model == ContactModel::kSqp) return;
  for (int o = 0; o < num_obstacles(); ++o) {
    const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
    const int pcf = obstacles_[o]->friction_param();
    const bool want = sink.wants(settings_.kn_param) || sink.wants(pcf) ||
                      (settings_.kd_param >= 0 && sink.wants(settings_.kd_param)) ||
                      (settings_.kt_param >= 0 && sink.wants(settings_.kt_param)) ||
                      (settings_.smoothing_param >= 0 && sink.wants(settings_.smoothing_param));
    if (!want) continue;
    for (int k = 0; k < num_points(); ++k) {
      const ContactForce f =
          contact_force(ctx.q.segment<3>(dofs_[k]), ctx.v.segment<3>(dofs_[k]), *obstacles_[o], c);
      if (f.regime == ContactRegime::kSeparated) continue;
      // Columns: k_n (including k_t = k_n h when k_t is derived), c_f, k_d, k_t, w.
      int idx[5];
      Eigen::Matrix<double, 3, 5> block;
      int m = 0;
      const Vec3 dkn = settings_.kt_param >= 0 ? f.df_dkn : Vec3(f.df_dkn + tangential_step(settings_, ctx.scheme.h) * f.df_dkt);
      idx[m] = settings_.kn_param, block.col(m++) = -dkn;
      idx[m] = pcf, block.col(m++) = -f.df_dcf;
      if (settings_.kd_param >= 0) idx[m] = settings_.kd_param, block.col(m++) = -f.df_dkd;
      if (settings_.kt_param >= 0) idx[m] = settings_.kt_param, block.col(m++) = -f.df_dkt;
      if (settings_.smoothing_param >= 0) idx[m] = settings_.smoothing_param, block.col(m++) = -f.df_dw;
      sink.add(stencil_[k], std::span<const int>(idx, m), block.leftCols(m));
    }
  }
}

}  // namespace addsim
