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

using SparseView = Eigen::Map<const Eigen::SparseMatrix<double, Eigen::ColMajor, int>>;

// The matrix with nonzero `values` on `pattern` as a sparse view (no copy).
SparseView sparse_view(const SparsePattern& pattern, const VecX& values) {
  return SparseView(pattern.size(), pattern.size(), pattern.nnz(), pattern.outer().data(), pattern.inner().data(),
                    values.data());
}

// The same matrix written densely into `out` (|q| × |q|).
void to_dense(const SparsePattern& pattern, const VecX& values, MatX& out) {
  out.setZero(pattern.size(), pattern.size());
  const int* outer = pattern.outer().data();
  const int* inner = pattern.inner().data();
  for (int c = 0; c < pattern.size(); ++c)
    for (int e = outer[c]; e < outer[c + 1]; ++e) out(inner[e], c) = values[e];
}

// y (|q| × k) += A X for the matrix with nonzero `values` on `pattern`, restricted to the
// rows and columns of A that hold a non-zero value: history blocks dr^i/dq^{i-k} are
// (∂r/∂v, ∂r/∂a) combinations, non-zero only on the dynamic bodies' inertia, damping and
// contact rows (cube drag: the block's 6 × 6 of 12 × 12), so the product costs a quarter.
struct DenseBlockProduct {
  std::vector<int> rows, cols;
  MatX a, x, y;
  void add(const SparsePattern& pattern, const VecX& values, const MatX& X, Eigen::Ref<MatX> Y) {
    const int n = pattern.size();
    const int* outer = pattern.outer().data();
    const int* inner = pattern.inner().data();
    std::vector<int> row_of(n, -1);
    rows.clear();
    cols.clear();
    for (int c = 0; c < n; ++c) {
      bool any = false;
      for (int e = outer[c]; e < outer[c + 1]; ++e)
        if (values[e] != 0.0) {
          any = true;
          if (row_of[inner[e]] < 0) {
            row_of[inner[e]] = 0;
            rows.push_back(inner[e]);
          }
        }
      if (any) cols.push_back(c);
    }
    if (rows.empty()) return;
    std::sort(rows.begin(), rows.end());
    for (size_t r = 0; r < rows.size(); ++r) row_of[rows[r]] = static_cast<int>(r);
    const Eigen::Index nr = static_cast<Eigen::Index>(rows.size()), nc = static_cast<Eigen::Index>(cols.size());
    a.setZero(nr, nc);
    for (Eigen::Index k = 0; k < nc; ++k)
      for (int e = outer[cols[k]]; e < outer[cols[k] + 1]; ++e)
        if (values[e] != 0.0) a(row_of[inner[e]], k) = values[e];
    x.resize(nc, X.cols());
    for (Eigen::Index k = 0; k < nc; ++k) x.row(k) = X.row(cols[k]);
    y.noalias() = a * x;
    for (Eigen::Index r = 0; r < nr; ++r) Y.row(rows[r]) += y.row(r);
  }
};

}  // namespace

TrajectorySensitivities direct_sensitivity_matrices(const Model& model, const Trajectory& traj,
                                                    std::span<const int> params, int dense_dofs) {
  const auto t0 = std::chrono::steady_clock::now();
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

  TrajectorySensitivities out;
  out.params.assign(params.begin(), params.end());
  out.position.assign(m, -1);
  out.first_step.assign(m, n + 1);
  out.s.resize(n + 1);
  // column_of[j]: the listed column of parameter j (the ParamSink::columns map).
  std::vector<int> column_of(np, -1);
  for (int c = 0; c < m; ++c) {
    const int j = params[c];
    if (j < 0 || j >= np)
      throw InputError("direct sensitivities: parameter index " + std::to_string(j) + " outside [0, " +
                       std::to_string(np) + ")");
    if (column_of[j] >= 0)
      throw InputError("direct sensitivities: parameter " + model.params().name_of(j) + " is listed twice");
    column_of[j] = c;
  }
  // order[k]: the listed column stored at position k; `active` positions are in use.
  std::vector<int> order;
  order.reserve(m);
  auto activate = [&](int c, int step) {
    out.position[c] = static_cast<int>(order.size());
    out.first_step[c] = step;
    order.push_back(c);
  };

  // Step 0: S^0 = ∂q⁰/∂p, ∂v⁰/∂p and, with the constant-acceleration start-up, ∂a⁰/∂p
  // (solver/initial_acceleration.h; a⁰ depends on material and contact parameters too);
  // parameters of the initial state are active from here.
  MatX dq0 = MatX::Zero(nq, m), dv0 = MatX::Zero(nq, m), da0 = MatX::Zero(nq, m);
  std::unique_ptr<InitialAcceleration> a0;
  if (scheme.uses_initial_acceleration()) {
    a0 = std::make_unique<InitialAcceleration>(model);
    a0->linearize(traj.q0, traj.v0, traj.a0, traj.p);
  }
  {
    VecX a(nq), b(nq);
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
  MatX dv0_active(nq, active0), da0_active(nq, active0);  // in position order (the others are 0)
  for (int k = 0; k < active0; ++k) {
    out.s[0].col(k) = dq0.col(order[k]);
    dv0_active.col(k) = dv0.col(order[k]);
    da0_active.col(k) = da0.col(order[k]);
  }

  // Per-step workspaces, allocated once.
  const bool dense = nq <= dense_dofs;
  MatX dr_dp(nq, m), rhs, jac_dense;
  DenseBlockProduct block_product;
  VecX column(nq), solution(nq);
  Eigen::PartialPivLU<MatX> dense_lu;
  std::unique_ptr<LinearSolver> sparse_lu;
  if (!dense) sparse_lu = make_linear_solver(model.solver().linear_solver, &pattern);

  // Step i with its linearisation `lin`: S^i from ∂r^i/∂p and the history.
  auto solve_step = [&](const StepLinearization& lin, int i) {
    // ∂r^i/∂p for all listed parameters in one pass over the terms; columns that turn
    // non-zero here start at this step.
    dr_dp.setZero();
    ParamSink sink = ParamSink::columns(&model.stencils(), &column_of, &dr_dp);
    lin.param_derivatives(sink);
    for (int c = 0; c < m; ++c)
      if (out.position[c] < 0 && !dr_dp.col(c).isZero(0.0)) activate(c, i);
    const int active = static_cast<int>(order.size());
    // rhs = ∂r^i/∂p (constrained rows carry none) + Σ_k dr^i/dq^{i-k} S^{i-k} + dr^i/dv⁰ ∂v⁰/∂p.
    rhs.resize(nq, active);
    for (int k = 0; k < active; ++k) {
      if (lin.has_constrained_rows()) {
        column = dr_dp.col(order[k]);
        lin.project_rows(column);
        rhs.col(k) = column;
      } else {
        rhs.col(k) = dr_dp.col(order[k]);
      }
    }
    for (int k = 1; k <= K && i - k >= 0; ++k) {
      const MatX& past = out.s[i - k];
      if (past.cols() == 0) continue;
      if (dense) {
        block_product.add(pattern, lin.history_jacobian(k), past, rhs.leftCols(past.cols()));
      } else {
        rhs.leftCols(past.cols()) += sparse_view(pattern, lin.history_jacobian(k)) * past;
      }
    }
    if (lin.depends_on_v0() && active0 > 0) {
      if (dense) {
        block_product.add(pattern, lin.v0_jacobian(), dv0_active, rhs.leftCols(active0));
      } else {
        rhs.leftCols(active0) += sparse_view(pattern, lin.v0_jacobian()) * dv0_active;
      }
    }
    if (lin.depends_on_a0() && active0 > 0) {
      if (dense) {
        block_product.add(pattern, lin.a0_jacobian(), da0_active, rhs.leftCols(active0));
      } else {
        rhs.leftCols(active0) += sparse_view(pattern, lin.a0_jacobian()) * da0_active;
      }
    }
    // One factorisation of dr^i/dq^i, all right-hand sides solved with it.
    MatX& s_i = out.s[i];
    if (dense) {
      to_dense(pattern, lin.step_jacobian(), jac_dense);
      dense_lu.compute(jac_dense);
      ++out.factorizations;
      s_i.noalias() = dense_lu.solve(-rhs);
    } else {
      if (!sparse_lu->factorize(lin.step_jacobian()))
        throw SimulationError("direct sensitivities: step Jacobian dr/dq of step " + std::to_string(i) +
                                  " is singular",
                              i);
      ++out.factorizations;
      s_i.resize(nq, active);
      for (int k = 0; k < active; ++k) {
        column = -rhs.col(k);
        sparse_lu->solve(column, solution);
        s_i.col(k) = solution;
      }
    }
    // A singular dense LU shows as non-finite entries (partial pivoting does not report it).
    if (!s_i.allFinite())
      throw SimulationError("direct sensitivities: step Jacobian dr/dq of step " + std::to_string(i) +
                                " is singular (non-finite sensitivities)",
                            i);
  };

  // With solver.threads = 2 a helper thread linearises step i + 1 (it needs only the
  // recorded trajectory) while this thread solves step i.
  auto current = std::make_unique<StepLinearization>(model);
  auto following = std::make_unique<StepLinearization>(model);
  std::unique_ptr<WorkerThread> worker;
  if (model.solver().threads == 2) worker = std::make_unique<WorkerThread>();
  if (n >= 1) current->evaluate(traj, 1);
  for (int i = 1; i <= n; ++i) {
    if (worker && i < n) {
      worker->run_alongside([&traj, next = following.get(), i] { next->evaluate(traj, i + 1); },
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

}  // namespace addsim
