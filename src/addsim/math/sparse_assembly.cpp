#include "addsim/math/sparse_assembly.h"

#include <algorithm>
#include <cmath>

namespace addsim {

int StencilSet::add(std::vector<DofIndex> dofs) {
  std::size_t hash = dofs.size();
  for (DofIndex d : dofs) hash = hash * 1000003u ^ static_cast<std::size_t>(d);
  const auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const std::span<const DofIndex> old = this->dofs(it->second);
    if (std::equal(old.begin(), old.end(), dofs.begin(), dofs.end())) return it->second;
  }
  dofs_.insert(dofs_.end(), dofs.begin(), dofs.end());
  offsets_.push_back(static_cast<int>(dofs_.size()));
  by_hash_.emplace(hash, count() - 1);
  return count() - 1;
}

SparsePattern::SparsePattern(int n, const StencilSet& stencils) : n_(n) {
  // Collect column sets: the diagonal plus every dense stencil block.
  std::vector<std::vector<int>> cols(n);
  for (int i = 0; i < n; ++i) cols[i].push_back(i);
  for (int s = 0; s < stencils.count(); ++s) {
    const auto dofs = stencils.dofs(s);
    for (DofIndex c : dofs) {
      ADDSIM_CHECK(c >= 0 && c < n, "stencil DOF out of range");
      for (DofIndex r : dofs) cols[c].push_back(r);
    }
  }
  outer_.assign(n + 1, 0);
  for (int c = 0; c < n; ++c) {
    auto& v = cols[c];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    outer_[c + 1] = outer_[c] + static_cast<int>(v.size());
  }
  inner_.reserve(outer_[n]);
  for (int c = 0; c < n; ++c) inner_.insert(inner_.end(), cols[c].begin(), cols[c].end());
  diag_.resize(n);
  for (int c = 0; c < n; ++c)
    diag_[c] = static_cast<int>(std::lower_bound(inner_.begin() + outer_[c], inner_.begin() + outer_[c + 1], c) -
                                inner_.begin());

  // Column triples with identical row lists.
  const auto same_rows = [&](int a, int b) {
    return outer_[a + 1] - outer_[a] == outer_[b + 1] - outer_[b] &&
           std::equal(inner_.begin() + outer_[a], inner_.begin() + outer_[a + 1], inner_.begin() + outer_[b]);
  };
  for (int c = 0; c < n;) {
    groups_.push_back(c);
    c += c + 2 < n && same_rows(c, c + 1) && same_rows(c, c + 2) ? 3 : 1;
  }
  groups_.push_back(n);

  // Per-stencil maps local (r, c) -> value index, by binary search in column c.
  map_offsets_.resize(stencils.count() + 1, 0);
  for (int s = 0; s < stencils.count(); ++s) {
    const int ns = static_cast<int>(stencils.dofs(s).size());
    map_offsets_[s + 1] = map_offsets_[s] + ns * ns;
  }
  map_.resize(map_offsets_.back());
  for (int s = 0; s < stencils.count(); ++s) {
    const auto dofs = stencils.dofs(s);
    const int ns = static_cast<int>(dofs.size());
    int* m = map_.data() + map_offsets_[s];
    for (int c = 0; c < ns; ++c) {
      const int col = dofs[c];
      const int* begin = inner_.data() + outer_[col];
      const int* end = inner_.data() + outer_[col + 1];
      for (int r = 0; r < ns; ++r) {
        const int* it = std::lower_bound(begin, end, dofs[r]);
        m[r + c * ns] = static_cast<int>(it - inner_.data());
      }
    }
  }

  // Point maps: stencils whose DOFs come in consecutive triples (3k, 3k+1, 3k+2 = d, d+1,
  // d+2). Rows are sorted per column, so such a triple's value indices are consecutive too.
  point_map_offsets_.assign(stencils.count(), -1);
  for (int s = 0; s < stencils.count(); ++s) {
    const auto dofs = stencils.dofs(s);
    const int ns = static_cast<int>(dofs.size());
    if (ns % 3 != 0) continue;
    bool points = true;
    for (int k = 0; k < ns / 3 && points; ++k) points = dofs[3 * k + 1] == dofs[3 * k] + 1 && dofs[3 * k + 2] == dofs[3 * k] + 2;
    if (!points) continue;
    const int* m = map(s);
    point_map_offsets_[s] = static_cast<int>(point_map_.size());
    for (int c = 0; c < ns; ++c)
      for (int k = 0; k < ns / 3; ++k) {
        const int base = m[3 * k + c * ns];
        ADDSIM_CHECK(m[3 * k + 1 + c * ns] == base + 1 && m[3 * k + 2 + c * ns] == base + 2,
                     "point stencil rows are not consecutive");
        point_map_.push_back(base);
      }
  }
}

SparseMat SparsePattern::make_matrix(const VecX& values) const {
  ADDSIM_CHECK(values.size() == nnz(), "value array does not match the pattern");
  return Eigen::Map<const SparseMat>(n_, n_, nnz(), outer_.data(), inner_.data(), values.data());
}

void SparsePattern::multiply_add(const VecX& values, const VecX& x, VecX& y) const {
  // Each y[r] receives its column contributions in increasing column order, as a plain
  // column-by-column product would add them (same result to the bit).
  for_each_group(
      values,
      [&](int c, int len, const int* rows, const double* v) {
        const double x0 = x[c], x1 = x[c + 1], x2 = x[c + 2];
        if (x0 == 0.0 && x1 == 0.0 && x2 == 0.0) return;
        for (int k = 0; k < len; ++k) {
          double& yr = y[rows[k]];
          yr += v[k] * x0;
          yr += v[k + len] * x1;
          yr += v[k + 2 * len] * x2;
        }
      },
      [&](int c, int len, const int* rows, const double* v) {
        const double xc = x[c];
        if (xc == 0.0) return;
        for (int k = 0; k < len; ++k) y[rows[k]] += v[k] * xc;
      });
}

void SparsePattern::transpose_multiply_add(const VecX& values, const VecX& x, VecX& y) const {
  for_each_group(
      values,
      [&](int c, int len, const int* rows, const double* v) {
        double a0 = 0.0, a1 = 0.0, a2 = 0.0;
        for (int k = 0; k < len; ++k) {
          const double xr = x[rows[k]];
          a0 += v[k] * xr;
          a1 += v[k + len] * xr;
          a2 += v[k + 2 * len] * xr;
        }
        y[c] += a0;
        y[c + 1] += a1;
        y[c + 2] += a2;
      },
      [&](int c, int len, const int* rows, const double* v) {
        double acc = 0.0;
        for (int k = 0; k < len; ++k) acc += v[k] * x[rows[k]];
        y[c] += acc;
      });
}

void SparsePattern::abs_multiply_add(const VecX& values, const VecX& x, VecX& y) const {
  for_each_group(
      values,
      [&](int c, int len, const int* rows, const double* v) {
        const double x0 = std::abs(x[c]), x1 = std::abs(x[c + 1]), x2 = std::abs(x[c + 2]);
        for (int k = 0; k < len; ++k) {
          double& yr = y[rows[k]];
          yr = ((yr + std::abs(v[k]) * x0) + std::abs(v[k + len]) * x1) + std::abs(v[k + 2 * len]) * x2;
        }
      },
      [&](int c, int len, const int* rows, const double* v) {
        const double xc = std::abs(x[c]);
        for (int k = 0; k < len; ++k) y[rows[k]] += std::abs(v[k]) * xc;
      });
}

Assembly::Assembly(const SparsePattern* pattern, const StencilSet* stencils)
    : r(VecX::Zero(pattern->size())),
      r_abs(VecX::Zero(pattern->size())),
      kq(VecX::Zero(pattern->nnz())),
      kv(VecX::Zero(pattern->nnz())),
      ka(VecX::Zero(pattern->nnz())),
      pattern_(pattern),
      stencils_(stencils) {}

void Assembly::reset(EvalMode mode, const JacobianWeights& weights) {
  completing_ = false;
  mode_ = mode;
  weights_ = weights;
  r.setZero();
  r_abs.setZero();
  if (mode == EvalMode::kResidualAndJacobians) {
    kq.setZero();
    kv.setZero();
    ka.setZero();
  } else if (mode == EvalMode::kResidualAndStepJacobian) {
    jac.setZero(pattern_->nnz());
  }
  predictor_active_ = predicts_stick();
  if (predictor_active_) r_predictor.setZero(pattern_->size());
}

void Assembly::reset_step_partials(const JacobianWeights& weights) {
  ADDSIM_CHECK(mode_ == EvalMode::kResidual && !completing_, "reset_step_partials: needs a residual-only evaluation");
  mode_ = EvalMode::kResidualAndStepJacobian;
  weights_ = weights;
  r.swap(kept_r_);
  r_abs.swap(kept_r_abs_);
  r.setZero(pattern_->size());
  r_abs.setZero(pattern_->size());
  jac.setZero(pattern_->nnz());
  predictor_active_ = predicts_stick();
  if (predictor_active_) r_predictor.setZero(pattern_->size());
  completing_ = true;
}

void Assembly::finish_step_partials() {
  ADDSIM_CHECK(completing_, "finish_step_partials without reset_step_partials");
  r.swap(kept_r_);
  r_abs.swap(kept_r_abs_);
  completing_ = false;
}

void Assembly::add_from(const Assembly& other) {
  ADDSIM_CHECK(other.mode_ == mode_ && other.pattern_ == pattern_, "assemblies to add differ in mode or pattern");
  r += other.r;
  r_abs += other.r_abs;
  if (mode_ == EvalMode::kResidualAndJacobians) {
    kq += other.kq;
    kv += other.kv;
    ka += other.ka;
  } else if (mode_ == EvalMode::kResidualAndStepJacobian) {
    jac += other.jac;
  }
  if (predictor_active_ && other.predictor_active_) r_predictor += other.r_predictor;
}

void Assembly::add_dynamic(int id, const VecX& r_local, const MatX* dr_dq, const MatX* dr_dv, const MatX* dr_da) {
  const auto dofs = stencils_->dofs(id);
  const int n = static_cast<int>(dofs.size());
  ADDSIM_CHECK(r_local.size() == n, "local residual size does not match the stencil");
  for (int k = 0; k < n && !completing_; ++k) {
    r[dofs[k]] += r_local[k];
    r_abs[dofs[k]] += std::abs(r_local[k]);
  }
  if (!wants_jacobians()) return;
  const int* m = pattern_->map(id);
  auto scatter = [&](const MatX* local, double w, VecX& values) {
    if (!local || w == 0.0) return;
    for (int c = 0; c < n; ++c)
      for (int rr = 0; rr < n; ++rr) values[m[rr + c * n]] += w * (*local)(rr, c);
  };
  if (mode_ == EvalMode::kResidualAndStepJacobian) {
    scatter(dr_dq, weights_.wq, jac);
    scatter(dr_dv, weights_.wv, jac);
    scatter(dr_da, weights_.wa, jac);
    return;
  }
  scatter(dr_dq, 1.0, kq);
  scatter(dr_dv, 1.0, kv);
  scatter(dr_da, 1.0, ka);
}

ParamSink ParamSink::vjp(const StencilSet* stencils, const VecX* lambda, VecX* grad) {
  ParamSink s;
  s.stencils_ = stencils;
  s.lambda_ = lambda;
  s.grad_ = grad;
  return s;
}

ParamSink ParamSink::column(const StencilSet* stencils, int j, VecX* col) {
  ParamSink s;
  s.stencils_ = stencils;
  s.column_ = j;
  s.col_ = col;
  return s;
}

ParamSink ParamSink::columns(const StencilSet* stencils, const std::vector<int>* column_of, MatX* cols,
                             std::vector<int>* touched) {
  ParamSink s;
  s.stencils_ = stencils;
  s.column_of_ = column_of;
  s.cols_ = cols;
  s.touched_ = touched;
  return s;
}

void ParamSink::add(int stencil_id, std::span<const int> pidx, const Eigen::Ref<const MatX>& dr_dp) {
  add_rows(stencils_->dofs(stencil_id), pidx, dr_dp);
}

void ParamSink::add_rows(std::span<const DofIndex> dofs, std::span<const int> pidx,
                         const Eigen::Ref<const MatX>& dr_dp) {
  const int n = static_cast<int>(dofs.size());
  const int m = static_cast<int>(pidx.size());
  ADDSIM_CHECK(dr_dp.rows() == n && dr_dp.cols() == m, "parameter block has the wrong shape");
  if (lambda_) {
    for (int c = 0; c < m; ++c) {
      if (pidx[c] < 0) continue;
      double acc = 0.0;
      for (int r = 0; r < n; ++r) acc += dr_dp(r, c) * (*lambda_)[dofs[r]];
      (*grad_)[pidx[c]] += acc;
    }
    return;
  }
  if (column_of_) {
    for (int c = 0; c < m; ++c) {
      if (pidx[c] < 0) continue;
      const int k = (*column_of_)[pidx[c]];
      if (k < 0) continue;
      if (touched_) touched_->push_back(k);
      for (int r = 0; r < n; ++r) (*cols_)(dofs[r], k) += dr_dp(r, c);
    }
    return;
  }
  for (int c = 0; c < m; ++c) {
    if (pidx[c] != column_) continue;
    for (int r = 0; r < n; ++r) (*col_)[dofs[r]] += dr_dp(r, c);
  }
}

}  // namespace addsim
