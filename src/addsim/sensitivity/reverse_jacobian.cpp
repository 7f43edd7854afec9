#include "addsim/sensitivity/reverse_jacobian.h"

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

int first_parameter_step(const Model& model, int j) {
  const ParameterTable& table = model.params();
  if (j < 0 || j >= table.size()) return 0;
  const ParamEntry& e = table.entry_of(j);
  if (e.kind != ParamKind::kControl || e.rows != model.scheme().steps + 1) return 0;
  const int row = (j - e.offset) / e.cols;
  return row >= 2 ? row : 0;
}

int first_parameter_step(const Model& model, std::span<const int> params, int none) {
  int first = none;
  for (int j : params) first = std::min(first, first_parameter_step(model, j));
  return first;
}

JacobianModeCost jacobian_mode_cost(const Model& model, std::span<const int> params,
                                    std::span<const ResidualStateRows> rows) {
  JacobianModeCost cost;
  const int n = model.scheme().steps;
  const ParameterTable& table = model.params();
  for (int j : params) {
    if (j < 0 || j >= table.size()) continue;
    cost.direct += n - std::max(first_parameter_step(model, j), 1) + 1;
  }
  // Each row once, at its last step.
  std::vector<std::pair<int, int>> last;  // (row, step)
  for (const ResidualStateRows& b : rows)
    for (Eigen::Index r = 0; r < b.dq.rows(); ++r) last.emplace_back(b.first_row + static_cast<int>(r), b.step);
  std::sort(last.begin(), last.end());
  for (size_t k = 0; k < last.size(); ++k)
    if (k + 1 == last.size() || last[k + 1].first != last[k].first) cost.reverse += last[k].second;
  return cost;
}

namespace {

// Systems up to this many DOFs form the history products densely (the direct sweep's
// HistoryProduct switches at the same size).
constexpr int kDenseHistoryDofs = 32;

}  // namespace

struct ReverseJacobianSweep::Workspace {
  Workspace(const Model& model, int dense_dofs)
      : dense(model.num_dofs() <= dense_dofs), current(model), following(model) {
    if (!dense) sparse_lu = make_linear_solver(model.solver().linear_solver, &model.pattern());
    if (model.solver().threads == 2) worker = std::make_unique<WorkerThread>();
    const int nq = model.num_dofs();
    if (dense) jac_dense.resize(nq, nq);
    if (nq <= kDenseHistoryDofs) hist_dense.resize(nq, nq);
    column.resize(nq);
    solution.resize(nq);
    gq.resize(nq);
    gv.resize(nq);
    ga.resize(nq);
    grad.resize(model.params().size());
  }

  // Sizes the k-seed and m-column buffers (kept while k and m do not grow).
  void reserve(int nq, int k, int m, int window) {
    if (dr_dp.rows() != nq || dr_dp.cols() < m) dr_dp.setZero(nq, m);
    if (jst.rows() < k || jst.cols() < m) jst.resize(std::max<Eigen::Index>(k, jst.rows()), std::max<Eigen::Index>(m, jst.cols()));
    if (rhs.cols() < k || rhs.rows() != nq) {
      rhs.resize(nq, k);
      lambda.resize(nq, k);
      lambda_p.resize(nq, k);
      gq0.resize(nq, k);
      gv0.resize(nq, k);
      ga0.resize(nq, k);
      acc.clear();
    }
    if (static_cast<int>(acc.size()) != window + 1) acc.assign(window + 1, MatX::Zero(nq, rhs.cols()));
  }

  const bool dense;
  StepLinearization current, following;
  std::unique_ptr<WorkerThread> worker;
  std::unique_ptr<InitialAcceleration> a0;
  std::unique_ptr<LinearSolver> sparse_lu;
  Eigen::PartialPivLU<MatX> dense_lu;
  // column_of[j]: listed column of parameter j (−1: not listed); seed_of_row[r]: the seed
  // (position in last-step order) of residual row r (−1: r does not read the state).
  std::vector<int> column_of, seed_of_row;
  std::vector<int> touched;  // the columns of dr_dp a step's ParamSink wrote (sorted, unique)
  // Per seed in order: its row and last internal step (non-increasing); the blocks in order
  // of decreasing internal step with that step.
  std::vector<int> seed_row, seed_last, block_order, block_step;
  std::vector<std::pair<int, int>> order;  // (−last step, row) while sorting
  MatX dr_dp, jst, rhs, lambda, lambda_p, gq0, gv0, ga0, jac_dense, hist_dense;
  std::vector<MatX> acc;  // acc[j mod (K+1)]: Σ_k (dr^{j+k}/dq^j)ᵀ Λ^{j+k}
  VecX column, solution, gq, gv, ga, grad;
};

ReverseJacobianSweep::ReverseJacobianSweep(const Model& model, int dense_dofs)
    : model_(model), w_(std::make_unique<Workspace>(model, dense_dofs)) {}

ReverseJacobianSweep::~ReverseJacobianSweep() = default;

void ReverseJacobianSweep::run(const Trajectory& traj, std::span<const int> params,
                               std::span<const ResidualStateRows> rows, Eigen::Ref<MatX> out) {
  const auto t0 = std::chrono::steady_clock::now();
  const Model& model = model_;
  Workspace& w = *w_;
  require_complete_trajectory(model, traj, "reverse Jacobian");
  // The sweep runs over the internal steps (a sub-stepped run's grid); blocks at output step
  // k enter at internal step output_index[k].
  const TimeScheme& scheme = traj.scheme(model.scheme());
  const SparsePattern& pattern = model.pattern();
  const int n_out = static_cast<int>(traj.q.size()) - 1;
  const int K = scheme.window();
  const int nq = model.num_dofs();
  const int np = model.params().size();
  const int m = static_cast<int>(params.size());
  factorizations_ = 0;
  if (out.cols() != m)
    throw InternalError("reverse Jacobian: output has " + std::to_string(out.cols()) + " columns for " +
                        std::to_string(m) + " parameters");

  // Parameters: the ParamSink::columns map.
  std::vector<int>& column_of = w.column_of;
  column_of.assign(np, -1);
  for (int c = 0; c < m; ++c) {
    const int j = params[c];
    if (j < 0 || j >= np)
      throw InputError("reverse Jacobian: parameter index " + std::to_string(j) + " outside [0, " +
                       std::to_string(np) + ")");
    if (column_of[j] >= 0)
      throw InputError("reverse Jacobian: parameter " + model.params().name_of(j) + " is listed twice");
    column_of[j] = c;
  }

  // Seeds: every row that some block reads, ordered by its last internal step (latest
  // first), so that the seeds carried at step i are the first active(i) of them.
  auto internal_step = [&](int k) { return traj.substepped() ? traj.output_index[k] : k; };
  std::vector<int>& seed_of_row = w.seed_of_row;
  seed_of_row.assign(out.rows(), -1);
  std::vector<int>& seed_last = w.seed_last;  // per row while collecting
  std::vector<std::pair<int, int>>& order = w.order;
  order.clear();
  w.block_step.clear();
  for (const ResidualStateRows& b : rows) {
    ADDSIM_CHECK(b.step >= 0 && b.step <= n_out, "reverse Jacobian: residual block at a step outside the run");
    ADDSIM_CHECK(b.first_row >= 0 && b.first_row + b.dq.rows() <= out.rows(),
                 "reverse Jacobian: residual block outside the output's rows");
    ADDSIM_CHECK(b.dq.cols() == nq, "reverse Jacobian: residual block is not |q| wide");
    const int i = internal_step(b.step);
    w.block_step.push_back(i);
    for (int r = b.first_row; r < b.first_row + b.dq.rows(); ++r) {
      if (seed_of_row[r] < 0) {
        seed_of_row[r] = static_cast<int>(order.size());
        order.emplace_back(-i, r);
      } else {
        std::pair<int, int>& o = order[seed_of_row[r]];
        o.first = std::min(o.first, -i);
      }
    }
  }
  std::sort(order.begin(), order.end());
  const int k = static_cast<int>(order.size());
  seeds_ = k;
  w.seed_row.resize(k);
  seed_last.resize(k);
  for (int s = 0; s < k; ++s) {
    w.seed_row[s] = order[s].second;
    seed_last[s] = -order[s].first;
    seed_of_row[order[s].second] = s;
  }
  w.block_order.resize(rows.size());
  for (size_t b = 0; b < rows.size(); ++b) w.block_order[b] = static_cast<int>(b);
  std::sort(w.block_order.begin(), w.block_order.end(), [&](int a, int b) {
    return w.block_step[a] != w.block_step[b] ? w.block_step[a] > w.block_step[b] : a < b;
  });
  if (k == 0 || m == 0) {
    wall_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return;
  }
  w.reserve(nq, k, m, K);
  auto jst = w.jst.topLeftCorner(k, m);  // the seeds' rows of the state part
  jst.setZero();
  for (MatX& a : w.acc) a.leftCols(k).setZero();
  auto gq0 = w.gq0.leftCols(k), gv0 = w.gv0.leftCols(k), ga0 = w.ga0.leftCols(k);
  gq0.setZero();
  gv0.setZero();
  ga0.setZero();
  auto dr_dp = w.dr_dp.leftCols(m);
  dr_dp.setZero();
  size_t next_block = 0;  // in block_order
  // Adds the seeds (∂ρ/∂q^i)ᵀ of the blocks at internal step i to the columns of `target`.
  auto add_blocks = [&](int i, Eigen::Ref<MatX> target) {
    while (next_block < w.block_order.size() && w.block_step[w.block_order[next_block]] == i) {
      const ResidualStateRows& b = rows[w.block_order[next_block]];
      for (Eigen::Index r = 0; r < b.dq.rows(); ++r)
        target.col(seed_of_row[b.first_row + r]) += b.dq.row(r).transpose();
      ++next_block;
    }
  };
  // target.leftCols(a) += sign · Hᵀ Λ for the history-type block H with `values`: up to
  // kDenseHistoryDofs a dense copy and one dense product (cube drag, 12 DOFs), above one
  // sparse product over the pattern (H is non-zero on the inertia, damping and contact
  // entries only; at 78 DOFs the dense copy cost more than the sparse product).
  auto add_transposed_product = [&](const VecX& values, double sign, Eigen::Ref<MatX> target, int a) {
    if (nq <= kDenseHistoryDofs) {
      pattern_matrix_to_dense(pattern, values, w.hist_dense);
      target.leftCols(a).noalias() += sign * (w.hist_dense.transpose() * w.lambda.leftCols(a));
    } else {
      target.leftCols(a).noalias() += sign * (pattern_matrix_view(pattern, values).transpose() * w.lambda.leftCols(a));
    }
  };

  int active = 0;  // seeds with last step ≥ i
  auto solve_step = [&](const StepLinearization& lin, int i) {
    while (active < k && seed_last[active] >= i) ++active;
    const int a = active;
    // Right-hand side: the seeds read at step i minus the later steps' history products.
    MatX& acc_i = w.acc[i % (K + 1)];
    auto rhs = w.rhs.leftCols(a);
    rhs = -acc_i.leftCols(a);
    acc_i.leftCols(a).setZero();
    add_blocks(i, w.rhs.leftCols(k));
    // (dr^i/dq^i)ᵀ Λ^i = rhs with one factorisation for all seeds. Dense: P J = L U, so
    // Jᵀ = Uᵀ Lᵀ P and Λ = P⁻¹ (Lᵀ)⁻¹ (Uᵀ)⁻¹ rhs.
    auto lambda = w.lambda.leftCols(a);
    if (w.dense) {
      pattern_matrix_to_dense(pattern, lin.step_jacobian(), w.jac_dense);
      w.dense_lu.compute(w.jac_dense);
      ++factorizations_;
      const MatX& lu = w.dense_lu.matrixLU();
      lu.triangularView<Eigen::Upper>().transpose().solveInPlace(rhs);
      lu.triangularView<Eigen::UnitLower>().transpose().solveInPlace(rhs);
      const auto& pivots = w.dense_lu.permutationP().indices();
      for (int r = 0; r < nq; ++r) lambda.row(r) = rhs.row(pivots[r]);
    } else {
      if (!w.sparse_lu->factorize(lin.step_jacobian()))
        throw SimulationError("reverse Jacobian: step Jacobian dr/dq of step " + std::to_string(i) + " is singular",
                              i);
      ++factorizations_;
      for (int s = 0; s < a; ++s) {
        w.column = rhs.col(s);
        w.sparse_lu->solve(w.column, w.solution, /*transpose=*/true);
        lambda.col(s) = w.solution;
      }
    }
    // A singular dense LU shows as non-finite entries (partial pivoting does not report it).
    if (!lambda.allFinite())
      throw SimulationError("reverse Jacobian: step Jacobian dr/dq of step " + std::to_string(i) +
                                " is singular (non-finite adjoint states)",
                            i);
    // Parameters: jst −= (P Λ)ᵀ ∂r^i/∂p, the columns of ∂r^i/∂p from one pass over the terms
    // (constrained rows carry no ∂r/∂p: Pᵀ applied to Λ, as the adjoint does).
    const MatX* lam = &w.lambda;
    if (lin.has_constrained_rows()) {
      for (int s = 0; s < a; ++s) {
        w.column = lambda.col(s);
        lin.project_rows_transpose(w.column);
        w.lambda_p.col(s) = w.column;
      }
      lam = &w.lambda_p;
    }
    // Only the columns the terms wrote (a few per step for per-step controls) are visited.
    w.touched.clear();
    ParamSink sink = ParamSink::columns(&model.stencils(), &column_of, &w.dr_dp, &w.touched);
    lin.param_derivatives(sink);
    std::sort(w.touched.begin(), w.touched.end());
    w.touched.erase(std::unique(w.touched.begin(), w.touched.end()), w.touched.end());
    for (int c : w.touched) {
      auto col = dr_dp.col(c);
      if (col.isZero(0.0)) continue;
      jst.col(c).head(a).noalias() -= lam->leftCols(a).transpose() * col;
      col.setZero();
    }
    // Push (dr^i/dq^{i-k})ᵀ Λ^i to the states it depends on; q⁰, v⁰ and a⁰ collect the
    // start-up blocks.
    for (int h = 1; h <= K && i - h >= 0; ++h) {
      const int j = i - h;
      if (j >= 1)
        add_transposed_product(lin.history_jacobian(h), 1.0, w.acc[j % (K + 1)], a);
      else
        add_transposed_product(lin.history_jacobian(h), -1.0, gq0, a);
    }
    if (lin.depends_on_v0()) add_transposed_product(lin.v0_jacobian(), -1.0, gv0, a);
    if (lin.depends_on_a0()) add_transposed_product(lin.a0_jacobian(), -1.0, ga0, a);
  };

  // Steps after the last one any row reads carry no seed; steps before the first one any
  // listed parameter enters add nothing (first_parameter_step(): ∂r^i/∂p = 0 for every
  // column, and the start does not depend on them), so the sweep runs from `top` down to
  // `bottom`. With solver.threads = 2 a helper thread linearises step i − 1 while this
  // thread solves step i.
  const int top = seed_last[0];
  // The first (output) step any listed parameter enters.
  const int lowest = traj.substepped() ? 0 : first_parameter_step(model, params, n_out + 1);
  const int bottom = std::max(lowest, 1);
  StepLinearization* current = &w.current;
  StepLinearization* following = &w.following;
  if (top >= bottom) current->evaluate(traj, top);
  for (int i = top; i >= bottom; --i) {
    if (w.worker && i > bottom) {
      w.worker->run_alongside([&traj, next = following, i] { next->evaluate(traj, i - 1); },
                              [&] { solve_step(*current, i); });
    } else {
      solve_step(*current, i);
      if (i > bottom) following->evaluate(traj, i - 1);
    }
    std::swap(current, following);
  }
  // Initial state (only if some listed parameter may set it): the seeds read at step 0 plus
  // the history products, chained through a⁰(q⁰, v⁰, p) (constant-acceleration start-up)
  // and q⁰(p), v⁰(p) (Body::initial_state_vjp).
  if (lowest == 0) {
    add_blocks(0, gq0);
    if (scheme.uses_initial_acceleration()) {
      if (!w.a0) w.a0 = std::make_unique<InitialAcceleration>(model);
      w.a0->linearize(traj.q0, traj.v0, traj.a0, traj.p);
    }
    for (int s = 0; s < k; ++s) {
      if (gq0.col(s).isZero(0.0) && gv0.col(s).isZero(0.0) && ga0.col(s).isZero(0.0)) continue;
      w.gq = gq0.col(s);
      w.gv = gv0.col(s);
      w.ga = ga0.col(s);
      w.grad.setZero();
      if (scheme.uses_initial_acceleration()) w.a0->vjp(w.ga, w.gq, w.gv, w.grad);
      for (const auto& body : model.bodies()) body->initial_state_vjp(traj.p, w.gq, w.gv, w.grad);
      for (int c = 0; c < m; ++c) jst(s, c) += w.grad[params[c]];
    }
  }
  for (int s = 0; s < k; ++s) out.row(w.seed_row[s]) += jst.row(s);
  wall_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace addsim
