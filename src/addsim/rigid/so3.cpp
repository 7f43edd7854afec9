#include "addsim/rigid/so3.h"

#include <cmath>
#include <numbers>

namespace addsim {

Mat3 skew(const Vec3& w) {
  Mat3 m;
  m << 0.0, -w.z(), w.y(), w.z(), 0.0, -w.x(), -w.y(), w.x(), 0.0;
  return m;
}

namespace {

// Number of power-series terms used below s = 1. The n-th coefficient of the second
// derivative is at most n²/(2n + 1)!; at n = 14 that is < 1e-25 (vs values ≥ 1e-3).
constexpr int kSeriesTerms = 14;

// Coefficients (−1)^n / (2n + k)! of f(s) = Σ_n (−1)^n s^n / (2n + k)!, n < kSeriesTerms.
struct SeriesTable {
  double c[kSeriesTerms];
};

constexpr SeriesTable make_table(int k) {
  SeriesTable t{};
  double fact = 1.0;  // (2n + k)!
  for (int i = 2; i <= k; ++i) fact *= i;
  for (int n = 0; n < kSeriesTerms; ++n) {
    t.c[n] = (n % 2 == 0 ? 1.0 : -1.0) / fact;
    fact *= (2 * n + k + 1) * (2 * n + k + 2);
  }
  return t;
}

constexpr SeriesTable kSeries[4] = {make_table(0), make_table(1), make_table(2), make_table(3)};

// f(s) and, up to `order` (0, 1, 2), f'(s) and f''(s) for s in [0, 1), by Horner's rule on
// the tabulated coefficients (f' = Σ n c_n s^(n−1), f'' = Σ n (n − 1) c_n s^(n−2)); the
// derivatives not asked for are 0. Each recurrence only reads its own accumulator, so a
// value does not depend on `order`.
void series(double s, int k, int order, double& f, double& df, double& ddf) {
  const double* c = kSeries[k].c;
  constexpr int N = kSeriesTerms;
  f = c[N - 1];
  for (int n = N - 2; n >= 0; --n) f = f * s + c[n];
  df = ddf = 0.0;
  if (order < 1) return;
  df = (N - 1) * c[N - 1];
  for (int n = N - 2; n >= 1; --n) df = df * s + n * c[n];
  if (order < 2) return;
  ddf = (N - 1) * (N - 2) * c[N - 1];
  for (int n = N - 2; n >= 2; --n) ddf = ddf * s + n * (n - 1) * c[n];
}

// Coefficients at s: a and b; c if `with_c` (R needs it, J does not); A1, B1 (∂J/∂θ) if
// order ≥ 1 and A2, B2 (∂²J/∂θ²) if order = 2. What is not asked for is left at its default
// (series) or 0; what is asked for does not depend on the rest.
ExpCoefficients coefficients(double s, int order, bool with_c) {
  ExpCoefficients e;
  if (s < 1.0) {
    // Power series in s = t²: A1 = 2 a'(s), A2 = 4 a''(s) (and the same for b).
    double dc, ddc, da, dda, db, ddb;
    if (with_c) series(s, 1, 0, e.c, dc, ddc);
    series(s, 2, order, e.a, da, dda);
    series(s, 3, order, e.b, db, ddb);
    e.A1 = 2.0 * da;
    e.A2 = 4.0 * dda;
    e.B1 = 2.0 * db;
    e.B2 = 4.0 * ddb;
    return e;
  }
  // Closed forms, well conditioned for t ≥ 1.
  const double t = std::sqrt(s);
  const double st = std::sin(t), ct = std::cos(t);
  const double omc = 1.0 - ct, tms = t - st;
  const double t2 = s, t3 = t2 * t, t4 = t2 * t2, t5 = t4 * t, t6 = t4 * t2, t7 = t6 * t;
  e.c = st / t;
  e.a = omc / t2;
  e.b = tms / t3;
  e.A1 = st / t3 - 2.0 * omc / t4;
  e.B1 = omc / t4 - 3.0 * tms / t5;
  if (order < 2) return e;
  e.A2 = ct / t4 - 5.0 * st / t5 + 8.0 * omc / t6;
  e.B2 = st / t5 - 7.0 * omc / t6 + 15.0 * tms / t7;
  return e;
}

// The constant matrices of ∂J/∂θ and ∂²J/∂θ²: E_k = [e_k]× and E_k E_j + E_j E_k (k, j < 3).
struct UnitSkews {
  std::array<Mat3, 3> E;
  std::array<std::array<Mat3, 3>, 3> EE;
  UnitSkews() {
    for (int k = 0; k < 3; ++k) E[k] = skew(Vec3::Unit(k));
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 3; ++j) EE[k][j] = E[k] * E[j] + E[j] * E[k];
  }
};

// Built once (thread-safe static initialisation) and only read afterwards.
const UnitSkews& unit_skews() {
  static const UnitSkews u;
  return u;
}

// J and its derivatives up to `order` from precomputed coefficients and S = [θ]×, S² = S S.
void jacobian_from(const Vec3& theta, const ExpCoefficients& e, const Mat3& S, const Mat3& S2, int order, Mat3& J,
                   std::array<Mat3, 3>& dJ, std::array<std::array<Mat3, 3>, 3>* ddJ) {
  J = Mat3::Identity() + e.a * S + e.b * S2;
  if (order < 1) return;
  // E_k = [e_k]× and the symmetric products E_k S + S E_k = e_k θᵀ + θ e_kᵀ − 2 θ_k I
  // ([a]×[b]× = b aᵀ − (a·b) I). The closed form has the same values as the two 3 × 3
  // products: each of their entries has at most one non-zero product (±θ_i), so every
  // entry is exact either way.
  const UnitSkews& u = unit_skews();
  const std::array<Mat3, 3>& E = u.E;
  std::array<Mat3, 3> ES;
  for (int k = 0; k < 3; ++k) {
    ES[k].setZero();
    ES[k].row(k) += theta.transpose();
    ES[k].col(k) += theta;
    ES[k].diagonal().array() -= 2.0 * theta[k];
  }
  // ∂J/∂θ_k = A1 θ_k S + a E_k + B1 θ_k S² + b (E_k S + S E_k).
  for (int k = 0; k < 3; ++k)
    dJ[k] = e.A1 * theta[k] * S + e.a * E[k] + e.B1 * theta[k] * S2 + e.b * ES[k];
  if (order < 2) return;
  // Differentiating each summand of ∂J/∂θ_k with respect to θ_j.
  for (int k = 0; k < 3; ++k) {
    for (int j = k; j < 3; ++j) {
      const double tt = theta[j] * theta[k];
      const double dkj = j == k ? 1.0 : 0.0;
      (*ddJ)[k][j] = (e.A2 * tt + e.A1 * dkj) * S + e.A1 * (theta[k] * E[j] + theta[j] * E[k]) +
                      (e.B2 * tt + e.B1 * dkj) * S2 + e.B1 * (theta[k] * ES[j] + theta[j] * ES[k]) +
                      e.b * u.EE[k][j];
      (*ddJ)[j][k] = (*ddJ)[k][j];
    }
  }
}

}  // namespace

ExpCoefficients exp_coefficients(double s) { return coefficients(s, 2, true); }

Mat3 rotation_from_vector(const Vec3& theta) {
  const ExpCoefficients e = coefficients(theta.squaredNorm(), 0, true);
  const Mat3 S = skew(theta);
  return Mat3::Identity() + e.c * S + e.a * S * S;
}

void exp_jacobian(const Vec3& theta, int order, ExpJacobian& out) {
  const ExpCoefficients e = coefficients(theta.squaredNorm(), order, false);
  const Mat3 S = skew(theta);
  const Mat3 S2 = S * S;
  jacobian_from(theta, e, S, S2, order, out.J, out.dJ, &out.ddJ);
}

void exp_rotation_and_jacobian(const Vec3& theta, int order, Mat3& R, ExpJacobian& out) {
  const ExpCoefficients e = coefficients(theta.squaredNorm(), order, true);
  const Mat3 S = skew(theta);
  R = Mat3::Identity() + e.c * S + e.a * S * S;
  const Mat3 S2 = S * S;
  jacobian_from(theta, e, S, S2, order, out.J, out.dJ, &out.ddJ);
}

void exp_jacobian_and_contraction(const Vec3& theta, const Vec3& v, ExpJacobian& out, Mat3& K) {
  const ExpCoefficients e = coefficients(theta.squaredNorm(), 2, false);
  const Mat3 S = skew(theta);
  const Mat3 S2 = S * S;
  jacobian_from(theta, e, S, S2, 1, out.J, out.dJ, nullptr);
  exp_contraction(theta, e, v, K);
}

void rotation_frame(const Vec3& theta, int order, RotationFrame& out) {
  out.e = coefficients(theta.squaredNorm(), order < 1 ? 0 : 2, true);
  const ExpCoefficients& e = out.e;
  const Mat3 S = skew(theta);
  out.R = Mat3::Identity() + e.c * S + e.a * S * S;
  const Mat3 S2 = S * S;
  jacobian_from(theta, e, S, S2, order < 1 ? 0 : 1, out.J, out.dJ, nullptr);
  out.theta = theta;
  out.order = order < 1 ? 0 : 1;
  if (order >= 1) out.JtJ.noalias() = out.J.transpose() * out.J;
}

void exp_contraction(const Vec3& theta, const ExpCoefficients& e, const Vec3& v, Mat3& K) {
  // Σ_k v_k ∂²J/∂θ_k∂θ_j from jacobian_from()'s ∂²J/∂θ_k∂θ_j, with t_v = θ·v, V = [v]×:
  //   (A2 θ_j t_v + A1 v_j) S + A1 (t_v E_j + θ_j V) + (B2 θ_j t_v + B1 v_j) S²
  //   + B1 (t_v (E_j S + S E_j) + θ_j (V S + S V)) + b (V E_j + E_j V),
  // transposed (Sᵀ = −S, S²ᵀ = S², E_jᵀ = −E_j, Vᵀ = −V, the products symmetric) and applied
  // to v, with S v = θ × v, E_j v = e_j × v, V v = 0, S² v = t_v θ − |θ|² v and
  // (E_j S + S E_j) v = t_v e_j + v_j θ − 2 θ_j v, (V S + S V) v = |v|² θ − t_v v,
  // (V E_j + E_j V) v = |v|² e_j − v_j v.
  const double tv = theta.dot(v), s = theta.squaredNorm(), vv = v.squaredNorm();
  const Vec3 txv = theta.cross(v);
  const Vec3 S2v = tv * theta - s * v;
  for (int j = 0; j < 3; ++j) {
    const Vec3 ej = Vec3::Unit(j);
    K.col(j) = -(e.A2 * theta[j] * tv + e.A1 * v[j]) * txv - e.A1 * tv * ej.cross(v) +
               (e.B2 * theta[j] * tv + e.B1 * v[j]) * S2v +
               e.B1 * (tv * (tv * ej + v[j] * theta - 2.0 * theta[j] * v) + theta[j] * (vv * theta - tv * v)) +
               e.b * (vv * ej - v[j] * v);
  }
}

Vec3 reparametrize_rotation(const Vec3& theta) {
  const double t = theta.norm();
  return theta * (1.0 - 2.0 * std::numbers::pi / t);
}

Mat3 reparametrize_rotation_jacobian(const Vec3& theta) {
  const double t = theta.norm();
  const double tp = 2.0 * std::numbers::pi;
  return (1.0 - tp / t) * Mat3::Identity() + (tp / (t * t * t)) * theta * theta.transpose();
}

}  // namespace addsim
