#include "addsim/sensitivity/step_linearization.h"

#include "addsim/core/error.h"

namespace addsim {

StepLinearization::StepLinearization(const Model& model)
    : model_(model), assembly_(&model.pattern(), &model.stencils()) {
  ADDSIM_CHECK(model.finalized(), "the model must be finalised before differentiating");
  const int n = model.num_dofs();
  const int nnz = model.pattern().nnz();
  q_.setZero(n);
  v_.setZero(n);
  a_.setZero(n);
  v_hist_.setZero(n);
  a_hist_.setZero(n);
  jac_.setZero(nnz);
  v0_jac_.setZero(nnz);
  hist_jac_.assign(model.scheme().window(), VecX::Zero(nnz));
}

void StepLinearization::evaluate(const Trajectory& traj, int i) {
  const TimeScheme& s = model_.scheme();
  ADDSIM_CHECK(i >= 1 && i < static_cast<int>(traj.q.size()), "step outside the recorded trajectory");
  step_ = i;
  p_ = &traj.p;
  // Rates at the converged state, exactly as the forward step formed them.
  const StateHistory hist(&traj.q, &traj.v0);
  bdf_history_terms(s, hist, i, v_hist_, a_hist_);
  q_ = traj.q[i];
  bdf_rates(s, i, q_, v_hist_, a_hist_, v_, a_);
  // Local partials of every term, then the chain rule through the BDF weights.
  const TermContext ctx{q_, v_, a_, traj.p, i, s};
  assembly_.reset(EvalMode::kResidualAndJacobians);
  for (const auto& t : model_.terms()) t->evaluate(ctx, assembly_);
  combine_partials(bdf_weights(s, i, 0), assembly_.kq, assembly_.kv, assembly_.ka, jac_);
  for (int k = 1; k <= s.window(); ++k)
    combine_partials(bdf_weights(s, i, k), assembly_.kq, assembly_.kv, assembly_.ka, hist_jac_[k - 1]);
  const JacobianWeights w_v0 = bdf_v0_weights(s, i);
  depends_on_v0_ = w_v0.wq != 0.0 || w_v0.wv != 0.0 || w_v0.wa != 0.0;
  if (depends_on_v0_) combine_partials(w_v0, assembly_.kq, assembly_.kv, assembly_.ka, v0_jac_);
}

void StepLinearization::param_derivatives(ParamSink& sink) const {
  const TermContext ctx{q_, v_, a_, *p_, step_, model_.scheme()};
  for (const auto& t : model_.terms()) t->param_derivatives(ctx, sink);
}

}  // namespace addsim
