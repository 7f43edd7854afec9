#include "addsim/solver/newton_step.h"

#include <cmath>

#include "addsim/math/sparse_assembly.h"
#include "addsim/solver/simulator.h"
#include "addsim/solver/step_common.h"

namespace addsim::step {

bool below_step_floor(const VecX& dq, const VecX& q) {
  return dq.lpNorm<Eigen::Infinity>() <= kStepFloor * (1.0 + q.lpNorm<Eigen::Infinity>());
}

LineSearchResult backtrack(const VecX& q, const VecX& dq, double norm, int max_halvings, const TrialEval& eval,
                           VecX& q_trial, std::string* why, StepReport& rep) {
  // Armijo test on ‖r‖ with sufficient-decrease constant kArmijo; α halves on each failure.
  LineSearchResult ls;
  while (true) {
    q_trial = q + ls.alpha * dq;
    ls.trial = eval(q_trial, ls.halvings == 0, why);
    if (ls.trial <= (1.0 - kArmijo * ls.alpha) * norm) break;
    if (ls.halvings >= max_halvings) break;
    ls.alpha *= 0.5;
    ++ls.halvings;
  }
  rep.line_search_halvings += ls.halvings;
  ls.decreased = ls.trial <= (1.0 - kArmijo * ls.alpha) * norm;
  return ls;
}

NewtonStepResult newton_step(Simulator& sim, const SparsePattern& pattern, const VecX& jac, const VecX& rhs,
                             const VecX& q, double norm, double r_floor, double linear_tol, int max_halvings,
                             const TrialEval& eval, NewtonWorkspace& ws, StepReport& rep,
                             const std::function<void(VecX& dq)>& refine) {
  NewtonStepResult res;
  std::string trial_why;
  // μ = 0 first (pure Newton, quadratic convergence); if the line search finds no decrease —
  // near-singular or strongly indefinite Jacobians, e.g. buckling springs — μ grows tenfold
  // from kFirstDamping, turning the direction towards a diagonally scaled residual step.
  for (double mu = 0.0; mu <= kMaxDamping; mu = mu == 0.0 ? kFirstDamping : 10.0 * mu) {
    // The undamped solve uses J itself; only damped ones need the copy J + μ D.
    const VecX* matrix = &jac;
    if (mu > 0.0) {
      ++rep.damped_iterations;
      ws.jac_damped = jac;
      for (int d = 0; d < pattern.size(); ++d) {
        const int k = pattern.diagonal_index(d);
        ws.jac_damped[k] += mu * std::abs(jac[k]);
      }
      matrix = &ws.jac_damped;
    }
    if (!sim.solve_linear(q, *matrix, rhs, ws.dq, rep, mu == 0.0 ? linear_tol : 0.0)) {
      res.singular = true;
      continue;
    }
    if (!ws.dq.allFinite()) continue;
    if (mu == 0.0 && refine) refine(ws.dq);
    const LineSearchResult ls = backtrack(q, ws.dq, norm, max_halvings, eval, ws.q_trial, &trial_why, rep);
    res.trial = ls.trial;
    res.halvings = ls.halvings;
    if (ls.decreased) {
      res.accepted = true;
      return res;
    }
    // At the floor already (‖r‖ or the undamped step): damping cannot do better.
    if (mu == 0.0 && (norm <= r_floor || below_step_floor(ws.dq, q))) break;
  }
  if (norm <= r_floor || (ws.dq.allFinite() && below_step_floor(ws.dq, q))) {
    res.at_floor = true;
    res.tiny_step = !(norm <= r_floor);
    return res;
  }
  if (res.singular && !ws.dq.allFinite())
    res.failure = "step Jacobian is singular";
  else
    res.failure = trial_why.empty() ? "line search found no decrease of ‖r‖, even with damping"
                                    : "line search found no admissible decrease of ‖r‖ (" + trial_why + ")";
  return res;
}

}  // namespace addsim::step
