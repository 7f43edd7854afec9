#include "addsim/optim/problem.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <span>

#include "addsim/core/error.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct_jacobian.h"

namespace addsim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

const char* to_string(JacobianMode mode) {
  switch (mode) {
    case JacobianMode::kAuto: return "auto";
    case JacobianMode::kDirect: return "direct";
    case JacobianMode::kAdjoint: return "adjoint";
  }
  return "?";
}

SimulationProblem::SimulationProblem(const Model& model, const Objective& objective, ParameterSelection selection,
                                     VecX p_base, int slots, int threads_per_slot, ProblemOwner owner)
    : owner_(std::move(owner)),
      model_(model),
      objective_(objective),
      selection_(std::move(selection)),
      p_base_(std::move(p_base)) {
  if (p_base_.size() != model_.params().size())
    throw InputError("optimisation problem: " + std::to_string(p_base_.size()) + " parameters for a model with " +
                     std::to_string(model_.params().size()));
  if (selection_.size() == 0) throw InputError("optimisation problem: no parameters selected");
  if (slots < 1) throw InternalError("optimisation problem: needs at least one simulator slot");
  selection_.check_bounds(p_base_);
  // Bounds in x: ln of the bounds for log-scaled scalars (a lower bound of 0 becomes −∞),
  // divided by the scalar's scale.
  const int n = selection_.size();
  lower_.resize(n);
  upper_.resize(n);
  for (int k = 0; k < n; ++k) {
    lower_[k] = selection_.lower_scaled(k);
    upper_[k] = selection_.upper_scaled(k);
  }
  for (int s = 0; s < slots; ++s) simulators_.push_back(std::make_unique<Simulator>(model_, threads_per_slot));
  residual_slots_.resize(slots);
  // A step that fails is retried as sub-steps unless the scene says otherwise
  // (solver.substep_retry): a start far from the optimum (a 10× softer material) must simulate.
  if (model_.solver().substep_retry < 0)
    for (auto& sim : simulators_) sim->set_substep_retry({kOptimizationSubstepDepth});
}

void SimulationProblem::set_sensitivity_memory(double bytes) {
  if (!(bytes > 0.0)) throw InternalError("optimisation problem: sensitivity memory must be positive");
  sensitivity_memory_ = bytes;
}

VecX SimulationProblem::project(const VecX& x) const { return x.cwiseMax(lower_).cwiseMin(upper_); }

bool SimulationProblem::simulate(const VecX& x, int slot, Trajectory& traj, std::string& why) {
  if (slot < 0 || slot >= static_cast<int>(simulators_.size()))
    throw InternalError("optimisation problem: simulator slot " + std::to_string(slot) + " does not exist");
  if (x.size() != size())
    throw InternalError("optimisation problem: x has " + std::to_string(x.size()) + " entries, expected " +
                        std::to_string(size()));
  ++simulations_;
  const VecX p = parameters(x);
  if (!p.allFinite()) {
    why = "non-finite parameters (x overflowed its scaling)";
    return false;
  }
  traj = simulators_[slot]->run(p);
  if (!traj.completed()) {
    why = traj.failure;  // names the step, e.g. "step 16 (t = 0.16 s) did not converge: ..."
    return false;
  }
  return true;
}

Evaluation SimulationProblem::evaluate(const VecX& x, bool gradient, int slot) {
  const auto t0 = std::chrono::steady_clock::now();
  Evaluation e;
  e.x = x;
  Trajectory traj;
  bool ok = simulate(x, slot, traj, e.failure);
  if (ok) {
    try {
      if (gradient) {
        const GradientResult g = gradient_adjoint(model_, traj, objective_);
        e.phi = g.phi;
        e.gradient = selection_.scaled_gradient(traj.p, g.dphi_dp);
      } else {
        e.phi = objective_.evaluate(model_, traj, nullptr);
      }
      if (!std::isfinite(e.phi) || (gradient && !e.gradient.allFinite())) {
        ok = false;
        e.failure = "non-finite objective or gradient";
      }
    } catch (const SimulationError& err) {
      ok = false;
      e.failure = err.what();
    }
  }
  if (!ok) {
    ++failures_;
    e.failed = true;
    e.phi = kInf;
    e.gradient.resize(0);
  }
  e.seconds = seconds_since(t0);
  return e;
}

void SimulationProblem::residual_jacobian(const Trajectory& traj, int slot, MatX& out) {
  ResidualSlot& rs = residual_slots_[slot];
  const std::vector<int>& indices = selection_.indices();
  // Reverse mode: ∂ρ/∂p from the terms with zero sensitivities, then the trajectory's part
  // Σ_i ∂ρ/∂q^i dq^i/dp from one backward sweep with one adjoint seed per row that reads the
  // state (sensitivity/reverse_jacobian.h). kAuto takes it when its seeds, summed over the
  // steps they are carried, are fewer than the direct sweep's columns (cube drag: 12 rows
  // × ≤ 60 steps against 360 columns × ≈ 30 steps on average).
  bool reverse = false;
  if (jacobian_mode_ == JacobianMode::kAdjoint || (jacobian_mode_ == JacobianMode::kAuto && !rs.no_state_rows)) {
    if (rs.zero.params != indices || rs.zero.s.size() != traj.q.size() ||
        (!rs.zero.s.empty() && rs.zero.s[0].rows() != model_.num_dofs()))
      rs.zero = no_sensitivities(model_, traj, indices);
    const int missing = objective_.residual_partials(model_, traj, rs.zero, out, rs.parts, rs.rows);
    if (missing >= 0 && jacobian_mode_ == JacobianMode::kAdjoint)
      throw InputError("optimize.gauss_newton.jacobian: adjoint needs every objective term's rows d(rho)/dq; term " +
                       std::to_string(missing) + " (" + std::string(objective_.term(missing).name()) +
                       ") does not give them (use auto or direct)");
    rs.no_state_rows = missing >= 0;  // the objective does not change: kAuto asks once
    reverse = missing < 0 && (jacobian_mode_ == JacobianMode::kAdjoint ||
                              jacobian_mode_cost(model_, indices, rs.rows).reverse_is_cheaper());
  }
  rs.used = reverse ? JacobianMode::kAdjoint : JacobianMode::kDirect;
  if (reverse) {
    if (!rs.reverse) rs.reverse = std::make_unique<ReverseJacobianSweep>(model_);
    rs.reverse->run(traj, indices, rs.rows, out);
    for (int c = 0; c < size(); ++c)
      if (selection_.log_scale(c) || selection_.scale(c) != 1.0) out.col(c) *= selection_.chain_factor(c, traj.p);
    return;
  }
  // Column k: dρ/dx_k = (Σ_i ∂ρ/∂q^i s^i_k + ∂ρ/∂p_k) · dp_k/dx_k (chain_factor: the scale,
  // × p_k for log-scaled scalars), with
  // s^i_k = dq^i/dp_k from one multi-parameter direct sweep (sensitivity/direct_jacobian.h)
  // per block of columns; blocks bound the stored sensitivities to sensitivity_memory_ (one
  // block for the paper's problems). The slot's sweep keeps its workspace and blocks between
  // evaluations.
  if (!rs.sweep) rs.sweep = std::make_unique<DirectSensitivitySweep>(model_);
  const double column_bytes = 8.0 * static_cast<double>(traj.q.size()) * model_.num_dofs();
  const int block =
      static_cast<int>(std::clamp(sensitivity_memory_ / std::max(column_bytes, 1.0), 1.0, static_cast<double>(size())));
  for (int first = 0; first < size(); first += block) {
    const int count = std::min(block, size() - first);
    const TrajectorySensitivities& sens = rs.sweep->run(traj, std::span<const int>(indices).subspan(first, count));
    if (count == size()) {
      objective_.residual_jacobian(model_, traj, sens, out, rs.parts);  // one block: no copy
    } else {
      objective_.residual_jacobian(model_, traj, sens, rs.block, rs.parts);
      if (first == 0) out.resize(rs.block.rows(), size());
      out.middleCols(first, count) = rs.block;
    }
    for (int c = first; c < first + count; ++c)
      if (selection_.log_scale(c) || selection_.scale(c) != 1.0) out.col(c) *= selection_.chain_factor(c, traj.p);
  }
}

void SimulationProblem::fail(LeastSquaresEvaluation& e) {
  ++failures_;
  e.failed = true;
  e.phi = kInf;
  e.jacobian.resize(0, 0);
}

LeastSquaresEvaluation SimulationProblem::evaluate_residuals(const VecX& x, bool jacobian, int slot) {
  const int bad = objective_.first_non_least_squares_term();
  if (bad >= 0)
    throw InputError("objective term " + std::to_string(bad) + " (" + std::string(objective_.term(bad).name()) +
                     ") is not a sum of squares; Gauss-Newton needs every term to be one");
  const auto t0 = std::chrono::steady_clock::now();
  LeastSquaresEvaluation e;
  e.x = x;
  ResidualSlot* rs = slot >= 0 && slot < slots() ? &residual_slots_[slot] : nullptr;
  if (rs) rs->valid = false;
  Trajectory traj;
  bool ok = simulate(x, slot, traj, e.failure);
  if (ok) {
    try {
      objective_.residuals(model_, traj, e.residuals, nullptr, nullptr);
      e.phi = 0.5 * e.residuals.squaredNorm();
      if (jacobian) residual_jacobian(traj, slot, e.jacobian);
      if (!std::isfinite(e.phi) || (jacobian && !e.jacobian.allFinite())) {
        ok = false;
        e.failure = "non-finite residuals or Jacobian";
      }
    } catch (const SimulationError& err) {
      ok = false;
      e.failure = err.what();
    }
  }
  if (ok) {
    rs->traj = std::move(traj);
    rs->x = x;
    rs->valid = true;
  } else {
    fail(e);
  }
  e.seconds = seconds_since(t0);
  return e;
}

void SimulationProblem::add_jacobian(LeastSquaresEvaluation& e, int slot) {
  if (e.failed) throw InternalError("optimisation problem: a Jacobian asked for at a failed evaluation");
  if (slot < 0 || slot >= slots())
    throw InternalError("optimisation problem: simulator slot " + std::to_string(slot) + " does not exist");
  const auto t0 = std::chrono::steady_clock::now();
  ResidualSlot& rs = residual_slots_[slot];
  if (!rs.valid || rs.x.size() != e.x.size() || rs.x != e.x) {
    // The slot has simulated another point since: run x again (deterministic).
    LeastSquaresEvaluation again = evaluate_residuals(e.x, false, slot);
    if (again.failed) {
      e.failure = again.failure;
      e.failed = true;
      e.phi = kInf;
      e.seconds += seconds_since(t0);
      return;
    }
  }
  try {
    residual_jacobian(rs.traj, slot, e.jacobian);
    if (!e.jacobian.allFinite()) {
      e.failure = "non-finite residuals or Jacobian";
      fail(e);
    }
  } catch (const SimulationError& err) {
    e.failure = err.what();
    fail(e);
  }
  e.seconds += seconds_since(t0);
}

}  // namespace addsim
