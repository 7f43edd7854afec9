#include "addsim/solver/block_schur_lu.h"

#include <algorithm>
#include <limits>

#include "addsim/core/error.h"

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
  std::vector<char> done(m, 0);
  std::vector<long> degree(m, 0);
  const auto count_degree = [&](int k) {
    long d = 0;
    for (int j = 0; j < m; ++j)
      if (!done[j] && at(k, j)) d += sizes[j];
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
        if (i != j) at(i, j) = 1;
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

// data[map[a + b t]] −= (C W)(a, b) for the t × s column panel C and the s × t row panel W:
// column by column, each column of C W a sum of s columns of C (vectorised over a), then
// subtracted where the map says. Compiled for AVX2 and the baseline, chosen at load time;
// both clones do the same element-wise operations in the same order (GCC's avx2 target has
// no FMA to contract them), so they give the same numbers to the bit.
__attribute__((target_clones("avx2", "default"))) void schur_update(double* data, const double* c, const double* w,
                                                                   const int* map, int s, int t, double* u) {
  for (int b = 0; b < t; ++b) {
    const double* wb = w + b * s;
    for (int a = 0; a < t; ++a) u[a] = c[a] * wb[0];
    for (int r = 1; r < s; ++r) {
      const double* cr = c + r * t;
      const double wr = wb[r];
      for (int a = 0; a < t; ++a) u[a] += cr[a] * wr;
    }
    const int* mb = map + b * t;
    for (int a = 0; a < t; ++a) data[mb[a]] -= u[a];
  }
}

}  // namespace

BlockSchurLu::BlockSchurLu(const SparsePattern* pattern) : pattern_(pattern) {
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
  std::vector<int> block_of(n);
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
    total += size(k) * size(k);
    row_base_[k] = total;
    total += size(k) * t;
    col_base_[k] = total;
    total += t * size(k);
  }
  data_.assign(total, 0.0);
  const auto front_position = [&](int k, int dof) {
    const auto& f = later_dofs_[k];
    const auto it = std::find(f.begin(), f.end(), dof);
    ADDSIM_CHECK(it != f.end(), "BlockSchurLu: entry outside the fill");
    return static_cast<int>(it - f.begin());
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
  lu_.resize(m);
  // Work column of the panel substitutions (s) and of the updates (t).
  int widest = 0;
  for (int k = 0; k < m; ++k) widest = std::max({widest, size(k), width(k)});
  column_.resize(widest);
  // The substitutions' work vectors at their largest size once, so that a solve allocates nothing.
  own_.resize(widest);
  gathered_.resize(widest);
  pushed_.resize(widest);
}

// W ← D⁻¹ W for the s × t panel W (column-major) with D = P⁻¹ L U from `lu`: per column the
// row permutation, then forward and back substitution — plain loops, as the blocks are a few
// DOFs wide and Eigen's blocked triangular solves cost more in set-up than in arithmetic here.
void BlockSchurLu::solve_panel(const Eigen::PartialPivLU<MatX>& lu, double* w, int s, int t) {
  const MatX& f = lu.matrixLU();
  const auto& perm = lu.permutationP().indices();
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
    if (s <= kSmallBlock) {
      solve_panel(lu, w, s, t);
    } else {
      Eigen::Map<MatX> panel(w, s, t);
      panel_.noalias() = lu.solve(panel);
      panel = panel_;
    }
    schur_update(data_.data(), data_.data() + col_base_[k], w, update_map_.data() + update_base_[k], s, t,
                 column_.data());
    factor += 2.0 * s * s * t + 2.0 * s * t * t;
    substitution += 4.0 * s * t;
  }
  factor_flops_ = factor;
  solve_flops_ = substitution;
  return true;
}

void BlockSchurLu::substitute(const VecX& b, VecX& x, bool transpose) {
  x = b;
  // Views of the work vectors (sized in the constructor) as long as a block's DOF list.
  const auto gather = [&](const std::vector<int>& dofs, VecX& buffer) {
    for (size_t a = 0; a < dofs.size(); ++a) buffer[a] = x[dofs[a]];
    return buffer.head(static_cast<Eigen::Index>(dofs.size()));
  };
  const auto put = [&](const std::vector<int>& dofs, const VecX& from) {
    for (size_t a = 0; a < dofs.size(); ++a) x[dofs[a]] = from[a];
  };
  const auto subtract = [&](const std::vector<int>& dofs, const VecX& from) {
    for (size_t a = 0; a < dofs.size(); ++a) x[dofs[a]] -= from[a];
  };
  if (!transpose) {
    // L z = b: z_k = D_k⁻¹ z_k, then z_N(k) −= C_k z_k; U x = z backwards: x_k −= W_k x_N(k).
    for (int k : order_) {
      const auto own = gather(dofs_[k], own_);
      solve_panel(lu_[k], own_.data(), size(k), 1);
      put(dofs_[k], own_);
      if (width(k) == 0) continue;
      pushed_.head(width(k)).noalias() = Eigen::Map<const MatX>(data_.data() + col_base_[k], width(k), size(k)) * own;
      subtract(later_dofs_[k], pushed_);
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const int k = *it;
      if (width(k) == 0) continue;
      const auto gathered = gather(later_dofs_[k], gathered_);
      own_.head(size(k)).noalias() = Eigen::Map<const MatX>(data_.data() + row_base_[k], size(k), width(k)) * gathered;
      subtract(dofs_[k], own_);
    }
  } else {
    // Uᵀ y = b (unit lower): y_N(k) −= W_kᵀ y_k; Lᵀ x = y backwards: x_k = D_k⁻ᵀ (y_k − C_kᵀ x_N(k)).
    for (int k : order_) {
      if (width(k) == 0) continue;
      const auto own = gather(dofs_[k], own_);
      pushed_.head(width(k)).noalias() =
          Eigen::Map<const MatX>(data_.data() + row_base_[k], size(k), width(k)).transpose() * own;
      subtract(later_dofs_[k], pushed_);
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const int k = *it;
      auto own = gather(dofs_[k], own_);
      if (width(k) > 0) {
        const auto gathered = gather(later_dofs_[k], gathered_);
        own.noalias() -= Eigen::Map<const MatX>(data_.data() + col_base_[k], width(k), size(k)).transpose() * gathered;
      }
      solve_transposed(lu_[k], own_.data(), size(k));
      put(dofs_[k], own_);
    }
  }
}

void BlockSchurLu::solve(const VecX& b, VecX& x, bool transpose) {
  substitute(b, x, transpose);
  // No pivoting crosses blocks, so a badly conditioned diagonal block may cost digits.
  refine_direct_solve(*pattern_, values_, b, x, transpose, kMaxRefinements, refinement_,
                      [this](const VecX& rhs, VecX& out, bool t) { substitute(rhs, out, t); });
}

}  // namespace addsim
