#pragma once
/// Adjoint gradient of an objective over a recorded trajectory (paper §3.3, eqs. adjoint
/// and adjGrad, with initial conditions per §6 "Throwing"). One backward sweep i = n … 1
/// with one transposed solve per step; the step Jacobians are re-evaluated at the converged
/// states, never stored. Memory: O(K·|q|) for the adjoint history window plus what the
/// objective's ∂Φ/∂q^i needs (at most O(n·|q|)); with solver.threads = 2 also a ring of
/// 3–8 step linearisations (≤ 64 MB) and the fresh LUs of steps in it. See
/// docs/gradients.md.

#include <functional>

#include "addsim/model/model.h"
#include "addsim/sensitivity/objective_function.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Φ and its total derivative dΦ/dp (|p|, all parameters, in p's units⁻¹).
struct GradientResult {
  double phi = 0.0;
  VecX dphi_dp;
  double wall_seconds = 0.0;  ///< time of the backward pass including Φ's evaluation
  long factorizations = 0;     ///< LU factorisations of step Jacobians in the backward pass
  long krylov_iterations = 0;  ///< GMRES iterations of the backward pass (reused LU)
};

/// dΦ/dp = ∂Φ/∂p − λ̃ᵀ Ã (paper eq. adjGrad) with B̃ᵀ λ̃ = (∂Φ/∂q̃)ᵀ (eq. adjoint), solved
/// backwards step by step: (dr^i/dq^i)ᵀ λ^i = (∂Φ/∂q^i)ᵀ − Σ_{k≥1} (dr^{i+k}/dq^i)ᵀ λ^{i+k}.
/// Initial conditions enter through the start-up steps, which read q⁰ and v⁰
/// (dr^i/dq⁰, dr^i/dv⁰ from the time scheme), and Body::initial_state_vjp. Throws SimulationError (naming the step) if `traj` did not
/// complete or a step Jacobian is singular, InputError if `traj` does not fit `model`.
/// `progress` (optional) is called on the calling thread after each backward step with the
/// steps done so far and n (for progress reports; it must not throw).
GradientResult gradient_adjoint(const Model& model, const Trajectory& traj, const ObjectiveFunction& objective,
                                const std::function<void(int done, int total)>& progress = {});

}  // namespace addsim
