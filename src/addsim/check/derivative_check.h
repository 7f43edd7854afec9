#pragma once
/// The derivative harness (library code, used by every term's tests): compares a term's
/// local partials ∂r/∂q, ∂r/∂v, ∂r/∂a and its parameter derivatives ∂r/∂p (both the
/// vjp and the column form) with central finite differences of the same term's residual.
/// Guards against vacuous passes: blocks listed as expected non-zero must be non-zero in
/// both the analytic and the finite-difference result.

#include <string>

#include "addsim/model/model.h"

namespace addsim {

struct DerivativeCheckOptions {
  double fd_step = 1e-6;      ///< central-difference step (scaled by max(1, |x|) per entry)
  double rel_tol = 1e-6;      ///< max error / max(‖FD‖, abs_floor)
  double abs_floor = 1e-6;    ///< floor of the error denominator
  bool expect_dq = false;     ///< ∂r/∂q must be non-zero
  bool expect_dv = false;
  bool expect_da = false;
  bool expect_dp = false;     ///< ∂r/∂p must be non-zero for at least one parameter
  bool check_params = true;
};

struct BlockError {
  double error = 0.0;          ///< max |analytic − FD|
  double scale = 0.0;          ///< max |FD|
  double analytic_scale = 0.0; ///< max |analytic|
  double relative() const;
};

struct DerivativeCheckResult {
  BlockError dq, dv, da, dp_column, dp_vjp;
  bool ok = false;
  std::string report;  ///< one line per block, and the reason on failure
};

/// Checks `term` of `model` at (q, v, a, p, step); q, v, a are independent inputs here.
DerivativeCheckResult check_term_derivatives(const Model& model, const Term& term, const VecX& q, const VecX& v,
                                             const VecX& a, const VecX& p, int step,
                                             const DerivativeCheckOptions& options = {});

}  // namespace addsim
