#include "addsim/rigid/rigid_joints.h"

#include "addsim/core/error.h"
#include "addsim/rigid/so3.h"

namespace addsim {

namespace {

// A world vector attached to one body: a point p + R û or a direction R û, with its
// Jacobian w.r.t. the body's 6 DOFs and the θθ second derivatives
// ∂²y/∂θ_j∂θ_k = (∂J/∂θ_j e_k) × y_R + (J e_k) × ((J e_j) × y_R), y_R = R û.
struct WorldVector {
  Vec3 y = Vec3::Zero();
  Eigen::Matrix<double, 3, 6> dy = Eigen::Matrix<double, 3, 6>::Zero();
  std::array<std::array<Vec3, 3>, 3> d2y{};
};

WorldVector world_vector(const RigidBody& b, const VecX& q, const Vec3& u_B, bool point, bool second) {
  WorldVector w;
  const Vec3 theta = q.segment<3>(b.dof() + 3);
  ExpJacobian jac;
  exp_jacobian(theta, second ? 1 : 0, jac);
  const Vec3 yR = rotation_from_vector(theta) * u_B;
  w.y = point ? Vec3(q.segment<3>(b.dof()) + yR) : yR;
  if (point) w.dy.leftCols<3>() = Mat3::Identity();
  w.dy.rightCols<3>() = -skew(yR) * jac.J;
  if (!second) return w;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
      w.d2y[j][k] = (jac.dJ[j].col(k)).cross(yR) + jac.J.col(k).cross(jac.J.col(j).cross(yR));
  return w;
}

// Local contributions of one joint over its stencil (N = 6 or 12).
template <int N>
struct JointLocal {
  Eigen::Matrix<double, N, 1> r = Eigen::Matrix<double, N, 1>::Zero();
  Eigen::Matrix<double, N, N> dq = Eigen::Matrix<double, N, N>::Zero();
  Eigen::Matrix<double, N, N> dv = Eigen::Matrix<double, N, N>::Zero();
  Eigen::Matrix<double, N, 1> dr_dk = Eigen::Matrix<double, N, 1>::Zero();
  Eigen::Matrix<double, N, 1> dr_dkaxis = Eigen::Matrix<double, N, 1>::Zero();
  Eigen::Matrix<double, N, 1> dr_dkd = Eigen::Matrix<double, N, 1>::Zero();
  double energy = 0.0;
};

// Adds the potential (k/2)|c|² with c = w_a − w_b (w_b a constant when b is the world).
template <int N>
void add_potential(double k, const WorldVector& wa, const WorldVector* wb, const Vec3& world_b, bool jacobians,
                   Eigen::Matrix<double, N, 1>& dr_dk, JointLocal<N>& L) {
  const Vec3 c = wa.y - (wb ? wb->y : world_b);
  Eigen::Matrix<double, 3, N> Jc = Eigen::Matrix<double, 3, N>::Zero();
  Jc.template leftCols<6>() = wa.dy;
  if constexpr (N == 12) Jc.template rightCols<6>() = -wb->dy;
  dr_dk += Jc.transpose() * c;
  L.r += k * Jc.transpose() * c;
  L.energy += 0.5 * k * c.squaredNorm();
  if (!jacobians) return;
  L.dq += k * Jc.transpose() * Jc;
  // Curvature term Σ_i c_i ∇²c_i, non-zero in the θθ blocks only.
  for (int j = 0; j < 3; ++j)
    for (int m = 0; m < 3; ++m) {
      L.dq(3 + j, 3 + m) += k * c.dot(wa.d2y[j][m]);
      if constexpr (N == 12) L.dq(9 + j, 9 + m) -= k * c.dot(wb->d2y[j][m]);
    }
}

// Adds the motor damping r = k_md Dᵀ D v with D = ∂(ω_a − ω_b)/∂v.
template <int N>
void add_damping(double kd, const RigidBody& a, const RigidBody* b, const TermContext& ctx, bool jacobians,
                 JointLocal<N>& L) {
  ExpJacobian ja, jb;
  exp_jacobian(ctx.q.segment<3>(a.dof() + 3), 1, ja);
  Eigen::Matrix<double, 3, N> D = Eigen::Matrix<double, 3, N>::Zero();
  Eigen::Matrix<double, N, 1> v;
  D.template block<3, 3>(0, 3) = ja.J;
  v.template head<6>() = ctx.v.segment<6>(a.dof());
  if constexpr (N == 12) {
    exp_jacobian(ctx.q.segment<3>(b->dof() + 3), 1, jb);
    D.template block<3, 3>(0, 9) = -jb.J;
    v.template tail<6>() = ctx.v.segment<6>(b->dof());
  }
  const Vec3 w_rel = D * v;
  L.dr_dkd += D.transpose() * w_rel;
  L.r += kd * D.transpose() * w_rel;
  if (!jacobians) return;
  L.dv += kd * D.transpose() * D;
  // ∂D/∂θ_j has ±∂J/∂θ_j in the θ columns of its body.
  for (int slot = 0; slot < (N == 12 ? 2 : 1); ++slot) {
    const ExpJacobian& jac = slot == 0 ? ja : jb;
    const double sign = slot == 0 ? 1.0 : -1.0;
    for (int j = 0; j < 3; ++j) {
      Eigen::Matrix<double, 3, N> dD = Eigen::Matrix<double, 3, N>::Zero();
      dD.template block<3, 3>(0, 6 * slot + 3) = sign * jac.dJ[j];
      L.dq.col(6 * slot + 3 + j) += kd * (dD.transpose() * w_rel + D.transpose() * (dD * v));
    }
  }
}

template <int N>
JointLocal<N> joint_local(const RigidJoint& jt, const TermContext& ctx, bool jacobians) {
  JointLocal<N> L;
  const RigidBody& a = *jt.body_a;
  const RigidBody* b = jt.body_b;
  if (jt.kind == RigidJoint::Kind::kMotorDamping) {
    add_damping<N>(ctx.p[jt.damping_param], a, b, ctx, jacobians, L);
    return L;
  }
  // Anchor points: c = x_a − x_b.
  {
    const WorldVector wa = world_vector(a, ctx.q, jt.point_a, true, jacobians);
    WorldVector wb;
    if (b) wb = world_vector(*b, ctx.q, jt.point_b, true, jacobians);
    add_potential<N>(ctx.p[jt.stiffness_param], wa, b ? &wb : nullptr, jt.point_b, jacobians, L.dr_dk, L);
  }
  if (jt.kind == RigidJoint::Kind::kHinge) {
    // Axis alignment: c_h = w(â_b) − w(â_a); the same potential with a and b swapped in sign.
    const WorldVector wa = world_vector(a, ctx.q, jt.axis_a, false, jacobians);
    WorldVector wb;
    if (b) wb = world_vector(*b, ctx.q, jt.axis_b, false, jacobians);
    add_potential<N>(ctx.p[jt.axis_stiffness_param], wa, b ? &wb : nullptr, jt.axis_b, jacobians, L.dr_dkaxis, L);
  }
  return L;
}

}  // namespace

RigidJointTerm::RigidJointTerm(std::vector<RigidJoint> joints) : joints_(std::move(joints)) {
  for (const RigidJoint& j : joints_) {
    if (!j.body_a) throw InputError(j.label + ": a rigid joint needs body a");
    if (j.body_b == j.body_a) throw InputError(j.label + ": a rigid joint needs two different bodies");
    const bool needs_k = j.kind != RigidJoint::Kind::kMotorDamping;
    if (needs_k && j.stiffness_param < 0) throw InputError(j.label + ": missing stiffness");
    if (j.kind == RigidJoint::Kind::kHinge && j.axis_stiffness_param < 0)
      throw InputError(j.label + ": missing axis stiffness");
    if (j.kind == RigidJoint::Kind::kMotorDamping && j.damping_param < 0)
      throw InputError(j.label + ": missing damping");
  }
}

void RigidJointTerm::declare(StencilSet& stencils) {
  stencil_.clear();
  for (const RigidJoint& j : joints_) {
    std::vector<DofIndex> dofs;
    for (const RigidBody* b : {j.body_a, j.body_b})
      if (b)
        for (int c = 0; c < 6; ++c) dofs.push_back(b->dof() + c);
    stencil_.push_back(stencils.add(dofs));
  }
}

void RigidJointTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const bool jac = out.wants_jacobians();
  for (size_t k = 0; k < joints_.size(); ++k) {
    if (joints_[k].body_b) {
      const JointLocal<12> L = joint_local<12>(joints_[k], ctx, jac);
      out.add<12>(stencil_[k], L.r, jac ? &L.dq : nullptr, jac ? &L.dv : nullptr, nullptr);
    } else {
      const JointLocal<6> L = joint_local<6>(joints_[k], ctx, jac);
      out.add<6>(stencil_[k], L.r, jac ? &L.dq : nullptr, jac ? &L.dv : nullptr, nullptr);
    }
  }
}

namespace {
template <int N>
void joint_params(const RigidJoint& jt, int stencil, const JointLocal<N>& L, ParamSink& sink) {
  const std::pair<int, const Eigen::Matrix<double, N, 1>*> cols[] = {
      {jt.stiffness_param, &L.dr_dk}, {jt.axis_stiffness_param, &L.dr_dkaxis}, {jt.damping_param, &L.dr_dkd}};
  for (const auto& [pidx, col] : cols)
    if (pidx >= 0 && sink.wants(pidx)) sink.add(stencil, std::span<const int>(&pidx, 1), *col);
}
}  // namespace

void RigidJointTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  for (size_t k = 0; k < joints_.size(); ++k) {
    if (joints_[k].body_b)
      joint_params<12>(joints_[k], stencil_[k], joint_local<12>(joints_[k], ctx, false), sink);
    else
      joint_params<6>(joints_[k], stencil_[k], joint_local<6>(joints_[k], ctx, false), sink);
  }
}

double RigidJointTerm::energy(const TermContext& ctx) const {
  double e = 0.0;
  for (const RigidJoint& j : joints_)
    e += j.body_b ? joint_local<12>(j, ctx, false).energy : joint_local<6>(j, ctx, false).energy;
  return e;
}

}  // namespace addsim
