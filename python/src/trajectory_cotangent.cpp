#include "python/src/trajectory_cotangent.h"

#include <string>

#include "addsim/core/error.h"

namespace addsim::python {

namespace {

void check_shape(const MatX& m, const char* what, int rows, int cols) {
  if (m.rows() != rows || m.cols() != cols)
    throw InputError(std::string("vjp: ") + what + " has shape (" + std::to_string(m.rows()) + ", " +
                     std::to_string(m.cols()) + "), expected (steps + 1, |q|) = (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + ")");
  if (!m.allFinite()) throw InputError(std::string("vjp: ") + what + " has non-finite entries");
}

}  // namespace

double TrajectoryCotangent::evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const {
  const TimeScheme& s = model.scheme();
  const int n = static_cast<int>(traj.q.size()) - 1;
  const int nq = model.num_dofs();
  check_shape(dl_dq_, "dL_dq", n + 1, nq);
  const bool with_v = dl_dv_.size() > 0;
  if (with_v) check_shape(dl_dv_, "dL_dv", n + 1, nq);

  // Positions: Φ_q = Σ_i gᵢ · q^i, ∂Φ/∂q^i = gᵢ.
  double phi = 0.0;
  for (int i = 0; i <= n; ++i) {
    const auto g = dl_dq_.row(i).transpose();
    if (g.isZero(0.0)) continue;
    phi += g.dot(traj.q[i]);
    if (grad) grad->dphi_dq(i) += g;
  }
  if (!with_v) return phi;

  // Velocities: v⁰ is the initial velocity itself; v^i (i ≥ 1) the time scheme's combination.
  if (traj.substepped())
    throw InputError("vjp: dL_dv of a run with sub-steps (solver.substep_retry) is not supported; pass dL_dq only");
  if (s.uses_initial_acceleration())
    throw InputError("vjp: dL_dv with integrator_startup = constant_acceleration is not supported; pass dL_dq only");
  const StateHistory hist = traj.history();
  VecX g_v0 = dl_dv_.row(0).transpose();
  phi += g_v0.dot(traj.v0);
  for (int i = 1; i <= n; ++i) {
    const VecX g = dl_dv_.row(i).transpose();
    if (g.isZero(0.0)) continue;
    phi += g.dot(traj.velocity(s, i));
    if (!grad) continue;
    const StepCoefficients& c = s.at(i);
    for (int k = 0; k < static_cast<int>(c.cv.size()) && i - k >= 0; ++k) {
      if (c.cv[k] == 0.0) continue;
      VecX w = (c.cv[k] / s.h) * g;
      // q^{i−k} enters v^i in the chart of step i: gᵀ ∂(rechart(q^{i−k}))/∂q^{i−k} per switched body.
      if (k > 0)
        for (const auto& [body, jac] : hist.chart_jacobians(i, i - k)) {
          const int off = body->dof_offset(), cnt = body->dof_count();
          w.segment(off, cnt) = jac.transpose() * w.segment(off, cnt);
        }
      grad->dphi_dq(i - k) += w;
    }
    g_v0 += c.v0_v * g;
  }
  if (grad) {
    const VecX zero = VecX::Zero(nq);
    for (const auto& b : model.bodies()) b->initial_state_vjp(traj.p, zero, g_v0, grad->dphi_dp());
  }
  return phi;
}

}  // namespace addsim::python
