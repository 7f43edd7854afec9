#include "addsim/rigid/rigid_joints.h"

#include <array>
#include <cmath>
#include <numbers>
#include <utility>

#include "addsim/core/error.h"
#include "addsim/model/handle.h"
#include "addsim/rigid/body_frame_cache.h"
#include "addsim/rigid/so3.h"

namespace addsim {

namespace {

// A world vector attached to one body: a point p + R û or a direction R û, with its
// Jacobian w.r.t. the body's 6 DOFs. Its θθ second derivatives are not formed: a potential's
// curvature Σ_i g_i ∂²y_i/∂θ_j∂θ_k enters through RotationCurvature below. A
// default-constructed one (no such side) is left unset and never read.
struct WorldVector {
  bool point = false;  ///< a point (dy's position columns are I) or a direction (they are 0)
  Vec3 y;
  Vec3 yR;  ///< the rotated part R û (the point minus the body's centre)
  Eigen::Matrix<double, 3, 6> dy;
};

// A body's centre and its rotation frame (R, J(θ) and, with order 1, ∂J/∂θ and JᵀJ) from the
// per-thread cache (rigid/body_frame_cache.h), shared by all joints and world vectors on the
// body and by the body's other terms.
struct BodyFrame {
  Vec3 x;
  const RotationFrame* rot = nullptr;
};

// The frames of joint jt's bodies a and, if rigid, b at q (order 1: with ∂J/∂θ).
void joint_frames(const RigidJoint& jt, const VecX& q, int order, BodyFrame& fa, BodyFrame& fb) {
  fa.x = q.segment<3>(jt.body_a->dof());
  fa.rot = &body_frame(*jt.body_a, q, order);
  if (!jt.body_b) return;
  fb.x = q.segment<3>(jt.body_b->dof());
  fb.rot = &body_frame_beside(*jt.body_b, q, order, *fa.rot);
}

WorldVector world_vector(const BodyFrame& f, const Vec3& u_B, bool point) {
  WorldVector w;
  const RotationFrame& jac = *f.rot;
  w.yR = jac.R * u_B;
  w.point = point;
  w.y = point ? Vec3(f.x + w.yR) : w.yR;
  if (point)
    w.dy.leftCols<3>() = Mat3::Identity();
  else
    w.dy.leftCols<3>().setZero();
  w.dy.rightCols<3>() = -skew(w.yR) * jac.J;
  return w;
}

// The curvature part of a body's θθ Hessian block, Σ_p k_p g_p · ∂²y_p/∂θ_j∂θ_m, summed over
// the world vectors y_p = (x +) R û_p of one body that a joint's potentials read (g_p = ∂E/∂y_p,
// k_p its weight). With J_m the columns of J(θ) and y_R = R û,
//   ∂²y/∂θ_j∂θ_m = (∂J_m/∂θ_j) × y_R + J_m × (J_j × y_R),
// and the triple products a·(b × c) = b·(c × a), J_m × (J_j × y) = J_j (J_m·y) − y (J_m·J_j) give
//   Σ_p k_p g_p·∂²y_p/∂θ_j∂θ_m = (∂J/∂θ_j)ᵀ_m w + (Jᵀ M J)_jm − s (JᵀJ)_jm,
// w = Σ_p k_p y_R,p × g_p, M = Σ_p k_p g_p y_R,pᵀ, s = Σ_p k_p y_R,p·g_p. So each potential adds
// one cross product, one outer product and one dot product, and the 3 × 3 block is formed once
// per joint side instead of from 9 second-derivative vectors per world vector.
struct RotationCurvature {
  Vec3 w = Vec3::Zero();
  Mat3 M = Mat3::Zero();
  double s = 0.0;
  bool any = false;

  void clear() {
    w.setZero();
    M.setZero();
    s = 0.0;
    any = false;
  }
  void add(double k, const WorldVector& y, const Vec3& g) {
    const Vec3 kg = k * g;
    w += y.yR.cross(kg);
    M.noalias() += kg * y.yR.transpose();
    s += y.yR.dot(kg);
    any = true;
  }
  void add_scaled(double f, const RotationCurvature& o) {
    if (!o.any) return;
    w += f * o.w;
    M += f * o.M;
    s += f * o.s;
    any = true;
  }
  // H(r0 + j, r0 + m) += the block above, for the frame f of the body (built with ∂J/∂θ).
  template <class Hess>
  void apply(const BodyFrame& f, Hess& H, int r0) const {
    if (!any) return;
    ADDSIM_CHECK(f.rot->order >= 1, "RotationCurvature: needs a frame built with ∂J/∂θ");
    const Mat3& J = f.rot->J;
    Mat3 C = J.transpose() * M * J - s * f.rot->JtJ;
    add_dj_torque(f, w, C);
    H.template block<3, 3>(r0, r0) += C;
  }

  // C(j, m) += (∂J/∂θ_j)ᵀ_m w, the first part of the block above.
  static void add_dj_torque(const BodyFrame& f, const Vec3& w, Mat3& C) {
    for (int j = 0; j < 3; ++j) C.row(j) += (f.rot->dJ[j].transpose() * w).transpose();
  }
};

// Local contributions of one joint over its stencil (N = 6: a alone, 9: a + particle,
// 12: a + rigid b, 18: a + the 4 nodes of an embedded point).
// clear() zeroes what a call will accumulate and read: r and the energy always, dq with
// Jacobians, dv with Jacobians of a motor damping (the only joint with ∂r/∂v), the parameter
// columns when `params`; the rest stays unset and unread (zeroing all of it, 396 doubles for
// a 12-DOF joint, took about half of the CPU samples of the joint's own code).
template <int N>
struct JointLocal {
  using Col = Eigen::Matrix<double, N, 1>;
  Col r;
  Eigen::Matrix<double, N, N> dq;
  Eigen::Matrix<double, N, N> dv;
  Col dr_dk, dr_dkaxis, dr_dkm, dr_dkd;
  Col dr_dalpha;
  Eigen::Matrix<double, N, 3> dr_dxb;  ///< handle b: ∂r/∂x_b
  double energy = 0.0;
  /// False: the parameter columns dr_dk, dr_dkaxis, dr_dkm, dr_dkd, dr_dalpha, dr_dxb are
  /// neither formed nor zeroed (an evaluation does not read them; r and the state partials
  /// are the same numbers either way).
  bool params = true;
  bool jacobians = false;  ///< dq (and dv for motor damping) are formed
  /// With Jacobians: the potentials' curvature on the θθ blocks of a and of a rigid b,
  /// added to dq by finish_local() once all potentials of the joint (or group) are summed.
  RotationCurvature ca, cb;

  bool dv_used = false;  ///< dv is formed (Jacobians of a motor damping)

  void clear(bool with_jacobians, bool with_dv, bool with_params) {
    jacobians = with_jacobians;
    dv_used = with_jacobians && with_dv;
    params = with_params;
    energy = 0.0;
    r.setZero();
    if (jacobians) {
      dq.setZero();
      ca.clear();
      cb.clear();
    }
    if (dv_used) dv.setZero();
    if (!params) return;
    for (Col* c : {&dr_dk, &dr_dkaxis, &dr_dkm, &dr_dkd, &dr_dalpha}) c->setZero();
    dr_dxb.setZero();
  }
};

// dq += k Jdᵀ H Jd (N × N). Written out because Eigen sends a 12 × 3 × 12 product to its
// general (packed, blocked) matrix product, whose overhead dominates at this size; the
// sums run in the same order as there (T = (k Jdᵀ) H, then Σ_r T(i, r) Jd(r, j) for
// r = 0, 1, 2), so the result is the same. (Skipping the exactly zero columns of Jd, e.g.
// the position DOFs of an axis, measured slower: the branches stop the vectorisation.)
template <int N>
void add_gram(double k, const Eigen::Matrix<double, 3, N>& Jd, const Mat3& H, Eigen::Matrix<double, N, N>& dq) {
  if constexpr (N < 9) {
    dq += k * Jd.transpose() * H * Jd;  // small enough for Eigen's coefficient-wise product
    return;
  }
  const Eigen::Matrix<double, N, 3> T = (k * Jd.transpose()).lazyProduct(H);
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < N; ++i) {
      double acc = 0.0;
      for (int r = 0; r < 3; ++r) acc += T(i, r) * Jd(r, j);
      dq(i, j) += acc;
    }
}

// dq += k Jdᵀ Jd for a potential with ∂²E/∂d² = I (zero length), the same numbers as
// add_gram<N>(k, Jd, I, dq) with fewer products. Jd is made of 3 × 3 blocks of the kinds
// given: zero (the position DOFs of a direction), diagonal (±I for a rigid anchor point,
// −w I for a node of the other side) or dense (Θ = ∂y/∂θ). In add_gram's sums
// Σ_r (k Jd(r, i)) Jd(r, j) (r = 0, 1, 2; T = (k Jdᵀ) I has exactly the entries k Jd(r, i))
// a zero block adds exact zeros only, and a diagonal block leaves one non-zero product
// (r = i in its rows, r = j in its columns), so those sums are formed here directly and the
// others in the same order.
enum class GramBlock { kZero, kDiagonal, kDense };

// One 3 × 3 block (rows r0.., columns c0..) of add_block_gram's sum, its kinds known at
// compile time (so the block loops unroll without branches).
template <GramBlock R, GramBlock C, int N>
inline void add_gram_block(double k, const Eigen::Matrix<double, 3, N>& Jd, int r0, int c0,
                           Eigen::Matrix<double, N, N>& dq) {
  if constexpr (R != GramBlock::kZero && C != GramBlock::kZero) {
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i) {
        double acc;
        if constexpr (R == GramBlock::kDiagonal)
          acc = (k * Jd(i, r0 + i)) * Jd(i, c0 + j);
        else if constexpr (C == GramBlock::kDiagonal)
          acc = (k * Jd(j, r0 + i)) * Jd(j, c0 + j);
        else
          acc = (k * Jd(0, r0 + i)) * Jd(0, c0 + j) + (k * Jd(1, r0 + i)) * Jd(1, c0 + j) +
                (k * Jd(2, r0 + i)) * Jd(2, c0 + j);
        dq(r0 + i, c0 + j) += acc;
      }
  }
}

// Block column C (all block rows Rs) of add_block_gram.
template <std::size_t C, GramBlock... Kinds, std::size_t... Rs>
inline void add_gram_block_column(double k, const Eigen::Matrix<double, 3, 3 * sizeof...(Kinds)>& Jd,
                                  Eigen::Matrix<double, 3 * sizeof...(Kinds), 3 * sizeof...(Kinds)>& dq,
                                  std::index_sequence<Rs...>) {
  constexpr GramBlock kinds[] = {Kinds...};
  (add_gram_block<kinds[Rs], kinds[C], 3 * sizeof...(Kinds)>(k, Jd, 3 * static_cast<int>(Rs), 3 * static_cast<int>(C), dq),
   ...);
}

template <GramBlock... Kinds, std::size_t... Cs>
inline void add_gram_block_columns(double k, const Eigen::Matrix<double, 3, 3 * sizeof...(Kinds)>& Jd,
                                   Eigen::Matrix<double, 3 * sizeof...(Kinds), 3 * sizeof...(Kinds)>& dq,
                                   std::index_sequence<Cs...>) {
  (add_gram_block_column<Cs, Kinds...>(k, Jd, dq, std::make_index_sequence<sizeof...(Kinds)>{}), ...);
}

// The blocks' kinds as template arguments, one per 3 columns of Jd.
template <GramBlock... Kinds>
void add_block_gram(double k, const Eigen::Matrix<double, 3, 3 * sizeof...(Kinds)>& Jd,
                    Eigen::Matrix<double, 3 * sizeof...(Kinds), 3 * sizeof...(Kinds)>& dq) {
  add_gram_block_columns<Kinds...>(k, Jd, dq, std::make_index_sequence<sizeof...(Kinds)>{});
}

// Between two rigid bodies: Jd = [P_a, Θ_a, P_b, Θ_b], P = ±I for a point, 0 for a direction.
void add_pair_gram(double k, const Eigen::Matrix<double, 3, 12>& Jd, bool point_a, bool point_b,
                   Eigen::Matrix<double, 12, 12>& dq) {
  using B = GramBlock;
  if (point_a && point_b)
    add_block_gram<B::kDiagonal, B::kDense, B::kDiagonal, B::kDense>(k, Jd, dq);
  else if (point_a)
    add_block_gram<B::kDiagonal, B::kDense, B::kZero, B::kDense>(k, Jd, dq);
  else if (point_b)
    add_block_gram<B::kZero, B::kDense, B::kDiagonal, B::kDense>(k, Jd, dq);
  else
    add_block_gram<B::kZero, B::kDense, B::kZero, B::kDense>(k, Jd, dq);
}

// dv += k Dᵀ D (N × N), as Eigen's general product evaluates it: k (Σ_r D(r, i) D(r, j)).
template <int N>
void add_scaled_gram(double k, const Eigen::Matrix<double, 3, N>& D, Eigen::Matrix<double, N, N>& dv) {
  if constexpr (N < 9) {
    dv += k * D.transpose() * D;
    return;
  }
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < N; ++i) {
      double acc = 0.0;
      for (int r = 0; r < 3; ++r) acc += D(r, i) * D(r, j);
      dv(i, j) += k * acc;
    }
}

// Energy per unit stiffness of d = y_a − y_b and its first two derivatives in d.
struct SeparationEnergy {
  double e = 0.0;
  Vec3 g = Vec3::Zero();
  Mat3 H = Mat3::Zero();
  bool unit_hessian = false;  ///< H = I exactly (zero length)
};

SeparationEnergy separation_energy(RigidJoint::Kind kind, const Vec3& d, double rest_length) {
  SeparationEnergy out;
  if (kind != RigidJoint::Kind::kDistance && kind != RigidJoint::Kind::kUnilateral) {
    // Zero length: E = ½|d|².
    out.e = 0.5 * d.squaredNorm();
    out.g = d;
    out.H = Mat3::Identity();
    out.unit_hessian = true;
    return out;
  }
  // Distance: E = ½ c², c = |d| − l₀; undefined direction at |d| = 0, where the force
  // vanishes only for l₀ = 0 — the guard 1e-300 keeps u finite and leaves E = ½ l₀².
  const double len = d.norm();
  const double c = len - rest_length;
  if (kind == RigidJoint::Kind::kUnilateral && c <= 0.0) return out;
  out.e = 0.5 * c * c;
  if (len < 1e-300) return out;
  const Vec3 u = d / len;
  out.g = c * u;
  out.H = u * u.transpose() + (c / len) * (Mat3::Identity() - u * u.transpose());
  return out;
}

// Adds k·E(d) with d = y_a − y_b; b is rigid (N = 12, wb), linear in 1 or 4 nodes
// (N = 9: a particle, 18: an embedded point, x_b = Σ_m wn[m] x_m) or fixed (N = 6).
// Returns ∂d/∂(stencil DOFs) (3 × N).
template <int N>
Eigen::Matrix<double, 3, N> add_potential(double k, const SeparationEnergy& se, const WorldVector& wa,
                                          const WorldVector* wb, const std::array<double, 4>& wn, bool jacobians,
                                          Eigen::Matrix<double, N, 1>& dr_dk, JointLocal<N>& L) {
  Eigen::Matrix<double, 3, N> Jd;  // every block is set below
  Jd.template leftCols<6>() = wa.dy;
  if constexpr (N == 12) Jd.template rightCols<6>() = -wb->dy;
  if constexpr (N == 9 || N == 18)
    for (int m = 0; m < (N - 6) / 3; ++m) Jd.template block<3, 3>(0, 6 + 3 * m) = -wn[m] * Mat3::Identity();
  if (L.params) dr_dk += Jd.transpose() * se.g;
  L.r += k * Jd.transpose() * se.g;
  L.energy += k * se.e;
  if (!jacobians) return Jd;
  if constexpr (N == 12) {
    if (se.unit_hessian)
      add_pair_gram(k, Jd, wa.point, wb->point, L.dq);
    else
      add_gram<N>(k, Jd, se.H, L.dq);
  } else if constexpr (N == 9) {
    // A rigid body and one node (a particle or an FEM node, e.g. the ball joints tying the
    // soft feet to the shins): Jd = [P_a, Θ_a, −w I].
    using B = GramBlock;
    if (se.unit_hessian && wa.point)
      add_block_gram<B::kDiagonal, B::kDense, B::kDiagonal>(k, Jd, L.dq);
    else if (se.unit_hessian)
      add_block_gram<B::kZero, B::kDense, B::kDiagonal>(k, Jd, L.dq);
    else
      add_gram<N>(k, Jd, se.H, L.dq);
  } else {
    add_gram<N>(k, Jd, se.H, L.dq);
  }
  // Curvature term Σ_i g_i ∇²d_i, non-zero in the θθ blocks of rigid sides only.
  L.ca.add(k, wa, se.g);
  if constexpr (N == 12) L.cb.add(-k, *wb, se.g);
  return Jd;
}

// The motor damping between two rigid bodies without its parameter column, in 3 × 3 blocks:
// with ω = J_a θ̇_a − J_b θ̇_b, r_θa = k_md J_aᵀ ω and r_θb = −k_md J_bᵀ ω; ∂r/∂θ̇ has the
// blocks k_md (J_aᵀJ_a, −J_aᵀJ_b; −J_bᵀJ_a, J_bᵀJ_b), and with V_s = [∂J_s/∂θ_s,j θ̇_s]_j
// ∂r_θa/∂θ_a = k_md (J_aᵀ V_a + [(∂J_a/∂θ_a,j)ᵀ ω]_j), ∂r_θb/∂θ_a = −k_md J_bᵀ V_a,
// ∂r_θa/∂θ_b = −k_md J_aᵀ V_b, ∂r_θb/∂θ_b = k_md (J_bᵀ V_b − [(∂J_b/∂θ_b,j)ᵀ ω]_j).
// The same derivatives as add_damping()'s general form (which param_derivatives() keeps for
// ∂r/∂k_md), without its products by the zero columns of D = [0, J_a, 0, −J_b].
void add_pair_damping(double kd, const RigidBody& a, const RigidBody& b, const BodyFrame& fa, const BodyFrame& fb,
                      const TermContext& ctx, bool jacobians, JointLocal<12>& L) {
  const Mat3& Ja = fa.rot->J;
  const Mat3& Jb = fb.rot->J;
  const Vec3 wa = ctx.v.segment<3>(a.dof() + 3), wb = ctx.v.segment<3>(b.dof() + 3);
  const Vec3 w = Ja * wa - Jb * wb;
  const Vec3 kw = kd * w;
  L.r.segment<3>(3) += Ja.transpose() * kw;
  L.r.segment<3>(9) -= Jb.transpose() * kw;
  if (!jacobians) return;
  const Mat3 JaJb = kd * (Ja.transpose() * Jb);
  L.dv.block<3, 3>(3, 3) += kd * fa.rot->JtJ;
  L.dv.block<3, 3>(3, 9) -= JaJb;
  L.dv.block<3, 3>(9, 3) -= JaJb.transpose();
  L.dv.block<3, 3>(9, 9) += kd * fb.rot->JtJ;
  Mat3 Va, Vb, Wa, Wb;
  for (int j = 0; j < 3; ++j) {
    Va.col(j) = fa.rot->dJ[j] * wa;
    Vb.col(j) = fb.rot->dJ[j] * wb;
    Wa.col(j) = fa.rot->dJ[j].transpose() * kw;
    Wb.col(j) = fb.rot->dJ[j].transpose() * kw;
  }
  const Mat3 kVa = kd * Va, kVb = kd * Vb;
  L.dq.block<3, 3>(3, 3) += Ja.transpose() * kVa + Wa;
  L.dq.block<3, 3>(9, 3) -= Jb.transpose() * kVa;
  L.dq.block<3, 3>(3, 9) -= Ja.transpose() * kVb;
  L.dq.block<3, 3>(9, 9) += Jb.transpose() * kVb - Wb;
}

// Adds the motor damping r = k_md Dᵀ D v with D = ∂(ω_a − ω_b)/∂v (J_a, J_b from the frames
// fa, fb, built with ∂J/∂θ when `jacobians`).
template <int N>
void add_damping(double kd, const RigidBody& a, const RigidBody* b, const BodyFrame& fa, const BodyFrame* fb,
                 const TermContext& ctx, bool jacobians, JointLocal<N>& L) {
  if constexpr (N == 12) {
    if (!L.params) {
      add_pair_damping(kd, a, *b, fa, *fb, ctx, jacobians, L);
      return;
    }
  }
  const RotationFrame& ja = *fa.rot;
  Eigen::Matrix<double, 3, N> D = Eigen::Matrix<double, 3, N>::Zero();
  Eigen::Matrix<double, N, 1> v = Eigen::Matrix<double, N, 1>::Zero();
  D.template block<3, 3>(0, 3) = ja.J;
  v.template head<6>() = ctx.v.segment<6>(a.dof());
  if constexpr (N == 12) {
    D.template block<3, 3>(0, 9) = -fb->rot->J;
    v.template tail<6>() = ctx.v.segment<6>(b->dof());
  }
  const Vec3 w_rel = D * v;
  if (L.params) L.dr_dkd += D.transpose() * w_rel;
  L.r += kd * D.transpose() * w_rel;
  if (!jacobians) return;
  add_scaled_gram<N>(kd, D, L.dv);
  // ∂D/∂θ_j has ±∂J/∂θ_j in the θ columns of its body.
  for (int slot = 0; slot < (N == 12 ? 2 : 1); ++slot) {
    const RotationFrame& jac = slot == 0 ? ja : *fb->rot;
    const double sign = slot == 0 ? 1.0 : -1.0;
    for (int j = 0; j < 3; ++j) {
      Eigen::Matrix<double, 3, N> dD = Eigen::Matrix<double, 3, N>::Zero();
      dD.template block<3, 3>(0, 6 * slot + 3) = sign * jac.dJ[j];
      L.dq.col(6 * slot + 3 + j) += kd * (dD.transpose() * w_rel + D.transpose() * (dD * v));
    }
  }
}

// Weights of b's nodes in x_b: a particle is one node of weight 1.
std::array<double, 4> node_weights(const RigidJoint& jt) {
  return jt.tet_b[0] >= 0 ? jt.bary_b : std::array<double, 4>{1.0, 0.0, 0.0, 0.0};
}

// Motor reference of a at angle α: u(α) = R(α, â_a) b̂_a (a's frame).
Vec3 motor_reference(const RigidJoint& jt, double alpha) {
  return Eigen::AngleAxisd(alpha, jt.axis_a.normalized()).toRotationMatrix() * jt.ref_a;
}

// A kinematic side's rows belong to its RigidPoseTerm (q_B = pose): the joint only acts on
// the other side, through the columns of the kinematic body.
template <int N>
void mask_kinematic_rows(const RigidJoint& jt, JointLocal<N>& L) {
  auto zero = [&](int r0) {
    L.r.template segment<6>(r0).setZero();
    if (L.jacobians) {
      L.dq.template middleRows<6>(r0).setZero();
      if (L.dv_used) L.dv.template middleRows<6>(r0).setZero();
    }
    if (!L.params) return;
    for (auto* c : {&L.dr_dk, &L.dr_dkaxis, &L.dr_dkm, &L.dr_dkd, &L.dr_dalpha}) c->template segment<6>(r0).setZero();
    L.dr_dxb.template middleRows<6>(r0).setZero();
  };
  if (jt.body_a->kinematic()) zero(0);
  if constexpr (N == 12)
    if (jt.body_b->kinematic()) zero(6);
}

template <int N>
void joint_local_unmasked(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame* fb, const TermContext& ctx,
                          const Model* model, JointLocal<N>& L);

// Completes L once every joint summed into it has been added: the curvature of its rotated
// vectors, then the rows of kinematic bodies masked (jt: any of those joints, all with the
// same bodies).
template <int N>
void finish_local(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame* fb, JointLocal<N>& L) {
  if (L.jacobians) {
    L.ca.apply(fa, L.dq, 3);
    if constexpr (N == 12) L.cb.apply(*fb, L.dq, 9);
  }
  mask_kinematic_rows<N>(jt, L);
}

// Fills L (cleared here) for joint jt; fa, fb: frames of jt.body_a and jt.body_b (fb null
// without a body b), built with ∂J/∂θ when `jacobians`.
template <int N>
void joint_local(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame* fb, const TermContext& ctx,
                 const Model* model, bool jacobians, bool params, JointLocal<N>& L) {
  L.clear(jacobians, jt.kind == RigidJoint::Kind::kMotorDamping, params);
  joint_local_unmasked<N>(jt, fa, fb, ctx, model, L);
  finish_local<N>(jt, fa, fb, L);
}

// Hinge angle α = atan2(s, c), s = n·(u × w), c = u·w, of the world vectors n = w_a(â_a),
// u = w_a(b̂_a), w = w_b(b̂_b) (or fixed), with its gradient over the stencil and, if
// `second`, its Hessian ∂²α = Jyᵀ H_y Jy + Σ_i (∂α/∂y_i) ∇²y_i (y = (n, u, w), 9 values; the
// first part in `hess`, the second as RotationCurvature of a and b).
template <int N>
struct HingeAngle {
  bool defined = false;
  double alpha = 0.0;
  Eigen::Matrix<double, N, 1> grad = Eigen::Matrix<double, N, 1>::Zero();
  Eigen::Matrix<double, N, N> hess = Eigen::Matrix<double, N, N>::Zero();  ///< without the curvature part
  RotationCurvature ca, cb;  ///< the curvature part Σ_i (∂α/∂y_i) ∇²y_i on a's and b's θθ blocks
};

template <int N>
HingeAngle<N> hinge_angle(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame* fb, bool second) {
  const WorldVector wn = world_vector(fa, jt.axis_a.normalized(), false);
  const WorldVector wu = world_vector(fa, jt.ref_a, false);
  const WorldVector ww = N == 12 ? world_vector(*fb, jt.ref_b, false) : WorldVector{};
  const Vec3 n = wn.y, u = wu.y, w = N == 12 ? ww.y : jt.ref_b;
  const double s = n.dot(u.cross(w)), c = u.dot(w);
  const double rho = s * s + c * c;
  HingeAngle<N> out;
  // b's reference along the hinge axis (axes 90° apart, far outside a hinge's operating
  // range): the angle is undefined and the limit exerts no force. 1e-24 = (1e-12)².
  if (rho < 1e-24) return out;
  out.defined = true;
  out.alpha = std::atan2(s, c);
  // ∇s and ∇c over y = (n, u, w).
  Eigen::Matrix<double, 9, 1> gs, gc = Eigen::Matrix<double, 9, 1>::Zero();
  gs << u.cross(w), w.cross(n), n.cross(u);
  gc.segment<3>(3) = w;
  gc.segment<3>(6) = u;
  const double fs = c / rho, fc = -s / rho;
  const Eigen::Matrix<double, 9, 1> gy = fs * gs + fc * gc;
  Eigen::Matrix<double, 3, N> Jn = Eigen::Matrix<double, 3, N>::Zero(), Ju = Jn, Jw = Jn;
  Jn.template leftCols<6>() = wn.dy;
  Ju.template leftCols<6>() = wu.dy;
  if constexpr (N == 12) Jw.template rightCols<6>() = ww.dy;
  Eigen::Matrix<double, 9, N> Jy;
  Jy << Jn, Ju, Jw;
  out.grad = Jy.transpose() * gy;
  if (!second) return out;
  // Hessians of s = det[n, u, w] and c = u·w over y, then of atan2.
  Eigen::Matrix<double, 9, 9> Hs = Eigen::Matrix<double, 9, 9>::Zero(), Hc = Hs;
  Hs.block<3, 3>(0, 3) = -skew(w);
  Hs.block<3, 3>(0, 6) = skew(u);
  Hs.block<3, 3>(3, 6) = -skew(n);
  Hs.block<3, 3>(3, 0) = Hs.block<3, 3>(0, 3).transpose();
  Hs.block<3, 3>(6, 0) = Hs.block<3, 3>(0, 6).transpose();
  Hs.block<3, 3>(6, 3) = Hs.block<3, 3>(3, 6).transpose();
  Hc.block<3, 3>(3, 6) = Mat3::Identity();
  Hc.block<3, 3>(6, 3) = Mat3::Identity();
  const double fss = -2.0 * s * c / (rho * rho), fcc = -fss, fsc = (s * s - c * c) / (rho * rho);
  const Eigen::Matrix<double, 9, 9> Hy = fss * gs * gs.transpose() + fsc * (gs * gc.transpose() + gc * gs.transpose()) +
                                         fcc * gc * gc.transpose() + fs * Hs + fc * Hc;
  out.hess = Jy.transpose() * Hy * Jy;
  // Curvature of the rotated vectors, in the θθ blocks of their bodies.
  out.ca.add(1.0, wn, gy.segment<3>(0));
  out.ca.add(1.0, wu, gy.segment<3>(3));
  if constexpr (N == 12) out.cb.add(1.0, ww, gy.segment<3>(6));
  return out;
}

// How far a coordinate x lies outside [lower, upper]: (g, sign) with g = x − upper, sign = +1
// above; g = lower − x, sign = −1 below; (0, 0) inside (∂g/∂x = sign).
std::pair<double, double> limit_violation(double x, double lower, double upper) {
  if (x > upper) return {x - upper, 1.0};
  if (x < lower) return {lower - x, -1.0};
  return {0.0, 0.0};
}

// Unilateral limit E = (k/2) g², g = α − α_max > 0 or α_min − α > 0 (else nothing).
template <int N>
void add_angle_limit(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame* fb, double k, bool jacobians,
                     JointLocal<N>& L) {
  const HingeAngle<N> h = hinge_angle<N>(jt, fa, fb, jacobians);
  if (!h.defined) return;
  const auto [g, sign] = limit_violation(h.alpha, jt.lower, jt.upper);
  if (sign == 0.0) return;
  // ∂E/∂q = k g ∂g/∂q with ∂g/∂q = sign ∂α/∂q; ∂²E = k (∂α ∂αᵀ + g sign ∂²α).
  L.energy += 0.5 * k * g * g;
  if (L.params) L.dr_dk += sign * g * h.grad;
  L.r += k * sign * g * h.grad;
  if (!jacobians) return;
  L.dq += k * (h.grad * h.grad.transpose() + sign * g * h.hess);
  L.ca.add_scaled(k * sign * g, h.ca);
  L.cb.add_scaled(k * sign * g, h.cb);
}

// An energy k·E(y) of y = (d, n): d = x_a − x_b (anchor points; x_b rigid, or fixed when pb
// is null) and the axis n = w_a(â_a), given E's gradient g and Hessian H over y. Adds
// r = k Jyᵀ g, ∂r/∂k and ∂r/∂q = k (Jyᵀ H Jy + Σ_i g_i ∇²y_i). Returns Jy (6 × N).
template <int N>
Eigen::Matrix<double, 6, N> add_point_axis_energy(double k, double e, const Eigen::Matrix<double, 6, 1>& g,
                                                  const Eigen::Matrix<double, 6, 6>& H, const WorldVector& pa,
                                                  const WorldVector* pb, const WorldVector& na, bool jacobians,
                                                  Eigen::Matrix<double, N, 1>& dr_dk, JointLocal<N>& L) {
  Eigen::Matrix<double, 6, N> Jy = Eigen::Matrix<double, 6, N>::Zero();
  Jy.template block<3, 6>(0, 0) = pa.dy;
  if constexpr (N == 12) Jy.template block<3, 6>(0, 6) = -pb->dy;
  Jy.template block<3, 6>(3, 0) = na.dy;
  if (L.params) dr_dk += Jy.transpose() * g;
  L.r += k * Jy.transpose() * g;
  L.energy += k * e;
  if (!jacobians) return Jy;
  L.dq += k * Jy.transpose() * H * Jy;
  L.ca.add(k, pa, g.template head<3>());
  L.ca.add(k, na, g.template tail<3>());
  if constexpr (N == 12) L.cb.add(-k, *pb, g.template head<3>());
  return Jy;
}

// Slide σ = −n·d = n·(x_b − x_a) and its gradient over y = (d, n); its Hessian is
// [[0, −I], [−I, 0]].
struct Slide {
  double sigma = 0.0;
  Eigen::Matrix<double, 6, 1> grad;
};

Slide slide(const Vec3& d, const Vec3& n) {
  Slide s;
  s.sigma = -n.dot(d);
  s.grad << -n, -d;
  return s;
}

Eigen::Matrix<double, 6, 6> slide_hessian() {
  Eigen::Matrix<double, 6, 6> H = Eigen::Matrix<double, 6, 6>::Zero();
  H.block<3, 3>(0, 3) = -Mat3::Identity();
  H.block<3, 3>(3, 0) = -Mat3::Identity();
  return H;
}

// Prismatic joint (lateral and orientation potentials, optional drive) or slide limit.
template <int N>
void add_prismatic(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame* fb, const TermContext& ctx,
                   bool jacobians, JointLocal<N>& L) {
  const WorldVector pa = world_vector(fa, jt.point_a, true);
  const WorldVector na = world_vector(fa, jt.axis_a.normalized(), false);
  const WorldVector pb = N == 12 ? world_vector(*fb, jt.point_b, true) : WorldVector{};
  const Vec3 d = pa.y - (N == 12 ? pb.y : jt.point_b);
  const Vec3 n = na.y;
  const WorldVector* pbp = N == 12 ? &pb : nullptr;
  const Slide sl = slide(d, n);
  const double k = ctx.p[jt.stiffness_param];
  if (jt.kind == RigidJoint::Kind::kSlideLimit) {
    const auto [g, sign] = limit_violation(sl.sigma, jt.lower, jt.upper);
    if (sign == 0.0) return;
    // E = ½ g², ∂E/∂y = g sign ∇σ, ∂²E = ∇σ∇σᵀ + g sign ∇²σ.
    add_point_axis_energy<N>(k, 0.5 * g * g, Eigen::Matrix<double, 6, 1>(g * sign * sl.grad),
                             sl.grad * sl.grad.transpose() + g * sign * slide_hessian(), pa, pbp, na, jacobians,
                             L.dr_dk, L);
    return;
  }
  // Lateral offset: E = ½(d·d − (n·d)²), ∇ = (d − (n·d) n, −(n·d) d).
  {
    const double nd = n.dot(d);
    Eigen::Matrix<double, 6, 1> g;
    g << d - nd * n, -nd * d;
    Eigen::Matrix<double, 6, 6> H;
    H << Mat3::Identity() - n * n.transpose(), -(n * d.transpose() + nd * Mat3::Identity()),
        -(d * n.transpose() + nd * Mat3::Identity()), -d * d.transpose();
    add_point_axis_energy<N>(k, 0.5 * (d.squaredNorm() - nd * nd), g, H, pa, pbp, na, jacobians, L.dr_dk, L);
  }
  // No relative rotation: the axis and the reference directions aligned.
  const double ka = ctx.p[jt.axis_stiffness_param];
  for (const auto& [ua, ub] : {std::pair{jt.axis_a, jt.axis_b}, std::pair{jt.ref_a, jt.ref_b}}) {
    const WorldVector wa = world_vector(fa, ua, false);
    const WorldVector wb = N == 12 ? world_vector(*fb, ub, false) : WorldVector{};
    const SeparationEnergy se = separation_energy(RigidJoint::Kind::kZeroLength, wa.y - (N == 12 ? wb.y : ub), 0.0);
    add_potential<N>(ka, se, wa, N == 12 ? &wb : nullptr, {}, jacobians, L.dr_dkaxis, L);
  }
  // Drive: E = ½ (σ − σ*)²; ∂r/∂σ* = −k_m Jyᵀ ∇σ.
  if (jt.motor_stiffness_param >= 0) {
    const double target = ctx.p[jt.target_param + (jt.per_step_target ? ctx.step : 0)];
    const double km = ctx.p[jt.motor_stiffness_param];
    const double e = sl.sigma - target;
    const Eigen::Matrix<double, 6, N> Jy =
        add_point_axis_energy<N>(km, 0.5 * e * e, Eigen::Matrix<double, 6, 1>(e * sl.grad),
                                 sl.grad * sl.grad.transpose() + e * slide_hessian(), pa, pbp, na, jacobians, L.dr_dkm, L);
    if (L.params) L.dr_dalpha = -km * Jy.transpose() * sl.grad;
  }
}

// The zero-length potentials of a ball joint, hinge or motor between two rigid bodies a and b
// (anchor point, hinge axis, motor reference: (k_p/2)‖d_p‖², d_p = y_a,p − y_b,p), summed in the
// bodies' world-frame rotation increments φ (δy = δφ × y_R) before the chain rule to θ
// (δφ = J(θ) δθ) is applied once per block. With A_p = [P_a, −[y_a]×, −P_b, [y_b]×]
// (P = I for the anchor point, 0 for a direction; y = y_R of each side) the stencil
// Jacobian of d_p is A_p T, T = diag(I, J_a, I, J_b), so
//   r = Tᵀ Σ_p k_p A_pᵀ d_p = (F, J_aᵀ τ_a, −F, −J_bᵀ τ_b),
//   F = Σ_point k d, τ_a = Σ_p k_p y_a,p × d_p, τ_b = Σ_p k_p y_b,p × d_p,
//   ∂r/∂q = Tᵀ (Σ_p k_p A_pᵀ A_p) T + the curvature Σ_p k_p d_p·∇²d_p (RotationCurvature),
// with [u]×ᵀ[u]× = (u·u) I − u uᵀ and [u]×[w]× = w uᵀ − (u·w) I. The same derivatives as the
// per-potential form of add_potential() (which param_derivatives() keeps for ∂r/∂p), with
// about a third of the products: no world-vector Jacobians −[y]× J are formed.
struct RigidPairPotentials {
  double kp = 0.0;                 ///< Σ_point k
  Vec3 F = Vec3::Zero();           ///< Σ_point k d
  Vec3 Ya = Vec3::Zero(), Yb = Vec3::Zero();  ///< Σ_point k y_R of a and b
  Vec3 ta = Vec3::Zero(), tb = Vec3::Zero();  ///< τ_a, τ_b
  /// θθ blocks before the chain rule: Caa = Σ k ((y_a·y_a) I − y_a y_aᵀ + d y_aᵀ − (y_a·d) I),
  /// Cab = Σ k (y_b y_aᵀ − (y_a·y_b) I), Cbb = Σ k ((y_b·y_b) I − y_b y_bᵀ − d y_bᵀ + (y_b·d) I)
  /// (Gram part plus RotationCurvature's M − s I of each side).
  Mat3 Caa = Mat3::Zero(), Cab = Mat3::Zero(), Cbb = Mat3::Zero();
  double energy = 0.0;

  void add(double k, bool point, const Vec3& ya, const Vec3& yb, const Vec3& d, bool jacobians) {
    const Vec3 f = k * d;
    energy += k * (0.5 * d.squaredNorm());
    ta += ya.cross(f);
    tb += yb.cross(f);
    if (point) {
      kp += k;
      F += f;
      Ya += k * ya;
      Yb += k * yb;
    }
    if (!jacobians) return;
    const Vec3 kya = k * ya, kyb = k * yb;
    Caa.noalias() += (f - kya) * ya.transpose();
    Caa.diagonal().array() += kya.dot(ya) - ya.dot(f);
    Cab.noalias() += yb * kya.transpose();
    Cab.diagonal().array() -= kya.dot(yb);
    Cbb.noalias() -= (f + kyb) * yb.transpose();
    Cbb.diagonal().array() += kyb.dot(yb) + yb.dot(f);
  }

  void finish(const BodyFrame& fa, const BodyFrame& fb, bool jacobians, JointLocal<12>& L) const {
    const Mat3& Ja = fa.rot->J;
    const Mat3& Jb = fb.rot->J;
    L.energy += energy;
    L.r.segment<3>(0) += F;
    L.r.segment<3>(3) += Ja.transpose() * ta;
    L.r.segment<3>(6) -= F;
    L.r.segment<3>(9) -= Jb.transpose() * tb;
    if (!jacobians) return;
    const Mat3 kI = kp * Mat3::Identity();
    const Mat3 PaTa = -skew(Ya) * Ja;  // point rows of a, θ_a columns
    const Mat3 PaTb = skew(Yb) * Jb;
    Mat3 TaTa = Ja.transpose() * Caa * Ja, TbTb = Jb.transpose() * Cbb * Jb;
    RotationCurvature::add_dj_torque(fa, ta, TaTa);
    RotationCurvature::add_dj_torque(fb, -tb, TbTb);
    const Mat3 TaTb = Ja.transpose() * Cab * Jb;
    auto& H = L.dq;
    H.block<3, 3>(0, 0) += kI;
    H.block<3, 3>(0, 3) += PaTa;
    H.block<3, 3>(0, 6) -= kI;
    H.block<3, 3>(0, 9) += PaTb;
    H.block<3, 3>(3, 0) += PaTa.transpose();
    H.block<3, 3>(3, 3) += TaTa;
    H.block<3, 3>(3, 6) -= PaTa.transpose();
    H.block<3, 3>(3, 9) += TaTb;
    H.block<3, 3>(6, 0) -= kI;
    H.block<3, 3>(6, 3) -= PaTa;
    H.block<3, 3>(6, 6) += kI;
    H.block<3, 3>(6, 9) -= PaTb;
    H.block<3, 3>(9, 0) += PaTb.transpose();
    H.block<3, 3>(9, 3) += TaTb.transpose();
    H.block<3, 3>(9, 6) -= PaTb.transpose();
    H.block<3, 3>(9, 9) += TbTb;
  }
};

// A world vector's rotated part R û and its world position (x + R û for a point).
inline Vec3 rotated(const BodyFrame& f, const Vec3& u) { return f.rot->R * u; }

// Residual, energy and (with `jacobians`) ∂r/∂q of a ball joint, hinge or motor between two
// rigid bodies, by RigidPairPotentials; not the parameter columns.
void add_rigid_pair(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame& fb, const TermContext& ctx,
                    bool jacobians, JointLocal<12>& L) {
  RigidPairPotentials pp;
  {
    const Vec3 ya = rotated(fa, jt.point_a), yb = rotated(fb, jt.point_b);
    pp.add(ctx.p[jt.stiffness_param], true, ya, yb, Vec3((fa.x + ya) - (fb.x + yb)), jacobians);
  }
  if (jt.kind == RigidJoint::Kind::kHinge || jt.kind == RigidJoint::Kind::kMotor) {
    const Vec3 ya = rotated(fa, jt.axis_a), yb = rotated(fb, jt.axis_b);
    pp.add(ctx.p[jt.axis_stiffness_param], false, ya, yb, ya - yb, jacobians);
  }
  if (jt.kind == RigidJoint::Kind::kMotor) {
    const double alpha = ctx.p[jt.target_param + (jt.per_step_target ? ctx.step : 0)];
    const Vec3 ya = rotated(fa, motor_reference(jt, alpha)), yb = rotated(fb, jt.ref_b);
    pp.add(ctx.p[jt.motor_stiffness_param], false, ya, yb, ya - yb, jacobians);
  }
  pp.finish(fa, fb, jacobians, L);
}

template <int N>
void joint_local_unmasked(const RigidJoint& jt, const BodyFrame& fa, const BodyFrame* fb, const TermContext& ctx,
                          const Model* model, JointLocal<N>& L) {
  const bool jacobians = L.jacobians, params = L.params;
  const RigidBody& a = *jt.body_a;
  const RigidBody* b = jt.body_b;
  if (jt.kind == RigidJoint::Kind::kMotorDamping) {
    add_damping<N>(ctx.p[jt.damping_param], a, b, fa, fb, ctx, jacobians, L);
    return;
  }
  if (jt.kind == RigidJoint::Kind::kAngleLimit) {
    if constexpr (N == 6 || N == 12) add_angle_limit<N>(jt, fa, fb, ctx.p[jt.stiffness_param], jacobians, L);
    return;
  }
  if (jt.kind == RigidJoint::Kind::kPrismatic || jt.kind == RigidJoint::Kind::kSlideLimit) {
    if constexpr (N == 6 || N == 12) add_prismatic<N>(jt, fa, fb, ctx, jacobians, L);
    return;
  }
  using K = RigidJoint::Kind;
  if constexpr (N == 12) {
    if (!params && (jt.kind == K::kZeroLength || jt.kind == K::kHinge || jt.kind == K::kMotor)) {
      add_rigid_pair(jt, fa, *fb, ctx, jacobians, L);
      return;
    }
  }
  // Anchor points: d = x_a − x_b.
  {
    const WorldVector wa = world_vector(fa, jt.point_a, true);
    const WorldVector wb = b ? world_vector(*fb, jt.point_b, true) : WorldVector{};
    Vec3 xb = jt.point_b;
    if (b) xb = wb.y;
    if (jt.particle_b >= 0) xb = ctx.q.segment<3>(jt.particle_b);
    if (jt.tet_b[0] >= 0) {
      xb.setZero();
      for (int m = 0; m < 4; ++m) xb += jt.bary_b[m] * ctx.q.segment<3>(jt.tet_b[m]);
    }
    if (jt.handle_b >= 0) xb = sample_handle(model->handles()[jt.handle_b], ctx.p, ctx.step, ctx.scheme).x;
    const double k = ctx.p[jt.stiffness_param];
    const SeparationEnergy se = separation_energy(jt.kind, wa.y - xb, jt.rest_length);
    const Eigen::Matrix<double, 3, N> Jd =
        add_potential<N>(k, se, wa, b ? &wb : nullptr, node_weights(jt), jacobians, L.dr_dk, L);
    if (jt.handle_b >= 0 && params) L.dr_dxb = -k * Jd.transpose() * se.H;
  }
  if (jt.kind == RigidJoint::Kind::kHinge || jt.kind == RigidJoint::Kind::kMotor) {
    // Axis alignment: the zero-length potential on d = w(â_a) − w(â_b).
    const WorldVector wa = world_vector(fa, jt.axis_a, false);
    const WorldVector wb = b ? world_vector(*fb, jt.axis_b, false) : WorldVector{};
    const SeparationEnergy se = separation_energy(RigidJoint::Kind::kZeroLength, wa.y - (b ? wb.y : jt.axis_b), 0.0);
    add_potential<N>(ctx.p[jt.axis_stiffness_param], se, wa, b ? &wb : nullptr, node_weights(jt), jacobians,
                     L.dr_dkaxis, L);
  }
  if (jt.kind == RigidJoint::Kind::kMotor) {
    // Motor: d = w_a(u(α)) − w_b(b̂_b); ∂u/∂α = â_a × u.
    const double alpha = ctx.p[jt.target_param + (jt.per_step_target ? ctx.step : 0)];
    const Vec3 u = motor_reference(jt, alpha);
    const Vec3 du = jt.axis_a.normalized().cross(u);
    const WorldVector wa = world_vector(fa, u, false);
    const WorldVector wb = b ? world_vector(*fb, jt.ref_b, false) : WorldVector{};
    const Vec3 d = wa.y - (b ? wb.y : jt.ref_b);
    const double km = ctx.p[jt.motor_stiffness_param];
    const SeparationEnergy se = separation_energy(RigidJoint::Kind::kZeroLength, d, 0.0);
    const Eigen::Matrix<double, 3, N> Jd =
        add_potential<N>(km, se, wa, b ? &wb : nullptr, node_weights(jt), jacobians, L.dr_dkm, L);
    // r = km Jdᵀ d: ∂r/∂α = km ((∂Jd/∂α)ᵀ d + Jdᵀ ∂d/∂α), linear in u through w_a.
    if (!params) return;
    const WorldVector dwa = world_vector(fa, du, false);
    Eigen::Matrix<double, 3, N> dJd = Eigen::Matrix<double, 3, N>::Zero();
    dJd.template leftCols<6>() = dwa.dy;
    L.dr_dalpha = km * (dJd.transpose() * d + Jd.transpose() * dwa.y);
  }
}

int b_dofs(const RigidJoint& j) { return j.body_b ? 6 : j.particle_b >= 0 ? 3 : j.tet_b[0] >= 0 ? 12 : 0; }

// Calls f.template operator()<N>(k) for each joint k with the stencil size N of its kind.
template <class F>
void for_each_joint(const std::vector<RigidJoint>& joints, F&& f) {
  for (size_t k = 0; k < joints.size(); ++k) {
    switch (b_dofs(joints[k])) {
      case 12: f.template operator()<18>(k); break;
      case 6: f.template operator()<12>(k); break;
      case 3: f.template operator()<9>(k); break;
      default: f.template operator()<6>(k); break;
    }
  }
}

}  // namespace

RigidJointTerm::RigidJointTerm(std::vector<RigidJoint> joints, const Model* model)
    : joints_(std::move(joints)), model_(model) {
  using K = RigidJoint::Kind;
  for (const RigidJoint& j : joints_) {
    if (!j.body_a) throw InputError(j.label + ": a rigid joint needs body a");
    if (j.body_b == j.body_a) throw InputError(j.label + ": a rigid joint needs two different bodies");
    const bool embedded = j.tet_b[0] >= 0;
    if (j.body_a->kinematic() && (j.body_b ? j.body_b->kinematic() : j.particle_b < 0 && !embedded))
      throw InputError(j.label + ": a joint needs at least one non-kinematic rigid body or a particle");
    if (int(j.body_b != nullptr) + int(j.particle_b >= 0) + int(embedded) + int(j.handle_b >= 0) > 1)
      throw InputError(j.label +
                       ": anchor b must be one of a rigid body, a particle, an embedded point, a handle or the world");
    if (embedded)
      for (int m = 0; m < 4; ++m)
        if (j.tet_b[m] < 0 || !std::isfinite(j.bary_b[m]))
          throw InputError(j.label + ": an embedded anchor needs 4 node DOFs and finite barycentric coordinates");
    if (j.handle_b >= 0 && (!model_ || j.handle_b >= static_cast<int>(model_->handles().size())))
      throw InputError(j.label + ": unknown handle " + std::to_string(j.handle_b));
    const bool point_only = j.kind == K::kZeroLength || j.kind == K::kDistance || j.kind == K::kUnilateral;
    if (!point_only && (j.particle_b >= 0 || embedded || j.handle_b >= 0))
      throw InputError(j.label + ": hinges, motors, angle limits and motor damping couple a rigid body to a rigid body or the world");
    if (j.kind == K::kSlideLimit && !(j.lower < j.upper && (std::isfinite(j.lower) || std::isfinite(j.upper))))
      throw InputError(j.label + ": a slide limit needs lower < upper (one side may be infinite)");
    if (j.kind == K::kPrismatic && (j.axis_stiffness_param < 0 || (j.motor_stiffness_param >= 0 && j.target_param < 0)))
      throw InputError(j.label + ": a prismatic joint needs an axis stiffness (and a target with a drive)");
    if (j.kind == K::kAngleLimit &&
        !(j.lower < j.upper && (j.lower == -std::numeric_limits<double>::infinity() || j.lower >= -std::numbers::pi) &&
          (j.upper == std::numeric_limits<double>::infinity() || j.upper <= std::numbers::pi) &&
          (std::isfinite(j.lower) || std::isfinite(j.upper))))
      throw InputError(j.label + ": an angle limit needs −π ≤ lower < upper ≤ π (one side may be infinite), got [" +
                       std::to_string(j.lower) + ", " + std::to_string(j.upper) + "]");
    if (j.kind != K::kMotorDamping && j.stiffness_param < 0) throw InputError(j.label + ": missing stiffness");
    if ((j.kind == K::kHinge || j.kind == K::kMotor) && j.axis_stiffness_param < 0)
      throw InputError(j.label + ": missing axis stiffness");
    if (j.kind == K::kMotor && (j.motor_stiffness_param < 0 || j.target_param < 0))
      throw InputError(j.label + ": missing motor stiffness or target angle");
    if (j.kind == K::kMotorDamping && j.damping_param < 0) throw InputError(j.label + ": missing damping");
  }
  // Joints between the same two rigid bodies (a motor and its damping) share one local.
  for (size_t k = 0; k < joints_.size(); ++k) {
    const RigidJoint& j = joints_[k];
    std::vector<int>* same = nullptr;
    if (j.body_b && j.handle_b < 0)
      for (std::vector<int>& g : groups_) {
        const RigidJoint& o = joints_[g.front()];
        if (o.body_b && o.handle_b < 0 && o.body_a == j.body_a && o.body_b == j.body_b) same = &g;
      }
    if (same)
      same->push_back(static_cast<int>(k));
    else
      groups_.push_back({static_cast<int>(k)});
  }
}

void RigidJointTerm::declare(StencilSet& stencils) {
  stencil_.clear();
  for (const RigidJoint& j : joints_) {
    std::vector<DofIndex> dofs;
    for (const RigidBody* b : {j.body_a, j.body_b})
      if (b)
        for (int c = 0; c < 6; ++c) dofs.push_back(b->dof() + c);
    if (j.particle_b >= 0)
      for (int c = 0; c < 3; ++c) dofs.push_back(j.particle_b + c);
    if (j.tet_b[0] >= 0)
      for (int m = 0; m < 4; ++m)
        for (int c = 0; c < 3; ++c) dofs.push_back(j.tet_b[m] + c);
    stencil_.push_back(stencils.add(dofs));
  }
}

void RigidJointTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const bool jac = out.wants_jacobians();
  for (const std::vector<int>& group : groups_) {
    const int k0 = group.front();
    auto run = [&]<int N>() {
      BodyFrame fa, fb_frame;
      joint_frames(joints_[k0], ctx.q, jac ? 1 : 0, fa, fb_frame);
      const BodyFrame* fb = joints_[k0].body_b ? &fb_frame : nullptr;
      // Only motor damping depends on v: the other joints' ∂r/∂v is zero and not scattered.
      bool damping = false;
      for (int k : group) damping = damping || joints_[k].kind == RigidJoint::Kind::kMotorDamping;
      JointLocal<N> L;
      L.clear(jac, damping, false);
      for (int k : group) joint_local_unmasked<N>(joints_[k], fa, fb, ctx, model_, L);
      finish_local<N>(joints_[k0], fa, fb, L);
      out.add<N>(stencil_[k0], L.r, jac ? &L.dq : nullptr, L.dv_used ? &L.dv : nullptr, nullptr);
    };
    switch (b_dofs(joints_[k0])) {
      case 12: run.template operator()<18>(); break;
      case 6: run.template operator()<12>(); break;
      case 3: run.template operator()<9>(); break;
      default: run.template operator()<6>(); break;
    }
  }
}

namespace {
template <int N>
void joint_params(const RigidJoint& jt, int stencil, const JointLocal<N>& L, const TermContext& ctx,
                  const Model* model, ParamSink& sink) {
  const int alpha = jt.target_param < 0 ? -1 : jt.target_param + (jt.per_step_target ? ctx.step : 0);
  const std::pair<int, const Eigen::Matrix<double, N, 1>*> cols[] = {{jt.stiffness_param, &L.dr_dk},
                                                                     {jt.axis_stiffness_param, &L.dr_dkaxis},
                                                                     {jt.motor_stiffness_param, &L.dr_dkm},
                                                                     {jt.damping_param, &L.dr_dkd},
                                                                     {alpha, &L.dr_dalpha}};
  for (const auto& [pidx, col] : cols)
    if (pidx >= 0 && sink.wants(pidx)) sink.add(stencil, std::span<const int>(&pidx, 1), *col);
  if (jt.handle_b < 0) return;
  // Handle b: x_b = Σ wx[m] c^{row m}, so ∂r/∂c^{row m} = wx[m] ∂r/∂x_b.
  const HandleSample hs = sample_handle(model->handles()[jt.handle_b], ctx.p, ctx.step, ctx.scheme);
  for (int m = 0; m < hs.count; ++m)
    for (int c = 0; c < 3; ++c) {
      const int pidx = hs.param[m] + c;
      if (!sink.wants(pidx)) continue;
      const Eigen::Matrix<double, N, 1> col = hs.wx[m] * L.dr_dxb.col(c);
      sink.add(stencil, std::span<const int>(&pidx, 1), col);
    }
}
}  // namespace

void RigidJointTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  for_each_joint(joints_, [&]<int N>(size_t k) {
    BodyFrame fa, fb;
    joint_frames(joints_[k], ctx.q, 0, fa, fb);
    JointLocal<N> L;
    joint_local<N>(joints_[k], fa, joints_[k].body_b ? &fb : nullptr, ctx, model_, false, true, L);
    joint_params<N>(joints_[k], stencil_[k], L, ctx, model_, sink);
  });
}

double RigidJointTerm::energy(const TermContext& ctx) const {
  double e = 0.0;
  for_each_joint(joints_, [&]<int N>(size_t k) {
    BodyFrame fa, fb;
    joint_frames(joints_[k], ctx.q, 0, fa, fb);
    JointLocal<N> L;
    joint_local<N>(joints_[k], fa, joints_[k].body_b ? &fb : nullptr, ctx, model_, false, false, L);
    e += L.energy;
  });
  return e;
}

}  // namespace addsim
