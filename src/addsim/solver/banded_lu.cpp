#include "addsim/solver/banded_lu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>

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

BandedLu::BandedLu(const SparsePattern* pattern, const FactorizationOptions& options)
    : pattern_(pattern), precision_(options.precision), pivot_threshold_(options.pivot_threshold), n_(pattern->size()) {
  if (!(pivot_threshold_ > 0.0 && pivot_threshold_ <= 1.0))
    throw InputError("BandedLu: the pivot threshold must be in (0, 1], got " + std::to_string(pivot_threshold_));
  BandOrdering natural = natural_band(*pattern);
  BandOrdering rcm = reverse_cuthill_mckee(*pattern);
  ordering_ = band_flops(rcm) < band_flops(natural) ? std::move(rcm) : std::move(natural);
  kv_ = ordering_.lower + ordering_.upper;
  ldab_ = ordering_.lower + kv_ + 1;
  if (precision_ == FactorizationPrecision::kSingle) {
    // kSinglePad zero rows below each column's band: the float kernels round their row counts
    // up to whole vectors (band_factor, band_solve); kSingleSlack zeros around the work vector
    // for band_solve's windows.
    ldab_ += kSinglePad;
    ab_single_.assign(static_cast<size_t>(ldab_) * n_ + kSinglePad, 0.0f);
    work_single_.assign(n_ + 2 * kSingleSlack, 0.0f);
  } else {
    ab_.assign(static_cast<size_t>(ldab_) * n_, 0.0);
    work_.assign(n_, 0.0);
  }
  pivot_.resize(n_);
  std::iota(pivot_.begin(), pivot_.end(), 0);
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

// v = s in every lane. Built as a 16-byte splat widened by a shuffle: a 32-byte initialiser
// (or a loop over the lanes) is split into 16-byte halves before the avx2 clone exists, five
// dependent instructions instead of two — on the substitutions' chain from one entry to the next.
template <class V, class S, std::size_t... H, std::size_t... I>
inline __attribute__((always_inline)) void broadcast_impl(V& v, S s, std::index_sequence<H...>,
                                                          std::index_sequence<I...>) {
  typedef S Half __attribute__((vector_size(16)));
  const Half h = {((void)H, s)...};
  v = __builtin_shufflevector(h, h, ((void)I, 0)...);
}
template <class V, class S>
inline __attribute__((always_inline)) void broadcast(V& v, S s) {
  static_assert(sizeof(v[0]) == sizeof(S), "one lane per scalar");
  broadcast_impl(v, s, std::make_index_sequence<16 / sizeof(S)>(), std::make_index_sequence<sizeof(V) / sizeof(S)>());
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

// Threshold partial pivoting's choice in column `col` (entries 0 … km, the diagonal first):
// with m the largest magnitude below the diagonal, the diagonal stays unless tau · m >
// |col[0]|; otherwise the offset of the first entry of magnitude m (ties: the topmost). NaNs
// below are never chosen; a NaN diagonal is kept (and band_factor refuses it), a zero one is
// exchanged for any nonzero entry below. `best` returns the chosen pivot's magnitude. tau = 1
// is plain partial pivoting — tau · m = m exactly, so the choice of the scalar loop `if
// (|col[r]| > best) best = |col[r]|, jp = r` (dgbtf2's), whose chain of comparisons was a
// fifth of the factorisation. Here the maximum of the entries below comes from a vector
// reduction (exact: a maximum does not round; NaN lanes never replace the accumulator, which
// starts at 0; its tail by one overlapping vector), then the first entry equal to it.
template <class T>
inline __attribute__((always_inline)) int pivot_offset(const T* col, int km, T tau, T& best) {
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
  if (!(tau * m > best)) return 0;
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
  // Both loops over the NV vectors fully unrolled: without the pragma GCC kept the multipliers
  // of the double clones on the stack instead of in registers (docs/solver.md, sheet18: −4 % on
  // the double sheet flip, the same bits).
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) load(lv[v], l + 1 + W * v);
  for (int c = 0; c < cols; ++c, u += ld) {
    const T ujc = *u;
    if (ujc == T(0)) continue;
    V b;
    broadcast(b, ujc);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      V uv;
      load(uv, u + 1 + W * v);
      store(u + 1 + W * v, uv - lv[v] * b);
    }
    for (int r = 1 + W * NV; r <= km; ++r) u[r] -= l[r] * ujc;
  }
}

// LAPACK's dgbtf2 (sgbtf2 for T = float) on band storage `ab` (ldab × n, entry (i, j) at ab[kv +
// i − j + ldab j], kv = kl + ku, rows 0..kl − 1 free for U's fill): B = P L U with pivot[j] the
// row exchanged with row j, chosen by pivot_offset with threshold `tau` (1: dgbtf2's partial
// pivoting; below 1 the diagonal is kept while it is at least tau times the column's largest
// entry below it, so |l_ij| ≤ 1 / tau, and U's band stays narrower). Returns false on a zero or
// non-finite pivot; `flops` counts the divisions and the rank-one updates done, `widest` the
// largest pivot offset below the diagonal. Compiled for AVX2 and for the baseline, chosen at
// load time (band_factor_f64, band_factor_f32): every entry gets the same element-wise
// operations in the same order as in dgbtf2's scalar loops (no sums regrouped, no fused
// multiply–add: GCC's avx2 target does not enable FMA), so both clones, and the scalar loops,
// give the same numbers to the bit. (An avx512f clone would not: GCC's avx512f implies FMA and
// contracts a − b c, and it was no faster on the sheet.) The rank-one update keeps the column's
// multipliers in registers (rank_one_update; the sheet's km = kl = 20 is five AVX registers of
// doubles, or three of floats over the padded band): ≈ 2× fewer instructions than the plain
// loop.
template <class T, bool kPadded>
inline __attribute__((always_inline)) bool band_factor(T* ab, int n, int kl, int ku, int ldab, T tau, int* pivot,
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
    const int jp = pivot_offset(col, km, tau, best);
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
                                                                        double tau, int* pivot, double& flops,
                                                                        int& widest) {
  return band_factor<double, false>(ab, n, kl, ku, ldab, tau, pivot, flops, widest);
}

__attribute__((target_clones("avx2", "default"))) bool band_factor_f32(float* ab, int n, int kl, int ku, int ldab,
                                                                        float tau, int* pivot, double& flops,
                                                                        int& widest) {
  return band_factor<float, true>(ab, n, kl, ku, ldab, tau, pivot, flops, widest);
}

// out = lanes 0 … S − 1 of `low`, lanes S … of `high` (one blend with a constant mask).
template <int S, class V, std::size_t... I>
inline __attribute__((always_inline)) void blend_at_impl(V& out, const V& low, const V& high,
                                                         std::index_sequence<I...>) {
  constexpr int kLanes = static_cast<int>(sizeof...(I));
  out = __builtin_shufflevector(low, high, (static_cast<int>(I) < S ? static_cast<int>(I) : static_cast<int>(I) + kLanes)...);
}
template <int S, class V>
inline __attribute__((always_inline)) void blend_at(V& out, const V& low, const V& high) {
  blend_at_impl<S>(out, low, high, std::make_index_sequence<sizeof(V) / sizeof(low[0])>());
}

// b = 0, 1, …, kWidth − 1: the lane numbers, for masks computed at run time.
template <class T>
inline __attribute__((always_inline)) void lane_index(typename Lanes<T>::Bits& b) {
  for (int i = 0; i < Lanes<T>::kWidth; ++i) b[i] = i;
}

// band_solve's substitutions with the active rows of y in registers (the padded float band).
// Column by column, each substitution updates the next kl (forwards) or u_band (backwards) rows
// of y; through memory, each column's vector loads read rows the previous column stored shifted
// by one, which store-to-load forwarding cannot serve, so every column waited for the previous
// column's stores (the sheet: ≈ 2× slower than the arithmetic). Here the columns go in blocks of
// kWidth: a window of vectors holds the rows the block's columns touch, aligned to the block;
// each column's multipliers are loaded at the lane offset of its rows (the lanes of a column's
// own row and those above it, forwards, or below it, backwards, kept by a constant blend; the
// lanes past its band by a mask), and between blocks the window moves by one whole vector (one
// load; the finished rows were stored one by one). Row exchanges, ≈ 11 of 75 columns on the
// sheet, go through a spill of the window. Every entry gets the scalar loops' operations in
// their order; the lanes a column does not touch keep their bits.
//
// Forward column j = J + S (J the block's first column): win[k] holds rows J + kWidth k … of y,
// NV vectors (rows J … J + kl + kWidth − 1 at least). `next` is y[j] with the updates of the
// columns before j, carried in a register as in band_solve: y[j + 1]'s update is also done as a
// scalar, so the chain from one column to the next is one multiply and one subtraction.
// Returns false past the last column.
template <class T, int NV, int S>
inline __attribute__((always_inline)) bool forward_column(const T* ab, int n, int kl, int kv, int ldab, const int* pivot,
                                                          T* y, int J, typename Lanes<T>::V (&win)[NV], T& next) {
  typedef typename Lanes<T>::V V;
  typedef typename Lanes<T>::Bits Bits;
  constexpr int W = Lanes<T>::kWidth;
  const int j = J + S;
  if (j + 1 >= n) return false;
  T yj = next;
  const int p = pivot[j];
  if (p != j) {
    // Exchange rows j and p (p − j ≤ kl: in the window): read row p through a spill, put row
    // j's value into its lane.
    alignas(32) T spill[NV * W];
#pragma GCC unroll 16
    for (int k = 0; k < NV; ++k) store(spill + W * k, win[k]);
    yj = spill[p - J];
    Bits lane, at;
    lane_index<T>(lane);
    broadcast(at, p - J);
    V moved;
    broadcast(moved, next);
#pragma GCC unroll 16
    for (int k = 0; k < NV; ++k) win[k] = (lane + W * k) == at ? moved : win[k];
  }
  y[j] = yj;
  const T after = S + 1 < W ? win[0][(S + 1) % W] : win[1][0];  // y[j + 1]
  if (yj == T(0)) {
    next = after;
    return true;
  }
  const T* l = ab + kv + static_cast<size_t>(ldab) * j;  // L(j + r, j) at l[r]
  next = after - l[1] * yj;
  V b;
  broadcast(b, yj);
  {
    V lv;
    load(lv, l - S);  // rows J …: lanes up to S are row j and the rows above, kept
    blend_at<S + 1>(win[0], win[0], win[0] - lv * b);
  }
#pragma GCC unroll 16
  for (int k = 1; k + 1 < NV; ++k) {
    V lv;
    load(lv, l + W * k - S);  // rows past j + km read the column's zero rows: y − 0 · y_j
    win[k] = win[k] - lv * b;
  }
  // The last vector: rows j + r, r = W (NV − 1) − S + lane; those past j + km keep their bits
  // (past the zero rows, the entries are the next column's).
  const int km = std::min(kl, n - 1 - j);
  if (W * (NV - 1) - S <= km) {
    V lv;
    load(lv, l + W * (NV - 1) - S);
    Bits lane, last;
    lane_index<T>(lane);
    broadcast(last, km - (W * (NV - 1) - S));
    win[NV - 1] = lane > last ? win[NV - 1] : win[NV - 1] - lv * b;
  }
  return true;
}

template <class T, int NV, std::size_t... S>
inline __attribute__((always_inline)) bool forward_block(const T* ab, int n, int kl, int kv, int ldab, const int* pivot,
                                                         T* y, int J, typename Lanes<T>::V (&win)[NV], T& next,
                                                         std::index_sequence<S...>) {
  return (forward_column<T, NV, static_cast<int>(S)>(ab, n, kl, kv, ldab, pivot, y, J, win, next) && ...);
}

// L's columns forwards (and the exchanges), window of NV = ⌈kl / kWidth⌉ + 1 vectors.
template <class T, int NV>
inline __attribute__((always_inline)) void forward_window(const T* ab, int n, int kl, int kv, int ldab,
                                                          const int* pivot, T* y) {
  typedef typename Lanes<T>::V V;
  constexpr int W = Lanes<T>::kWidth;
  V win[NV];
#pragma GCC unroll 16
  for (int k = 0; k < NV; ++k) load(win[k], y + W * k);
  T next = y[0];
  for (int J = 0;; J += W) {
    if (!forward_block<T, NV>(ab, n, kl, kv, ldab, pivot, y, J, win, next, std::make_index_sequence<W>())) break;
    // Rows J … J + W − 1 are final (stored by the columns); the window moves one vector down.
#pragma GCC unroll 16
    for (int k = 0; k + 1 < NV; ++k) win[k] = win[k + 1];
    load(win[NV - 1], y + J + W * NV);
  }
  y[n - 1] = next;
}

// Backward column j = J + S: win[M − k] holds rows J − kWidth k … of y, M + 1 vectors (rows
// J − u_band … J + kWidth − 1 at least); `next` is y[j] with the updates of the columns after
// j, and y[j − 1]'s update is also a scalar: the chain is the division, a multiply and a
// subtraction. Returns false after column 0.
template <class T, int M, int S>
inline __attribute__((always_inline)) bool backward_column(const T* ab, int kv, int ldab, int u_band, T* y, int J,
                                                           typename Lanes<T>::V (&win)[M + 1], T& next) {
  typedef typename Lanes<T>::V V;
  typedef typename Lanes<T>::Bits Bits;
  constexpr int W = Lanes<T>::kWidth;
  const int j = J + S;
  const T* u = ab + kv + static_cast<size_t>(ldab) * j;  // U(j, j); U(j − t, j) at u[−t]
  const T yj = next / u[0];
  y[j] = yj;
  if (j == 0) return false;
  const T after = S >= 1 ? win[M][(S + W - 1) % W] : win[M - 1][W - 1];  // y[j − 1]
  if (yj == T(0)) {
    next = after;
    return true;
  }
  next = after - u[-1] * yj;
  V b;
  broadcast(b, yj);
  {
    V uv;
    load(uv, u - S);  // rows J …: lanes from S on are row j and the rows below, kept
    blend_at<S>(win[M], win[M] - uv * b, win[M]);
  }
#pragma GCC unroll 16
  for (int k = 1; k < M; ++k) {
    V uv;
    load(uv, u - S - W * k);  // above U's band: its zeros (or, at the top, zeros and y's slack)
    win[M - k] = win[M - k] - uv * b;
  }
  // The lowest vector: rows j − t, t = S + W M − lane; those with t > u_band keep their bits
  // (past the column's zeros above its band, the entries are the previous column's).
  if (S + W * M - (W - 1) <= u_band) {
    V uv;
    load(uv, u - S - W * M);
    Bits lane, first;
    lane_index<T>(lane);
    broadcast(first, S + W * M - u_band);
    win[0] = lane < first ? win[0] : win[0] - uv * b;
  }
  return true;
}

template <class T, int M, std::size_t... I>
inline __attribute__((always_inline)) bool backward_block(const T* ab, int kv, int ldab, int u_band, T* y, int J,
                                                          typename Lanes<T>::V (&win)[M + 1], T& next,
                                                          std::index_sequence<I...>) {
  constexpr int W = Lanes<T>::kWidth;
  return (backward_column<T, M, W - 1 - static_cast<int>(I)>(ab, kv, ldab, u_band, y, J, win, next) && ...);
}

// U's columns backwards, window of M + 1 vectors, M = ⌈u_band / kWidth⌉.
template <class T, int M>
inline __attribute__((always_inline)) void backward_window(const T* ab, int n, int kv, int ldab, int u_band, T* y) {
  typedef typename Lanes<T>::V V;
  constexpr int W = Lanes<T>::kWidth;
  V win[M + 1];
  int J = n - W;
#pragma GCC unroll 16
  for (int k = 0; k <= M; ++k) load(win[M - k], y + J - W * k);
  T next = y[n - 1];
  for (;; J -= W) {
    if (!backward_block<T, M>(ab, kv, ldab, u_band, y, J, win, next, std::make_index_sequence<W>())) break;
#pragma GCC unroll 16
    for (int k = M; k >= 1; --k) win[k] = win[k - 1];
    load(win[0], y + J - W - W * M);
  }
}

// The most vectors of y a substitution window holds (backward_window<T, 6>: M + 1 = 7), and so
// the slack y needs on both sides: kWindowVectors kWidth entries (BandedLu::kSingleSlack).
constexpr int kWindowVectors = 7;

// The windowed substitutions, for kv ≥ kWidth − 1 (the first lanes read above column j's
// diagonal), 1 ≤ kl ≤ 4 kWidth and 1 ≤ u_band ≤ (kWindowVectors − 1) kWidth; false otherwise.
template <class T>
inline __attribute__((always_inline)) bool band_solve_window(const T* ab, int n, int kl, int kv, int ldab, int u_band,
                                                             const int* pivot, T* y) {
  constexpr int W = Lanes<T>::kWidth;
  if (kv < W - 1 || kl < 1 || kl > 4 * W || u_band < 1 || u_band > (kWindowVectors - 1) * W) return false;
  switch ((kl + W - 1) / W + 1) {
    case 2: forward_window<T, 2>(ab, n, kl, kv, ldab, pivot, y); break;
    case 3: forward_window<T, 3>(ab, n, kl, kv, ldab, pivot, y); break;
    case 4: forward_window<T, 4>(ab, n, kl, kv, ldab, pivot, y); break;
    default: forward_window<T, 5>(ab, n, kl, kv, ldab, pivot, y); break;
  }
  switch ((u_band + W - 1) / W) {
    case 1: backward_window<T, 1>(ab, n, kv, ldab, u_band, y); break;
    case 2: backward_window<T, 2>(ab, n, kv, ldab, u_band, y); break;
    case 3: backward_window<T, 3>(ab, n, kv, ldab, u_band, y); break;
    case 4: backward_window<T, 4>(ab, n, kv, ldab, u_band, y); break;
    case 5: backward_window<T, 5>(ab, n, kv, ldab, u_band, y); break;
    default: backward_window<T, 6>(ab, n, kv, ldab, u_band, y); break;
  }
  return true;
}

// B y = c for the factors of band_factor (y holds c on entry): the exchanges and L's columns
// forwards, then U's columns (u_band of them above the diagonal) backwards — column-oriented
// updates, element by element as the scalar loops. Cloned like band_factor.
// kPadded: the storage of band_factor<T, true>, and y with BandedLu::kSingleSlack entries of
// slack on both sides: band_solve_window where the band fits it (the sheet), else the column
// updates run in whole vectors (axpy_minus_any<T, true>). Forwards the rows
// past km meet the column's zero rows; backwards the update starts up to kWidth − 1 rows above
// the column's top, where the entries are U's zeros above its band (or, for the first
// columns, the previous column's zero rows and y's slack).
template <class T, bool kPadded>
inline __attribute__((always_inline)) void band_solve(const T* ab, int n, int kl, int kv, int ldab, int u_band,
                                                      const int* pivot, T* y) {
  if constexpr (kPadded) {
    if (band_solve_window(ab, n, kl, kv, ldab, u_band, pivot, y)) return;
  }
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
    factored = band_factor_f32(ab.data(), n_, kl, ku, ldab_, static_cast<float>(pivot_threshold_), pivot_.data(), flops,
                               widest);
  else
    factored = band_factor_f64(ab.data(), n_, kl, ku, ldab_, pivot_threshold_, pivot_.data(), flops, widest);
  if (!factored) return false;
  u_band_ = std::min(kv_, ku + widest);
  factor_flops_ = flops;
  double solve = 0.0;
  for (int j = 0; j < n_; ++j) solve += 2.0 * (std::min(kl, n_ - 1 - j) + std::min(u_band_, j)) + 1.0;
  solve_flops_ = solve;
  return true;
}

int BandedLu::row_exchanges() const {
  int count = 0;
  for (int j = 0; j < n_; ++j) count += pivot_[j] != j;
  return count;
}

bool BandedLu::factorize(const VecX& values) {
  return precision_ == FactorizationPrecision::kSingle ? factorize_in(values, ab_single_) : factorize_in(values, ab_);
}

template <class T>
void BandedLu::solve_in(const std::vector<T>& ab_storage, std::vector<T>& work, const VecX& b, VecX& x,
                        bool transpose) {
  const int kl = ordering_.lower;
  const int* order = ordering_.order.data();
  static_assert(kSingleSlack == kWindowVectors * Lanes<float>::kWidth && kSinglePad == Lanes<float>::kWidth - 1,
                "the float storage's padding and slack follow the kernels' vector width and window");
  T* y = work.data() + (work.size() - n_) / 2;  // single precision: after kSingleSlack entries of slack
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
