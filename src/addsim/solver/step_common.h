#pragma once
/// Pieces shared by the three Newton-type step solvers (Simulator::solve_step, the hybrid
/// contact active set and the SQP comparison): timing, the convergence and line-search
/// constants, and the contact points a solver's active set works on. The Newton iteration
/// itself (damped direction, line search, floor test) is solver/newton_step.h.

#include <chrono>
#include <cmath>
#include <string>
#include <limits>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/solver/simulator.h"
#include "addsim/terms/contact_term.h"

namespace addsim::step {

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Round-off floor of ‖r‖: the residual is a sum of contributions whose magnitudes add up
// to r_abs, evaluated at a q known to ε_mach·|q|; in double precision it cannot be resolved
// below ≈ ε_mach (‖r_abs‖ + ‖|J||q|‖). With 64 ulps of margin, a residual at that floor that
// no step can decrease counts as converged.
inline constexpr double kRoundoffFactor = 64.0 * std::numeric_limits<double>::epsilon();
// Sufficient-decrease constant of the backtracking line search on ‖r‖.
inline constexpr double kArmijo = 1e-4;
// When no step decreases ‖r‖ any more although ‖r‖ ≥ tolerance, the residual sits at its
// round-off floor (e.g. m·a with a = Σ ca q/h² cancels digits at small h). The step is then
// accepted as converged if the Newton correction no longer moves q: ‖Δq‖∞ ≤ this ×
// (1 + ‖q‖∞), i.e. q is resolved to about 12 significant digits.
inline constexpr double kStepFloor = 1e-12;
// Damping range of the Levenberg–Marquardt fallback direction (relative to diag |J|).
inline constexpr double kFirstDamping = 1e-4;
inline constexpr double kMaxDamping = 1e4;

/// Ends `rep` as failed if the initial guess evaluated to a non-finite ‖r‖ (`norm`, with the
/// reason `why`); returns true then. Otherwise records norm as the first residual.
inline bool initial_guess_failed(double norm, const std::string& why, Clock::time_point t_step, StepReport& rep) {
  if (!std::isfinite(norm)) {
    rep.failure = "initial guess is inadmissible: " + why;
    rep.residual_norm = norm;
    rep.wall_ms = ms_since(t_step);
    return true;
  }
  rep.residual_history.push_back(norm);
  return false;
}

/// Records how a converged step of the hybrid or SQP contact solver was accepted: on a tiny
/// Newton step (`floor_used`: its tolerance was raised to the ‖r_c‖ it could not decrease)
/// unless ‖r_c‖ (`norm`) also meets the scaled tolerance, the round-off floor of r_abs or the
/// relative tolerance `rel_tol`, and the relative residual ‖r_c‖ / ‖r_abs‖ (stick rows hold
/// velocities, so this is a whole-system measure, not a per-body one).
inline void record_acceptance(StepReport& rep, double norm, bool floor_used, double tol_scaled, double rel_tol,
                              const VecX& r_abs) {
  const double scale = r_abs.norm();
  rep.relative_residual = scale > 0.0 ? norm / scale : 0.0;
  if (floor_used && norm >= std::max(tol_scaled, kRoundoffFactor * scale) && rep.relative_residual > rel_tol)
    rep.acceptance = StepAcceptance::kTinyStep;
  rep.relative_residual_body = -1;
}

/// A contact point of a PointContactTerm (particle or FEM node).
struct ContactPoint {
  const PointContactTerm* term;
  int k;
  DofIndex dof;
};
/// A proxy point of a RigidContactTerm.
struct RigidContactPoint {
  const RigidContactTerm* term;
  int k;
  int body;  ///< index into ActiveSetPoints::bodies
};
/// A rigid body with active-set contact points.
struct ContactBody {
  DofIndex dof;
  std::vector<int> points;  ///< indices into ActiveSetPoints::rigid_points
  int rank = -1;            ///< enforced constraint directions; −1: determine at the next evaluation
};
struct ActiveSetPoints {
  std::vector<ContactPoint> points;
  std::vector<RigidContactPoint> rigid_points;
  std::vector<ContactBody> bodies;
};

/// The contact points of every contact term of `model` whose model is `kind`, rigid ones
/// grouped by body. Throws InputError ("<name> contact supports planar obstacles only") for
/// a non-planar obstacle of a point term.
ActiveSetPoints collect_active_set_points(const Model& model, ContactModel kind, const char* name);

}  // namespace addsim::step
