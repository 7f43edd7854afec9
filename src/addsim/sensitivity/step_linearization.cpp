#include "addsim/sensitivity/step_linearization.h"

#include "addsim/core/error.h"

namespace addsim {

StepLinearization::StepLinearization(const Model& model, History history)
    : model_(model), assembly_(&model.pattern(), &model.stencils()), history_(history) {
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
  a0_jac_.setZero(nnz);
  a0_prod_.setZero(n);
  hist_jac_.assign(model.scheme().window(), VecX::Zero(nnz));
  hist_prod_.assign(model.scheme().window(), VecX::Zero(n));
  uv_.setZero(n);
  ua_.setZero(n);
  v0_prod_.setZero(n);
}

void StepLinearization::apply_chart_jacobian(const Body& body, const MatX& G, VecX& values) const {
  // The columns of one body's block share their row set (every stencil holds the whole
  // block), so the product A G mixes value-array entries position by position.
  const SparsePattern& pat = model_.pattern();
  const int d0 = body.dof_offset(), nb = body.dof_count();
  const int len = pat.outer()[d0 + 1] - pat.outer()[d0];
  for (int c = 1; c < nb; ++c)
    ADDSIM_CHECK(pat.outer()[d0 + c + 1] - pat.outer()[d0 + c] == len, "chart switch: block columns differ in pattern");
  Eigen::RowVectorXd row(nb);
  for (int e = 0; e < len; ++e) {
    for (int c = 0; c < nb; ++c) {
      ADDSIM_CHECK(pat.inner()[pat.outer()[d0 + c] + e] == pat.inner()[pat.outer()[d0] + e],
                   "chart switch: block columns differ in pattern");
      row[c] = values[pat.outer()[d0 + c] + e];
    }
    row = row * G;
    for (int c = 0; c < nb; ++c) values[pat.outer()[d0 + c] + e] = row[c];
  }
}

void StepLinearization::evaluate(const Trajectory& traj, int i) {
  const TimeScheme& s = traj.scheme(model_.scheme());
  scheme_ = &s;
  ADDSIM_CHECK(i >= 1 && i <= traj.internal_steps(), "step outside the recorded trajectory");
  step_ = i;
  traj_ = &traj;
  p_ = &traj.p;
  // Rates at the converged state, exactly as the forward step formed them.
  const StateHistory hist = traj.history();
  bdf_history_terms(s, hist, i, v_hist_, a_hist_);
  q_ = traj.state(i);
  bdf_rates(s, i, q_, v_hist_, a_hist_, v_, a_);
  // Local partials of every term, then the chain rule through the BDF weights.
  const TermContext ctx{q_, v_, a_, traj.p, s.row(i), s};
  // The step's contact state (hybrid labels); a hand-built trajectory may have no reports.
  const StepReport* report =
      traj.substepped() || i <= static_cast<int>(traj.reports.size()) ? &traj.internal_report(i) : nullptr;
  assembly_.reset(EvalMode::kResidualAndJacobians);
  for (const auto& t : model_.terms()) t->evaluate(ctx, assembly_);
  // Hybrid contact (paper §4.3): released points feel the sliding force, not the penalty.
  slips_.clear();
  if (report) slips_ = report->contact.sliding;
  add_slip_corrections(slips_, ctx, assembly_);
  rigid_slips_.clear();
  if (report) rigid_slips_ = report->contact.rigid_sliding;
  add_rigid_slip_corrections(rigid_slips_, ctx, assembly_);
  combine_partials(bdf_weights(s, i, 0), assembly_.kq, assembly_.kv, assembly_.ka, jac_);
  // Rigid stick constraints (hybrid): r_c = P v + (I − P) r per body, before the chart
  // Jacobians so that ∂v/∂q^{i−k} = wv_k G carries the chart switch; ∂P/∂q^i only in jac_.
  bodies_.clear();
  if (report) bodies_ = report->contact.bodies;
  if (!bodies_.empty() && stick_rows_.empty()) stick_rows_ = StickRows(model_.pattern());
  stick_rows_.constrain_body_matrix(bodies_, bdf_weights(s, i, 0).wv, true, jac_);
  const JacobianWeights w_v0 = bdf_v0_weights(s, i);
  depends_on_v0_ = w_v0.wq != 0.0 || w_v0.wv != 0.0 || w_v0.wa != 0.0;
  const JacobianWeights w_a0 = bdf_a0_weights(s, i);
  depends_on_a0_ = w_a0.wq != 0.0 || w_a0.wv != 0.0 || w_a0.wa != 0.0;
  // Hybrid contact (paper §4.3): the step's stick constraints T̄ ẋ^i = 0 replace their rows in
  // every Jacobian, with ∂ẋ^i/∂(state) = wv of its weights (terms/stick_constraints.h).
  sticks_.clear();
  if (report) sticks_ = report->contact.sticking;
  if (!sticks_.empty()) {
    if (stick_rows_.empty()) stick_rows_ = StickRows(model_.pattern());
    stick_rows_.constrain_matrix(sticks_, bdf_weights(s, i, 0).wv, jac_);
  }
  // The history blocks as matrices: always for the direct pass, and for the adjoint in steps
  // whose stick constraints replace rows (history_vjp() forms the others' products directly).
  have_history_matrices_ = history_ == History::kMatrices || !bodies_.empty() || !sticks_.empty();
  if (have_history_matrices_) form_history_matrices(hist);
}

void StepLinearization::form_history_matrices(const StateHistory& hist) {
  const TimeScheme& s = *scheme_;
  const int i = step_;
  // Rigid stick constraints before the chart Jacobians, so that ∂v/∂q^{i−k} = wv_k G carries
  // the chart switch.
  for (int k = 1; k <= s.window(); ++k) {
    combine_partials(bdf_weights(s, i, k), assembly_.kq, assembly_.kv, assembly_.ka, hist_jac_[k - 1]);
    stick_rows_.constrain_body_matrix(bodies_, bdf_weights(s, i, k).wv, false, hist_jac_[k - 1]);
    // Step i read q^{i-k} re-expressed in its own chart: dr^i/dq^{i-k} = (dr^i/dq̃) (∂q̃/∂q^{i-k}).
    if (i - k >= 0)
      for (const auto& [body, G] : hist.chart_jacobians(i, i - k)) apply_chart_jacobian(*body, G, hist_jac_[k - 1]);
  }
  const JacobianWeights w_v0 = bdf_v0_weights(s, i);
  if (depends_on_v0_) combine_partials(w_v0, assembly_.kq, assembly_.kv, assembly_.ka, v0_jac_);
  if (depends_on_v0_) stick_rows_.constrain_body_matrix(bodies_, w_v0.wv, false, v0_jac_);
  const JacobianWeights w_a0 = bdf_a0_weights(s, i);
  if (depends_on_a0_) combine_partials(w_a0, assembly_.kq, assembly_.kv, assembly_.ka, a0_jac_);
  if (depends_on_a0_) stick_rows_.constrain_body_matrix(bodies_, w_a0.wv, false, a0_jac_);
  if (!sticks_.empty()) {
    for (int k = 1; k <= s.window(); ++k) stick_rows_.constrain_matrix(sticks_, bdf_weights(s, i, k).wv, hist_jac_[k - 1]);
    if (depends_on_v0_) stick_rows_.constrain_matrix(sticks_, w_v0.wv, v0_jac_);
    if (depends_on_a0_) stick_rows_.constrain_matrix(sticks_, w_a0.wv, a0_jac_);
  }
}

void StepLinearization::history_vjp(const VecX& lambda) {
  const TimeScheme& s = *scheme_;
  const SparsePattern& pat = model_.pattern();
  const int i = step_;
  if (have_history_matrices_) {
    for (int k = 1; k <= s.window(); ++k) {
      hist_prod_[k - 1].setZero();
      pat.transpose_multiply_add(hist_jac_[k - 1], lambda, hist_prod_[k - 1]);
    }
    if (depends_on_v0_) {
      v0_prod_.setZero();
      pat.transpose_multiply_add(v0_jac_, lambda, v0_prod_);
    }
    if (depends_on_a0_) {
      a0_prod_.setZero();
      pat.transpose_multiply_add(a0_jac_, lambda, a0_prod_);
    }
    return;
  }
  // (∂r/∂v)ᵀλ and (∂r/∂a)ᵀλ in one pass over the columns of the shared pattern.
  const int* outer = pat.outer().data();
  const int* inner = pat.inner().data();
  const double* kv = assembly_.kv.data();
  const double* ka = assembly_.ka.data();
  for (int c = 0; c < pat.size(); ++c) {
    double sv = 0.0, sa = 0.0;
    for (int e = outer[c]; e < outer[c + 1]; ++e) {
      const double l = lambda[inner[e]];
      sv += kv[e] * l;
      sa += ka[e] * l;
    }
    uv_[c] = sv;
    ua_[c] = sa;
  }
  // dr^i/dq^{i-k} = wv_k ∂r/∂v + wa_k ∂r/∂a (past states enter only through the rates), then
  // (A G)ᵀλ = Gᵀ (Aᵀλ) on the block of each body whose chart switched in between.
  const StateHistory hist = traj_->history();
  for (int k = 1; k <= s.window(); ++k) {
    const JacobianWeights w = bdf_weights(s, i, k);
    ADDSIM_CHECK(w.wq == 0.0, "history Jacobian with a ∂r/∂q part");
    hist_prod_[k - 1] = w.wv * uv_ + w.wa * ua_;
    if (i - k >= 0)
      for (const auto& [body, G] : hist.chart_jacobians(i, i - k)) {
        auto block = hist_prod_[k - 1].segment(body->dof_offset(), body->dof_count());
        block = G.transpose() * block;
      }
  }
  if (depends_on_v0_) {
    const JacobianWeights w = bdf_v0_weights(s, i);
    ADDSIM_CHECK(w.wq == 0.0, "start-up Jacobian with a ∂r/∂q part");
    v0_prod_ = w.wv * uv_ + w.wa * ua_;
  }
  if (depends_on_a0_) {
    const JacobianWeights w = bdf_a0_weights(s, i);
    a0_prod_ = w.wv * uv_ + w.wa * ua_;
  }
}

void StepLinearization::param_derivatives(ParamSink& sink) const {
  const TermContext ctx{q_, v_, a_, *p_, scheme_->row(step_), *scheme_};
  for (const auto& t : model_.terms()) t->param_derivatives(ctx, sink);
  slip_corrections_param_derivatives(slips_, ctx, sink);
  rigid_slip_corrections_param_derivatives(rigid_slips_, ctx, sink);
}

}  // namespace addsim
