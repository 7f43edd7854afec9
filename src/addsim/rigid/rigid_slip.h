#pragma once
/// Hybrid contact (paper §4.3, draft release rule) on rigid proxy points: a point released
/// from its stick constraint feels the sliding force −c_f f_n t, t = Tẋ/(‖Tẋ‖ + ε) (eq. slip)
/// instead of the linear penalty friction, mapped to the body's generalised force by eq.
/// rbMf, f̂ = (f, X_vᵀ f). The functions add the difference (sliding − penalty friction) to a
/// RigidContactTerm's contribution, with exact ∂/∂q, ∂/∂v and ∂/∂p, so that the forward
/// solver (solver/hybrid_contact.*) and the backward pass (sensitivity/step_linearization.*)
/// apply the same correction to the same recorded points.

#include <vector>

#include "addsim/model/term.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

/// Adds −(f_slide − f_pen) of proxy point k against plane o of `term` to `out` (residual
/// and, if wanted, ∂/∂q and ∂/∂v of the body's 6 DOFs). With a non-zero
/// `lagged_direction` (unit), f_slide = c_f f_n · lagged_direction (fixed direction: the
/// first iteration after a release, when Tẋ is still zero). Nothing for a separated point.
void add_rigid_slip_correction(const RigidContactTerm& term, const TermContext& ctx, int k, int o, Assembly& out,
                               const Vec3& lagged_direction = Vec3::Zero());

/// ∂/∂p (k_n, c_f, k_t) of add_rigid_slip_correction() without a lagged direction.
void rigid_slip_correction_param_derivatives(const RigidContactTerm& term, const TermContext& ctx, int k, int o,
                                             ParamSink& sink);

/// add_rigid_slip_correction() for every recorded sliding rigid point of a step.
void add_rigid_slip_corrections(const std::vector<RigidSlipPoint>& sliding, const TermContext& ctx, Assembly& out);
/// rigid_slip_correction_param_derivatives() for every recorded sliding rigid point of a step.
void rigid_slip_corrections_param_derivatives(const std::vector<RigidSlipPoint>& sliding, const TermContext& ctx,
                                              ParamSink& sink);

}  // namespace addsim
