#include "addsim/terms/contact_term.h"

namespace addsim {

ContactCoefficients coefficients(const ContactSettings& s, const Obstacle& o, const VecX& p, double h) {
  ContactCoefficients c;
  c.model = s.model;
  c.kn = p[s.kn_param];
  c.kd = s.kd_param >= 0 ? p[s.kd_param] : 0.0;
  c.kt = s.kt_param >= 0 ? p[s.kt_param] : c.kn * h;
  c.cf = p[o.friction_param()];
  return c;
}

PointContactTerm::PointContactTerm(std::vector<DofIndex> dofs, std::vector<std::shared_ptr<const Obstacle>> obstacles,
                                   ContactSettings settings)
    : dofs_(std::move(dofs)), obstacles_(std::move(obstacles)), settings_(settings) {}

void PointContactTerm::declare(StencilSet& stencils) {
  stencil_.clear();
  for (DofIndex d : dofs_) stencil_.push_back(stencils.add({d, d + 1, d + 2}));
}

ContactForce PointContactTerm::force(const TermContext& ctx, int k, int o) const {
  const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
  return contact_force(ctx.q.segment<3>(dofs_[k]), ctx.v.segment<3>(dofs_[k]), *obstacles_[o], c);
}

void PointContactTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  for (int o = 0; o < num_obstacles(); ++o) {
    const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
    for (int k = 0; k < num_points(); ++k) {
      const ContactForce f =
          contact_force(ctx.q.segment<3>(dofs_[k]), ctx.v.segment<3>(dofs_[k]), *obstacles_[o], c);
      if (f.regime == ContactRegime::kSeparated) continue;
      // The residual carries −f (r = M a − f).
      const Vec3 r = -f.f;
      const Mat3 dq = -f.df_dx;
      const Mat3 dv = -f.df_dxdot;
      out.add<3>(stencil_[k], r, &dq, &dv, nullptr);
    }
  }
}

void PointContactTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  for (int o = 0; o < num_obstacles(); ++o) {
    const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
    const int pcf = obstacles_[o]->friction_param();
    const bool want = sink.wants(settings_.kn_param) || sink.wants(pcf) ||
                      (settings_.kd_param >= 0 && sink.wants(settings_.kd_param)) ||
                      (settings_.kt_param >= 0 && sink.wants(settings_.kt_param));
    if (!want) continue;
    for (int k = 0; k < num_points(); ++k) {
      const ContactForce f =
          contact_force(ctx.q.segment<3>(dofs_[k]), ctx.v.segment<3>(dofs_[k]), *obstacles_[o], c);
      if (f.regime == ContactRegime::kSeparated) continue;
      // Columns: k_n (including k_t = k_n h when k_t is derived), c_f, k_d, k_t.
      int idx[4];
      Eigen::Matrix<double, 3, 4> block;
      int m = 0;
      const Vec3 dkn = settings_.kt_param >= 0 ? f.df_dkn : Vec3(f.df_dkn + ctx.scheme.h * f.df_dkt);
      idx[m] = settings_.kn_param, block.col(m++) = -dkn;
      idx[m] = pcf, block.col(m++) = -f.df_dcf;
      if (settings_.kd_param >= 0) idx[m] = settings_.kd_param, block.col(m++) = -f.df_dkd;
      if (settings_.kt_param >= 0) idx[m] = settings_.kt_param, block.col(m++) = -f.df_dkt;
      sink.add(stencil_[k], std::span<const int>(idx, m), block.leftCols(m));
    }
  }
}

}  // namespace addsim
