#include "addsim/sensitivity/adjoint.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "addsim/sensitivity/step_linearization.h"
#include "addsim/solver/reused_factorization.h"
#include "addsim/solver/worker_thread.h"

namespace addsim {

GradientResult gradient_adjoint(const Model& model, const Trajectory& traj, const ObjectiveFunction& objective) {
  const auto t0 = std::chrono::steady_clock::now();
  require_complete_trajectory(model, traj, "adjoint");
  const TimeScheme& s = model.scheme();
  const int n = s.steps;
  const int K = s.window();
  const int nq = model.num_dofs();

  // Objective value and its partials ∂Φ/∂q^i (sparse in time), ∂Φ/∂p.
  ObjectiveGradient og(nq, model.params().size(), n);
  GradientResult out;
  out.phi = objective.evaluate(model, traj, &og);
  out.dphi_dp = og.dphi_dp();

  // acc[j mod (K+1)] collects Σ_{k≥1} (dr^{j+k}/dq^j)ᵀ λ^{j+k} for the K steps below the
  // current one; gq0, gv0 collect −(dr^i/dq⁰)ᵀ λ^i and −(dr^i/dv⁰)ᵀ λ^i of the start-up steps.
  std::vector<VecX> acc(K + 1, VecX::Zero(nq));
  VecX gq0 = VecX::Zero(nq), gv0 = VecX::Zero(nq);
  VecX rhs(nq), lambda(nq), lambda_next(nq), guess(nq), sink_lambda(nq);
  // Only the products of the history blocks with λ^i are needed: they are formed without
  // forming the blocks.
  auto make_linearization = [&] { return std::make_unique<StepLinearization>(model, StepLinearization::History::kProducts); };
  // Successive steps' Jacobians are close: one LU serves many steps as GMRES
  // preconditioner (relative residual kSensitivitySolveTolerance per solve,
  // solver/reused_factorization.h). Where the old LU stops helping (impacts) GMRES gives up
  // as soon as its convergence predicts more work than a refactorisation, not after it.
  const std::unique_ptr<ReusedFactorization> lu = make_step_solver(model);
  lu->set_relative_tolerance(kSensitivitySolveTolerance);

  // dΦ/dp −= (∂r^i/∂p)ᵀ λ^i (constrained rows carry no ∂r/∂p); `buffer` holds −Pᵀλ.
  auto add_parameter_products = [&](const StepLinearization& lin, const VecX& lam, VecX& buffer) {
    buffer = -lam;
    lin.project_rows_transpose(buffer);
    ParamSink sink = ParamSink::vjp(&model.stencils(), &buffer, &out.dphi_dp);
    lin.param_derivatives(sink);
  };
  // One backward step with the linearisation `lin` of step i: λ^i, then the history
  // products it pushes to the earlier states.
  auto backward_step = [&](StepLinearization& lin, int i) {
    // Right-hand side: (∂Φ/∂q^i)ᵀ minus the later steps' history products.
    VecX& acc_i = acc[i % (K + 1)];
    rhs = -acc_i;
    if (const VecX* g = og.find_dphi_dq(i)) rhs += *g;
    acc_i.setZero();
    // (dr^i/dq^i)ᵀ λ^i = rhs.
    // GMRES starts from the linear extrapolation 2λ^{i+1} − λ^{i+2} (λ^{i+1} at the second
    // step): adjoint states change smoothly from step to step between contact events.
    if (i <= n - 2)
      guess = 2.0 * lambda - lambda_next;
    else
      guess = lambda;
    lambda_next = lambda;
    lu->set_configuration(traj.q[i]);
    if (!lu->solve(lin.step_jacobian(), rhs, lambda, /*transpose=*/true, 0.0, i < n ? &guess : nullptr))
      throw SimulationError("adjoint: step Jacobian dr/dq of step " + std::to_string(i) + " is singular", i);
    if (!lambda.allFinite())
      throw SimulationError("adjoint: adjoint state of step " + std::to_string(i) + " is not finite", i);
    // Push (dr^i/dq^{i-k})ᵀ λ^i to the states it depends on; q⁰ and v⁰ collect the
    // start-up blocks (paper §6 "Throwing": the initial state enters like a parameter).
    lin.history_vjp(lambda);
    for (int k = 1; k <= K && i - k >= 0; ++k) {
      const int j = i - k;
      if (j >= 1)
        acc[j % (K + 1)] += lin.history_product(k);
      else
        gq0 -= lin.history_product(k);
    }
    if (lin.depends_on_v0()) gv0 -= lin.v0_product();
  };

  if (model.solver().threads == 1) {
    const auto lin = make_linearization();
    for (int i = n; i >= 1; --i) {
      lin->evaluate(traj, i);
      backward_step(*lin, i);
      add_parameter_products(*lin, lambda, sink_lambda);
    }
  } else {
    // Two threads: while this thread solves step i, a helper forms the parameter products
    // of step i + 1 (λ^{i+1} is known) and then linearises step i − 1 (it needs only the
    // recorded trajectory). Three linearisations in a ring, step j in lin[j mod 3]; only the
    // helper writes dΦ/dp inside the loop. Same arithmetic as one thread, same gradient.
    std::vector<std::unique_ptr<StepLinearization>> lin(3);
    for (auto& l : lin) l = make_linearization();
    WorkerThread worker;
    VecX param_lambda(nq), worker_buffer(nq);
    lin[n % 3]->evaluate(traj, n);
    for (int i = n; i >= 1; --i) {
      worker.run_alongside(
          [&, i] {
            if (i < n) add_parameter_products(*lin[(i + 1) % 3], param_lambda, worker_buffer);
            if (i > 1) lin[(i - 1) % 3]->evaluate(traj, i - 1);
          },
          [&] { backward_step(*lin[i % 3], i); });
      param_lambda = lambda;
    }
    add_parameter_products(*lin[1 % 3], param_lambda, sink_lambda);
  }

  // Initial state: ∂Φ/∂q⁰ plus the history products, chained through q⁰(p), v⁰(p).
  if (const VecX* g = og.find_dphi_dq(0)) gq0 += *g;
  for (const auto& b : model.bodies()) b->initial_state_vjp(traj.p, gq0, gv0, out.dphi_dp);
  out.factorizations = lu->stats().factorizations;
  out.krylov_iterations = lu->stats().krylov_iterations;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace addsim
