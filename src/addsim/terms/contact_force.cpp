#include "addsim/terms/contact_force.h"

#include <algorithm>
#include <cmath>

namespace addsim {

const char* to_string(ContactModel model) {
  switch (model) {
    case ContactModel::kLinear: return "linear";
    case ContactModel::kTanh: return "tanh";
    case ContactModel::kHybrid: return "hybrid";
    case ContactModel::kSqp: return "sqp";
  }
  return "linear";
}

double tanh_over_s(double s) {
  if (std::abs(s) < 1e-2) {
    const double s2 = s * s;
    return 1.0 - s2 / 3.0 + 2.0 * s2 * s2 / 15.0 - 17.0 * s2 * s2 * s2 / 315.0;
  }
  return std::tanh(s) / s;
}

double tanh_over_s_deriv_over_s(double s) {
  if (std::abs(s) < 1e-2) {
    const double s2 = s * s;
    return -2.0 / 3.0 + 8.0 * s2 / 15.0 - 34.0 * s2 * s2 / 105.0;
  }
  const double t = std::tanh(s);
  const double sech2 = 1.0 - t * t;
  return (s * sech2 - t) / (s * s * s);
}

double smoothed_depth(double g, double w, double& dphi_dg, double& dphi_dw) {
  dphi_dw = 0.0;
  if (w <= 0.0 || g <= -0.5 * w) {
    dphi_dg = g < 0.0 ? -1.0 : 0.0;
    return std::max(-g, 0.0);
  }
  if (g >= 0.5 * w) {
    dphi_dg = 0.0;
    return 0.0;
  }
  const double a = 0.5 * w - g;  // ∈ (0, w)
  dphi_dg = -a / w;
  dphi_dw = (0.25 * w * w - g * g) / (2.0 * w * w);
  return a * a / (2.0 * w);
}

double damping_ramp(double g, double delta, double& ds_dg) {
  ds_dg = 0.0;
  if (g >= 0.0) return 0.0;
  if (delta <= 0.0 || -g >= delta) return 1.0;
  const double t = -g / delta;
  ds_dg = -6.0 * t * (1.0 - t) / delta;
  return t * t * (3.0 - 2.0 * t);
}

namespace {

// The force at gap g with normal n and the obstacle's Hessian *H. kFlat (a plane: H = +0, n
// constant) skips the products with H but forms the same numbers bit for bit, signed zeros
// included: a product with a +0 entry of H is a zero with the other factor's sign (NaN for a
// non-finite one), and a sum of such zeros is −0 only if all its terms are −0, in any order. So
// fn H = fn·0 in every entry, H v_n = 0·v_n, ẋᵀH = 0·ẋ₀ + 0·ẋ₁ + 0·ẋ₂ in every column.
template <bool kFlat>
[[gnu::always_inline]] inline ContactForce contact_force_at(double g, const Vec3& n, const Mat3* H, const Vec3& xdot,
                                                            const ContactCoefficients& c,
                                                            double stick_predictor_ratio) {
  ContactForce out;
  out.gap = g;
  // Separated: no force. Without smoothing the kink at g = 0 is measure-zero (paper §4.2);
  // with smoothing w the force starts C¹ at g = w/2.
  if (g >= 0.5 * c.smoothing) return out;

  double dphi_dg = 0.0, dphi_dw = 0.0;
  const double depth = smoothed_depth(g, c.smoothing, dphi_dg, dphi_dw);
  const Mat3 I = Mat3::Identity();
  const double vn = n.dot(xdot);

  // Normal penalty: f = k_n φ(g) n; ∂/∂x = k_n φ'(g) n nᵀ + k_n φ H (φ' = −1 in eq. linPenN).
  const double fn = c.kn * depth;
  out.normal_force = fn;
  out.f = fn * n;
  if constexpr (kFlat) {
    out.df_dx = c.kn * dphi_dg * n * n.transpose() + Mat3::Constant(fn * 0.0);
  } else {
    out.df_dx = c.kn * dphi_dg * n * n.transpose() + fn * *H;
  }
  out.df_dkn = depth * n;
  out.df_dw = c.kn * dphi_dw * n;

  // Normal damping: f = −k_d s(g) n (n·ẋ); ∂/∂x = −k_d s (H vn + n ẋᵀ H) − k_d vn s'(g) n nᵀ.
  double ds_dg = 0.0;
  const double ramp = damping_ramp(g, c.damping_ramp, ds_dg);
  out.f += -c.kd * ramp * vn * n;
  out.df_dxdot += -c.kd * ramp * n * n.transpose();
  // curv = H vn + n ẋᵀ H (flat: the entries the comment above contact_force_at gives).
  [[maybe_unused]] Mat3 curv;
  if constexpr (kFlat) {
    const double hv = 0.0 * vn;
    const double xh = 0.0 * xdot[0] + 0.0 * xdot[1] + 0.0 * xdot[2];
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i) curv(i, j) = hv + n[i] * xh;
    out.df_dx += -c.kd * ramp * curv - c.kd * vn * ds_dg * n * n.transpose();
  } else {
    out.df_dx += -c.kd * ramp * (*H * vn + n * (xdot.transpose() * *H)) - c.kd * vn * ds_dg * n * n.transpose();
  }
  out.df_dkd = -ramp * vn * n;

  // Tangential velocity u = T ẋ = ẋ − n (n·ẋ); ∂u/∂ẋ = T; ∂u/∂x = −(H vn + n ẋᵀ H).
  const Mat3 T = I - n * n.transpose();
  const Vec3 u = T * xdot;
  Mat3 du_dx;
  if constexpr (kFlat) {
    du_dx = -curv;
  } else {
    du_dx = -(*H * vn + n * (xdot.transpose() * *H));
  }
  const double s = u.norm();
  const double F = c.cf * fn;            // Coulomb limit
  const Vec3 dF_dx = c.cf * c.kn * dphi_dg * n;  // ∂F/∂x (as a column)
  const double dF_dw = c.cf * c.kn * dphi_dw;
  out.regime = ContactRegime::kStick;

  if (c.model != ContactModel::kTanh) {
    if (c.kt * s <= F || s == 0.0) {
      // Stick branch: f_t = −k_t u.
      out.f += -c.kt * u;
      out.df_dxdot += -c.kt * T;
      out.df_dx += -c.kt * du_dx;
      out.df_dkt = -u;
      out.friction_force = c.kt * s;
    } else {
      // Slip branch: f_t = −F û.
      out.regime = ContactRegime::kSlip;
      const Vec3 uh = u / s;
      out.f += -F * uh;
      if (c.kt * s <= stick_predictor_ratio * F) {
        // Stick predictor near the cone's edge: the stick branch's partials and the shift to
        // its force −k_t u (the residual f stays the slip branch's).
        out.df_dxdot += -c.kt * T;
        out.df_dx += -c.kt * du_dx;
        out.predictor_shift = F * uh - c.kt * u;
      } else {
        const Mat3 P = (I - uh * uh.transpose()) / s;  // ∂û/∂u
        out.df_dxdot += -F * P * T;
        out.df_dx += -uh * dF_dx.transpose() - F * P * du_dx;
      }
      out.df_dcf = -fn * uh;
      out.df_dkn += -c.cf * depth * uh;
      out.df_dw += -dF_dw * uh;
      out.friction_force = F;
    }
    return out;
  }

  // tanh friction: f_t = −k_t φ(σ) u with σ = k_t s / F and φ(σ) = tanh(σ)/σ.
  if (F <= 0.0) return out;
  const double sigma = c.kt * s / F;
  const double phi = tanh_over_s(sigma);
  const double psi = tanh_over_s_deriv_over_s(sigma);  // φ'(σ)/σ
  if (c.kt * s > F) out.regime = ContactRegime::kSlip;
  out.f += -c.kt * phi * u;
  out.friction_force = c.kt * phi * s;
  // ∂f/∂u = −k_t (φ I + ψ (k_t/F)² u uᵀ); ∂f/∂F = k_t ψ σ² u / F.
  const double r = c.kt / F;
  const Mat3 df_du = -c.kt * (phi * I + psi * r * r * u * u.transpose());
  const Vec3 df_dF = c.kt * psi * sigma * sigma / F * u;
  out.df_dxdot += df_du * T;
  out.df_dx += df_du * du_dx + df_dF * dF_dx.transpose();
  // ∂f/∂k_t = −u (φ + ψ σ²); F depends on c_f and k_n linearly.
  out.df_dkt = -u * (phi + psi * sigma * sigma);
  out.df_dcf = df_dF * fn;
  out.df_dkn += df_dF * c.cf * depth;
  out.df_dw += df_dF * dF_dw;
  return out;
}

}  // namespace

namespace {
// The two paths compiled for AVX2 and the baseline, chosen at load time: the same IEEE operations
// (GCC's avx2 target has no FMA; no sums regrouped), so both clones give the same bits
// (docs/solver.md, "one evaluation's kernels for AVX2"). Internal linkage: clang emits a
// multiversioned function only for the callers of its own translation unit.
__attribute__((target_clones("avx2", "default")))
ContactForce contact_force_general(const Vec3& x, const Vec3& xdot, const Obstacle& o, const ContactCoefficients& c,
                                   double stick_predictor_ratio) {
  Vec3 n;
  Mat3 H;
  const double g = o.gap(x, n, H);
  return contact_force_at<false>(g, n, &H, xdot, c, stick_predictor_ratio);
}

__attribute__((target_clones("avx2", "default")))
ContactForce contact_force_plane(const Vec3& x, const Vec3& xdot, const PlaneObstacle& o,
                                 const ContactCoefficients& c, double stick_predictor_ratio) {
  return contact_force_at<true>(o.gap(x), o.normal(), nullptr, xdot, c, stick_predictor_ratio);
}
}  // namespace

ContactForce contact_force(const Vec3& x, const Vec3& xdot, const Obstacle& o, const ContactCoefficients& c,
                           double stick_predictor_ratio) {
  return contact_force_general(x, xdot, o, c, stick_predictor_ratio);
}

ContactForce contact_force(const Vec3& x, const Vec3& xdot, const PlaneObstacle& o, const ContactCoefficients& c,
                           double stick_predictor_ratio) {
  return contact_force_plane(x, xdot, o, c, stick_predictor_ratio);
}

ContactForce friction_force(const Vec3& x, const Vec3& xdot, const Obstacle& o, const ContactCoefficients& c,
                            FrictionMode mode, const Vec3& lagged_direction) {
  ContactForce out;
  Vec3 n;
  Mat3 H;
  const double g = o.gap(x, n, H);
  out.gap = g;
  if (g >= 0.5 * c.smoothing) return out;
  double dphi_dg = 0.0, dphi_dw = 0.0;
  const double depth = smoothed_depth(g, c.smoothing, dphi_dg, dphi_dw);
  const double fn = c.kn * depth;
  out.normal_force = fn;
  const Mat3 I = Mat3::Identity();
  const double vn = n.dot(xdot);
  const Mat3 T = I - n * n.transpose();
  const Vec3 u = T * xdot;
  const Mat3 du_dx = -(H * vn + n * (xdot.transpose() * H));
  const double s = u.norm();
  const double F = c.cf * fn;
  const Vec3 dF_dx = c.cf * c.kn * dphi_dg * n;
  const double dF_dw = c.cf * c.kn * dphi_dw;
  out.regime = ContactRegime::kSlip;
  if (mode == FrictionMode::kLagged) {
    out.f = F * lagged_direction;
    out.df_dx = lagged_direction * dF_dx.transpose();
    out.df_dcf = fn * lagged_direction;
    out.df_dkn = c.cf * depth * lagged_direction;
    out.df_dw = dF_dw * lagged_direction;
    out.friction_force = F;
    return out;
  }
  if (mode == FrictionMode::kCoulomb) {
    const double d = s + c.slip_eps;
    const Vec3 t = u / d;
    const Mat3 P = s > 0.0 ? Mat3(I / d - u * u.transpose() / (s * d * d)) : Mat3(I / d);  // ∂t/∂u
    out.f = -F * t;
    out.df_dxdot = -F * P * T;
    out.df_dx = -t * dF_dx.transpose() - F * P * du_dx;
    out.df_dcf = -fn * t;
    out.df_dkn = -c.cf * depth * t;
    out.df_dw = -dF_dw * t;
    out.friction_force = F * t.norm();
    return out;
  }
  if (c.kt * s <= F || s == 0.0) {
    out.regime = ContactRegime::kStick;
    out.f = -c.kt * u;
    out.df_dxdot = -c.kt * T;
    out.df_dx = -c.kt * du_dx;
    out.df_dkt = -u;
    out.friction_force = c.kt * s;
    return out;
  }
  const Vec3 uh = u / s;
  const Mat3 P = (I - uh * uh.transpose()) / s;
  out.f = -F * uh;
  out.df_dxdot = -F * P * T;
  out.df_dx = -uh * dF_dx.transpose() - F * P * du_dx;
  out.df_dcf = -fn * uh;
  out.df_dkn = -c.cf * depth * uh;
  out.df_dw = -dF_dw * uh;
  out.friction_force = F;
  return out;
}

}  // namespace addsim
