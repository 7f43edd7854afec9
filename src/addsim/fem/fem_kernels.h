#pragma once
/// Per-element FEM kernels on fixed-size Eigen types (paper §5.1), no heap allocation.
/// Conventions: F (3 × 3) is the deformation gradient of a linear tet, F = Σ_k x_k g_kᵀ
/// with g_k the rest shape-function gradients (rows of a 4 × 3 matrix); vec() stacks
/// columns, so vec(F) = G x with G (9 × 12), G(i + 3j, 3k + i) = g_k[j]; first Piola
/// stresses P (Pa) give the element residual r_e = V Gᵀ vec(P) (forces enter r with a
/// minus sign: f_e = −r_e) and tangents dP/dF (9 × 9) give ∂r_e/∂x = V Gᵀ (dP/dF) G.

#include <array>

#include <Eigen/Core>
#include <Eigen/Dense>

#include "addsim/core/types.h"
#include "addsim/math/sparse_assembly.h"

namespace addsim {

using Vec9 = Eigen::Matrix<double, 9, 1>;      ///< vec() of a 3 × 3 matrix (column-major)
using Mat9 = Eigen::Matrix<double, 9, 9>;      ///< tangent of a 3 × 3 map, d vec(P) / d vec(F)
using Vec12 = Eigen::Matrix<double, 12, 1>;    ///< element residual / node values (4 nodes × 3)
using Mat12 = Eigen::Matrix<double, 12, 12>;   ///< element Jacobian block
using Mat9x12 = Eigen::Matrix<double, 9, 12>;  ///< G: vec(F) = G x
using Mat43 = Eigen::Matrix<double, 4, 3>;     ///< shape-function gradients g_kᵀ as rows, 1/m

/// Gᵀ A G (12 × 12) for a 9 × 9 A, by coefficient-wise (lazy) products: at these fixed
/// sizes Eigen's default product dispatches to its blocked GEMM kernel, whose set-up cost
/// dominated element assembly (13 % of a soft-ball run under callgrind).
inline Mat12 sandwich(const Mat9x12& G, const Mat9& A) {
  const Eigen::Matrix<double, 9, 12> AG = A.lazyProduct(G);
  return G.transpose().lazyProduct(AG);
}

/// The two Neo-Hookean energies: kAdd is the paper authors' code,
///   W = (λ/4)(J² − 1) − (λ/2) ln J + (μ/2)(tr FᵀF − 3 − 2 ln J);
/// kStandard is W = (μ/2)(I₁ − 3) − μ ln J + (λ/2)(ln J)² [Bonet & Wood 2008].
enum class NeoHookeanVariant { kAdd, kStandard };

/// Viscous stress models: kRotationInvariant is paper eq. rotInvViscStress with the
/// authors' scaling, P = 64 ν F Ė, Ė = ½(FᵀḞ + ḞᵀF); kLinear is the non-rotation-
/// invariant foil P = ν (Ḟ + Ḟᵀ) [Hahn et al. 2019]; kNone adds no term.
enum class ViscosityModel { kNone, kRotationInvariant, kLinear };

/// Scale of the rotation-invariant viscous stress in the paper authors' code: Table 1
/// viscosities ν mean P = 64 ν F Ė.
inline constexpr double kAddViscosityScale = 64.0;

/// Lamé parameters from Young's modulus E (Pa) and Poisson's ratio ν ∈ (−1, 0.5), with
/// their derivatives: μ = E / (2(1 + ν)), λ = E ν / ((1 + ν)(1 − 2ν)).
struct LameParameters {
  double mu = 0.0, lambda = 0.0;
  double dmu_dE = 0.0, dmu_dnu = 0.0, dlambda_dE = 0.0, dlambda_dnu = 0.0;
};
LameParameters lame_parameters(double youngs_modulus, double poisson_ratio);

/// G (9 × 12) with vec(F) = G x for node positions x (12, stacked per node).
Mat9x12 deformation_gradient_operator(const Mat43& grad);

/// Neo-Hookean energy density W (J/m³), stress P (Pa), dP/dμ, dP/dλ and, if
/// `want_tangent`, dP/dF at F. Requires J = det F > 0 (returns false and leaves outputs
/// untouched otherwise).
struct NeoHookeanResult {
  double energy_density = 0.0;
  Mat3 P = Mat3::Zero();
  /// P = μ (F − H) + a H with H = F⁻ᵀ; c = J a'(J) (always set, for neo_hookean_stiffness).
  Mat3 H = Mat3::Zero();
  double a = 0.0, c = 0.0;
  Mat9 dP_dF = Mat9::Zero();
  Mat3 dP_dmu = Mat3::Zero();
  Mat3 dP_dlambda = Mat3::Zero();
};
bool neo_hookean(const Mat3& F, double mu, double lambda, NeoHookeanVariant variant, bool want_tangent,
                 NeoHookeanResult& out);

/// The stress part of neo_hookean() alone: P, H, a and c (the same bits), without the energy
/// density (a logarithm), dP/dμ, dP/dλ or the tangent — what an evaluation of the residual
/// and of the closed-form stiffness (neo_hookean_stiffness, StressBlockColumns) reads. False if
/// J = det F ≤ 0 (outputs untouched).
bool neo_hookean_stress(const Mat3& F, double mu, double lambda, NeoHookeanVariant variant, NeoHookeanResult& out);

/// The energy density W alone (what neo_hookean() gives as energy_density, the same bits),
/// without F⁻ᵀ and P: false if J = det F ≤ 0 (w untouched).
bool neo_hookean_energy(const Mat3& F, double mu, double lambda, NeoHookeanVariant variant, double& w);

/// r_e / V = Gᵀ vec(P) = vec(P gradᵀ): per node k, P g_k (12, stacked per node).
inline Vec12 element_forces(const Mat3& P, const Mat43& grad) {
  const Eigen::Matrix<double, 3, 4> f = P * grad.transpose();
  return Eigen::Map<const Vec12>(f.data());
}

/// Gᵀ (dP/dF) G of the Neo-Hookean stress in closed form (no 9 × 9 tangent): with
/// h_k = H g_k, block (k, l) is μ (g_k·g_l) I + (μ − a) h_l h_kᵀ + c h_k h_lᵀ. `nh` is the
/// result of neo_hookean() at the same F (with or without want_tangent). Equal to
/// sandwich(deformation_gradient_operator(grad), nh.dP_dF) up to round-off, 5× cheaper.
/// The result is multiplied by `scale` (e.g. the rest volume) at no extra cost.
Mat12 neo_hookean_stiffness(const NeoHookeanResult& nh, const Mat43& grad, double mu, double scale = 1.0);

/// Viscous stress P (Pa) at (F, Ḟ) per `model` for viscosity ν (Pa s), with dP/dF and
/// dP/dḞ (9 × 9) if `want_tangent`. The stress is linear in ν: P/ν is ∂P/∂ν.
struct ViscousResult {
  Mat3 P = Mat3::Zero();
  /// Rotation-invariant model: the strain rate Ė = sym(FᵀḞ) that P was formed from (the
  /// viscous block setters take it instead of forming it again: the same bits); else unset.
  Mat3 Edot = Mat3::Zero();
  Mat9 dP_dF = Mat9::Zero();
  Mat9 dP_dFdot = Mat9::Zero();
};
void viscous_stress(const Mat3& F, const Mat3& Fdot, double viscosity, ViscosityModel model, bool want_tangent,
                    ViscousResult& out);

/// Gᵀ (dP/dF) G and Gᵀ (dP/dḞ) G of the viscous stress in closed form, for the models
/// with a stress (not kNone). Rotation-invariant, s = 64 ν, f_k = F g_k, d_k = Ḟ g_k:
///   Kv_kl = (s/2) [(g_k·g_l) F Fᵀ + f_l f_kᵀ],
///   Kq_kl = s [(g_lᵀ Ė g_k) I + ½ f_l d_kᵀ + ½ (g_k·g_l) F Ḟᵀ];
/// linear: Kv_kl = ν [(g_k·g_l) I + g_l g_kᵀ], Kq = 0. Equal to the sandwiches of
/// viscous_stress()'s tangents up to round-off. Both are multiplied by `scale` (e.g. the
/// rest volume) at no extra cost. With `add_to_kq`, Kq += the viscous ∂r/∂q instead of
/// Kq = (Kq unchanged for kLinear): a caller holding the elastic stiffness in Kq gets the
/// sum without another pass over the 12 × 12 block.
void viscous_stiffness(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity, ViscosityModel model,
                       Mat12& Kq, Mat12& Kv, double scale = 1.0, bool add_to_kq = false);

/// K += (Kq + c Kv) · scale with Kq, Kv the blocks of viscous_stiffness() (not kNone): the
/// viscous share of a step Jacobian wq (∂r/∂q + (wv/wq) ∂r/∂v) formed in one pass, at the
/// cost of Kq alone (the rotation-invariant blocks share their rank-one factors:
/// column 3l + j is (F Ḟᵀ + c F Fᵀ)_j (s/2)(g_k·g_l) + f_l ((s/2)(d_k + c f_k))[j] plus
/// s (g_lᵀ Ė g_k) on row j). Equal to the sum of viscous_stiffness()'s blocks up to round-off.
void viscous_stiffness_combined_add(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity,
                                    ViscosityModel model, double c, Mat12& K, double scale = 1.0);

/// The local Jacobian blocks of `fem_stress` (Neo-Hookean plus rotation-invariant viscous
/// stress), handed out column by column instead of as 12 × 12 matrices: the caller scatters
/// each column straight into its value array, so each block is written once (no 12 × 12
/// local, no second pass for the viscous part, no weighting copy). Two uses:
///   - step Jacobian (set_viscous_step, for_each_column): K = K_el + Kq_visc + c Kv_visc,
///     bit-identical to neo_hookean_stiffness() followed by viscous_stiffness_combined_add();
///   - local partials (set_viscous_partials, for_each_column_pair): ∂r/∂q = K_el + Kq_visc
///     and ∂r/∂v = Kv_visc, bit-identical to neo_hookean_stiffness() followed by
///     viscous_stiffness(…, add_to_kq = true).
/// A column is computed for the four nodes at once (node-contiguous factors in four-double
/// lanes: one AVX2 operation, or two SSE2 ones): per node the same products and additions in the same order as those kernels
/// (tests/fem/test_fem_terms.cpp checks equality bit for bit). Every factor is scaled by
/// `scale` (the rest volume). Rotation-invariant viscosity only (kLinear and kNone go through
/// the kernels above).
class StressBlockColumns {
 public:
  /// Four doubles, one per node (GCC vector extension; a scalar operand is broadcast):
  /// element-wise arithmetic that GCC emits as one AVX2 operation in scatter_step /
  /// scatter_partials' AVX2 clone and as two SSE2 operations elsewhere — the same IEEE
  /// operations either way. Never passed or returned by value (the ABI differs with AVX).
  using Lane4 = double __attribute__((vector_size(32)));

  /// Elastic part from neo_hookean() at F (with or without its tangent) and μ.
  void set_elastic(const NeoHookeanResult& nh, const Mat43& grad, double mu, double scale);
  /// Viscous part (s = 64 ν) of a step block: Kq + c Kv.
  void set_viscous_step(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity, double c,
                        double scale);
  /// Viscous parts (s = 64 ν) as separate partials Kq (added to the elastic block) and Kv.
  void set_viscous_partials(const Mat3& F, const Mat3& Fdot, const Mat43& grad, double viscosity, double scale);
  /// The same with G Gᵀ given (`gg` = grad * grad.transpose(), e.g. FemBody::shape_gram):
  /// the same numbers without forming it per call.
  void set_viscous_step(const Mat3& F, const Mat3& Fdot, const Mat43& grad, const Eigen::Matrix4d& gg,
                        double viscosity, double c, double scale);
  void set_viscous_partials(const Mat3& F, const Mat3& Fdot, const Mat43& grad, const Eigen::Matrix4d& gg,
                            double viscosity, double scale);
  /// The same with Ė = sym(FᵀḞ) given too (`edot`, as viscous_stress() leaves it in
  /// ViscousResult::Edot at the same F, Ḟ): the same numbers without forming FᵀḞ again.
  void set_viscous_step(const Mat3& F, const Mat3& Fdot, const Mat43& grad, const Eigen::Matrix4d& gg,
                        const Mat3& edot, double viscosity, double c, double scale);
  void set_viscous_partials(const Mat3& F, const Mat3& Fdot, const Mat43& grad, const Eigen::Matrix4d& gg,
                            const Mat3& edot, double viscosity, double scale);

  /// Entries of one column 3l + j: col[i][k] (a lane over the four nodes k) is row 3k + i.
  using Column = std::array<Lane4, 3>;
  /// Step block (after set_elastic and/or set_viscous_step, at least one): sink(l, j, col)
  /// for the 12 columns 3l + j in order. After set_elastic alone this is K_el.
  template <class Sink>
  void for_each_column(Sink&& sink) const {
    if (elastic_ && viscous_)
      columns<true, true>(sink);
    else if (elastic_)
      columns<true, false>(sink);
    else
      columns<false, true>(sink);
  }
  /// Partials (after set_viscous_partials, with or without set_elastic): sink(l, j, col_q,
  /// col_v) for the 12 columns 3l + j of ∂r/∂q and ∂r/∂v in order.
  template <class Sink>
  void for_each_column_pair(Sink&& sink) const {
    if (elastic_)
      column_pairs<true>(sink);
    else
      column_pairs<false>(sink);
  }

  /// for_each_column() added into a value array through Assembly's column scatter (`q` valid),
  /// and for_each_column_pair() into two (∂r/∂q into `q`, ∂r/∂v into `v`). Compiled for AVX2
  /// and for the baseline, chosen at load time: element-wise lanes, no sums regrouped and no
  /// fused multiply–add (GCC's avx2 target does not enable FMA), so both clones add the same
  /// numbers, bit for bit.
  void scatter_step(const Assembly::PointColumns<4>& q) const;
  void scatter_partials(const Assembly::PointColumns<4>& q, const Assembly::PointColumns<4>& v) const;

 private:
  // Elastic, as neo_hookean_stiffness(): c h_l[j] h_k[i] + (μ − a) h_k[j] h_l[i], then
  // μ (g_k·g_l) on the diagonal; zero without the elastic part.
  template <bool kElastic>
  void elastic_column(int l, int j, Column& col) const {
    if constexpr (kElastic) {
      const double ch = c_ * h_[j][l];
      for (int i = 0; i < 3; ++i) col[i] = ch * h_[i] + mh_[j] * h_[i][l];
      col[j] += gg_[l];
    } else {
      for (int i = 0; i < 3; ++i) col[i] = Lane4{};
    }
  }

  template <bool kElastic, bool kViscous, class Sink>
  void columns(Sink& sink) const {
    Column col;
    for (int l = 0; l < 4; ++l)
      for (int j = 0; j < 3; ++j) {
        elastic_column<kElastic>(l, j, col);
        // Viscous, as viscous_stiffness_combined_add(): (· + FM_ij hgg_kl) + f_l[i] hdf_k[j]
        // (Eigen evaluates `K += P1 + P2` of two products as two updates), then the diagonal.
        if constexpr (kViscous) {
          for (int i = 0; i < 3; ++i)
            col[i] = (col[i] + fm_(i, j) * hgg_[l]) + f_[i][l] * hdf_[j];
          col[j] += geg_[l];
        }
        sink(l, j, static_cast<const Column&>(col));
      }
  }

  template <bool kElastic, class Sink>
  void column_pairs(Sink& sink) const {
    Column col_q, col_v;
    for (int l = 0; l < 4; ++l)
      for (int j = 0; j < 3; ++j) {
        // As viscous_stiffness(…, add_to_kq = true): Kv = FFᵀ_ij hgg_kl + f_l[i] hf_k[j];
        // Kq = (Kq + FḞᵀ_ij hgg_kl) + f_l[i] hd_k[j], then s (g_lᵀ Ė g_k) on the diagonal.
        elastic_column<kElastic>(l, j, col_q);
        for (int i = 0; i < 3; ++i) {
          const double fl = f_[i][l];
          col_v[i] = fm2_(i, j) * hgg_[l] + fl * hdf2_[j];
          col_q[i] = (col_q[i] + fm_(i, j) * hgg_[l]) + fl * hdf_[j];
        }
        col_q[j] += geg_[l];
        sink(l, j, static_cast<const Column&>(col_q), static_cast<const Column&>(col_v));
      }
  }

  bool elastic_ = false, viscous_ = false;
  // The kernels' factors as lanes over the nodes k ([row i][k], or [l][k]).
  Lane4 h_[3];     // h_k = H g_k
  Lane4 mh_[3];    // scale (μ − a) h_k
  Lane4 gg_[4];    // scale μ (g_k·g_l)
  double c_ = 0.0;  // scale c
  Mat3 fm_;         // step: F Ḟᵀ + c F Fᵀ; partials: F Ḟᵀ
  Mat3 fm2_;        // partials: F Fᵀ
  Lane4 f_[3];      // f_k = F g_k
  Lane4 hdf_[3];    // step: (s/2)(d_k + c f_k); partials: (s/2) d_k (d_k = Ḟ g_k)
  Lane4 hdf2_[3];   // partials: (s/2) f_k
  Lane4 hgg_[4];    // (s/2)(g_k·g_l)
  Lane4 geg_[4];    // geg_[l][k] = s (g_lᵀ Ė g_k) as computed at (l, k)
};

}  // namespace addsim
