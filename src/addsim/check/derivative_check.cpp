#include "addsim/check/derivative_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace addsim {

double BlockError::relative() const { return error / std::max(scale, 1e-300); }

namespace {

struct Evaluator {
  const Model& model;
  const Term& term;
  int step;
  Assembly asm_;
  Evaluator(const Model& m, const Term& t, int s) : model(m), term(t), step(s), asm_(&m.pattern(), &m.stencils()) {}

  VecX residual(const VecX& q, const VecX& v, const VecX& a, const VecX& p) {
    const TermContext ctx{q, v, a, p, step, model.scheme()};
    asm_.reset(EvalMode::kResidual);
    term.evaluate(ctx, asm_);
    return asm_.r;
  }
};

// Compares dense analytic and FD matrices; error relative to max(|FD|, floor).
BlockError compare(const MatX& analytic, const MatX& fd) {
  BlockError e;
  e.error = (analytic - fd).cwiseAbs().maxCoeff();
  e.scale = fd.cwiseAbs().maxCoeff();
  e.analytic_scale = analytic.cwiseAbs().maxCoeff();
  return e;
}

// Central-difference Jacobian of f w.r.t. x, column by column.
template <class F>
MatX fd_jacobian(const VecX& x, double step, int rows, F&& f) {
  MatX J(rows, x.size());
  VecX xp = x;
  for (int j = 0; j < x.size(); ++j) {
    const double hj = step * std::max(1.0, std::abs(x[j]));
    xp[j] = x[j] + hj;
    const VecX rp = f(xp);
    xp[j] = x[j] - hj;
    const VecX rm = f(xp);
    xp[j] = x[j];
    J.col(j) = (rp - rm) / (2.0 * hj);
  }
  return J;
}

}  // namespace

DerivativeCheckResult check_term_derivatives(const Model& model, const Term& term, const VecX& q, const VecX& v,
                                             const VecX& a, const VecX& p, int step,
                                             const DerivativeCheckOptions& opt) {
  Evaluator ev(model, term, step);
  const int n = model.num_dofs();
  DerivativeCheckResult res;
  std::ostringstream rep;

  // Analytic partials over the model's pattern, made dense.
  Assembly full(&model.pattern(), &model.stencils());
  full.reset(EvalMode::kResidualAndJacobians);
  const TermContext ctx{q, v, a, p, step, model.scheme()};
  term.evaluate(ctx, full);
  const MatX kq = MatX(model.pattern().make_matrix(full.kq));
  const MatX kv = MatX(model.pattern().make_matrix(full.kv));
  const MatX ka = MatX(model.pattern().make_matrix(full.ka));

  const MatX fq = fd_jacobian(q, opt.fd_step, n, [&](const VecX& x) { return ev.residual(x, v, a, p); });
  const MatX fv = fd_jacobian(v, opt.fd_step, n, [&](const VecX& x) { return ev.residual(q, x, a, p); });
  const MatX fa = fd_jacobian(a, opt.fd_step, n, [&](const VecX& x) { return ev.residual(q, v, x, p); });
  res.dq = compare(kq, fq);
  res.dv = compare(kv, fv);
  res.da = compare(ka, fa);

  bool ok = true;
  auto judge = [&](const char* label, const BlockError& e, bool expect_nonzero) {
    const double rel = e.error / std::max(e.scale, opt.abs_floor);
    rep << label << ": max|analytic-FD| = " << e.error << ", max|FD| = " << e.scale
        << ", max|analytic| = " << e.analytic_scale << ", relative = " << rel;
    if (rel > opt.rel_tol) {
      rep << "  <-- FAILS tolerance " << opt.rel_tol;
      ok = false;
    }
    if (expect_nonzero && (e.scale == 0.0 || e.analytic_scale == 0.0)) {
      rep << "  <-- expected non-zero (vacuous check)";
      ok = false;
    }
    rep << "\n";
  };
  judge("dr/dq", res.dq, opt.expect_dq);
  judge("dr/dv", res.dv, opt.expect_dv);
  judge("dr/da", res.da, opt.expect_da);

  if (opt.check_params && p.size() > 0) {
    const int np = static_cast<int>(p.size());
    const MatX fp = fd_jacobian(p, opt.fd_step, n, [&](const VecX& x) { return ev.residual(q, v, a, x); });
    // Column form: one column per parameter.
    MatX cols = MatX::Zero(n, np);
    for (int j = 0; j < np; ++j) {
      VecX col = VecX::Zero(n);
      ParamSink sink = ParamSink::column(&model.stencils(), j, &col);
      term.param_derivatives(ctx, sink);
      cols.col(j) = col;
    }
    res.dp_column = compare(cols, fp);
    // vjp form: rows of (∂r/∂p)ᵀ against unit vectors (λ = e_i).
    MatX vjp = MatX::Zero(n, np);
    for (int i = 0; i < n; ++i) {
      VecX lambda = VecX::Zero(n);
      lambda[i] = 1.0;
      VecX grad = VecX::Zero(np);
      ParamSink sink = ParamSink::vjp(&model.stencils(), &lambda, &grad);
      term.param_derivatives(ctx, sink);
      vjp.row(i) = grad.transpose();
    }
    res.dp_vjp = compare(vjp, fp);
    judge("dr/dp (columns)", res.dp_column, opt.expect_dp);
    judge("dr/dp (vjp)", res.dp_vjp, opt.expect_dp);
  }
  res.ok = ok;
  res.report = rep.str();
  return res;
}

}  // namespace addsim
