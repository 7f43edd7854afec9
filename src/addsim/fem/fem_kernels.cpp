#include "addsim/fem/fem_kernels.h"

#include <cmath>

#include <Eigen/Dense>

namespace addsim {

LameParameters lame_parameters(double E, double nu) {
  LameParameters l;
  const double d = (1.0 + nu) * (1.0 - 2.0 * nu);
  l.mu = E / (2.0 * (1.0 + nu));
  l.lambda = E * nu / d;
  l.dmu_dE = 1.0 / (2.0 * (1.0 + nu));
  l.dmu_dnu = -E / (2.0 * (1.0 + nu) * (1.0 + nu));
  l.dlambda_dE = nu / d;
  // d/dν [ν / ((1 + ν)(1 − 2ν))] = (1 + 2ν²) / ((1 + ν)(1 − 2ν))².
  l.dlambda_dnu = E * (1.0 + 2.0 * nu * nu) / (d * d);
  return l;
}

Mat9x12 deformation_gradient_operator(const Mat43& grad) {
  Mat9x12 G = Mat9x12::Zero();
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i) G(i + 3 * j, 3 * k + i) = grad(k, j);
  return G;
}

namespace {
// Column (m, n) of a 9 × 9 tangent from the 3 × 3 directional derivative along E_mn.
inline void set_column(Mat9& T, int m, int n, const Mat3& dP) {
  T.col(m + 3 * n) = Eigen::Map<const Vec9>(dP.data());
}
}  // namespace

namespace {
// W(F) from J = det F > 0, ln J and tr FᵀF (shared by neo_hookean and neo_hookean_energy, so
// both give the same bits).
double energy_density(const Mat3& F, double J, double lnJ, double mu, double lambda, NeoHookeanVariant variant) {
  if (variant == NeoHookeanVariant::kAdd)
    return 0.25 * lambda * (J * J - 1.0) - 0.5 * lambda * lnJ + 0.5 * mu * (F.squaredNorm() - 3.0 - 2.0 * lnJ);
  return 0.5 * mu * (F.squaredNorm() - 3.0) - mu * lnJ + 0.5 * lambda * lnJ * lnJ;
}
}  // namespace

bool neo_hookean_energy(const Mat3& F, double mu, double lambda, NeoHookeanVariant variant, double& w) {
  const double J = F.determinant();
  if (!(J > 0.0)) return false;
  w = energy_density(F, J, std::log(J), mu, lambda, variant);
  return true;
}

namespace {
// P, H, a, c of neo_hookean() at F with J = det F > 0 (the expressions shared by
// neo_hookean and neo_hookean_stress, so both give the same bits); returns ∂a/∂λ.
// Compiled for AVX2 and the baseline, chosen at load time: the same IEEE operations (GCC's avx2
// target has no FMA; no sums regrouped), so both clones give the same bits (docs/solver.md,
// "one evaluation's kernels for AVX2").
__attribute__((target_clones("avx2", "default")))
double neo_hookean_core(const Mat3& F, double J, double mu, double lambda, NeoHookeanVariant variant,
                        NeoHookeanResult& out) {
  const Mat3 H = F.inverse().transpose();  // F⁻ᵀ = ∂ ln J / ∂F
  // P = μ (F − F⁻ᵀ) + a(J) F⁻ᵀ; c = J a'(J) is the coefficient of the volumetric tangent.
  // ln J only in the standard variant's a (the authors' a needs none).
  double a, c, da_dlambda;
  if (variant == NeoHookeanVariant::kAdd) {
    a = 0.5 * lambda * (J * J - 1.0);
    c = lambda * J * J;
    da_dlambda = 0.5 * (J * J - 1.0);
  } else {
    const double lnJ = std::log(J);
    a = lambda * lnJ;
    c = lambda;
    da_dlambda = lnJ;
  }
  out.P = mu * (F - H) + a * H;
  out.H = H;
  out.a = a;
  out.c = c;
  return da_dlambda;
}
}  // namespace

bool neo_hookean_stress(const Mat3& F, double mu, double lambda, NeoHookeanVariant variant, NeoHookeanResult& out) {
  const double J = F.determinant();
  if (!(J > 0.0)) return false;
  neo_hookean_core(F, J, mu, lambda, variant, out);
  return true;
}

bool neo_hookean(const Mat3& F, double mu, double lambda, NeoHookeanVariant variant, bool want_tangent,
                 NeoHookeanResult& out) {
  const double J = F.determinant();
  if (!(J > 0.0)) return false;
  const double da_dlambda = neo_hookean_core(F, J, mu, lambda, variant, out);
  const Mat3& H = out.H;
  const double a = out.a, c = out.c;
  out.energy_density = energy_density(F, J, std::log(J), mu, lambda, variant);
  out.dP_dmu = F - H;
  out.dP_dlambda = da_dlambda * H;
  if (!want_tangent) return true;
  // dP[E] = μ E + (μ − a) F⁻ᵀ Eᵀ F⁻ᵀ + c (F⁻ᵀ : E) F⁻ᵀ, column by column (E = E_mn).
  for (int n = 0; n < 3; ++n)
    for (int m = 0; m < 3; ++m) {
      Mat3 dP = (mu - a) * H.col(n) * H.row(m) + c * H(m, n) * H;
      dP(m, n) += mu;
      set_column(out.dP_dF, m, n, dP);
    }
  return true;
}

namespace {
// Ė = sym(FᵀḞ), the rotation-invariant model's strain rate: one expression for viscous_stress
// and the viscous stiffness factors, so both get the same bits.
inline __attribute__((always_inline)) Mat3 strain_rate(const Mat3& F, const Mat3& Fdot) {
  const Mat3 A = F.transpose() * Fdot;
  const Mat3 Edot = 0.5 * (A + A.transpose());
  return Edot;
}
}  // namespace

namespace {
// viscous_stress's body, compiled for AVX2 and the baseline and chosen at load time: the same IEEE
// operations (GCC's avx2 target has no FMA; no sums regrouped), so both clones give the same bits.
// Internal linkage: clang emits a multiversioned function only for the callers of its own
// translation unit.
__attribute__((target_clones("avx2", "default")))
void viscous_stress_kernel(const Mat3& F, const Mat3& Fdot, double viscosity, ViscosityModel model,
                           bool want_tangent, ViscousResult& out) {
  if (model == ViscosityModel::kNone) {
    out.P.setZero();
    out.dP_dF.setZero();
    out.dP_dFdot.setZero();
    return;
  }
  if (model == ViscosityModel::kLinear) {
    out.P = viscosity * (Fdot + Fdot.transpose());
    if (!want_tangent) return;
    out.dP_dF.setZero();
    out.dP_dFdot.setZero();
    for (int n = 0; n < 3; ++n)
      for (int m = 0; m < 3; ++m) {
        out.dP_dFdot(m + 3 * n, m + 3 * n) += viscosity;
        out.dP_dFdot(n + 3 * m, m + 3 * n) += viscosity;
      }
    return;
  }
  // Rotation-invariant: P = s F Ė with Ė = sym(FᵀḞ), s = 64 ν (paper eq. rotInvViscStress).
  const double s = kAddViscosityScale * viscosity;
  const Mat3 Edot = strain_rate(F, Fdot);
  out.Edot = Edot;
  out.P = s * F * Edot;
  if (!want_tangent) return;
  for (int n = 0; n < 3; ++n)
    for (int m = 0; m < 3; ++m) {
      // Along Ḟ: s F sym(Fᵀ E_mn); FᵀE_mn has column n equal to row m of F.
      Mat3 B = Mat3::Zero();
      B.col(n) = F.row(m).transpose();
      set_column(out.dP_dFdot, m, n, s * F * (0.5 * (B + B.transpose())));
      // Along F: s (E_mn Ė + F sym(E_mnᵀ Ḟ)); E_mnᵀḞ has row n equal to row m of Ḟ.
      Mat3 C = Mat3::Zero();
      C.row(n) = Fdot.row(m);
      Mat3 dP = s * F * (0.5 * (C + C.transpose()));
      dP.row(m) += s * Edot.row(n);
      set_column(out.dP_dF, m, n, dP);
    }
}
}  // namespace

void viscous_stress(const Mat3& F, const Mat3& Fdot, double viscosity, ViscosityModel model, bool want_tangent,
                    ViscousResult& out) {
  viscous_stress_kernel(F, Fdot, viscosity, model, want_tangent, out);
}

Mat12 neo_hookean_stiffness(const NeoHookeanResult& nh, const Mat43& grad, double mu, double scale) {
  // dP[E] = μ E + (μ − a) H Eᵀ H + c (H : E) H with E = δx_l g_lᵀ, read at node k:
  // K(3k+i, 3l+j) = c h_k[i] h_l[j] + (μ − a) h_l[i] h_k[j] + μ (g_k·g_l) δ_ij, h_k = H g_k.
  // Written entry by entry along contiguous columns (3 × 3 block assignments compile to
  // scattered stores: 2.7× slower).
  const Eigen::Matrix<double, 3, 4> h = nh.H * grad.transpose();
  const Eigen::Matrix4d gg = (scale * mu) * (grad * grad.transpose());
  const double ma = scale * (mu - nh.a), c = scale * nh.c;
  Mat12 K;
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 3; ++j) {
      double* col = K.col(3 * l + j).data();
      const double ch = c * h(j, l);
      for (int k = 0; k < 4; ++k) {
        const double mh = ma * h(j, k);
        for (int i = 0; i < 3; ++i) col[3 * k + i] = ch * h(i, k) + mh * h(i, l);
        col[3 * k + j] += gg(k, l);
      }
    }
  return K;
}

namespace {
// Block (k, l) of the linear model's Kv: P = ν (Ḟ + Ḟᵀ) gives δP g_k = ν [(g_k·g_l) δv_l +
// g_l (δv_l·g_k)], i.e. ν [(g_k·g_l) I + g_l g_kᵀ]; gg = G Gᵀ.
Mat3 linear_viscous_block(const Mat43& grad, const Eigen::Matrix4d& gg, double nu, int k, int l) {
  Mat3 B = nu * grad.row(l).transpose() * grad.row(k);
  B.diagonal().array() += nu * gg(k, l);
  return B;
}

// The rotation-invariant viscous stiffness's shared factors: s = 64 ν·scale, hs = s/2,
// f = F Gᵀ, geg = s G Ė Gᵀ with Ė = sym(FᵀḞ), hgg = hs G Gᵀ (gg = G Gᵀ). Used by
// viscous_stiffness, viscous_stiffness_combined_add and StressBlockColumns' two setters; each
// member is constructed from one expression, so all four get the same bits.
struct InvariantViscousFactors {
  __attribute__((always_inline)) InvariantViscousFactors(const Mat3& F, const Mat3& Fdot, const Mat43& grad,
                                                         const Eigen::Matrix4d& gg, double viscosity, double scale)
      : InvariantViscousFactors(F, grad, gg, strain_rate(F, Fdot), viscosity, scale) {}
  // The same with Ė = strain_rate(F, Ḟ) given.
  __attribute__((always_inline)) InvariantViscousFactors(const Mat3& F, const Mat43& grad, const Eigen::Matrix4d& gg,
                                                         const Mat3& edot, double viscosity, double scale)
      : s(scale * kAddViscosityScale * viscosity),
        hs(0.5 * s),
        f(F * grad.transpose()),
        geg(s * (grad * edot * grad.transpose())),
        hgg(hs * gg) {}
  double s, hs;
  Eigen::Matrix<double, 3, 4> f;
  Eigen::Matrix4d geg, hgg;
};
}  // namespace

void viscous_stiffness(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity, ViscosityModel model,
                       Mat12& Kq, Mat12& Kv, double scale, bool add_to_kq) {
  const Eigen::Matrix4d gg = grad * grad.transpose();
  if (model == ViscosityModel::kLinear) {
    const double nu = scale * viscosity;
    if (!add_to_kq) Kq.setZero();
    for (int l = 0; l < 4; ++l)
      for (int k = 0; k < 4; ++k) Kv.block<3, 3>(3 * k, 3 * l) = linear_viscous_block(grad, gg, nu, k, l);
    return;
  }
  // Rotation-invariant, s = 64 ν; column 3l + j as a 3 × 4 matrix (row i, node k), a sum of
  // two rank-one products (2.4× faster than 3 × 3 block assignments):
  //   Kv(3k+i, 3l+j) = (s/2) [(g_k·g_l) (F Fᵀ)_ij + f_l[i] f_k[j]],
  //   Kq(3k+i, 3l+j) = (s/2) [f_l[i] d_k[j] + (g_k·g_l) (F Ḟᵀ)_ij] + s (g_lᵀ Ė g_k) δ_ij.
  const InvariantViscousFactors v(F, Fdot, grad, gg, viscosity, scale);
  const Eigen::Matrix<double, 3, 4>& f = v.f;
  const Eigen::Matrix4d &geg = v.geg, &hgg = v.hgg;
  const Mat3 FFt = F * F.transpose(), FFdt = F * Fdot.transpose();
  const Eigen::Matrix<double, 3, 4> d = Fdot * grad.transpose();
  const Eigen::Matrix<double, 3, 4> hf = v.hs * f, hd = v.hs * d;
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 3; ++j) {
      Eigen::Map<Eigen::Matrix<double, 3, 4>> kv(Kv.col(3 * l + j).data()), kq(Kq.col(3 * l + j).data());
      kv.noalias() = FFt.col(j) * hgg.col(l).transpose() + f.col(l) * hf.row(j);
      if (add_to_kq)
        kq.noalias() += FFdt.col(j) * hgg.col(l).transpose() + f.col(l) * hd.row(j);
      else
        kq.noalias() = FFdt.col(j) * hgg.col(l).transpose() + f.col(l) * hd.row(j);
      kq.row(j) += geg.row(l);
    }
}

void viscous_stiffness_combined_add(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity,
                                    ViscosityModel model, double c, Mat12& K, double scale) {
  const Eigen::Matrix4d gg = grad * grad.transpose();
  if (model == ViscosityModel::kLinear) {
    // Kq = 0: K += c Kv.
    const double cnu = c * scale * viscosity;
    for (int l = 0; l < 4; ++l)
      for (int k = 0; k < 4; ++k) K.block<3, 3>(3 * k, 3 * l) += linear_viscous_block(grad, gg, cnu, k, l);
    return;
  }
  // Rotation-invariant: the terms of Kq and c Kv with equal rank-one structure are summed
  // before the 12 × 12 pass (see viscous_stiffness for the blocks).
  const InvariantViscousFactors v(F, Fdot, grad, gg, viscosity, scale);
  const Eigen::Matrix<double, 3, 4>& f = v.f;
  const Eigen::Matrix4d &geg = v.geg, &hgg = v.hgg;
  const Mat3 FM = F * Fdot.transpose() + c * (F * F.transpose());
  const Eigen::Matrix<double, 3, 4> hdf = v.hs * (Fdot * grad.transpose() + c * f);
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 3; ++j) {
      Eigen::Map<Eigen::Matrix<double, 3, 4>> k(K.col(3 * l + j).data());
      k.noalias() += FM.col(j) * hgg.col(l).transpose() + f.col(l) * hdf.row(j);
      k.row(j) += geg.row(l);
    }
}

namespace {
using Lane4 = StressBlockColumns::Lane4;

// out = four values already computed by Eigen (copied, not recomputed).
template <class V>
void to_lane(Lane4& out, const V& v) {
  for (int k = 0; k < 4; ++k) out[k] = v(k);
}
// Node-contiguous copies: rows of a 3 × 4 factor.
void rows_to_lanes(const Eigen::Matrix<double, 3, 4>& m, Lane4* out) {
  for (int i = 0; i < 3; ++i) to_lane(out[i], m.row(i));
}
}  // namespace

void StressBlockColumns::set_elastic(const NeoHookeanResult& nh, const Mat43& grad, double mu, double scale) {
  // The factors of neo_hookean_stiffness(), from the same expressions. Each is first
  // constructed as a local, as there: Eigen evaluates `M = s * (A * B)` by assignment and
  // by construction along different paths, which may differ in the last bit.
  const Eigen::Matrix<double, 3, 4> h = nh.H * grad.transpose();
  const Eigen::Matrix4d gg = (scale * mu) * (grad * grad.transpose());
  const double ma = scale * (mu - nh.a);
  for (int i = 0; i < 3; ++i) {
    to_lane(h_[i], h.row(i));
    mh_[i] = ma * h_[i];
  }
  for (int l = 0; l < 4; ++l) to_lane(gg_[l], gg.col(l));
  c_ = scale * nh.c;
  elastic_ = true;
}

void StressBlockColumns::set_viscous_step(const Mat3& F, const Mat3& Fdot, const Mat43& grad,
                                          const Eigen::Matrix4d& gg, const Mat3& edot, double viscosity, double c,
                                          double scale) {
  // The factors of viscous_stiffness_combined_add() (rotation-invariant), constructed as there.
  const InvariantViscousFactors v(F, grad, gg, edot, viscosity, scale);
  const Eigen::Matrix<double, 3, 4>& f = v.f;
  const Eigen::Matrix4d &geg = v.geg, &hgg = v.hgg;
  const Mat3 FM = F * Fdot.transpose() + c * (F * F.transpose());
  const Eigen::Matrix<double, 3, 4> hdf = v.hs * (Fdot * grad.transpose() + c * f);
  fm_ = FM;
  rows_to_lanes(f, f_);
  rows_to_lanes(hdf, hdf_);
  for (int l = 0; l < 4; ++l) {
    to_lane(hgg_[l], hgg.col(l));
    to_lane(geg_[l], geg.row(l));
  }
  viscous_ = true;
}

void StressBlockColumns::set_viscous_partials(const Mat3& F, const Mat3& Fdot, const Mat43& grad,
                                              const Eigen::Matrix4d& gg, const Mat3& edot, double viscosity,
                                              double scale) {
  // The factors of viscous_stiffness() (rotation-invariant), constructed as there.
  const InvariantViscousFactors v(F, grad, gg, edot, viscosity, scale);
  const Eigen::Matrix<double, 3, 4>& f = v.f;
  const Eigen::Matrix4d &geg = v.geg, &hgg = v.hgg;
  const Mat3 FFt = F * F.transpose(), FFdt = F * Fdot.transpose();
  const Eigen::Matrix<double, 3, 4> d = Fdot * grad.transpose();
  const Eigen::Matrix<double, 3, 4> hf = v.hs * f, hd = v.hs * d;
  fm_ = FFdt;
  fm2_ = FFt;
  rows_to_lanes(f, f_);
  rows_to_lanes(hd, hdf_);
  rows_to_lanes(hf, hdf2_);
  for (int l = 0; l < 4; ++l) {
    to_lane(hgg_[l], hgg.col(l));
    to_lane(geg_[l], geg.row(l));
  }
  viscous_ = true;
}

// The overloads that form Ė (and G Gᵀ) themselves.
void StressBlockColumns::set_viscous_step(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity,
                                          double c, double scale) {
  const Eigen::Matrix4d gg = grad * grad.transpose();
  set_viscous_step(F, Fdot, grad, gg, viscosity, c, scale);
}

void StressBlockColumns::set_viscous_step(const Mat3& F, const Mat3& Fdot, const Mat43& grad,
                                          const Eigen::Matrix4d& gg, double viscosity, double c, double scale) {
  set_viscous_step(F, Fdot, grad, gg, strain_rate(F, Fdot), viscosity, c, scale);
}

void StressBlockColumns::set_viscous_partials(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity,
                                              double scale) {
  const Eigen::Matrix4d gg = grad * grad.transpose();
  set_viscous_partials(F, Fdot, grad, gg, viscosity, scale);
}

void StressBlockColumns::set_viscous_partials(const Mat3& F, const Mat3& Fdot, const Mat43& grad,
                                              const Eigen::Matrix4d& gg, double viscosity, double scale) {
  set_viscous_partials(F, Fdot, grad, gg, strain_rate(F, Fdot), viscosity, scale);
}

namespace {
// The column loops with Assembly's scatter inlined, compiled twice (see scatter_step).
__attribute__((target_clones("avx2", "default"))) void scatter_block_step(const StressBlockColumns& block,
                                                                          const Assembly::PointColumns<4>& q) {
  block.for_each_column([&](int l, int j, const StressBlockColumns::Column& col) { q.add(l, j, col); });
}

__attribute__((target_clones("avx2", "default"))) void scatter_block_partials(const StressBlockColumns& block,
                                                                              const Assembly::PointColumns<4>& q,
                                                                              const Assembly::PointColumns<4>& v) {
  block.for_each_column_pair(
      [&](int l, int j, const StressBlockColumns::Column& cq, const StressBlockColumns::Column& cv) {
        q.add(l, j, cq);
        v.add(l, j, cv);
      });
}
}  // namespace

void StressBlockColumns::scatter_step(const Assembly::PointColumns<4>& q) const { scatter_block_step(*this, q); }

void StressBlockColumns::scatter_partials(const Assembly::PointColumns<4>& q, const Assembly::PointColumns<4>& v) const {
  scatter_block_partials(*this, q, v);
}

}  // namespace addsim
