#include "addsim/solver/block_schur_lu.h"

#include <algorithm>
#include <limits>

#include "addsim/core/error.h"

namespace addsim {

BlockSchurLu::BlockSchurLu(const SparsePattern* pattern) : pattern_(pattern) {
  const int n = pattern->size();
  const auto& outer = pattern->outer();
  const auto& inner = pattern->inner();

  // Blocks: runs of consecutive columns with the same row list inside each DOF block.
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
  for (int c = 0; c < n; ++c)
    if (body_start[c] || !same_rows(c - 1, c)) start_.push_back(c);
  start_.push_back(n);
  const int m = blocks();
  std::vector<int> block_of(n);
  for (int k = 0; k < m; ++k) std::fill(block_of.begin() + start_[k], block_of.begin() + start_[k + 1], k);

  // The block graph of A + Aᵀ.
  std::vector<char> adj(static_cast<size_t>(m) * m, 0);
  for (int c = 0; c < n; ++c)
    for (int e = outer[c]; e < outer[c + 1]; ++e) {
      const int i = block_of[inner[e]], j = block_of[c];
      if (i != j) adj[static_cast<size_t>(i) * m + j] = adj[static_cast<size_t>(j) * m + i] = 1;
    }
  const std::vector<char> original = adj;

  // Minimum weighted degree with fill: the block with the fewest DOFs among its remaining
  // neighbours goes next; its neighbours become a clique and their degrees are recounted.
  std::vector<char> done(m, 0);
  std::vector<long> degree(m, 0);
  const auto count_degree = [&](int k) {
    long d = 0;
    for (int j = 0; j < m; ++j)
      if (!done[j] && adj[static_cast<size_t>(k) * m + j]) d += size(j);
    degree[k] = d;
  };
  for (int k = 0; k < m; ++k) count_degree(k);
  later_.assign(m, {});
  for (int step = 0; step < m; ++step) {
    int best = -1;
    for (int k = 0; k < m; ++k)
      if (!done[k] && (best < 0 || degree[k] < degree[best] || (degree[k] == degree[best] && size(k) < size(best))))
        best = k;
    done[best] = 1;
    order_.push_back(best);
    for (int j = 0; j < m; ++j)
      if (!done[j] && adj[static_cast<size_t>(best) * m + j]) later_[best].push_back(j);
    for (int i : later_[best])
      for (int j : later_[best])
        if (i != j) adj[static_cast<size_t>(i) * m + j] = 1;
    for (int i : later_[best]) count_degree(i);
  }
  std::vector<int> position(m);
  for (int p = 0; p < m; ++p) position[order_[p]] = p;
  for (auto& l : later_) std::sort(l.begin(), l.end(), [&](int a, int b) { return position[a] < position[b]; });

  // Storage per block k: D_k, then its row panel (s × t) and column panel (t × s), whose
  // block j ∈ N(k) starts at column / row offset[k][j].
  later_dofs_.assign(m, {});
  std::vector<std::vector<int>> offset(m);  // offset within N(k), indexed like later_[k]
  int total = 0;
  diag_base_.resize(m);
  row_base_.resize(m);
  col_base_.resize(m);
  for (int k : order_) {
    int t = 0;
    for (int j : later_[k]) {
      offset[k].push_back(t);
      for (int d = start_[j]; d < start_[j + 1]; ++d) later_dofs_[k].push_back(d);
      t += size(j);
      if (!original[static_cast<size_t>(k) * m + j]) fill_pairs_ += 2;
    }
    diag_base_[k] = total;
    total += size(k) * size(k);
    row_base_[k] = total;
    total += size(k) * t;
    col_base_[k] = total;
    total += t * size(k);
  }
  data_.assign(total, 0.0);
  // Index in data_ of entry (r, c) of block pair (i, j), r and c local: D_i if i = j, the
  // row panel of i if i goes first (j ∈ N(i)), else the column panel of j (i ∈ N(j)).
  const auto locate = [&](int i, int j, int r, int c) {
    if (i == j) return diag_base_[i] + r + c * size(i);
    if (position[i] < position[j]) {
      const auto it = std::find(later_[i].begin(), later_[i].end(), j);
      ADDSIM_CHECK(it != later_[i].end(), "BlockSchurLu: block pair outside the fill");
      return row_base_[i] + r + (offset[i][it - later_[i].begin()] + c) * size(i);
    }
    const auto it = std::find(later_[j].begin(), later_[j].end(), i);
    ADDSIM_CHECK(it != later_[j].end(), "BlockSchurLu: block pair outside the fill");
    return col_base_[j] + offset[j][it - later_[j].begin()] + r + c * width(j);
  };
  slot_.resize(pattern->nnz());
  for (int c = 0; c < n; ++c)
    for (int e = outer[c]; e < outer[c + 1]; ++e) {
      const int r = inner[e], i = block_of[r], j = block_of[c];
      slot_[e] = locate(i, j, r - start_[i], c - start_[j]);
    }
  update_base_.resize(m);
  for (int k : order_) {
    update_base_[k] = static_cast<int>(update_map_.size());
    const auto& l = later_[k];
    for (size_t jb = 0; jb < l.size(); ++jb)
      for (int c = 0; c < size(l[jb]); ++c)
        for (size_t ib = 0; ib < l.size(); ++ib)
          for (int r = 0; r < size(l[ib]); ++r) update_map_.push_back(locate(l[ib], l[jb], r, c));
  }
  lu_.resize(m);
}

// W ← D⁻¹ W for the s × t panel W (column-major) with D = P⁻¹ L U from `lu`: per column the
// row permutation, then forward and back substitution — plain loops, as the blocks are a few
// DOFs wide and Eigen's blocked triangular solves cost more in set-up than in arithmetic here.
void BlockSchurLu::solve_panel(const Eigen::PartialPivLU<MatX>& lu, double* w, int s, int t) {
  const MatX& f = lu.matrixLU();
  const auto& perm = lu.permutationP().indices();
  column_.resize(std::max<Eigen::Index>(column_.size(), s));
  double* y = column_.data();
  for (int b = 0; b < t; ++b) {
    double* x = w + b * s;
    for (int i = 0; i < s; ++i) y[perm[i]] = x[i];
    for (int i = 1; i < s; ++i) {
      double sum = y[i];
      for (int j = 0; j < i; ++j) sum -= f(i, j) * y[j];
      y[i] = sum;
    }
    for (int i = s - 1; i >= 0; --i) {
      double sum = y[i];
      for (int j = i + 1; j < s; ++j) sum -= f(i, j) * x[j];
      x[i] = sum / f(i, i);
    }
  }
}

// x ← D⁻ᵀ x, D = P⁻¹ L U: Dᵀ = Uᵀ Lᵀ P, so Uᵀ y = x forwards, Lᵀ z = y backwards (unit
// diagonal), then x = Pᵀ z, i.e. x_i = z_perm(i).
void BlockSchurLu::solve_transposed(const Eigen::PartialPivLU<MatX>& lu, double* x, int s) {
  const MatX& f = lu.matrixLU();
  const auto& perm = lu.permutationP().indices();
  column_.resize(std::max<Eigen::Index>(column_.size(), s));
  double* z = column_.data();
  for (int i = 0; i < s; ++i) {
    double sum = x[i];
    for (int j = 0; j < i; ++j) sum -= f(j, i) * z[j];
    z[i] = sum / f(i, i);
  }
  for (int i = s - 2; i >= 0; --i) {
    double sum = z[i];
    for (int j = i + 1; j < s; ++j) sum -= f(j, i) * z[j];
    z[i] = sum;
  }
  for (int i = 0; i < s; ++i) x[i] = z[perm[i]];
}

bool BlockSchurLu::factorize(const VecX& values) {
  values_ = values;
  std::fill(data_.begin(), data_.end(), 0.0);
  for (size_t e = 0; e < slot_.size(); ++e) data_[slot_[e]] = values[e];
  double factor = 0.0, substitution = 0.0;
  for (int k : order_) {
    const int s = size(k), t = width(k);
    auto& lu = lu_[k];
    lu.compute(Eigen::Map<MatX>(data_.data() + diag_base_[k], s, s));
    // Partial pivoting reports no failure: a zero or non-finite pivot means singular.
    const auto pivots = lu.matrixLU().diagonal();
    if (!pivots.allFinite() || (pivots.array() == 0.0).any()) return false;
    factor += 2.0 * s * s * s / 3.0;
    substitution += 2.0 * s * s;
    if (t == 0) continue;
    // W_k = D_k⁻¹ A_k,N(k) in place of the row panel; then A_N(k),N(k) −= C_k W_k.
    double* w = data_.data() + row_base_[k];
    solve_panel(lu, w, s, t);
    // Column by column: one column of C_k W_k (a sum of s columns of C_k, vectorisable),
    // then subtracted where the map says.
    const double* c = data_.data() + col_base_[k];
    const int* map = update_map_.data() + update_base_[k];
    column_.resize(t);
    double* u = column_.data();
    for (int b = 0; b < t; ++b) {
      const double* wb = w + b * s;
      for (int a = 0; a < t; ++a) u[a] = c[a] * wb[0];
      for (int r = 1; r < s; ++r) {
        const double* cr = c + r * t;
        const double wr = wb[r];
        for (int a = 0; a < t; ++a) u[a] += cr[a] * wr;
      }
      const int* mb = map + b * t;
      for (int a = 0; a < t; ++a) data_[mb[a]] -= u[a];
    }
    factor += 2.0 * s * s * t + 2.0 * s * t * t;
    substitution += 4.0 * s * t;
  }
  factor_flops_ = factor;
  solve_flops_ = substitution;
  return true;
}

void BlockSchurLu::substitute(const VecX& b, VecX& x, bool transpose) {
  x = b;
  const auto gather = [&](int k) {
    const auto& dofs = later_dofs_[k];
    gathered_.resize(static_cast<Eigen::Index>(dofs.size()));
    for (size_t a = 0; a < dofs.size(); ++a) gathered_[a] = x[dofs[a]];
  };
  const auto scatter_subtract = [&](int k) {
    const auto& dofs = later_dofs_[k];
    for (size_t a = 0; a < dofs.size(); ++a) x[dofs[a]] -= pushed_[a];
  };
  if (!transpose) {
    // L z = b: z_k = D_k⁻¹ z_k, then z_N(k) −= C_k z_k; U x = z backwards: x_k −= W_k x_N(k).
    for (int k : order_) {
      solve_panel(lu_[k], x.data() + start_[k], size(k), 1);
      if (width(k) == 0) continue;
      pushed_.noalias() = Eigen::Map<const MatX>(data_.data() + col_base_[k], width(k), size(k)) * x.segment(start_[k], size(k));
      scatter_subtract(k);
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const int k = *it;
      if (width(k) == 0) continue;
      gather(k);
      x.segment(start_[k], size(k)).noalias() -=
          Eigen::Map<const MatX>(data_.data() + row_base_[k], size(k), width(k)) * gathered_;
    }
  } else {
    // Uᵀ y = b (unit lower): y_N(k) −= W_kᵀ y_k; Lᵀ x = y backwards: x_k = D_k⁻ᵀ (y_k − C_kᵀ x_N(k)).
    for (int k : order_) {
      if (width(k) == 0) continue;
      pushed_.noalias() =
          Eigen::Map<const MatX>(data_.data() + row_base_[k], size(k), width(k)).transpose() * x.segment(start_[k], size(k));
      scatter_subtract(k);
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const int k = *it;
      auto xk = x.segment(start_[k], size(k));
      if (width(k) > 0) {
        gather(k);
        xk.noalias() -= Eigen::Map<const MatX>(data_.data() + col_base_[k], width(k), size(k)).transpose() * gathered_;
      }
      solve_transposed(lu_[k], x.data() + start_[k], size(k));
    }
  }
}

void BlockSchurLu::solve(const VecX& b, VecX& x, bool transpose) {
  substitute(b, x, transpose);
  // Iterative refinement: x += A⁻¹ (b − A x) while the residual falls by half or more (no
  // pivoting crosses blocks, so a badly conditioned diagonal block may cost digits).
  double last = std::numeric_limits<double>::infinity();
  for (int step = 0; step < kMaxRefinements; ++step) {
    product_.setZero(x.size());
    if (transpose)
      pattern_->transpose_multiply_add(values_, x, product_);
    else
      pattern_->multiply_add(values_, x, product_);
    residual_ = b - product_;
    const double norm = residual_.norm();
    if (!(norm < 0.5 * last) || norm == 0.0) break;
    last = norm;
    substitute(residual_, correction_, transpose);
    x += correction_;
  }
}

}  // namespace addsim
