#include "addsim/sensitivity/direct.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "addsim/core/error.h"
#include "addsim/sensitivity/step_linearization.h"
#include "addsim/solver/initial_acceleration.h"
#include "addsim/solver/reused_factorization.h"
#include "addsim/solver/worker_thread.h"

namespace addsim {

DirectResult gradient_direct(const Model& model, const Trajectory& traj, const ObjectiveFunction& objective,
                             std::span<const int> params, const DirectOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  require_complete_trajectory(model, traj, "direct sensitivities");
  // The pass runs over the internal steps (the output steps, or a sub-stepped run's grid);
  // outputs (∂Φ/∂q^k, kept sensitivities) belong to the output steps.
  const TimeScheme& s = traj.scheme(model.scheme());
  const SparsePattern& pattern = model.pattern();
  const int n = traj.internal_steps();
  const int n_out = model.scheme().steps;
  const int K = s.window();
  const int nq = model.num_dofs();
  const int np = model.params().size();
  const int m = static_cast<int>(params.size());
  int keep = -1;
  for (int c = 0; c < m; ++c) {
    if (params[c] < 0 || params[c] >= np)
      throw InputError("direct sensitivities: parameter index " + std::to_string(params[c]) + " outside [0, " +
                       std::to_string(np) + ")");
    if (params[c] == options.keep_sensitivities_of) keep = c;
  }
  if (options.keep_sensitivities_of >= 0 && keep < 0)
    throw InputError("direct sensitivities: keep_sensitivities_of = " +
                     std::to_string(options.keep_sensitivities_of) + " is not among the listed parameters");
  const bool directional = options.direction.size() > 0;
  if (directional && options.direction.size() != m)
    throw InputError("direct sensitivities: direction has " + std::to_string(options.direction.size()) +
                     " weights for " + std::to_string(m) + " listed parameters");

  ObjectiveGradient og(nq, np, n_out);
  DirectResult out;
  out.phi = objective.evaluate(model, traj, &og);
  out.dphi_dp.resize(m);
  for (int c = 0; c < m; ++c) out.dphi_dp[c] = og.dphi_dp()[params[c]];

  // Initial-state tangents ∂q⁰/∂p_j, ∂v⁰/∂p_j; s^0 opens each parameter's ring buffer
  // ring[c][i mod R] = s^i_c for the last R steps (the K the history reads, and the four the
  // initial guess extrapolates from).
  const int R = std::max(K + 1, 5);
  std::vector<VecX> dq0(m, VecX::Zero(nq)), dv0(m, VecX::Zero(nq)), da0(m);
  std::vector<std::vector<VecX>> ring(m, std::vector<VecX>(R, VecX::Zero(nq)));
  // Constant-acceleration start-up: da⁰/dp_j from the dynamics at t₀ (solver/initial_acceleration.h).
  std::unique_ptr<InitialAcceleration> a0;
  if (s.uses_initial_acceleration()) {
    a0 = std::make_unique<InitialAcceleration>(model);
    a0->linearize(traj.q0, traj.v0, traj.a0, traj.p);
  }
  for (int c = 0; c < m; ++c) {
    for (const auto& b : model.bodies()) b->initial_state_jvp(traj.p, params[c], dq0[c], dv0[c]);
    if (a0) da0[c] = a0->jvp(params[c], dq0[c], dv0[c]);
    ring[c][0] = dq0[c];
    if (const VecX* g = og.find_dphi_dq(0)) out.dphi_dp[c] += g->dot(dq0[c]);
  }
  if (keep >= 0) {
    out.sensitivities.reserve(n_out + 1);
    out.sensitivities.push_back(dq0[keep]);
  }
  if (directional) {
    out.directional.assign(n_out + 1, VecX::Zero(nq));
    for (int c = 0; c < m; ++c) out.directional[0] += options.direction[c] * dq0[c];
  }

  // One LU serves many steps and parameters as GMRES preconditioner (relative residual
  // kSensitivitySolveTolerance per solve; solver/reused_factorization.h), refactorised by the
  // same cost rule as the forward run: with many parameters the GMRES work per step grows and
  // it refactorises more often. A solve that stagnates on the old LU gives up early.
  const std::unique_ptr<ReusedFactorization> lu = make_step_solver(model);
  lu->set_relative_tolerance(kSensitivitySolveTolerance);
  VecX rhs(nq), sol(nq), guess(nq);
  // Step i with its linearisation `lin`: s^i_j for every listed parameter.
  auto forward_step = [&](const StepLinearization& lin, int i) {
    lu->set_configuration(traj.state(i));
    const int out_step = traj.output_of(i);
    const VecX* g = out_step >= 0 ? og.find_dphi_dq(out_step) : nullptr;
    for (int c = 0; c < m; ++c) {
      // rhs = −(∂r^i/∂p_j + Σ_k dr^i/dq^{i-k} s^{i-k}_j + dr^i/dv⁰ ∂v⁰/∂p_j).
      rhs.setZero();
      ParamSink sink = ParamSink::column(&model.stencils(), params[c], &rhs);
      lin.param_derivatives(sink);
      lin.project_rows(rhs);  // constrained rows carry no ∂r/∂p
      for (int k = 1; k <= K && i - k >= 0; ++k)
        pattern.multiply_add(lin.history_jacobian(k), ring[c][(i - k) % R], rhs);
      if (lin.depends_on_v0()) pattern.multiply_add(lin.v0_jacobian(), dv0[c], rhs);
      if (lin.depends_on_a0()) pattern.multiply_add(lin.a0_jacobian(), da0[c], rhs);
      rhs = -rhs;
      // GMRES starts from the cubic extrapolation of s^{i-1}_j … s^{i-4}_j (lower orders
      // while fewer exist): sensitivities change smoothly from step to step. Cylinder drop,
      // 19 parameters: 1,064 GMRES iterations and 23 factorisations instead of 1,665 and 41
      // from s^{i-1}_j; soft ball 369 and 13 instead of 384 and 14. Per-step controls, which
      // start at their step with a jump, extrapolate worse: sheet 308 instead of 259.
      extrapolate_solution([&](int k) -> const VecX& { return ring[c][(i - k) % R]; }, i, guess);
      if (!lu->solve(lin.step_jacobian(), rhs, sol, /*transpose=*/false, 0.0, &guess))
        throw SimulationError("direct sensitivities: step Jacobian dr/dq of step " + std::to_string(i) +
                                  " is singular",
                              i);
      if (!sol.allFinite())
        throw SimulationError("direct sensitivities: sensitivity of step " + std::to_string(i) + " to parameter " +
                                  model.params().name_of(params[c]) + " is not finite",
                              i);
      ring[c][i % R] = sol;
      if (g) out.dphi_dp[c] += g->dot(sol);
      if (out_step >= 0 && c == keep) out.sensitivities.push_back(sol);
      if (out_step >= 0 && directional) out.directional[out_step] += options.direction[c] * sol;
    }
  };

  // With solver.threads = 2 a helper thread linearises step i + 1 (it needs only the
  // recorded trajectory) while this thread solves step i.
  auto current = std::make_unique<StepLinearization>(model);
  auto following = std::make_unique<StepLinearization>(model);
  std::unique_ptr<WorkerThread> worker;
  if (model.solver().threads == 2) worker = std::make_unique<WorkerThread>();
  current->evaluate(traj, 1);
  for (int i = 1; i <= n; ++i) {
    if (worker && i < n) {
      worker->run_alongside([&traj, next = following.get(), i] { next->evaluate(traj, i + 1); },
                            [&] { forward_step(*current, i); });
    } else {
      forward_step(*current, i);
      if (i < n) following->evaluate(traj, i + 1);
    }
    std::swap(current, following);
    if (options.progress) options.progress(i, n);
  }
  out.factorizations = lu->stats().factorizations;
  out.krylov_iterations = lu->stats().krylov_iterations;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace addsim
