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
                                                                   bool partials, const StepWeights& weights) {
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
  for (int i = 0; i < L; ++i) {
    const double len = out.len[i];
    // uuᵀ and ∂u/∂d = (I − uuᵀ)/‖d‖, upper triangles (both symmetric entry for entry).
    double uu[3][3], du[3][3];
    for (int b = 0; b < 3; ++b)
      for (int a = 0; a <= b; ++a) {
        uu[a][b] = uu[b][a] = u[a][i] * u[b][i];
        du[a][b] = du[b][a] = ((a == b ? 1.0 : 0.0) - uu[a][b]) / len;
      }
    const double transverse = clamp ? std::max(stretch[i], 0.0) : stretch[i];
    // k_d (uw I + u wᵀ), then its product with ∂u/∂d.
    double A[3][3];
    for (int a = 0; a < 3; ++a)
      for (int c = 0; c < 3; ++c) A[a][c] = in.kd[i] * (uw[i] * (a == c ? 1.0 : 0.0) + u[a][i] * in.w[c][i]);
    for (int b = 0; b < 3; ++b)
      for (int a = 0; a < 3; ++a) {
        // Rows 0 and 1 of a column as one SSE2 packet, row 2 by the reduction (see above).
        const double p = a < 2 ? (A[a][0] * du[0][b] + A[a][1] * du[1][b]) + A[a][2] * du[2][b]
                               : A[a][0] * du[0][b] + (A[a][1] * du[1][b] + A[a][2] * du[2][b]);
        out.kx[a + 3 * b][i] = in.k[i] * (uu[a][b] + transverse * du[a][b]) + p;
      }
    for (int b = 0; b < 3; ++b)
      for (int a = 0; a <= b; ++a) out.kv[upper_index(a, b)][i] = in.kd[i] * uu[a][b];
  }
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

void forces(const Input& in, Output& out, bool clamp, bool partials, const StepWeights& weights) {
  lane_forces(in, out, clamp, partials, weights);
}

}  // namespace addsim::spring_pairs
