#include "addsim/sensitivity/direct_jacobian.h"

#include <Eigen/LU>
#include <Eigen/SparseCore>
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/sensitivity/objective_function.h"
#include "addsim/sensitivity/reverse_jacobian.h"
#include "addsim/sensitivity/step_linearization.h"
#include "addsim/solver/initial_acceleration.h"
#include "addsim/solver/linear_solver.h"
#include "addsim/solver/worker_thread.h"

namespace addsim {

VecX TrajectorySensitivities::column(int i, int c) const {
  ADDSIM_CHECK(i >= 0 && i < static_cast<int>(s.size()), "sensitivity step out of range");
  ADDSIM_CHECK(c >= 0 && c < static_cast<int>(params.size()), "sensitivity column out of range");
  if (i < first_step[c]) return VecX::Zero(s[i].rows());
  return s[i].col(position[c]);
}

void TrajectorySensitivities::tangent(int c, std::vector<VecX>& dq) const {
  ADDSIM_CHECK(c >= 0 && c < static_cast<int>(params.size()), "sensitivity column out of range");
  dq.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<int>(i) < first_step[c])
      dq[i].setZero(s[i].rows());
    else
      dq[i] = s[i].col(position[c]);
  }
}

namespace {

// Y.row(row_map[r]) −= (A X).row(r) for the matrix A with `values` on `pattern` (the
// negated product, its rows placed through row_map: the LU's row permutation, so that the
// right-hand side is built in the order the triangular solves read it). History blocks
// dr^i/dq^{i-k} are (∂r/∂v, ∂r/∂a) combinations, non-zero only on the dynamic bodies'
// inertia, damping and contact entries while the pattern also holds the stiffness couplings,
// so A's non-zeros are gathered per call (contact entries change from step to step):
// - systems up to 32 DOFs (cube drag: a 6 × 6 block of 12 × 12) and A filled to a quarter
//   or more (mass-spring sheet: spring damping couples neighbours) are one dense product
//   with the whole matrix, its rows placed through row_map (no gathering of X);
// - otherwise runs of consecutive columns with the same rows (a rigid body's inertia and
//   damping columns: quadruped, 372 non-zeros in 78 × 78) are small dense products with those
//   rows of X, the rest entry by entry.
// All buffers are sized for |q| × m once, so a call allocates nothing.
class HistoryProduct {
 public:
  void reserve(int nq, int m) {
    entries_.reserve(16 * static_cast<size_t>(nq));
    a_.resize(nq, nq);
    y_.resize(nq, m);
  }

  void subtract(const SparsePattern& pattern, const VecX& values, const Eigen::Ref<const MatX>& X, Eigen::Ref<MatX> Y,
                const std::vector<int>& row_map) {
    const int n = pattern.size();
    const int* outer = pattern.outer().data();
    const int* inner = pattern.inner().data();
    entries_.clear();
    for (int c = 0; c < n; ++c)
      for (int e = outer[c]; e < outer[c + 1]; ++e)
        if (values[e] != 0.0) entries_.push_back({inner[e], c, values[e]});
    if (entries_.empty()) return;
    const Eigen::Index k = X.cols();
    if (n <= 32 || 4 * entries_.size() >= static_cast<size_t>(n) * n) {
      auto a = a_.topLeftCorner(n, n);
      a.setZero();
      for (const Entry& e : entries_) a(row_map[e.row], e.col) = e.value;
      Y.noalias() -= a * X;
      return;
    }
    // Entries are in column order. A run of consecutive columns with the same rows is a
    // dense block: its product with the matching rows of X (contiguous), rows placed through
    // row_map; what does not form a block of at least 4 entries goes entry by entry.
    const size_t count = entries_.size();
    rest_.clear();
    size_t at = 0;
    while (at < count) {
      const int c0 = entries_[at].col;
      size_t end = at;
      while (end < count && entries_[end].col == c0) ++end;
      const size_t h = end - at;
      int w = 1;
      size_t next = end;
      while (next + h <= count && entries_[next].col == c0 + w &&
             (next + h == count || entries_[next + h].col != c0 + w)) {
        bool same = entries_[next + h - 1].col == c0 + w;
        for (size_t r = 0; same && r < h; ++r) same = entries_[next + r].row == entries_[at + r].row;
        if (!same) break;
        next += h;
        ++w;
      }
      if (h * static_cast<size_t>(w) < 4) {
        rest_.insert(rest_.end(), entries_.begin() + static_cast<std::ptrdiff_t>(at),
                     entries_.begin() + static_cast<std::ptrdiff_t>(next));
        at = next;
        continue;
      }
      const Eigen::Index hh = static_cast<Eigen::Index>(h);
      auto a = a_.topLeftCorner(hh, w);
      for (int j = 0; j < w; ++j)
        for (size_t r = 0; r < h; ++r) a(static_cast<Eigen::Index>(r), j) = entries_[at + j * h + r].value;
      auto y = y_.topLeftCorner(hh, k);
      y.noalias() = a * X.middleRows(c0, w);
      for (size_t r = 0; r < h; ++r) Y.row(row_map[entries_[at + r].row]) -= y.row(static_cast<Eigen::Index>(r));
      at = next;
    }
    if (rest_.empty()) return;
    for (Entry& e : rest_) e.row = row_map[e.row];
    for (Eigen::Index j = 0; j < k; ++j) {
      const double* x = X.col(j).data();
      double* yj = Y.col(j).data();
      for (const Entry& e : rest_) yj[e.row] -= e.value * x[e.col];
    }
  }

 private:
  struct Entry {
    int row, col;
    double value;
  };
  std::vector<Entry> entries_, rest_;
  MatX a_, y_;
};

}  // namespace

struct DirectSensitivitySweep::Workspace {
  Workspace(const Model& model, int dense_dofs)
      : dense(model.num_dofs() <= dense_dofs), current(model), following(model) {
    if (!dense) sparse_lu = make_linear_solver(model.solver().linear_solver, &model.pattern());
    if (model.solver().threads == 2) worker = std::make_unique<WorkerThread>();
    column_of.assign(model.params().size(), -1);
    const int nq = model.num_dofs();
    jac_dense.resize(dense ? nq : 0, dense ? nq : 0);
    column.resize(nq);
    solution.resize(nq);
    row_map.resize(nq);
    for (int r = 0; r < nq; ++r) row_map[r] = r;
  }

  // Sizes the m-column buffers (kept while m does not grow).
  void reserve(int nq, int m) {
    if (dr_dp.cols() >= m && dr_dp.rows() == nq) return;
    dr_dp.resize(nq, m);
    rhs.resize(nq, m);
    dq0.resize(nq, m);
    dv0.resize(nq, m);
    da0.resize(nq, m);
    product.reserve(nq, m);
  }

  const bool dense;
  StepLinearization current, following;
  std::unique_ptr<WorkerThread> worker;
  std::unique_ptr<InitialAcceleration> a0;
  std::unique_ptr<LinearSolver> sparse_lu;
  Eigen::PartialPivLU<MatX> dense_lu;
  // column_of[j]: the listed column of parameter j (the ParamSink::columns map; −1 = not
  // listed, restored after each run); order[k]: the listed column stored at position k.
  std::vector<int> column_of, order;
  std::vector<int> touched;  // the columns of dr_dp a step's ParamSink wrote (sorted, unique)
  // row_map[r]: the row of the right-hand side that holds residual row r (the dense LU's
  // row permutation; the identity on the sparse path).
  std::vector<int> row_map;
  MatX dr_dp, rhs, jac_dense, dq0, dv0, da0, dv0_active, da0_active;
  HistoryProduct product;
  VecX column, solution;
};

DirectSensitivitySweep::DirectSensitivitySweep(const Model& model, int dense_dofs)
    : model_(model), w_(std::make_unique<Workspace>(model, dense_dofs)) {}

DirectSensitivitySweep::~DirectSensitivitySweep() = default;

const TrajectorySensitivities& DirectSensitivitySweep::run(const Trajectory& traj, std::span<const int> params) {
  const auto t0 = std::chrono::steady_clock::now();
  const Model& model = model_;
  Workspace& w = *w_;
  require_complete_trajectory(model, traj, "direct sensitivities");
  // The sweep runs over the internal steps (the output steps, or a sub-stepped run's grid,
  // docs/notation.md §Time grids); the result is stored by output step.
  const TimeScheme& scheme = traj.scheme(model.scheme());
  const SparsePattern& pattern = model.pattern();
  const int n = traj.internal_steps();
  const int K = scheme.window();
  const int nq = model.num_dofs();
  const int np = model.params().size();
  const int m = static_cast<int>(params.size());

  TrajectorySensitivities& out = out_;
  out.params.assign(params.begin(), params.end());
  out.position.assign(m, -1);
  out.first_step.assign(m, n + 1);
  out.s.resize(n + 1);
  out.factorizations = 0;
  std::vector<int>& column_of = w.column_of;
  // Restores column_of to all −1 on return (also when a check below throws).
  struct ResetColumns {
    std::vector<int>& map;
    const std::span<const int> listed;
    ~ResetColumns() {
      for (int j : listed)
        if (j >= 0 && j < static_cast<int>(map.size())) map[j] = -1;
    }
  } reset{column_of, params};
  for (int c = 0; c < m; ++c) {
    const int j = params[c];
    if (j < 0 || j >= np)
      throw InputError("direct sensitivities: parameter index " + std::to_string(j) + " outside [0, " +
                       std::to_string(np) + ")");
    if (column_of[j] >= 0)
      throw InputError("direct sensitivities: parameter " + model.params().name_of(j) + " is listed twice");
    column_of[j] = c;
  }
  w.reserve(nq, m);
  std::vector<int>& order = w.order;
  order.clear();
  auto activate = [&](int c, int step) {
    out.position[c] = static_cast<int>(order.size());
    out.first_step[c] = step;
    order.push_back(c);
  };

  // Step 0: S^0 = ∂q⁰/∂p, ∂v⁰/∂p and, with the constant-acceleration start-up, ∂a⁰/∂p
  // (solver/initial_acceleration.h; a⁰ depends on material and contact parameters too);
  // parameters of the initial state are active from here.
  auto dq0 = w.dq0.leftCols(m), dv0 = w.dv0.leftCols(m), da0 = w.da0.leftCols(m);
  da0.setZero();
  InitialAcceleration* a0 = nullptr;
  if (scheme.uses_initial_acceleration()) {
    if (!w.a0) w.a0 = std::make_unique<InitialAcceleration>(model);
    a0 = w.a0.get();
    a0->linearize(traj.q0, traj.v0, traj.a0, traj.p);
  }
  {
    VecX& a = w.column;
    VecX& b = w.solution;
    for (int c = 0; c < m; ++c) {
      a.setZero();
      b.setZero();
      for (const auto& body : model.bodies()) body->initial_state_jvp(traj.p, params[c], a, b);
      dq0.col(c) = a;
      dv0.col(c) = b;
      if (a0) da0.col(c) = a0->jvp(params[c], a, b);
      if (!a.isZero(0.0) || !b.isZero(0.0) || !da0.col(c).isZero(0.0)) activate(c, 0);
    }
  }
  const int active0 = static_cast<int>(order.size());
  out.s[0].resize(nq, active0);
  w.dv0_active.resize(nq, active0);  // in position order (the others are 0)
  w.da0_active.resize(nq, active0);
  for (int k = 0; k < active0; ++k) {
    out.s[0].col(k) = dq0.col(order[k]);
    w.dv0_active.col(k) = dv0.col(order[k]);
    w.da0_active.col(k) = da0.col(order[k]);
  }

  auto dr_dp = w.dr_dp.leftCols(m);
  dr_dp.setZero();
  MatX& rhs_buffer = w.rhs;
  HistoryProduct& product = w.product;
  VecX& column = w.column;
  VecX& solution = w.solution;

  // Step i with its linearisation `lin`: S^i from ∂r^i/∂p and the history.
  auto solve_step = [&](const StepLinearization& lin, int i) {
    // ∂r^i/∂p for all listed parameters in one pass over the terms; columns that turn
    // non-zero here start at this step.
    // dr_dp is zero here: inactive columns stay zero (a non-zero one is activated), active
    // ones are cleared after use below.
    // Only the columns the terms wrote are candidates (in increasing order, as a scan of
    // all m would find them).
    w.touched.clear();
    ParamSink sink = ParamSink::columns(&model.stencils(), &column_of, &w.dr_dp, &w.touched);
    lin.param_derivatives(sink);
    std::sort(w.touched.begin(), w.touched.end());
    w.touched.erase(std::unique(w.touched.begin(), w.touched.end()), w.touched.end());
    for (int c : w.touched)
      if (out.position[c] < 0 && !dr_dp.col(c).isZero(0.0)) activate(c, i);
    const int active = static_cast<int>(order.size());
    // The dense path factorises dr^i/dq^i first and builds the right-hand side
    //   −(∂r^i/∂p (constrained rows carry none) + Σ_k dr^i/dq^{i-k} S^{i-k} + dr^i/dv⁰ ∂v⁰/∂p)
    // in the step's block, rows already in the LU's pivot order, and solves it there with the
    // two triangular factors (no permutation or negation pass, no copy); the sparse path
    // builds it in `rhs` and solves column by column.
    MatX& s_i = out.s[i];
    if (w.dense) {
      pattern_matrix_to_dense(pattern, lin.step_jacobian(), w.jac_dense);
      w.dense_lu.compute(w.jac_dense);
      ++out.factorizations;
      const auto& pivots = w.dense_lu.permutationP().indices();
      for (int r = 0; r < nq; ++r) w.row_map[r] = pivots[r];
    }
    const std::vector<int>& row_map = w.row_map;
    if (w.dense) s_i.resize(nq, active);
    auto b = (w.dense ? s_i : rhs_buffer).leftCols(active);
    for (int k = 0; k < active; ++k) {
      const double* src = dr_dp.col(order[k]).data();
      if (lin.has_constrained_rows()) {
        column = dr_dp.col(order[k]);
        lin.project_rows(column);
        src = column.data();
      }
      double* dst = b.col(k).data();
      for (int r = 0; r < nq; ++r) dst[row_map[r]] = -src[r];
      dr_dp.col(order[k]).setZero();
    }
    for (int k = 1; k <= K && i - k >= 0; ++k) {
      const MatX& past = out.s[i - k];
      if (past.cols() == 0) continue;
      if (w.dense) {
        product.subtract(pattern, lin.history_jacobian(k), past, b.leftCols(past.cols()), row_map);
      } else {
        b.leftCols(past.cols()) -= pattern_matrix_view(pattern, lin.history_jacobian(k)) * past;
      }
    }
    if (lin.depends_on_v0() && active0 > 0) {
      if (w.dense) {
        product.subtract(pattern, lin.v0_jacobian(), w.dv0_active, b.leftCols(active0), row_map);
      } else {
        b.leftCols(active0) -= pattern_matrix_view(pattern, lin.v0_jacobian()) * w.dv0_active;
      }
    }
    if (lin.depends_on_a0() && active0 > 0) {
      if (w.dense) {
        product.subtract(pattern, lin.a0_jacobian(), w.da0_active, b.leftCols(active0), row_map);
      } else {
        b.leftCols(active0) -= pattern_matrix_view(pattern, lin.a0_jacobian()) * w.da0_active;
      }
    }
    // One factorisation of dr^i/dq^i, all right-hand sides solved with it (the step's block
    // keeps its memory when its size repeats).
    if (w.dense) {
      // No right-hand side at a step before any parameter is carried: Eigen's triangular
      // solve would bind a reference to the first coefficient of storage that does not exist
      // (UBSan, test_optim).
      if (s_i.cols() > 0) {
        const MatX& lu = w.dense_lu.matrixLU();
        lu.triangularView<Eigen::UnitLower>().solveInPlace(s_i);
        lu.triangularView<Eigen::Upper>().solveInPlace(s_i);
      }
    } else {
      if (!w.sparse_lu->factorize(lin.step_jacobian()))
        throw SimulationError("direct sensitivities: step Jacobian dr/dq of step " + std::to_string(i) +
                                  " is singular",
                              i);
      ++out.factorizations;
      s_i.resize(nq, active);
      for (int k = 0; k < active; ++k) {
        column = b.col(k);
        w.sparse_lu->solve(column, solution);
        s_i.col(k) = solution;
      }
    }
    // A singular dense LU shows as non-finite entries (partial pivoting does not report it).
    if (!s_i.allFinite())
      throw SimulationError("direct sensitivities: step Jacobian dr/dq of step " + std::to_string(i) +
                                " is singular (non-finite sensitivities)",
                            i);
  };

  // Steps before the first one any listed parameter enters (first_parameter_step(), e.g. a
  // continuation stage over the second half of a per-step control) carry no column: S^i = 0,
  // no linearisation, no factorisation. A sub-stepped run starts at step 1.
  const int start =
      traj.substepped() || active0 != 0 ? 1 : std::max(first_parameter_step(model, params, n + 1), 1);
  for (int i = 1; i < start; ++i) out.s[i].resize(nq, 0);
  // With solver.threads = 2 a helper thread linearises step i + 1 (it needs only the
  // recorded trajectory) while this thread solves step i.
  StepLinearization* current = &w.current;
  StepLinearization* following = &w.following;
  if (start <= n) current->evaluate(traj, start);
  for (int i = start; i <= n; ++i) {
    if (w.worker && i < n) {
      w.worker->run_alongside([&traj, next = following, i] { next->evaluate(traj, i + 1); },
                              [&] { solve_step(*current, i); });
    } else {
      solve_step(*current, i);
      if (i < n) following->evaluate(traj, i + 1);
    }
    std::swap(current, following);
  }
  // A sub-stepped run: keep the output steps' blocks; a column that starts at an internal
  // step starts at the first output step at or after it.
  if (traj.substepped()) {
    const int n_out = model.scheme().steps;
    std::vector<MatX> by_output(n_out + 1);
    for (int k = 0; k <= n_out; ++k) by_output[k] = std::move(out.s[traj.output_index[k]]);
    out.s = std::move(by_output);
    for (int c = 0; c < m; ++c)
      if (out.position[c] >= 0) {
        const auto it = std::lower_bound(traj.output_index.begin(), traj.output_index.end(), out.first_step[c]);
        out.first_step[c] = static_cast<int>(it - traj.output_index.begin());
      } else {
        out.first_step[c] = n_out + 1;
      }
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

TrajectorySensitivities direct_sensitivity_matrices(const Model& model, const Trajectory& traj,
                                                    std::span<const int> params, int dense_dofs) {
  DirectSensitivitySweep sweep(model, dense_dofs);
  sweep.run(traj, params);
  return sweep.take();
}

}  // namespace addsim
