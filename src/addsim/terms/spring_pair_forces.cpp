#include "addsim/terms/spring_pair_forces.h"

#include <algorithm>
#include <cmath>

namespace addsim::spring_pairs {

namespace {

// The kernel, compiled for AVX2 and for the baseline and chosen at load time (as
// solver/banded_lu.cpp's band_factor): every loop runs over the lanes with element-wise
// operations only, so both clones give the same numbers (GCC's avx2 target has no FMA to
// contract with). This file is compiled with -fno-math-errno (src/addsim/terms/CMakeLists.txt)
// so that the square roots vectorise; the values of a square root do not depend on it.
// Each expression mirrors spring_force() in spring_term.cpp, including Eigen 3.4's evaluation
// order: the squared norm and the dot product of 3-vectors as (a₀b₀ + a₁b₁) + a₂b₂ (one SSE2
// packet, then the rest); a 3 × 3 product inside a sum is assigned column by column with rows
// 0 and 1 as one SSE2 packet, accumulated (a₀b₀ + a₁b₁) + a₂b₂, and row 2 by the unrolled
// reduction, which halves the sum: a₀b₀ + (a₁b₁ + a₂b₂); the identity is a matrix of 1.0 and 0.0.
__attribute__((target_clones("avx2", "default"))) void lane_forces(const Input& in, Output& out, bool clamp,
                                                                   bool partials, const StepWeights& weights,
                                                                   bool float_blocks) {
  constexpr int L = kLanes;
  double u[3][L], uw[L], stretch[L];
  for (int i = 0; i < L; ++i) {
    const double len = std::sqrt((in.d[0][i] * in.d[0][i] + in.d[1][i] * in.d[1][i]) + in.d[2][i] * in.d[2][i]);
    out.len[i] = len;
    for (int c = 0; c < 3; ++c) u[c][i] = in.d[c][i] / len;
    stretch[i] = len - in.rest[i];
    uw[i] = (u[0][i] * in.w[0][i] + u[1][i] * in.w[1][i]) + u[2][i] * in.w[2][i];
    const double ks = in.k[i] * stretch[i];
    const double kdu = in.kd[i] * uw[i];
    for (int c = 0; c < 3; ++c) out.r[c][i] = ks * u[c][i] + kdu * u[c][i];
  }
  if (!partials) return;
  if (float_blocks && weights.active) {
    // The step block at float accuracy (Assembly::float_step_blocks), in closed form: over
    // ∂u/∂d = (I − uuᵀ)/‖d‖, spring_force()'s ∂r_a/∂x_a
    //   k (uuᵀ + t (I − uuᵀ)/‖d‖) + k_d (uw I + u wᵀ) (I − uuᵀ)/‖d‖ = α I + u (β u + γ w)ᵀ,
    //   α = (k t + k_d uw)/‖d‖, β = k − (k t + 2 k_d uw)/‖d‖, γ = k_d/‖d‖
    // (t the stretch, clamped at 0 under `clamp`; (u wᵀ)(u uᵀ) = uw uuᵀ), so that with
    // ∂r_a/∂ẋ_a = k_d uuᵀ the step block is wq α I + u (B u + C w)ᵀ, B = wq β + wv k_d, C = wq γ:
    // one division per spring instead of six, no 3 × 3 product, and kx and kv are not formed
    // (a step evaluation scatters `step` alone). The same matrix as the exact route to
    // round-off, not bit for bit.
    double alpha[L], beta[L], gamma[L];
    for (int i = 0; i < L; ++i) {
      const double inv = 1.0 / out.len[i];
      const double t = clamp ? std::max(stretch[i], 0.0) : stretch[i];
      const double kt = in.k[i] * t, kdu = in.kd[i] * uw[i];
      alpha[i] = weights.wq * ((kt + kdu) * inv);
      beta[i] = weights.wq * (in.k[i] - (kt + 2.0 * kdu) * inv) + weights.wv * in.kd[i];
      gamma[i] = weights.wq * (in.kd[i] * inv);
    }
    for (int b = 0; b < 3; ++b) {
      // Column b: u (B u_b + C w_b), plus α on the diagonal.
      double col[L];
      for (int i = 0; i < L; ++i) col[i] = beta[i] * u[b][i] + gamma[i] * in.w[b][i];
      for (int a = 0; a < 3; ++a) {
        double* s = out.step[a + 3 * b];
        for (int i = 0; i < L; ++i) s[i] = u[a][i] * col[i];
      }
      double* diag = out.step[4 * b];
      for (int i = 0; i < L; ++i) diag[i] += alpha[i];
    }
    return;
  }
  // The partials lane by lane as above (each loop over the lanes, so that it vectorises: the
  // divisions four lanes per instruction), the same operations per lane as spring_force().
  // uuᵀ and ∂u/∂d = (I − uuᵀ)/‖d‖, upper triangles (both symmetric entry for entry).
  double uu[6][L], du[6][L], transverse[L];
  for (int b = 0; b < 3; ++b)
    for (int a = 0; a <= b; ++a) {
      const int e = upper_index(a, b);
      for (int i = 0; i < L; ++i) {
        uu[e][i] = u[a][i] * u[b][i];
        du[e][i] = ((a == b ? 1.0 : 0.0) - uu[e][i]) / out.len[i];
      }
    }
  for (int i = 0; i < L; ++i) transverse[i] = clamp ? std::max(stretch[i], 0.0) : stretch[i];
  // k_d (uw I + u wᵀ), then its product with ∂u/∂d.
  double A[3][3][L];
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < L; ++i) A[a][c][i] = in.kd[i] * (uw[i] * (a == c ? 1.0 : 0.0) + u[a][i] * in.w[c][i]);
  for (int b = 0; b < 3; ++b)
    for (int a = 0; a < 3; ++a) {
      const double* d0 = du[upper_index(0, b)];
      const double* d1 = du[upper_index(1, b)];
      const double* d2 = du[upper_index(2, b)];
      const double* uab = uu[upper_index(a, b)];
      const double* dab = du[upper_index(a, b)];
      double* kx = out.kx[a + 3 * b];
      for (int i = 0; i < L; ++i) {
        // Rows 0 and 1 of a column as one SSE2 packet, row 2 by the reduction (see above).
        const double p = a < 2 ? (A[a][0][i] * d0[i] + A[a][1][i] * d1[i]) + A[a][2][i] * d2[i]
                               : A[a][0][i] * d0[i] + (A[a][1][i] * d1[i] + A[a][2][i] * d2[i]);
        kx[i] = in.k[i] * (uab[i] + transverse[i] * dab[i]) + p;
      }
    }
  for (int b = 0; b < 3; ++b)
    for (int a = 0; a <= b; ++a)
      for (int i = 0; i < L; ++i) out.kv[upper_index(a, b)][i] = in.kd[i] * uu[upper_index(a, b)][i];
  if (!weights.active) return;
  // Assembly::step_block_sum: wq kx, then + wv kv, skipping a zero weight.
  const double wq = weights.wq, wv = weights.wv;
  for (int b = 0; b < 3; ++b)
    for (int a = 0; a < 3; ++a) {
      const double* kx = out.kx[a + 3 * b];
      const double* kv = out.kv[upper_index(a, b)];
      double* s = out.step[a + 3 * b];
      if (wq != 0.0 && wv != 0.0)
        for (int i = 0; i < L; ++i) s[i] = wq * kx[i] + wv * kv[i];
      else if (wq != 0.0)
        for (int i = 0; i < L; ++i) s[i] = wq * kx[i];
      else
        for (int i = 0; i < L; ++i) s[i] = wv * kv[i];
    }
}

}  // namespace

void forces(const Input& in, Output& out, bool clamp, bool partials, const StepWeights& weights, bool float_blocks) {
  lane_forces(in, out, clamp, partials, weights, float_blocks);
}

}  // namespace addsim::spring_pairs
