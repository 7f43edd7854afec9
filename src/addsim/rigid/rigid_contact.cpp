#include "addsim/rigid/rigid_contact.h"

#include "addsim/core/error.h"
#include "addsim/rigid/body_frame_cache.h"
#include "addsim/rigid/so3.h"

namespace addsim {

namespace {

using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
using Mat36 = Eigen::Matrix<double, 3, 6>;

// Body state shared by all proxy points at one evaluation; R, J, ∂J/∂θ from the per-thread
// frame cache (rigid/body_frame_cache.h).
struct BodyKinematics {
  Vec3 p, pdot, thetadot;
  const RotationFrame* rot = nullptr;
};

BodyKinematics body_kinematics(const RigidBody& b, const TermContext& ctx) {
  BodyKinematics k;
  const int d = b.dof();
  k.p = ctx.q.segment<3>(d);
  k.pdot = ctx.v.segment<3>(d);
  k.thetadot = ctx.v.segment<3>(d + 3);
  k.rot = &body_frame(b, ctx.q, 1);
  return k;
}

// One proxy point: offsets y_c = R ĉ (sphere centre) and y = y_c − r n (contact point),
// the position Jacobian X_c = ∂x/∂θ = −[y_c]× J and the velocity Jacobian X_v = −[y]× J
// (ẋ = ṗ + X_v θ̇; also the force map of eq. rbMf: f̂_θ = X_vᵀ f).
struct PointKinematics {
  Vec3 x, xdot, y;
  Mat3 Xc, Xv;
};

// X_c is formed only if `with_xc` (it enters the partials only; left unset otherwise).
PointKinematics point_kinematics(const BodyKinematics& b, const Vec3& center_B, double radius, const Obstacle& o,
                                 bool with_xc = true) {
  PointKinematics k;
  const Vec3 yc = b.rot->R * center_B;
  Vec3 n = Vec3::Zero();
  if (radius > 0.0) {
    Mat3 H;
    o.gap(b.p + yc, n, H);  // planes only (checked at construction): n is constant
  }
  k.y = yc - radius * n;
  k.x = b.p + k.y;
  if (with_xc) k.Xc = -skew(yc) * b.rot->J;
  k.Xv = -skew(k.y) * b.rot->J;
  k.xdot = b.pdot + k.Xv * b.thetadot;
  return k;
}

}  // namespace

RigidProxy RigidProxy::box_corners(const Vec3& size) {
  RigidProxy proxy;
  for (int i = 0; i < 8; ++i)
    proxy.centers_B.push_back(0.5 * Vec3((i & 1) ? size.x() : -size.x(), (i & 2) ? size.y() : -size.y(),
                                         (i & 4) ? size.z() : -size.z()));
  return proxy;
}

RigidContactTerm::RigidContactTerm(const RigidBody* body, RigidProxy proxy,
                                   std::vector<std::shared_ptr<const Obstacle>> obstacles, ContactSettings settings)
    : body_(body), proxy_(std::move(proxy)), obstacles_(std::move(obstacles)), settings_(settings) {
  validate(body_->name(), proxy_, obstacles_);
  if (settings_.model == ContactModel::kHybrid || settings_.model == ContactModel::kSqp)
    for (const auto& o : obstacles_)
      if (dynamic_cast<const PlaneObstacle*>(o.get()) == nullptr)
        throw InputError("rigid body " + body_->name() + ": " + to_string(settings_.model) +
                         " contact supports planar obstacles only, not '" + o->name() + "'");
}

void RigidContactTerm::validate(const std::string& body_name, const RigidProxy& proxy,
                                const std::vector<std::shared_ptr<const Obstacle>>& obstacles) {
  if (!(proxy.radius >= 0.0)) throw InputError("rigid body " + body_name + ": proxy radius must be ≥ 0");
  for (const Vec3& c : proxy.centers_B)
    if (!c.allFinite()) throw InputError("rigid body " + body_name + ": proxy points must be finite");
  if (proxy.radius > 0.0)
    for (const auto& o : obstacles)
      if (dynamic_cast<const PlaneObstacle*>(o.get()) == nullptr)
        throw InputError("rigid body " + body_name + ": sphere proxies support plane obstacles only, not '" +
                         o->name() + "'");
}

void RigidContactTerm::declare(StencilSet& stencils) {
  const int d = body_->dof();
  stencil_ = stencils.add({d, d + 1, d + 2, d + 3, d + 4, d + 5});
}

ContactForce RigidContactTerm::force(const TermContext& ctx, int k, int o) const {
  const BodyKinematics b = body_kinematics(*body_, ctx);
  const PointKinematics pk = point_kinematics(b, proxy_.centers_B[k], proxy_.radius, *obstacles_[o]);
  return contact_force(pk.x, pk.xdot, *obstacles_[o], coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h));
}

void RigidContactTerm::stick_jacobian(const TermContext& ctx, int k, int o, const Vec3& t1, const Vec3& t2,
                                      Eigen::Matrix<double, 2, 6>& C,
                                      std::array<Eigen::Matrix<double, 2, 6>, 3>& dC) const {
  const BodyKinematics b = body_kinematics(*body_, ctx);
  const PointKinematics pk = point_kinematics(b, proxy_.centers_B[k], proxy_.radius, *obstacles_[o]);
  Eigen::Matrix<double, 2, 3> Tb;
  Tb.row(0) = t1.transpose();
  Tb.row(1) = t2.transpose();
  C.leftCols<3>() = Tb;
  C.rightCols<3>() = Tb * pk.Xv;
  for (int j = 0; j < 3; ++j) {
    const Mat3 dXv = -skew(pk.Xc.col(j)) * b.rot->J - skew(pk.y) * b.rot->dJ[j];
    dC[j].leftCols<3>().setZero();
    dC[j].rightCols<3>() = Tb * dXv;
  }
}

double RigidContactTerm::point_jacobian(const TermContext& ctx, int k, int o, Mat36& Pv,
                                        std::array<Mat36, 3>& dPv) const {
  const BodyKinematics b = body_kinematics(*body_, ctx);
  const PointKinematics pk = point_kinematics(b, proxy_.centers_B[k], proxy_.radius, *obstacles_[o]);
  Pv << Mat3::Identity(), pk.Xv;
  for (int j = 0; j < 3; ++j) {
    dPv[j].leftCols<3>().setZero();
    dPv[j].rightCols<3>() = -skew(pk.Xc.col(j)) * b.rot->J - skew(pk.y) * b.rot->dJ[j];
  }
  Vec3 n;
  Mat3 H;
  return obstacles_[o]->gap(pk.x, n, H);
}

void RigidContactTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  if (settings_.model == ContactModel::kSqp) return;  // forces are multipliers of solver/sqp_solver.h
  const BodyKinematics b = body_kinematics(*body_, ctx);
  const bool want_jac = out.wants_jacobians();
  // Stick predictor (Assembly::stick_predictor_ratio): linear friction only.
  const double predictor =
      out.predicts_stick() && settings_.model != ContactModel::kTanh ? out.stick_predictor_ratio : 0.0;
  Vec6 r = Vec6::Zero(), dr_predictor = Vec6::Zero();
  Mat6 dq = Mat6::Zero(), dv = Mat6::Zero();
  bool active = false, shifted = false;
  for (int o = 0; o < num_obstacles(); ++o) {
    const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
    for (int k = 0; k < num_points(); ++k) {
      const PointKinematics pk = point_kinematics(b, proxy_.centers_B[k], proxy_.radius, *obstacles_[o], want_jac);
      const ContactForce f = contact_force(pk.x, pk.xdot, *obstacles_[o], c, predictor);
      if (f.regime == ContactRegime::kSeparated) continue;
      active = true;
      // Residual −f̂ with f̂ = (f, X_vᵀ f) (eq. rbMf).
      r.head<3>() -= f.f;
      r.tail<3>() -= pk.Xv.transpose() * f.f;
      // The predictor's force f + shift, mapped alike; its partials below use it too.
      Vec3 f_model = f.f;
      if (predictor > 0.0 && f.predictor_shift != Vec3::Zero()) {
        shifted = true;
        f_model += f.predictor_shift;
        dr_predictor.head<3>() -= f.predictor_shift;
        dr_predictor.tail<3>() -= pk.Xv.transpose() * f.predictor_shift;
      }
      if (!want_jac) continue;
      // P_c = ∂x/∂q = [I X_c], P_v = ∂ẋ/∂v = [I X_v].
      Mat36 Pc, Pv;
      Pc << Mat3::Identity(), pk.Xc;
      Pv << Mat3::Identity(), pk.Xv;
      // ∂X_v/∂θ_j = −[X_c e_j]× J − [y]× ∂J/∂θ_j; W_j = (∂X_v/∂θ_j) θ̇, Z_j = (∂X_v/∂θ_j)ᵀ f.
      Mat36 dxdot_dq = Mat36::Zero();
      Mat3 Z;
      for (int j = 0; j < 3; ++j) {
        const Mat3 dXv = -skew(pk.Xc.col(j)) * b.rot->J - skew(pk.y) * b.rot->dJ[j];
        dxdot_dq.col(3 + j) = dXv * b.thetadot;
        Z.col(j) = dXv.transpose() * f_model;
      }
      dq -= Pv.transpose() * (f.df_dx * Pc + f.df_dxdot * dxdot_dq);
      dq.bottomRightCorner<3, 3>() -= Z;
      dv -= Pv.transpose() * f.df_dxdot * Pv;
    }
  }
  if (!active) return;
  out.add<6>(stencil_, r, want_jac ? &dq : nullptr, want_jac ? &dv : nullptr, nullptr);
  if (shifted) out.add_predictor<6>(stencil_, dr_predictor);
}

void RigidContactTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  if (settings_.model == ContactModel::kSqp) return;
  const BodyKinematics b = body_kinematics(*body_, ctx);
  for (int o = 0; o < num_obstacles(); ++o) {
    const ContactCoefficients c = coefficients(settings_, *obstacles_[o], ctx.p, ctx.scheme.h);
    const int pcf = obstacles_[o]->friction_param();
    const bool want = sink.wants(settings_.kn_param) || sink.wants(pcf) ||
                      (settings_.kd_param >= 0 && sink.wants(settings_.kd_param)) ||
                      (settings_.kt_param >= 0 && sink.wants(settings_.kt_param)) ||
                      (settings_.smoothing_param >= 0 && sink.wants(settings_.smoothing_param));
    if (!want) continue;
    // Columns: k_n (with k_t = k_n h when k_t is derived), c_f, k_d, k_t, w; summed over points.
    int idx[5];
    int m = 0;
    idx[m++] = settings_.kn_param;
    idx[m++] = pcf;
    const int col_kd = settings_.kd_param >= 0 ? m : -1;
    if (col_kd >= 0) idx[m++] = settings_.kd_param;
    const int col_kt = settings_.kt_param >= 0 ? m : -1;
    if (col_kt >= 0) idx[m++] = settings_.kt_param;
    const int col_w = settings_.smoothing_param >= 0 ? m : -1;
    if (col_w >= 0) idx[m++] = settings_.smoothing_param;
    Eigen::Matrix<double, 6, 5> block = Eigen::Matrix<double, 6, 5>::Zero();
    bool active = false;
    for (int k = 0; k < num_points(); ++k) {
      const PointKinematics pk = point_kinematics(b, proxy_.centers_B[k], proxy_.radius, *obstacles_[o]);
      const ContactForce f = contact_force(pk.x, pk.xdot, *obstacles_[o], c);
      if (f.regime == ContactRegime::kSeparated) continue;
      active = true;
      Mat36 Pv;
      Pv << Mat3::Identity(), pk.Xv;
      const Vec3 dkn = settings_.kt_param >= 0 ? f.df_dkn : Vec3(f.df_dkn + tangential_step(settings_, ctx.scheme.h) * f.df_dkt);
      block.col(0) -= Pv.transpose() * dkn;
      block.col(1) -= Pv.transpose() * f.df_dcf;
      if (col_kd >= 0) block.col(col_kd) -= Pv.transpose() * f.df_dkd;
      if (col_kt >= 0) block.col(col_kt) -= Pv.transpose() * f.df_dkt;
      if (col_w >= 0) block.col(col_w) -= Pv.transpose() * f.df_dw;
    }
    if (active) sink.add(stencil_, std::span<const int>(idx, m), block.leftCols(m));
  }
}

}  // namespace addsim
