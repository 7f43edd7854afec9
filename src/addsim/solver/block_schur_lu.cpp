#include "addsim/solver/block_schur_lu.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "addsim/core/error.h"
#include "addsim/solver/worker_thread.h"

#ifdef ADDSIM_HAVE_LAPACK
// LAPACK's LU with partial pivoting (column-major, LP64 integers as in Debian's liblapack).
extern "C" void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
#endif

namespace addsim {

namespace {

// Symbolic block elimination on the graph `adj` (m × m, symmetric, no diagonal) of blocks
// of `sizes` DOFs by minimum weighted degree (the DOFs of the not yet eliminated neighbours;
// ties by block size, then index). Eliminating a block joins its remaining neighbours into a
// clique (fill, written into adj). Returns the order; `later` gets each block's neighbours at
// its elimination, sorted by elimination position.
std::vector<int> eliminate(std::vector<char>& adj, const std::vector<int>& sizes, std::vector<std::vector<int>>& later) {
  const int m = static_cast<int>(sizes.size());
  const auto at = [&](int i, int j) -> char& { return adj[static_cast<size_t>(i) * m + j]; };
  // Neighbour lists alongside the matrix (fill appended), so that a degree is counted over
  // a block's neighbours, not over all m blocks.
  std::vector<std::vector<int>> neighbours(m);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j)
      if (at(i, j)) neighbours[i].push_back(j);
  std::vector<char> done(m, 0);
  std::vector<long> degree(m, 0);
  const auto count_degree = [&](int k) {
    long d = 0;
    for (int j : neighbours[k])
      if (!done[j]) d += sizes[j];
    degree[k] = d;
  };
  std::vector<int> order;
  for (int k = 0; k < m; ++k) count_degree(k);
  later.assign(m, {});
  for (int step = 0; step < m; ++step) {
    int best = -1;
    for (int k = 0; k < m; ++k)
      if (!done[k] && (best < 0 || degree[k] < degree[best] || (degree[k] == degree[best] && sizes[k] < sizes[best])))
        best = k;
    order.push_back(best);
    done[best] = 1;
    for (int j = 0; j < m; ++j)
      if (!done[j] && at(best, j)) later[best].push_back(j);
    for (int i : later[best])
      for (int j : later[best])
        if (i != j && !at(i, j)) {
          at(i, j) = 1;
          neighbours[i].push_back(j);
        }
    for (int i : later[best]) count_degree(i);
  }
  std::vector<int> position(m);
  for (int p = 0; p < m; ++p) position[order[p]] = p;
  for (auto& l : later) std::sort(l.begin(), l.end(), [&](int a, int b) { return position[a] < position[b]; });
  return order;
}

// The block graph of A + Aᵀ for blocks given per DOF.
std::vector<char> block_graph(const SparsePattern& pattern, const std::vector<int>& block_of, int m) {
  std::vector<char> adj(static_cast<size_t>(m) * m, 0);
  const auto& outer = pattern.outer();
  const auto& inner = pattern.inner();
  for (int c = 0; c < pattern.size(); ++c)
    for (int e = outer[c]; e < outer[c + 1]; ++e) {
      const int i = block_of[inner[e]], j = block_of[c];
      if (i != j) adj[static_cast<size_t>(i) * m + j] = adj[static_cast<size_t>(j) * m + i] = 1;
    }
  return adj;
}

// In-place LU with partial pivoting of the s × s column-major block `a`, as LAPACK's
// unblocked dgetf2 does it: per column the entry of largest magnitude below the diagonal as
// pivot (swaps[j]: the row exchanged with row j), its reciprocal 1/u_jj (one division per
// pivot, kept at a[s² + j] for the substitutions), the column below multiplied by it, then
// the rank-one update of the trailing columns (vectorised down each column). L (unit lower)
// ends below the diagonal, U on and above, the s reciprocals of U's diagonal after them (the
// block's storage is s² + s doubles). False on a zero or non-finite pivot.
// S > 0 fixes s at compile time (fully unrolled loops for the 3- and 6-DOF blocks of FEM
// nodes and rigid bodies: the same operations in the same order).
template <int S>
inline __attribute__((always_inline)) bool factor_block_impl(double* a, int s_dynamic, int* swaps) {
  const int s = S > 0 ? S : s_dynamic;
  for (int j = 0; j < s; ++j) {
    double* aj = a + j * s;
    int p = j;
    double biggest = std::abs(aj[j]);
    for (int i = j + 1; i < s; ++i)
      if (std::abs(aj[i]) > biggest) {
        biggest = std::abs(aj[i]);
        p = i;
      }
    swaps[j] = p;
    if (biggest == 0.0) return false;
    if (p != j)
      for (int c = 0; c < s; ++c) std::swap(a[j + c * s], a[p + c * s]);
    const double reciprocal = 1.0 / aj[j];
    a[s * s + j] = reciprocal;
    for (int i = j + 1; i < s; ++i) aj[i] *= reciprocal;
    for (int c = j + 1; c < s; ++c) {
      double* ac = a + c * s;
      const double f = ac[j];
      for (int i = j + 1; i < s; ++i) ac[i] -= aj[i] * f;
    }
  }
  for (int j = 0; j < s; ++j)
    if (!std::isfinite(a[j + j * s]) || !std::isfinite(a[s * s + j])) return false;
  return true;
}

__attribute__((target_clones("avx2", "default"))) bool factor_block(double* a, int s, int* swaps) {
  if (s == 3) return factor_block_impl<3>(a, s, swaps);
  if (s == 6) return factor_block_impl<6>(a, s, swaps);
  return factor_block_impl<0>(a, s, swaps);
}

// Diagonal blocks of at least this many DOFs are factorised by LAPACK's blocked dgetrf
// (OpenBLAS as installed: its GEMM kernels on panels of the trailing matrix) instead of
// factor_block's rank-one updates: on the soft ball's 141-DOF root block (the last 47
// nodes, whose fronts nest) 3× faster; 48 DOFs already 3× (docs/solver.md). Smaller blocks
// (FEM nodes, rigid bodies, the soft-feet quadruped's blocks of ≤ 42 DOFs) keep the loops.
constexpr int kLapackMinBlock = 48;

// factor_block's result for D (s × s, column-major, in place; swaps 0-based; U's reciprocal
// diagonal at a[s² + j]) from dgetrf for large blocks: the same partial pivoting (largest
// magnitude in the column) and the same packed L \ U and row interchanges, with the updates
// blocked (dgetrf's own arithmetic), so the same factors up to round-off. False on an
// exactly zero or a non-finite pivot.
bool factor_diagonal_block(double* a, int s, int* swaps) {
#ifdef ADDSIM_HAVE_LAPACK
  if (s >= kLapackMinBlock) {
    int info = 0;
    dgetrf_(&s, &s, a, &s, swaps, &info);
    for (int j = 0; j < s; ++j) --swaps[j];
    if (info != 0) return false;
    for (int j = 0; j < s; ++j) {
      a[s * s + j] = 1.0 / a[j + j * s];
      if (!std::isfinite(a[j + j * s]) || !std::isfinite(a[s * s + j])) return false;
    }
    return true;
  }
#endif
  return factor_block(a, s, swaps);
}

// W ← D⁻¹ W for the s × t panel W (column-major) with D = P⁻¹ L U packed in `f` by
// factor_block: per column the row swaps in order (P), then L y = y eliminating one unknown
// at a time from the rows below, then U x = y from the last unknown up, each unknown
// multiplied by U's reciprocal diagonal entry (f[s² + j]; no division) — column-oriented,
// so that the inner loops run down contiguous columns of L and U (vectorised), in place.
// S > 0 fixes s at compile time (fully unrolled loops for the 3- and 6-DOF blocks of FEM
// nodes and rigid bodies: the same operations in the same order).
// For S > 0 the column is held in registers: loaded through the permutation the row swaps
// compose to (computed from `swaps` alone, so it does not wait for the column's values, as a
// chain of swaps in memory would in a substitution), solved, stored back.
template <int S>
inline void solve_columns_impl(const double* f, const int* swaps, double* w, int s_dynamic, int t) {
  const int s = S > 0 ? S : s_dynamic;
  if constexpr (S > 0) {
    int perm[S];
    for (int i = 0; i < S; ++i) perm[i] = i;
    for (int i = 0; i < S; ++i) std::swap(perm[i], perm[swaps[i]]);
    for (int b = 0; b < t; ++b) {
      double* column = w + b * S;
      double x[S];
      for (int i = 0; i < S; ++i) x[i] = column[perm[i]];
      for (int j = 0; j < S - 1; ++j) {
        const double* lj = f + j * S;
        for (int i = j + 1; i < S; ++i) x[i] -= lj[i] * x[j];
      }
      for (int j = S - 1; j >= 0; --j) {
        const double* uj = f + j * S;
        x[j] = x[j] * f[S * S + j];
        for (int i = 0; i < j; ++i) x[i] -= uj[i] * x[j];
      }
      for (int i = 0; i < S; ++i) column[i] = x[i];
    }
    return;
  }
  for (int b = 0; b < t; ++b) {
    double* x = w + b * s;
    for (int i = 0; i < s; ++i) std::swap(x[i], x[swaps[i]]);
    for (int j = 0; j < s - 1; ++j) {
      const double* lj = f + j * s;
      const double xj = x[j];
      for (int i = j + 1; i < s; ++i) x[i] -= lj[i] * xj;
    }
    for (int j = s - 1; j >= 0; --j) {
      const double* uj = f + j * s;
      const double xj = x[j] * f[s * s + j];
      x[j] = xj;
      for (int i = 0; i < j; ++i) x[i] -= uj[i] * xj;
    }
  }
}

// Four doubles as one GCC vector: one AVX instruction per operation in the avx2 clone of
// solve_columns, two SSE2 ones in its baseline clone; element-wise IEEE operations, no fused
// multiply–add (GCC's avx2 target does not enable FMA), so every lane gets the scalar's bits.
typedef double Lane4 __attribute__((vector_size(32)));

// Panels of at most this many rows go through the four-column lanes (a stack array of s
// vectors); taller ones (none on the shipped scenes: their wide blocks have empty fronts)
// keep the column loop.
constexpr int kMaxLaneRows = 64;

// solve_columns_impl on four columns at once, lane l holding column b + l: each lane does
// exactly the scalar column's operations in the same order — the row swaps (applied as the
// permutation `perm` they compose to, while the four columns are loaded into the lanes: a
// swap only moves values), each L elimination, each product with 1/u_jj and each U
// elimination — so the four results are those of solve_columns_impl to the bit. The four
// independent chains share one vector product per unknown. `x`: s vectors of scratch.
template <int S>
inline __attribute__((always_inline)) void solve_four_columns(const double* f, const int* perm, double* w,
                                                              int s_dynamic, Lane4* x) {
  const int s = S > 0 ? S : s_dynamic;
  for (int i = 0; i < s; ++i) {
    const int p = perm[i];
    const double lanes[4] = {w[p], w[s + p], w[2 * s + p], w[3 * s + p]};
    __builtin_memcpy(&x[i], lanes, sizeof lanes);
  }
  for (int j = 0; j < s - 1; ++j) {
    const double* lj = f + j * s;
    const Lane4 xj = x[j];
    for (int i = j + 1; i < s; ++i) {
      const double l = lj[i];
      x[i] -= Lane4{l, l, l, l} * xj;
    }
  }
  for (int j = s - 1; j >= 0; --j) {
    const double* uj = f + j * s;
    const double d = f[s * s + j];
    const Lane4 xj = x[j] * Lane4{d, d, d, d};
    x[j] = xj;
    for (int i = 0; i < j; ++i) {
      const double u = uj[i];
      x[i] -= Lane4{u, u, u, u} * xj;
    }
  }
  for (int i = 0; i < s; ++i) {
    w[i] = x[i][0];
    w[s + i] = x[i][1];
    w[2 * s + i] = x[i][2];
    w[3 * s + i] = x[i][3];
  }
}

// The panel in groups of four columns (lanes), the remaining t mod 4 columns one by one.
template <int S>
inline __attribute__((always_inline)) void solve_panel(const double* f, const int* swaps, double* w, int s_dynamic,
                                                       int t) {
  const int s = S > 0 ? S : s_dynamic;
  const int four = s <= kMaxLaneRows ? t - t % 4 : 0;
  if (four > 0) {
    int perm[S > 0 ? S : kMaxLaneRows];
    for (int i = 0; i < s; ++i) perm[i] = i;
    for (int i = 0; i < s; ++i) std::swap(perm[i], perm[swaps[i]]);
    if constexpr (S > 0) {
      Lane4 x[S];
      for (int b = 0; b < four; b += 4) solve_four_columns<S>(f, perm, w + b * s, s, x);
    } else {
      Lane4 x[kMaxLaneRows];
      for (int b = 0; b < four; b += 4) solve_four_columns<S>(f, perm, w + b * s, s, x);
    }
  }
  solve_columns_impl<S>(f, swaps, w + four * s, s, t - four);
}

__attribute__((target_clones("avx2", "default"))) void solve_columns(const double* f, const int* swaps, double* w,
                                                                    int s, int t) {
  if (s == 3) {
    solve_panel<3>(f, swaps, w, s, t);
  } else if (s == 6) {
    solve_panel<6>(f, swaps, w, s, t);
  } else {
    solve_panel<0>(f, swaps, w, s, t);
  }
}

// The diagonal solves y_l ← D_l⁻¹ y_l of `count` (2 … 4) blocks of s DOFs at once, lane l
// holding block l (a missing lane repeats block 0 and is not stored): each lane does exactly
// solve_columns_impl's operations on one column in the same order — the row swaps (as the
// permutation they compose to), each L elimination, each product with 1/u_jj, each U
// elimination — so each block gets the bits of its own solve. Independent blocks' dependent
// chains, which a substitution otherwise waits out one block after another, share one vector
// operation per step. `x`: s vectors of scratch.
template <int S>
inline __attribute__((always_inline)) void solve_blocks_impl(const double* const* factors, const int* const* swaps,
                                                             double* const* y, int count, int s_dynamic, Lane4* x) {
  const int s = S > 0 ? S : s_dynamic;
  const double* f[4];
  const double* v[4];
  int perm[4][S > 0 ? S : kMaxLaneRows];
  for (int l = 0; l < 4; ++l) {
    const int b = l < count ? l : 0;
    f[l] = factors[b];
    v[l] = y[b];
    for (int i = 0; i < s; ++i) perm[l][i] = i;
    for (int i = 0; i < s; ++i) std::swap(perm[l][i], perm[l][swaps[b][i]]);
  }
  for (int i = 0; i < s; ++i) x[i] = Lane4{v[0][perm[0][i]], v[1][perm[1][i]], v[2][perm[2][i]], v[3][perm[3][i]]};
  for (int j = 0; j < s - 1; ++j) {
    const int c = j * s;
    const Lane4 xj = x[j];
    for (int i = j + 1; i < s; ++i) x[i] -= Lane4{f[0][c + i], f[1][c + i], f[2][c + i], f[3][c + i]} * xj;
  }
  for (int j = s - 1; j >= 0; --j) {
    const int c = j * s;
    const int r = s * s + j;
    const Lane4 xj = x[j] * Lane4{f[0][r], f[1][r], f[2][r], f[3][r]};
    x[j] = xj;
    for (int i = 0; i < j; ++i) x[i] -= Lane4{f[0][c + i], f[1][c + i], f[2][c + i], f[3][c + i]} * xj;
  }
  for (int l = 0; l < count; ++l)
    for (int i = 0; i < s; ++i) y[l][i] = x[i][l];
}

__attribute__((target_clones("avx2", "default"))) void solve_blocks(const double* const* factors,
                                                                   const int* const* swaps, double* const* y,
                                                                   int count, int s) {
  if (s == 3) {
    Lane4 x[3];
    solve_blocks_impl<3>(factors, swaps, y, count, s, x);
  } else if (s == 6) {
    Lane4 x[6];
    solve_blocks_impl<6>(factors, swaps, y, count, s, x);
  } else {
    Lane4 x[kMaxLaneRows];
    solve_blocks_impl<0>(factors, swaps, y, count, s, x);
  }
}

// x ← D⁻ᵀ x, D = P⁻¹ L U packed in `f`: Dᵀ = Uᵀ Lᵀ P, so Uᵀ y = x forwards (each sum times
// U's reciprocal diagonal entry f[s² + i]), Lᵀ z = y backwards (unit diagonal), both as dot
// products down the columns of U and L, then x = Pᵀ z: the row swaps in reverse order.
void solve_transposed_columns(const double* f, const int* swaps, double* x, int s) {
  for (int i = 0; i < s; ++i) {
    const double* ui = f + i * s;
    double sum = x[i];
    for (int j = 0; j < i; ++j) sum -= ui[j] * x[j];
    x[i] = sum * f[s * s + i];
  }
  for (int i = s - 2; i >= 0; --i) {
    const double* li = f + i * s;
    double sum = x[i];
    for (int j = i + 1; j < s; ++j) sum -= li[j] * x[j];
    x[i] = sum;
  }
  for (int i = s - 1; i >= 0; --i) std::swap(x[i], x[swaps[i]]);
}

// column[a] = (C v)_a for the rows a = 0 … rows − 1 of the column panel C (column-major,
// leading dimension ld) and its s entries v: each entry summed over r in order
// (c_a0 v_0 + c_a1 v_1 + …) into the contiguous work column, so that the products vectorise
// over a (no scattered stores in the loop). S > 0 fixes s at compile time (one pass over a,
// r unrolled); otherwise one pass per r. Each entry's sum does not depend on `rows`.
template <int S>
inline void panel_times_impl(double* column, const double* c, const double* v, int s_dynamic, int rows, int ld) {
  if constexpr (S > 0) {
    for (int a = 0; a < rows; ++a) {
      double u = c[a] * v[0];
      for (int r = 1; r < S; ++r) u += c[a + r * ld] * v[r];
      column[a] = u;
    }
  } else {
    for (int a = 0; a < rows; ++a) column[a] = c[a] * v[0];
    for (int r = 1; r < s_dynamic; ++r) {
      const double* cr = c + r * ld;
      const double vr = v[r];
      for (int a = 0; a < rows; ++a) column[a] += cr[a] * vr;
    }
  }
}

// y[front[a]] −= (C v)_a (the forward substitution's push of block k into its front): the
// products into the work column, then subtracted where the front says.
template <int S>
inline void push_front_impl(double* y, const int* front, const double* c, const double* v, int s_dynamic, int t,
                            double* column) {
  panel_times_impl<S>(column, c, v, s_dynamic, t, t);
  for (int a = 0; a < t; ++a) y[front[a]] -= column[a];
}

// data[map[a + b t]] −= (C W)(a, b) for the t × s column panel C and the s × t row panel W,
// for the rows a0 ≤ a < a1 of the columns b0 ≤ b < b1 (all of them: 0, t, 0, t): column by
// column, each entry of C W summed over r in order (c_a0 w_0b + c_a1 w_1b + …) into the work
// column (vectorised over a) and then subtracted where the map says. Each entry's sum does
// not depend on the range, so an update done in parts (two threads) gives the same numbers.
// S > 0 fixes s at compile time (the 3- and 6-DOF blocks). Compiled for AVX2 and the
// baseline, chosen at load time; both clones do the same element-wise operations in the
// same order (GCC's avx2 target has no FMA to contract them), so they give the same numbers
// to the bit.
template <int S>
inline void schur_update_impl(double* data, const double* c, const double* w, const int* map, int s_dynamic, int t,
                              int a0, int a1, int b0, int b1, double* column) {
  const int s = S > 0 ? S : s_dynamic;
  const int rows = a1 - a0;
  for (int b = b0; b < b1; ++b) {
    panel_times_impl<S>(column, c + a0, w + b * s, s, rows, t);
    const int* m = map + b * t + a0;
    for (int a = 0; a < rows; ++a) data[m[a]] -= column[a];
  }
}

__attribute__((target_clones("avx2", "default"))) void schur_update(double* data, const double* c, const double* w,
                                                                   const int* map, int s, int t, int a0, int a1,
                                                                   int b0, int b1, double* column) {
  if (s == 3) {
    schur_update_impl<3>(data, c, w, map, s, t, a0, a1, b0, b1, column);
  } else if (s == 6) {
    schur_update_impl<6>(data, c, w, map, s, t, a0, a1, b0, b1, column);
  } else {
    schur_update_impl<0>(data, c, w, map, s, t, a0, a1, b0, b1, column);
  }
}

// v −= W y_front for the s × t row panel W (column-major): the s sums accumulated over the
// front's entries in order (the back substitution's pull of block k's front).
template <int S>
inline void pull_front_impl(double* v, const int* front, const double* w, const double* y, int s_dynamic, int t) {
  const int s = S > 0 ? S : s_dynamic;
  double u[S > 0 ? S : 1];
  if constexpr (S > 0) {
    for (int r = 0; r < S; ++r) u[r] = 0.0;
    for (int a = 0; a < t; ++a) {
      const double ya = y[front[a]];
      for (int r = 0; r < S; ++r) u[r] += w[r + a * S] * ya;
    }
    for (int r = 0; r < S; ++r) v[r] -= u[r];
  } else {
    for (int r = 0; r < s; ++r) {
      double sum = 0.0;
      for (int a = 0; a < t; ++a) sum += w[r + a * s] * y[front[a]];
      v[r] -= sum;
    }
  }
}

__attribute__((target_clones("avx2", "default"))) void push_front(double* y, const int* front, const double* c,
                                                                 const double* v, int s, int t, double* column) {
  if (s == 3) {
    push_front_impl<3>(y, front, c, v, s, t, column);
  } else if (s == 6) {
    push_front_impl<6>(y, front, c, v, s, t, column);
  } else {
    push_front_impl<0>(y, front, c, v, s, t, column);
  }
}

void pull_front(double* v, const int* front, const double* w, const double* y, int s, int t) {
  if (s == 3) {
    pull_front_impl<3>(v, front, w, y, s, t);
  } else if (s == 6) {
    pull_front_impl<6>(v, front, w, y, s, t);
  } else {
    pull_front_impl<0>(v, front, w, y, s, t);
  }
}

}  // namespace

namespace block_schur_kernels {

namespace {

// `f` (s × s) followed by the reciprocals of its diagonal, as factor_block stores them.
std::vector<double> with_reciprocal_diagonal(const double* f, int s) {
  std::vector<double> packed(f, f + static_cast<size_t>(s) * s);
  for (int j = 0; j < s; ++j) packed.push_back(1.0 / f[j + j * s]);
  return packed;
}

}  // namespace

void solve_panel(const double* f, const int* swaps, double* w, int s, int t) {
  solve_columns(with_reciprocal_diagonal(f, s).data(), swaps, w, s, t);
}

void solve_panel_by_columns(const double* f, const int* swaps, double* w, int s, int t) {
  solve_columns_impl<0>(with_reciprocal_diagonal(f, s).data(), swaps, w, s, t);
}

}  // namespace block_schur_kernels

BlockSchurLu::BlockSchurLu(const SparsePattern* pattern) : pattern_(pattern) {
  // Large diagonal blocks go through LAPACK (dgetrf): one BLAS thread, no idle pool.
  limit_blas_threads();
  const int n = pattern->size();
  const auto& outer = pattern->outer();
  const auto& inner = pattern->inner();

  // Column groups: runs of consecutive columns with the same row list inside each DOF block.
  std::vector<int> bodies = pattern->blocks();
  if (bodies.size() < 2) bodies = {0, n};
  ADDSIM_CHECK(bodies.front() == 0 && bodies.back() == n && std::is_sorted(bodies.begin(), bodies.end()),
               "BlockSchurLu: DOF blocks must cover 0 … n in order");
  const auto same_rows = [&](int a, int b) {
    return outer[a + 1] - outer[a] == outer[b + 1] - outer[b] &&
           std::equal(inner.begin() + outer[a], inner.begin() + outer[a + 1], inner.begin() + outer[b]);
  };
  std::vector<char> body_start(n + 1, 0);
  for (int s : bodies) body_start[s] = 1;
  std::vector<int> group_start;
  for (int c = 0; c < n; ++c)
    if (body_start[c] || !same_rows(c - 1, c)) group_start.push_back(c);
  group_start.push_back(n);
  groups_ = static_cast<int>(group_start.size()) - 1;
  std::vector<int> group_of(n), group_size(groups_);
  for (int g = 0; g < groups_; ++g) {
    group_size[g] = group_start[g + 1] - group_start[g];
    std::fill(group_of.begin() + group_start[g], group_of.begin() + group_start[g + 1], g);
  }

  // Order the groups by minimum degree.
  std::vector<char> group_adj = block_graph(*pattern, group_of, groups_);
  std::vector<std::vector<int>> group_later;
  const std::vector<int> group_order = eliminate(group_adj, group_size, group_later);

  // Blocks: fundamental supernodes of that elimination — a group joins the block of the
  // group eliminated just before it if that one's later neighbours are exactly this group
  // and this group's own (the same column structure below the diagonal), so a chain of
  // groups whose fronts nest is factorised as one dense block.
  std::vector<int> group_block(groups_);
  for (size_t p = 0; p < group_order.size(); ++p) {
    const int g = group_order[p];
    const int prev = p > 0 ? group_order[p - 1] : -1;
    const bool nested = prev >= 0 && !group_later[prev].empty() && group_later[prev][0] == g &&
                        group_later[prev].size() == group_later[g].size() + 1 &&
                        std::equal(group_later[g].begin(), group_later[g].end(), group_later[prev].begin() + 1);
    if (!nested) dofs_.emplace_back();
    group_block[g] = static_cast<int>(dofs_.size()) - 1;
    for (int d = group_start[g]; d < group_start[g + 1]; ++d) dofs_.back().push_back(d);
  }
  const int m = blocks();
  std::vector<int>& block_of = block_of_dof_;
  block_of.resize(n);
  local_.resize(n);
  for (int k = 0; k < m; ++k) {
    for (int a = 0; a < size(k); ++a) {
      block_of[dofs_[k][a]] = k;
      local_[dofs_[k][a]] = a;
    }
  }

  // Each block's front: the DOFs of its last group's later neighbours (exact: for nested
  // groups these contain every later neighbour of the block's other groups outside it).
  // Blocks were numbered in elimination order.
  for (int k = 0; k < m; ++k) order_.push_back(k);
  std::vector<int> group_position(groups_);
  for (int p = 0; p < groups_; ++p) group_position[group_order[p]] = p;
  const std::vector<char> original = block_graph(*pattern, group_of, groups_);
  for (int g = 0; g < groups_; ++g)
    for (int j : group_later[g])
      if (!original[static_cast<size_t>(g) * groups_ + j]) fill_pairs_ += 2;
  later_.assign(m, {});
  later_dofs_.assign(m, {});
  std::vector<int> last_group(m, -1);
  for (int g : group_order) last_group[group_block[g]] = g;
  for (int k = 0; k < m; ++k) {
    for (int j : group_later[last_group[k]]) {
      for (int d = group_start[j]; d < group_start[j + 1]; ++d) later_dofs_[k].push_back(d);
      if (later_[k].empty() || later_[k].back() != group_block[j]) later_[k].push_back(group_block[j]);
    }
    std::sort(later_[k].begin(), later_[k].end());
    later_[k].erase(std::unique(later_[k].begin(), later_[k].end()), later_[k].end());
  }
  int total = 0;
  diag_base_.resize(m);
  row_base_.resize(m);
  col_base_.resize(m);
  for (int k = 0; k < m; ++k) {
    const int t = width(k);
    diag_base_[k] = total;
    total += size(k) * size(k) + size(k);  // D_k, then the reciprocals of U_k's diagonal
    row_base_[k] = total;
    total += size(k) * t;
    col_base_[k] = total;
    total += t * size(k);
  }
  data_.assign(total, 0.0);
  // Each front's DOFs sorted, with their places in the front, for a binary search.
  std::vector<std::vector<std::pair<int, int>>> sorted_front(m);
  for (int k = 0; k < m; ++k) {
    const auto& f = later_dofs_[k];
    for (int a = 0; a < static_cast<int>(f.size()); ++a) sorted_front[k].emplace_back(f[a], a);
    std::sort(sorted_front[k].begin(), sorted_front[k].end());
  }
  const auto front_position = [&](int k, int dof) {
    const auto& f = sorted_front[k];
    const auto it = std::lower_bound(f.begin(), f.end(), std::make_pair(dof, -1));
    ADDSIM_CHECK(it != f.end() && it->first == dof, "BlockSchurLu: entry outside the fill");
    return it->second;
  };
  // Index in data_ of entry (r, c) (DOFs): in D of their block if they share one, else in
  // the row panel of r's block if it goes first (c is in its front), else in the column
  // panel of c's block (r is in its front).
  const auto locate = [&](int r, int c) {
    const int i = block_of[r], j = block_of[c];
    if (i == j) return diag_base_[i] + local_[r] + local_[c] * size(i);
    if (i < j) return row_base_[i] + local_[r] + front_position(i, c) * size(i);
    return col_base_[j] + front_position(j, r) + local_[c] * width(j);
  };
  slot_.resize(pattern->nnz());
  for (int c = 0; c < n; ++c)
    for (int e = outer[c]; e < outer[c + 1]; ++e) slot_[e] = locate(inner[e], c);
  update_base_.resize(m);
  for (int k = 0; k < m; ++k) {
    update_base_[k] = static_cast<int>(update_map_.size());
    const auto& f = later_dofs_[k];
    for (int c : f)
      for (int r : f) update_map_.push_back(locate(r, c));
  }

  // The permuted vector of the substitutions: blocks one after another in elimination order,
  // each in the order of its dense LU; each front as places there.
  position_.resize(n);
  offset_.resize(m + 1);
  offset_[0] = 0;
  for (int k = 0; k < m; ++k) {
    offset_[k + 1] = offset_[k] + size(k);
    for (int a = 0; a < size(k); ++a) position_[dofs_[k][a]] = offset_[k] + a;
  }
  front_base_.resize(m + 1);
  for (int k = 0; k < m; ++k) {
    front_base_[k] = static_cast<int>(front_position_.size());
    for (int d : later_dofs_[k]) front_position_.push_back(position_[d]);
  }
  front_base_[m] = static_cast<int>(front_position_.size());
  swaps_.resize(n);

  // Work column of the substitutions' products (t) and the permuted vector: sized once, so that neither factorize() nor solve() allocates.
  int widest = 0;
  for (int k = 0; k < m; ++k) widest = std::max(widest, width(k));
  pushed_.resize(widest);
  permuted_.resize(n);

  // The forward substitution's lane groups: block k, unless an earlier group took it, with
  // the next blocks of its size (at most kMaxLaneRows DOFs, up to four in all, looking
  // kLaneWindow blocks ahead) that no block from k up to them has in its front — so no push
  // between changes their entries, and solving them early gives the same values (the feet,
  // eliminated independently until their shins).
  constexpr int kLaneWindow = 64;
  std::vector<char> taken(m, 0), touched(m, 0);
  std::vector<int> marked;
  lane_base_.assign(m + 1, 0);
  for (int k = 0; k < m; ++k) {
    lane_base_[k] = static_cast<int>(lane_blocks_.size());
    if (taken[k]) continue;
    lane_blocks_.push_back(k);
    taken[k] = 1;
    if (size(k) > kMaxLaneRows) continue;
    const int end = std::min(m, k + kLaneWindow);
    for (int j = k; j < end && static_cast<int>(lane_blocks_.size()) - lane_base_[k] < 4; ++j) {
      if (j > k && !taken[j] && !touched[j] && size(j) == size(k)) {
        lane_blocks_.push_back(j);
        taken[j] = 1;
      }
      for (int i : later_[j])
        if (!touched[i]) {
          touched[i] = 1;
          marked.push_back(i);
        }
    }
    for (int i : marked) touched[i] = 0;
    marked.clear();
  }
  lane_base_[m] = static_cast<int>(lane_blocks_.size());
  plan_parallel();
}

bool BlockSchurLu::eliminate_block(int k) {
  const int s = size(k), t = width(k);
  double* d = data_.data() + diag_base_[k];
  int* swaps = swaps_.data() + offset_[k];
  if (!factor_diagonal_block(d, s, swaps)) return false;
  // W_k = D_k⁻¹ A_k,N(k) in place of the row panel.
  if (t > 0) solve_columns(d, swaps, data_.data() + row_base_[k], s, t);
  return true;
}

void BlockSchurLu::schur(int k, int part, double* work) {
  // A_N(k),N(k) −= C_k W_k: all of it, or the part of the entries of block k's subtree (the
  // front's first inside_[k] DOFs: the rows and columns of the update that involve them), or
  // the rest (rows and columns both beyond them).
  const int t = width(k);
  if (t == 0) return;
  const int in = part == kWholeUpdate ? t : inside_[k];
  const double* c = data_.data() + col_base_[k];
  const double* w = data_.data() + row_base_[k];
  const int* map = update_map_.data() + update_base_[k];
  if (part == kOutsideUpdate) {
    if (in < t) schur_update(data_.data(), c, w, map, size(k), t, in, t, in, t, work);
    return;
  }
  schur_update(data_.data(), c, w, map, size(k), t, 0, t, 0, in, work);
  if (in < t) schur_update(data_.data(), c, w, map, size(k), t, 0, in, in, t, work);
}

bool BlockSchurLu::eliminate_bin(int bin, double* work) {
  for (int k : bin_[bin]) {
    if (!eliminate_block(k)) return false;
    schur(k, kInsideUpdate, work);
  }
  return true;
}

bool BlockSchurLu::eliminate_side(int side, double* work) {
  const bool ok = eliminate_bin(side, work);
  // Both bins must be done before any outside update: a destination entry gets updates
  // from blocks of both bins, in elimination order.
  bins_done_.fetch_add(1, std::memory_order_acq_rel);
  WorkerThread::spin_until_at_least(bins_done_, 2);
  if (!ok) return false;
  for (int i = 0; i < outside_lead_; ++i) {
    const int k = -1 - serial_[i];
    const int t = width(k), in = inside_[k], split = outside_split_[k];
    const int b0 = side == 0 ? in : split, b1 = side == 0 ? split : t;
    if (b0 < b1)
      schur_update(data_.data(), data_.data() + col_base_[k], data_.data() + row_base_[k],
                   update_map_.data() + update_base_[k], size(k), t, in, t, b0, b1, work);
  }
  return true;
}

bool BlockSchurLu::factorize(const VecX& values) {
  values_ = values;
  std::fill(data_.begin(), data_.end(), 0.0);
  for (size_t e = 0; e < slot_.size(); ++e) data_[slot_[e]] = values[e];
  if (worker_ && !bin_[0].empty() && worker_->available()) {
    // The two sets of subtrees concurrently (each writing only its own subtrees' entries),
    // then, after a barrier, the leading outside updates split by destination column; then
    // the rest and the remaining outside updates, in elimination order. Every entry gets
    // its updates in elimination order either way. The task captures two pointers, which
    // std::function keeps without a heap allocation.
    bool worker_ok = false, own_ok = false;
    bins_done_.store(0, std::memory_order_relaxed);
    worker_->run_alongside([this, &worker_ok] { worker_ok = eliminate_side(1, worker_pushed_.data()); },
                           [&] { own_ok = eliminate_side(0, pushed_.data()); });
    if (!worker_ok || !own_ok) return false;
    for (size_t i = outside_lead_; i < serial_.size(); ++i) {
      const int e = serial_[i];
      if (e < 0) {
        schur(-1 - e, kOutsideUpdate, pushed_.data());
      } else {
        if (!eliminate_block(e)) return false;
        schur(e, kWholeUpdate, pushed_.data());
      }
    }
  } else {
    for (int k : order_) {
      if (!eliminate_block(k)) return false;
      schur(k, kWholeUpdate, pushed_.data());
    }
  }
  factor_flops_ = total_factor_flops_;
  solve_flops_ = total_solve_flops_;
  return true;
}

void BlockSchurLu::plan_parallel() {
  const int m = blocks();
  // Flops per block (the counts of factorize, summed in elimination order).
  std::vector<double> flops(m);
  for (int k : order_) {
    const double s = size(k), t = width(k);
    flops[k] = 2.0 * s * s * s / 3.0 + (t > 0 ? 2.0 * s * s * t + 2.0 * s * t * t : 0.0);
    total_factor_flops_ += 2.0 * s * s * s / 3.0;
    total_solve_flops_ += 2.0 * s * s;
    if (t == 0) continue;
    total_factor_flops_ += 2.0 * s * s * t + 2.0 * s * t * t;
    total_solve_flops_ += 4.0 * s * t;
  }
  // Elimination tree: block k's parent is the first block of its front (blocks are numbered
  // in elimination order and later_ is sorted). Every block of a front must be an ancestor,
  // or the subtree argument fails: then no schedule.
  std::vector<int> parent(m, -1);
  std::vector<std::vector<int>> children(m);
  std::vector<int> roots;
  for (int k = 0; k < m; ++k) {
    if (later_[k].empty()) {
      roots.push_back(k);
      continue;
    }
    parent[k] = later_[k].front();
    children[parent[k]].push_back(k);
  }
  // Depth-first entry and exit numbers: a is an ancestor of k (or k itself) iff k's entry
  // number lies in a's range.
  std::vector<int> enter(m, 0), leave(m, 0);
  {
    int clock = 0;
    std::vector<std::pair<int, size_t>> path;
    for (int r : roots) {
      path.emplace_back(r, 0);
      enter[r] = clock++;
      while (!path.empty()) {
        auto& [k, next] = path.back();
        if (next < children[k].size()) {
          const int c = children[k][next++];
          enter[c] = clock++;
          path.emplace_back(c, 0);
        } else {
          leave[k] = clock;
          path.pop_back();
        }
      }
    }
  }
  const auto in_subtree = [&](int k, int r) { return enter[r] <= enter[k] && enter[k] < leave[r]; };
  for (int k = 0; k < m; ++k)
    for (int b : later_[k])
      if (b == k || !in_subtree(k, b)) return;
  // Subtree flops (children before parents: numbered before them).
  std::vector<double> subtree(flops);
  for (int k = 0; k < m; ++k)
    if (parent[k] >= 0) subtree[parent[k]] += subtree[k];
  double total = 0.0;
  for (int r : roots) total += subtree[r];
  // Units: the largest subtrees of at most a fraction of the flops, found from the roots
  // down (the blocks above them stay in the serial phase); per block of a unit, the DOFs of
  // its front inside the unit — a prefix of the front, as fronts hold ancestors in
  // elimination order and those inside number at most the root (false if not); the units
  // in two bins of about equal flops, largest first into the lighter one (ties: bin 0).
  struct Plan {
    std::vector<int> unit_of, inside, bin_of;
    double load[2] = {0.0, 0.0};
    double makespan = 0.0;
  };
  const auto make_plan = [&](double fraction, Plan& plan) {
    std::vector<int> units;
    std::vector<int> stack(roots.rbegin(), roots.rend());
    while (!stack.empty()) {
      const int r = stack.back();
      stack.pop_back();
      if (subtree[r] <= fraction * total) {
        units.push_back(r);
      } else {
        for (auto c = children[r].rbegin(); c != children[r].rend(); ++c) stack.push_back(*c);
      }
    }
    if (units.size() < 2) return false;
    plan.unit_of.assign(m, -1);
    for (int r : units)
      for (int k = 0; k <= r; ++k)
        if (in_subtree(k, r)) plan.unit_of[k] = r;
    plan.inside.assign(m, 0);
    std::vector<double> work(m, 0.0);  // per unit root: its blocks' flops but the outside updates
    for (int k = 0; k < m; ++k) {
      const int u = plan.unit_of[k];
      if (u < 0) continue;
      const auto& front = later_dofs_[k];
      const int t = width(k);
      int in = 0;
      while (in < t && plan.unit_of[block_of_dof_[front[in]]] == u) ++in;
      for (int a = in; a < t; ++a)
        if (plan.unit_of[block_of_dof_[front[a]]] == u) return false;
      plan.inside[k] = in;
      work[u] += flops[k] - 2.0 * size(k) * (t - in) * (t - in);
    }
    std::stable_sort(units.begin(), units.end(), [&](int x, int y) { return work[x] > work[y]; });
    plan.bin_of.assign(m, -1);
    for (int r : units) {
      const int bin = plan.load[1] < plan.load[0] ? 1 : 0;
      plan.load[bin] += work[r];
      plan.bin_of[r] = bin;
    }
    // The serial phase follows the longer bin.
    plan.makespan = total - std::min(plan.load[0], plan.load[1]);
    return true;
  };
  // The finest subtrees are not always best: their roots' ancestors stay serial. The plan
  // of least estimated critical path (flops) among a few fractions.
  Plan best;
  bool found = false;
  for (double fraction : {0.5, 0.35, 0.25, 0.18, 0.12}) {
    Plan plan;
    if (make_plan(fraction, plan) && (!found || plan.makespan < best.makespan)) {
      best = std::move(plan);
      found = true;
    }
  }
  if (!found) return;
  inside_ = std::move(best.inside);
  for (int k = 0; k < m; ++k) {
    const int u = best.unit_of[k];
    if (u < 0) {
      serial_.push_back(k);
      continue;
    }
    bin_[best.bin_of[u]].push_back(k);
    if (inside_[k] < width(k)) serial_.push_back(-1 - k);
  }
  parallel_share_ = (best.load[0] + best.load[1]) / total;
  // The outside updates before the serial phase's first block write only entries of serial
  // blocks, which nothing else touches until then: split them between the threads by the
  // destination's column, at the place in elimination order (position_) that balances their
  // flops (2 s per row and column) — each entry stays with one thread, its updates in order.
  while (outside_lead_ < static_cast<int>(serial_.size()) && serial_[outside_lead_] < 0) ++outside_lead_;
  outside_split_.assign(m, 0);
  const auto column_place = [&](int k, int b) { return position_[later_dofs_[k][b]]; };
  const auto split_at = [&](int k, int place) {
    int b = inside_[k];
    while (b < width(k) && column_place(k, b) < place) ++b;
    return b;
  };
  double outside_total = 0.0;
  for (int i = 0; i < outside_lead_; ++i) {
    const int k = -1 - serial_[i];
    outside_total += 2.0 * size(k) * (width(k) - inside_[k]) * (width(k) - inside_[k]);
  }
  int best_place = 0;
  double best_cost = outside_total;
  for (int place = 0; place <= pattern_->size(); ++place) {
    double lower = 0.0;
    for (int i = 0; i < outside_lead_; ++i) {
      const int k = -1 - serial_[i];
      const int rows = width(k) - inside_[k];
      lower += 2.0 * size(k) * rows * (split_at(k, place) - inside_[k]);
    }
    if (const double cost = std::max(lower, outside_total - lower); cost < best_cost) {
      best_cost = cost;
      best_place = place;
      outside_caller_share_ = lower / outside_total;
    }
  }
  for (int i = 0; i < outside_lead_; ++i) {
    const int k = -1 - serial_[i];
    outside_split_[k] = split_at(k, best_place);
  }
  worker_pushed_.resize(pushed_.size());
}

void BlockSchurLu::substitute(const VecX& b, VecX& x, bool transpose, bool interleave) {
  const int n = static_cast<int>(b.size());
  double* y = permuted_.data();
  for (int d = 0; d < n; ++d) y[position_[d]] = b[d];
  const int m = blocks();
  using ConstMap = Eigen::Map<const MatX>;
  const auto own = [&](int k) { return Eigen::Map<VecX>(y + offset_[k], size(k)); };
  const auto pushed = [&](int k) { return pushed_.head(width(k)); };
  // pushed_ ← the front's entries of y, or y's front −= pushed_.
  const auto gather = [&](int k) {
    const int* f = front_position_.data() + front_base_[k];
    for (int a = 0; a < width(k); ++a) pushed_[a] = y[f[a]];
  };
  const auto scatter = [&](int k) {
    const int* f = front_position_.data() + front_base_[k];
    for (int a = 0; a < width(k); ++a) y[f[a]] -= pushed_[a];
  };
  if (!transpose) {
    // L z = b: z_k = D_k⁻¹ z_k, then z_N(k) −= C_k z_k; U x = z backwards: x_k −= W_k x_N(k).
    // Block k's lane group is solved when the substitution reaches k (no push before its
    // blocks' own places reaches them); the pushes stay in elimination order, so every entry
    // of y gets the same subtractions in the same order as block by block.
    for (int k = 0; k < m; ++k) {
      const int* group = lane_blocks_.data() + lane_base_[k];
      const int count = interleave ? lane_base_[k + 1] - lane_base_[k] : 1;
      if (!interleave || count == 1) {
        solve_columns(data_.data() + diag_base_[k], swaps_.data() + offset_[k], y + offset_[k], size(k), 1);
      } else if (count > 1) {
        const double* factors[4];
        const int* swaps[4];
        double* own[4];
        for (int l = 0; l < count; ++l) {
          factors[l] = data_.data() + diag_base_[group[l]];
          swaps[l] = swaps_.data() + offset_[group[l]];
          own[l] = y + offset_[group[l]];
        }
        solve_blocks(factors, swaps, own, count, size(k));
      }
      if (width(k) == 0) continue;
      push_front(y, front_position_.data() + front_base_[k], data_.data() + col_base_[k], y + offset_[k], size(k),
                 width(k), pushed_.data());
    }
    for (int k = m - 1; k >= 0; --k) {
      if (width(k) == 0) continue;
      pull_front(y + offset_[k], front_position_.data() + front_base_[k], data_.data() + row_base_[k], y, size(k),
                 width(k));
    }
  } else {
    // Uᵀ y = b (unit lower): y_N(k) −= W_kᵀ y_k; Lᵀ x = y backwards: x_k = D_k⁻ᵀ (y_k − C_kᵀ x_N(k)).
    for (int k = 0; k < m; ++k) {
      if (width(k) == 0) continue;
      pushed(k).noalias() = ConstMap(data_.data() + row_base_[k], size(k), width(k)).transpose() * own(k);
      scatter(k);
    }
    for (int k = m - 1; k >= 0; --k) {
      if (width(k) > 0) {
        gather(k);
        own(k).noalias() -= ConstMap(data_.data() + col_base_[k], width(k), size(k)).transpose() * pushed(k);
      }
      solve_transposed_columns(data_.data() + diag_base_[k], swaps_.data() + offset_[k], y + offset_[k], size(k));
    }
  }
  x.resize(n);
  for (int d = 0; d < n; ++d) x[d] = y[position_[d]];
}

void BlockSchurLu::solve(const VecX& b, VecX& x, bool transpose) { solve_within(b, x, transpose, 0.0, false); }

void BlockSchurLu::solve_within(const VecX& b, VecX& x, bool transpose, double tolerance, bool stop_at_tolerance) {
  substitute(b, x, transpose, true);
  // No pivoting crosses blocks, so a badly conditioned diagonal block may cost digits; a
  // caller that asked for a tolerance gets no more refinement than it needs.
  refine_direct_solve(
      *pattern_, values_, b, x, transpose, kMaxRefinements, refinement_,
      [this](const VecX& rhs, VecX& out, bool t) { substitute(rhs, out, t, true); }, tolerance, stop_at_tolerance);
}

}  // namespace addsim
