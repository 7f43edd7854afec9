#include "addsim/solver/banded_lu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "addsim/core/error.h"

namespace addsim {

namespace {

// The band of the pattern under `order` (position filled in here).
BandOrdering measure_band(const SparsePattern& pattern, std::vector<int> order) {
  BandOrdering o;
  o.order = std::move(order);
  o.position.assign(o.order.size(), 0);
  for (int k = 0; k < static_cast<int>(o.order.size()); ++k) o.position[o.order[k]] = k;
  const auto& outer = pattern.outer();
  const auto& inner = pattern.inner();
  for (int c = 0; c < pattern.size(); ++c)
    for (int k = outer[c]; k < outer[c + 1]; ++k) {
      const int i = o.position[inner[k]], j = o.position[c];
      o.lower = std::max(o.lower, i - j);
      o.upper = std::max(o.upper, j - i);
    }
  return o;
}

// Adjacency of A + Aᵀ without the diagonal, each list sorted.
std::vector<std::vector<int>> symmetric_graph(const SparsePattern& pattern) {
  const int n = pattern.size();
  std::vector<std::vector<int>> adj(n);
  const auto& outer = pattern.outer();
  const auto& inner = pattern.inner();
  for (int c = 0; c < n; ++c)
    for (int k = outer[c]; k < outer[c + 1]; ++k)
      if (inner[k] != c) {
        adj[c].push_back(inner[k]);
        adj[inner[k]].push_back(c);
      }
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  return adj;
}

// Breadth-first level structure from `root` over the unvisited vertices of its component:
// the vertices in visiting order (neighbours by increasing degree, then index) and the
// number of levels.
int bfs(const std::vector<std::vector<int>>& adj, int root, std::vector<int>& visit_order,
        std::vector<int>& level, std::vector<int>& last_level) {
  visit_order.clear();
  last_level.clear();
  level[root] = 0;
  visit_order.push_back(root);
  std::vector<int> next;
  for (size_t head = 0; head < visit_order.size(); ++head) {
    const int v = visit_order[head];
    next.clear();
    for (int w : adj[v])
      if (level[w] < 0) {
        level[w] = level[v] + 1;
        next.push_back(w);
      }
    std::stable_sort(next.begin(), next.end(), [&](int a, int b) { return adj[a].size() < adj[b].size(); });
    visit_order.insert(visit_order.end(), next.begin(), next.end());
  }
  const int depth = level[visit_order.back()];
  for (int v : visit_order)
    if (level[v] == depth) last_level.push_back(v);
  return depth;
}

}  // namespace

BandOrdering natural_band(const SparsePattern& pattern) {
  std::vector<int> order(pattern.size());
  std::iota(order.begin(), order.end(), 0);
  return measure_band(pattern, std::move(order));
}

BandOrdering reverse_cuthill_mckee(const SparsePattern& pattern) {
  const int n = pattern.size();
  const auto adj = symmetric_graph(pattern);
  std::vector<int> order, visit, last;
  std::vector<int> done(n, 0), level(n, -1);
  order.reserve(n);
  for (int start = 0; start < n; ++start) {
    if (done[start]) continue;
    // Least-degree vertex of this component, then a pseudo-peripheral one (George & Liu):
    // restart from the least-degree vertex of the deepest level while the depth grows.
    int root = start;
    {
      std::vector<int> component_level(level);
      bfs(adj, start, visit, component_level, last);
      for (int v : visit)
        if (adj[v].size() < adj[root].size()) root = v;
    }
    int depth = -1;
    for (;;) {
      std::vector<int> trial_level(level);
      const int d = bfs(adj, root, visit, trial_level, last);
      if (d <= depth) break;
      depth = d;
      const int candidate = *std::min_element(last.begin(), last.end(), [&](int a, int b) {
        return adj[a].size() < adj[b].size();
      });
      if (candidate == root) break;
      root = candidate;
    }
    bfs(adj, root, visit, level, last);
    for (int v : visit) done[v] = 1;
    order.insert(order.end(), visit.begin(), visit.end());
  }
  std::reverse(order.begin(), order.end());
  return measure_band(pattern, std::move(order));
}

double band_flops(const BandOrdering& o) {
  const int n = static_cast<int>(o.order.size());
  double flops = 0.0;
  for (int j = 0; j < n; ++j) {
    const double below = std::min(o.lower, n - 1 - j), right = std::min(o.upper, n - 1 - j);
    flops += below + 2.0 * below * right;
  }
  return flops;
}

BandedLu::BandedLu(const SparsePattern* pattern, FactorizationPrecision precision)
    : pattern_(pattern), precision_(precision), n_(pattern->size()) {
  BandOrdering natural = natural_band(*pattern);
  BandOrdering rcm = reverse_cuthill_mckee(*pattern);
  ordering_ = band_flops(rcm) < band_flops(natural) ? std::move(rcm) : std::move(natural);
  kv_ = ordering_.lower + ordering_.upper;
  ldab_ = ordering_.lower + kv_ + 1;
  if (precision_ == FactorizationPrecision::kSingle) {
    // kSinglePad zero rows below each column's band and as many zeros around the work vector:
    // the float kernels round their row counts up to whole vectors (band_factor, band_solve).
    ldab_ += kSinglePad;
    ab_single_.assign(static_cast<size_t>(ldab_) * n_ + kSinglePad, 0.0f);
    work_single_.assign(n_ + 2 * kSinglePad, 0.0f);
  } else {
    ab_.assign(static_cast<size_t>(ldab_) * n_, 0.0);
    work_.assign(n_, 0.0);
  }
  pivot_.assign(n_, 0);
  // Entry (i, j) of the permuted matrix lives at ab(kv + i − j, j).
  const auto& outer = pattern->outer();
  const auto& inner = pattern->inner();
  slot_.resize(pattern->nnz());
  for (int c = 0; c < n_; ++c)
    for (int k = outer[c]; k < outer[c + 1]; ++k) {
      const int i = ordering_.position[inner[k]], j = ordering_.position[c];
      slot_[k] = kv_ + i - j + ldab_ * j;
    }
  // Runs of pattern entries that land on consecutive band slots (a column's rows of one point
  // block or more in the sheet's own order): factorize() copies them whole.
  runs_.clear();
  for (int k = 0; k < static_cast<int>(slot_.size()); ++k) {
    if (!runs_.empty() && runs_.back().src + runs_.back().len == k && runs_.back().dst + runs_.back().len == slot_[k])
      ++runs_.back().len;
    else
      runs_.push_back({slot_[k], k, 1});
  }
}

namespace {

// 32 bytes of T as one GCC vector — four doubles or eight floats (unaligned loads and stores
// through memcpy): one AVX instruction per operation in the avx2 clones below, two SSE ones in
// the baseline clones. Bits: the same lanes as integers, and the mask that clears their sign.
template <class T>
struct Lanes;
template <>
struct Lanes<double> {
  typedef double V __attribute__((vector_size(32)));
  typedef long long Bits __attribute__((vector_size(32)));
  static constexpr int kWidth = 4;
  static constexpr long long kMagnitude = 0x7fffffffffffffffLL;
};
template <>
struct Lanes<float> {
  typedef float V __attribute__((vector_size(32)));
  typedef int Bits __attribute__((vector_size(32)));
  static constexpr int kWidth = 8;
  static constexpr int kMagnitude = 0x7fffffff;
};

// (Vectors by reference, not by value: no vector crosses a function boundary in the baseline
// clones, whose ABI passes them differently; all of these are inlined anyway.)
template <class V, class T>
inline __attribute__((always_inline)) void load(V& v, const T* p) {
  __builtin_memcpy(&v, p, sizeof v);
}

template <class V, class T>
inline __attribute__((always_inline)) void store(T* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof v);
}

template <class V, class T>
inline __attribute__((always_inline)) void broadcast(V& v, T s) {
  for (int i = 0; i < static_cast<int>(sizeof v / sizeof s); ++i) v[i] = s;
}

// y[r] −= l[r] s for r = 0 … m − 1, element by element (each y[r] one multiply and one
// subtraction, as the scalar loop: the same numbers). NV ≥ 0: exactly NV vectors, unrolled at
// compile time, then the < kWidth remaining entries; NV < 0: any m, in a loop.
template <class T, int NV>
inline __attribute__((always_inline)) void axpy_minus(T* y, const T* l, T s, int m) {
  typedef typename Lanes<T>::V V;
  constexpr int W = Lanes<T>::kWidth;
  V b;
  broadcast(b, s);
  int r = 0;
  if constexpr (NV >= 0) {
    for (int v = 0; v < NV; ++v, r += W) {
      V yv, lv;
      load(yv, y + r);
      load(lv, l + r);
      store(y + r, yv - lv * b);
    }
  } else {
    for (; r + W <= m; r += W) {
      V yv, lv;
      load(yv, y + r);
      load(lv, l + r);
      store(y + r, yv - lv * b);
    }
  }
  for (; r < m; ++r) y[r] -= l[r] * s;
}

// axpy_minus with the vector count fixed at compile time for m < 11 kWidth (the sheet: 20 rows
// of L, up to 40 of U per column): no loop control per vector. kPadded: m rounded up to whole
// vectors — for storage whose entries l[m …] up to the next multiple of kWidth are zeros, so that
// the entries y[m …] get y − 0 · s, unchanged (a −0 may turn +0) — instead of a scalar tail.
template <class T, bool kPadded = false>
inline __attribute__((always_inline)) void axpy_minus_any(T* y, const T* l, T s, int m) {
  constexpr int W = Lanes<T>::kWidth;
  switch (kPadded ? (m + W - 1) / W : m / W) {
    case 0: axpy_minus<T, 0>(y, l, s, m); break;
    case 1: axpy_minus<T, 1>(y, l, s, m); break;
    case 2: axpy_minus<T, 2>(y, l, s, m); break;
    case 3: axpy_minus<T, 3>(y, l, s, m); break;
    case 4: axpy_minus<T, 4>(y, l, s, m); break;
    case 5: axpy_minus<T, 5>(y, l, s, m); break;
    case 6: axpy_minus<T, 6>(y, l, s, m); break;
    case 7: axpy_minus<T, 7>(y, l, s, m); break;
    case 8: axpy_minus<T, 8>(y, l, s, m); break;
    case 9: axpy_minus<T, 9>(y, l, s, m); break;
    case 10: axpy_minus<T, 10>(y, l, s, m); break;
    default: axpy_minus<T, -1>(y, l, s, m);
  }
}

// Partial pivoting's choice in column `col` (entries 0 … km): the offset of the first entry of
// largest magnitude, 0 unless some entry below is strictly larger than |col[0]| (NaNs never
// chosen) — the choice of the scalar loop `if (|col[r]| > best) best = |col[r]|, jp = r`,
// whose chain of comparisons was a fifth of the factorisation. Here the maximum of the
// entries below comes from a vector reduction (exact: a maximum does not round; NaN lanes
// never replace the accumulator, which starts at 0; its tail by one overlapping vector), then
// the first entry equal to it.
template <class T>
inline __attribute__((always_inline)) int pivot_offset(const T* col, int km, T& best) {
  typedef typename Lanes<T>::V V;
  typedef typename Lanes<T>::Bits Bits;
  constexpr int W = Lanes<T>::kWidth;
  Bits magnitude;
  broadcast(magnitude, Lanes<T>::kMagnitude);
  best = std::abs(col[0]);
  V acc = {};
  int r = 1;
  for (; r + W - 1 <= km; r += W) {
    V v;
    load(v, col + r);
    v = reinterpret_cast<V>(reinterpret_cast<Bits>(v) & magnitude);
    acc = v > acc ? v : acc;
  }
  if (r <= km && km >= W) {
    // The < kWidth entries left: the last whole vector of the column, overlapping entries
    // already seen (a maximum does not mind), instead of a scalar tail.
    V v;
    load(v, col + km - W + 1);
    v = reinterpret_cast<V>(reinterpret_cast<Bits>(v) & magnitude);
    acc = v > acc ? v : acc;
    r = km + 1;
  }
  T m = acc[0];
  for (int i = 1; i < W; ++i) m = std::max(m, static_cast<T>(acc[i]));
  for (; r <= km; ++r)
    if (std::abs(col[r]) > m) m = std::abs(col[r]);
  if (!(m > best)) return 0;
  best = m;
  for (r = 1; std::abs(col[r]) != m; ++r) {
  }
  return r;
}

// The rank-one update of one elimination step: u[c ld + r] −= l[r] u[c ld] for the rows
// r = 1 … km of the columns c = 0 … cols − 1. The first kWidth NV multipliers stay in
// registers across the columns (NV fixed at compile time), the remaining < kWidth rows are
// scalar. Element by element as the plain loop, and a column with u[c ld] = 0 is skipped as
// there.
template <class T, int NV>
inline __attribute__((always_inline)) void rank_one_update(const T* l, T* u, int km, int cols, int ld) {
  typedef typename Lanes<T>::V V;
  constexpr int W = Lanes<T>::kWidth;
  V lv[NV > 0 ? NV : 1];
  for (int v = 0; v < NV; ++v) load(lv[v], l + 1 + W * v);
  for (int c = 0; c < cols; ++c, u += ld) {
    const T ujc = *u;
    if (ujc == T(0)) continue;
    V b;
    broadcast(b, ujc);
    for (int v = 0; v < NV; ++v) {
      V uv;
      load(uv, u + 1 + W * v);
      store(u + 1 + W * v, uv - lv[v] * b);
    }
    for (int r = 1 + W * NV; r <= km; ++r) u[r] -= l[r] * ujc;
  }
}

// LAPACK's dgbtf2 (sgbtf2 for T = float) on band storage `ab` (ldab × n, entry (i, j) at
// ab[kv + i − j + ldab j], kv = kl + ku, rows 0..kl − 1 free for U's fill): B = P L U with
// pivot[j] the row exchanged with row j. Returns false on a zero or non-finite pivot; `flops`
// counts the divisions and the rank-one updates done, `widest` the largest pivot offset below
// the diagonal. Compiled for AVX2 and for the baseline, chosen at load time (band_factor_f64,
// band_factor_f32): every entry gets the same element-wise operations in the same order as in
// dgbtf2's scalar loops (no sums regrouped, no fused multiply–add: GCC's avx2 target does not
// enable FMA), so both clones, and the scalar loops, give the same numbers to the bit. (An
// avx512f clone would not: GCC's avx512f implies FMA and contracts a − b c, and it was no
// faster on the sheet.) The rank-one update keeps the column's multipliers in registers
// (rank_one_update; the sheet's km = kl = 20 is five AVX registers of doubles, or three of
// floats over the padded band): ≈ 2× fewer instructions than the plain loop.
template <class T, bool kPadded>
inline __attribute__((always_inline)) bool band_factor(T* ab, int n, int kl, int ku, int ldab, int* pivot,
                                                       double& flops, int& widest) {
  const int kv = kl + ku;
  const int ld = ldab - 1;  // one column right and one row down: the same band row
  flops = 0.0;
  widest = 0;
  int ju = 0;  // last column that U's rows so far reach
  for (int j = 0; j < n; ++j) {
    const int km = std::min(kl, n - 1 - j);
    T* col = ab + kv + static_cast<size_t>(ldab) * j;  // (j, j), then the km entries below
    T best;
    const int jp = pivot_offset(col, km, best);
    pivot[j] = j + jp;
    if (!(best > T(0)) || !std::isfinite(best)) return false;
    widest = std::max(widest, jp);
    ju = std::max(ju, std::min(j + ku + jp, n - 1));
    if (jp != 0) {
      // Exchange rows j and j + jp in columns j..ju: (j, c) sits at ab[kv + j − c + ldab c].
      T* a = col;
      T* b = col + jp;
      for (int c = j; c <= ju; ++c, a += ld, b += ld) std::swap(*a, *b);
    }
    if (km == 0) continue;
    const T p = col[0];
    for (int r = 1; r <= km; ++r) col[r] /= p;
    // Rank-one update of rows j+1..j+km in columns j+1..ju.
    T* u = col + ld;
    const int cols = ju - j;
    // kPadded (single precision): each column has kWidth − 1 zero rows below its band, so the
    // multipliers are read and the rows updated in whole vectors, the rows past km getting
    // u − 0 · u_jc (unchanged) instead of a scalar tail (the sheet's km = 20: three vectors of
    // eight instead of two and four scalar rows).
    constexpr int W = Lanes<T>::kWidth;
    switch (kPadded ? (km + W - 1) / W : km / W) {
      case 0: rank_one_update<T, 0>(col, u, km, cols, ld); break;
      case 1: rank_one_update<T, 1>(col, u, km, cols, ld); break;
      case 2: rank_one_update<T, 2>(col, u, km, cols, ld); break;
      case 3: rank_one_update<T, 3>(col, u, km, cols, ld); break;
      case 4: rank_one_update<T, 4>(col, u, km, cols, ld); break;
      case 5: rank_one_update<T, 5>(col, u, km, cols, ld); break;
      case 6: rank_one_update<T, 6>(col, u, km, cols, ld); break;
      default:  // wider bands: the multipliers from memory
        for (int c = 0; c < cols; ++c, u += ld) {
          const T ujc = *u;
          if (ujc != T(0)) axpy_minus<T, -1>(u + 1, col + 1, ujc, km);
        }
    }
    flops += km + 2.0 * km * (ju - j);
  }
  return true;
}

__attribute__((target_clones("avx2", "default"))) bool band_factor_f64(double* ab, int n, int kl, int ku, int ldab,
                                                                        int* pivot, double& flops, int& widest) {
  return band_factor<double, false>(ab, n, kl, ku, ldab, pivot, flops, widest);
}

__attribute__((target_clones("avx2", "default"))) bool band_factor_f32(float* ab, int n, int kl, int ku, int ldab,
                                                                        int* pivot, double& flops, int& widest) {
  return band_factor<float, true>(ab, n, kl, ku, ldab, pivot, flops, widest);
}

// B y = c for the factors of band_factor (y holds c on entry): the exchanges and L's columns
// forwards, then U's columns (u_band of them above the diagonal) backwards — column-oriented
// updates, element by element as the scalar loops. Cloned like band_factor.
// kPadded: the storage of band_factor<T, true>, and y with kWidth − 1 entries of slack on both
// sides: the column updates run in whole vectors (axpy_minus_any<T, true>). Forwards the rows
// past km meet the column's zero rows; backwards the update starts up to kWidth − 1 rows above
// the column's top, where the entries are U's zeros above its band (or, for the first
// columns, the previous column's zero rows and y's slack).
template <class T, bool kPadded>
inline __attribute__((always_inline)) void band_solve(const T* ab, int n, int kl, int kv, int ldab, int u_band,
                                                      const int* pivot, T* y) {
  // Each substitution is a chain from one entry to the next (an update, then the division or
  // the next update). The entry the next column needs, y[j + 1] (forwards) or y[j − 1]
  // (backwards), is updated in a register and only the rest of the column in vectors, so the
  // chain does not wait for a vector store to be forwarded to a load — the same operations
  // on every entry, in the same order.
  T next = y[0];  // y[j] with the updates of columns 0 … j − 1
  for (int j = 0; j + 1 < n; ++j) {
    const int km = std::min(kl, n - 1 - j);
    T yj = next;
    if (pivot[j] != j) {
      yj = y[pivot[j]];
      y[pivot[j]] = next;
    }
    y[j] = yj;
    if (yj == T(0)) {
      next = y[j + 1];
      continue;
    }
    const T* l = ab + kv + static_cast<size_t>(ldab) * j;  // L(j + r, j) at l[r]
    next = y[j + 1] - l[1] * yj;
    axpy_minus_any<T, kPadded>(y + j + 2, l + 2, yj, km - 1);
  }
  y[n - 1] = next;
  for (int j = n - 1; j >= 0; --j) {
    const T* u = ab + kv + static_cast<size_t>(ldab) * j;  // U(j, j); U(j − t, j) at u[−t]
    const T yj = next / u[0];
    y[j] = yj;
    if (j == 0) break;
    const int top = std::min(u_band, j);
    if (yj == T(0) || top == 0) {
      next = y[j - 1];
      continue;
    }
    next = y[j - 1] - u[-1] * yj;
    if constexpr (kPadded) {
      constexpr int W = Lanes<T>::kWidth;
      const int rounded = (top - 1 + W - 1) / W * W;  // rows j − 1 − rounded … j − 2
      axpy_minus_any<T, true>(y + j - 1 - rounded, u - 1 - rounded, yj, rounded);
    } else {
      axpy_minus_any(y + j - top, u - top, yj, top - 1);
    }
  }
}

__attribute__((target_clones("avx2", "default"))) void band_solve_f64(const double* ab, int n, int kl, int kv, int ldab,
                                                                       int u_band, const int* pivot, double* y) {
  band_solve<double, false>(ab, n, kl, kv, ldab, u_band, pivot, y);
}

__attribute__((target_clones("avx2", "default"))) void band_solve_f32(const float* ab, int n, int kl, int kv, int ldab,
                                                                       int u_band, const int* pivot, float* y) {
  band_solve<float, true>(ab, n, kl, kv, ldab, u_band, pivot, y);
}

// The pattern's values into band storage (T = double: runs copied four at a time by
// fixed-size copies, which the compiler inlines — a memmove call per run cost more than the
// copy; T = float: each value rounded to the nearest float, four at a time by a vector
// conversion).
inline void scatter_runs(const std::vector<BandedLu::SlotRun>& runs, const double* values, double* ab) {
  for (const BandedLu::SlotRun& run : runs) {
    const double* src = values + run.src;
    double* dst = ab + run.dst;
    int len = run.len;
    for (; len >= 4; len -= 4, src += 4, dst += 4) std::memcpy(dst, src, 4 * sizeof(double));
    if (len & 2) {
      std::memcpy(dst, src, 2 * sizeof(double));
      src += 2;
      dst += 2;
    }
    if (len & 1) *dst = *src;
  }
}
inline void scatter_runs(const std::vector<BandedLu::SlotRun>& runs, const double* values, float* ab) {
  typedef double Double4 __attribute__((vector_size(32)));
  typedef float Float4 __attribute__((vector_size(16)));
  for (const BandedLu::SlotRun& run : runs) {
    const double* src = values + run.src;
    float* dst = ab + run.dst;
    int len = run.len;
    for (; len >= 4; len -= 4, src += 4, dst += 4) {
      Double4 d;
      __builtin_memcpy(&d, src, sizeof d);
      const Float4 f = __builtin_convertvector(d, Float4);
      __builtin_memcpy(dst, &f, sizeof f);
    }
    for (; len > 0; --len) *dst++ = static_cast<float>(*src++);
  }
}

}  // namespace

template <class T>
bool BandedLu::factorize_in(const VecX& values, std::vector<T>& ab) {
  std::fill(ab.begin(), ab.end(), T(0));
  scatter_runs(runs_, values.data(), ab.data());
  const int kl = ordering_.lower, ku = ordering_.upper;
  int widest = 0;
  double flops = 0.0;
  bool factored;
  if constexpr (std::is_same_v<T, float>)
    factored = band_factor_f32(ab.data(), n_, kl, ku, ldab_, pivot_.data(), flops, widest);
  else
    factored = band_factor_f64(ab.data(), n_, kl, ku, ldab_, pivot_.data(), flops, widest);
  if (!factored) return false;
  u_band_ = std::min(kv_, ku + widest);
  factor_flops_ = flops;
  double solve = 0.0;
  for (int j = 0; j < n_; ++j) solve += 2.0 * (std::min(kl, n_ - 1 - j) + std::min(u_band_, j)) + 1.0;
  solve_flops_ = solve;
  return true;
}

bool BandedLu::factorize(const VecX& values) {
  return precision_ == FactorizationPrecision::kSingle ? factorize_in(values, ab_single_) : factorize_in(values, ab_);
}

template <class T>
void BandedLu::solve_in(const std::vector<T>& ab_storage, std::vector<T>& work, const VecX& b, VecX& x,
                        bool transpose) {
  const int kl = ordering_.lower;
  const int* order = ordering_.order.data();
  T* y = work.data() + (work.size() - n_) / 2;  // single precision: after kSinglePad entries of slack
  for (int k = 0; k < n_; ++k) y[k] = static_cast<T>(b[order[k]]);
  const T* ab = ab_storage.data();
  if (!transpose) {
    if constexpr (std::is_same_v<T, float>)
      band_solve_f32(ab, n_, kl, kv_, ldab_, u_band_, pivot_.data(), y);
    else
      band_solve_f64(ab, n_, kl, kv_, ldab_, u_band_, pivot_.data(), y);
  } else {
    // Bᵀ y = c, Bᵀ = Uᵀ Lᵀ Pᵀ: Uᵀ forwards, then Lᵀ backwards with the exchanges undone.
    for (int j = 0; j < n_; ++j) {
      const T* u = ab + kv_ + static_cast<size_t>(ldab_) * j;
      const int top = std::min(u_band_, j);
      T s = y[j];
      for (int t = top; t >= 1; --t) s -= u[-t] * y[j - t];
      y[j] = s / u[0];
    }
    for (int j = n_ - 2; j >= 0; --j) {
      const int km = std::min(kl, n_ - 1 - j);
      const T* l = ab + kv_ + static_cast<size_t>(ldab_) * j;
      T s = y[j];
      for (int r = 1; r <= km; ++r) s -= l[r] * y[j + r];
      y[j] = s;
      if (pivot_[j] != j) std::swap(y[j], y[pivot_[j]]);
    }
  }
  x.resize(n_);
  for (int k = 0; k < n_; ++k) x[order[k]] = y[k];
}

void BandedLu::solve(const VecX& b, VecX& x, bool transpose) {
  if (precision_ == FactorizationPrecision::kSingle)
    solve_in(ab_single_, work_single_, b, x, transpose);
  else
    solve_in(ab_, work_, b, x, transpose);
}

}  // namespace addsim
