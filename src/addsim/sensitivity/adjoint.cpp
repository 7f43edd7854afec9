#include "addsim/sensitivity/adjoint.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "addsim/sensitivity/step_linearization.h"
#include "addsim/solver/initial_acceleration.h"
#include "addsim/solver/reused_factorization.h"

namespace addsim {

namespace {
// Memory for the two-thread sweep's ring of step linearisations (3 to 8 of them).
constexpr std::size_t kRingBytes = std::size_t{64} << 20;
}  // namespace

GradientResult gradient_adjoint(const Model& model, const Trajectory& traj, const ObjectiveFunction& objective,
                                const std::function<void(int done, int total)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  require_complete_trajectory(model, traj, "adjoint");
  // The sweep runs over the internal steps (the output steps, or a sub-stepped run's grid);
  // ∂Φ/∂q^k of output step k enters at its internal step.
  const TimeScheme& s = traj.scheme(model.scheme());
  const int n = traj.internal_steps();
  const int K = s.window();
  const int nq = model.num_dofs();

  // Objective value and its partials ∂Φ/∂q^i (sparse in time), ∂Φ/∂p.
  ObjectiveGradient og(nq, model.params().size(), model.scheme().steps);
  GradientResult out;
  out.phi = objective.evaluate(model, traj, &og);
  out.dphi_dp = og.dphi_dp();

  // acc[j mod (K+1)] collects Σ_{k≥1} (dr^{j+k}/dq^j)ᵀ λ^{j+k} for the K steps below the
  // current one; gq0, gv0 collect −(dr^i/dq⁰)ᵀ λ^i and −(dr^i/dv⁰)ᵀ λ^i of the start-up steps.
  std::vector<VecX> acc(K + 1, VecX::Zero(nq));
  VecX gq0 = VecX::Zero(nq), gv0 = VecX::Zero(nq), ga0 = VecX::Zero(nq);  // ga0: −Σ (dr^i/da⁰)ᵀ λ^i
  VecX rhs(nq), lambda(nq), guess(nq), sink_lambda(nq);
  std::array<VecX, 3> later_lambda{VecX(nq), VecX(nq), VecX(nq)};  // λ^{i+2}, λ^{i+3}, λ^{i+4} at step i
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
    if (const int k = traj.output_of(i); k >= 0)
      if (const VecX* g = og.find_dphi_dq(k)) rhs += *g;
    acc_i.setZero();
    // (dr^i/dq^i)ᵀ λ^i = rhs.
    // GMRES starts from the cubic extrapolation 4λ^{i+1} − 6λ^{i+2} + 4λ^{i+3} − λ^{i+4} of
    // the later adjoint states (λ^{i+1} is still in `lambda`; lower orders while fewer
    // exist): they change smoothly from step to step between contact events. Cylinder drop:
    // 1,017 GMRES iterations and 37 factorisations, against 1,225 and 41 extrapolating
    // linearly and 1,349 and 47 from λ^{i+1}; soft ball 273 and 26 against 308 and 24.
    if (i < n)
      extrapolate_solution([&](int k) -> const VecX& { return k == 1 ? lambda : later_lambda[k - 2]; }, n - i, guess);
    std::swap(later_lambda[1], later_lambda[2]);
    std::swap(later_lambda[0], later_lambda[1]);
    later_lambda[0] = lambda;
    lu->set_configuration(traj.state(i));
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
    if (lin.depends_on_a0()) ga0 -= lin.a0_product();
  };

  // Fresh LUs: the steps just before a forward step that factorised (on its own thread or
  // ahead) get an LU of their own Jacobian before their solve. There the Jacobians had moved
  // away from the LU in use, and going backwards the new LU serves the steps before the
  // change (cylinder drop: 37 factorisations and 1,017 GMRES iterations instead of 28 and
  // 1,174 by the reuse rule alone; soft ball 26 and 281 instead of 15 and 398). On one
  // thread that about breaks even (ball: 0.077 → 0.085 s); on two, factorisations are what
  // the helper balances the load with (below). Same steps, same LUs, same gradient.
  std::vector<char> fresh(n + 1, 0);
  if (lu->reuses())
    for (int i = 1; i < n; ++i)
      fresh[i] = traj.internal_report(i + 1).factorizations + traj.internal_report(i + 1).background_factorizations > 0;
  long fresh_factorizations = 0;
  auto make_spare = [&] { return make_linear_solver(model.solver().linear_solver, &model.pattern()); };
  // Adopts `spare`, factorised for step i's Jacobian (`ok`: not singular); a singular one is
  // left to the reuse rule, whose own factorisation reports it.
  auto adopt_fresh = [&](std::unique_ptr<LinearSolver>& spare, bool ok, int i) {
    if (!ok) return;
    spare = lu->adopt(std::move(spare), traj.state(i));
    ++fresh_factorizations;
  };

  if (model.solver().threads == 1) {
    const auto lin = make_linearization();
    std::unique_ptr<LinearSolver> spare;
    for (int i = n; i >= 1; --i) {
      lin->evaluate(traj, i);
      if (fresh[i]) {
        if (!spare) spare = make_spare();
        adopt_fresh(spare, spare->factorize(lin->step_jacobian()), i);
      }
      backward_step(*lin, i);
      add_parameter_products(*lin, lambda, sink_lambda);
      if (progress) progress(n - i + 1, n);
    }
  } else {
    // Two threads: a helper linearises the steps ahead of this thread's sweep (they need only
    // the recorded trajectory) into a ring of linearisations, and adds each step's parameter
    // products once this thread has solved it (λ^i kept in the ring), in step order; this
    // thread solves and pushes the history products — the one-thread arithmetic. The fresh
    // LUs balance the load: the helper factorises wanted ones in the ring when it has
    // nothing else to do, and a fresh LU that nobody has started when this thread reaches
    // its step (clusters at impacts, or a helper behind) is factorised here. An LU depends
    // only on its step's Jacobian, not on the thread that made it, so the gradient is the
    // same either way.
    const std::size_t bytes = (5 + K) * sizeof(double) * static_cast<std::size_t>(model.pattern().nnz());
    const int ring_size = static_cast<int>(std::clamp<std::size_t>(kRingBytes / std::max<std::size_t>(bytes, 1), 3, 8));
    enum class FreshLu : char { kWanted, kTaken, kReady };
    // Step j lives in slot j mod R.
    struct Slot {
      std::unique_ptr<StepLinearization> lin;
      VecX lambda;                       ///< λ^j, once solved (for the parameter products)
      FreshLu lu_state = FreshLu::kWanted;  ///< a fresh-LU step's LU
      std::unique_ptr<LinearSolver> lu;  ///< that LU, when kReady
      bool lu_ok = false;                ///< … and not singular
    };
    std::vector<Slot> ring(ring_size);
    for (Slot& slot : ring) {
      slot.lin = make_linearization();
      slot.lambda.resize(nq);
    }
    std::vector<std::unique_ptr<LinearSolver>> spares;  // free solvers (more are made here if need be)
    if (std::find(fresh.begin(), fresh.end(), 1) != fresh.end())
      for (int k = 0; k < 2; ++k) spares.push_back(make_spare());
    std::mutex mutex;
    std::condition_variable changed;
    int linearised = n + 1;  // lowest step the helper has linearised
    int consumed = n + 1;    // lowest step this thread has solved (λ in the ring)
    int added = n + 1;       // lowest step whose parameter products are added (its slot is free)
    bool stop = false;
    std::exception_ptr helper_error;
    // Under the lock: the highest fresh-LU step in the ring that nobody has started, below
    // the step this thread is on (0 if none).
    auto wanted_lu = [&] {
      for (int k = std::min(consumed - 2, n); k >= linearised && k >= 1; --k)
        if (fresh[k] && ring[k % ring_size].lu_state == FreshLu::kWanted) return k;
      return 0;
    };
    std::thread helper([&] {
      try {
        VecX buffer(nq);
        int next = n;  // next step to linearise
        while (true) {
          enum class Task { kLinearize, kProducts, kFactorize } task;
          int k = 0;
          std::unique_ptr<LinearSolver> solver;
          {
            std::unique_lock<std::mutex> lock(mutex);
            while (true) {
              if (stop) return;
              // Slot of step `next` held step next + R, whose products must be added.
              const bool can_linearize = next >= 1 && added <= next + ring_size;
              const bool can_add = added > consumed;
              // Linearising keeps this thread's sweep fed; products free ring slots.
              if (can_linearize && (consumed - linearised < 2 || !can_add)) {
                task = Task::kLinearize;
              } else if (can_add) {
                task = Task::kProducts;
              } else if ((k = wanted_lu()) != 0 && !spares.empty()) {
                task = Task::kFactorize;
                solver = std::move(spares.back());
                spares.pop_back();
                ring[k % ring_size].lu_state = FreshLu::kTaken;
              } else if (next < 1 && added == 1) {
                return;  // every step linearised and its products added
              } else {
                changed.wait(lock);
                continue;
              }
              break;
            }
          }
          if (task == Task::kLinearize) {
            Slot& slot = ring[next % ring_size];
            slot.lin->evaluate(traj, next);
            std::lock_guard<std::mutex> lock(mutex);
            slot.lu_state = FreshLu::kWanted;
            linearised = next--;
          } else if (task == Task::kProducts) {
            const Slot& slot = ring[(added - 1) % ring_size];
            add_parameter_products(*slot.lin, slot.lambda, buffer);
            std::lock_guard<std::mutex> lock(mutex);
            --added;
          } else {
            Slot& slot = ring[k % ring_size];
            const bool ok = solver->factorize(slot.lin->step_jacobian());
            std::lock_guard<std::mutex> lock(mutex);
            slot.lu_ok = ok;
            slot.lu = std::move(solver);
            slot.lu_state = FreshLu::kReady;
          }
          changed.notify_all();
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        helper_error = std::current_exception();
        changed.notify_all();
      }
    });
    // Stops and joins the helper however this thread leaves the sweep.
    struct Join {
      std::thread& thread;
      std::mutex& mutex;
      std::condition_variable& changed;
      bool& stop;
      ~Join() {
        {
          std::lock_guard<std::mutex> lock(mutex);
          stop = true;
        }
        changed.notify_all();
        thread.join();
      }
    } join{helper, mutex, changed, stop};
    auto rethrow = [&] {
      if (helper_error) std::rethrow_exception(helper_error);
    };
    for (int i = n; i >= 1; --i) {
      Slot& slot = ring[i % ring_size];
      std::unique_ptr<LinearSolver> solver;
      bool ok = false, factorize_here = false;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return linearised <= i || helper_error; });
        rethrow();
        if (fresh[i]) {
          changed.wait(lock, [&] { return slot.lu_state != FreshLu::kTaken || helper_error; });
          rethrow();
          if (slot.lu_state == FreshLu::kReady) {
            solver = std::move(slot.lu);
            ok = slot.lu_ok;
          } else {
            factorize_here = true;
            slot.lu_state = FreshLu::kTaken;
            if (!spares.empty()) {
              solver = std::move(spares.back());
              spares.pop_back();
            }
          }
        }
      }
      if (factorize_here) {
        if (!solver) solver = make_spare();
        ok = solver->factorize(slot.lin->step_jacobian());
      }
      if (fresh[i]) {
        adopt_fresh(solver, ok, i);
        {
          std::lock_guard<std::mutex> lock(mutex);
          spares.push_back(std::move(solver));
        }
        changed.notify_all();
      }
      backward_step(*slot.lin, i);
      slot.lambda = lambda;
      {
        std::lock_guard<std::mutex> lock(mutex);
        consumed = i;
      }
      changed.notify_all();
      if (progress) progress(n - i + 1, n);
    }
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return added == 1 || helper_error; });
    rethrow();
  }

  // Initial state: ∂Φ/∂q⁰ plus the history products, chained through q⁰(p), v⁰(p).
  if (const VecX* g = og.find_dphi_dq(0)) gq0 += *g;
  // Constant-acceleration start-up: a⁰(q⁰, v⁰, p) is implicit in the dynamics at t₀.
  if (s.uses_initial_acceleration()) {
    InitialAcceleration a0(model);
    a0.linearize(traj.q0, traj.v0, traj.a0, traj.p);
    a0.vjp(ga0, gq0, gv0, out.dphi_dp);
  }
  for (const auto& b : model.bodies()) b->initial_state_vjp(traj.p, gq0, gv0, out.dphi_dp);
  out.factorizations = lu->stats().factorizations + fresh_factorizations;
  out.krylov_iterations = lu->stats().krylov_iterations;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace addsim
