#pragma once
/// Finite-difference twins of the gradient passes: central differences of Φ obtained by
/// re-running the simulator at perturbed parameters. Slow (two rollouts per value) and
/// only as accurate as the forward tolerance allows; meant for tests and gradient checks.

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "addsim/sensitivity/objective_function.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Which difference quotient a finite-difference value is.
enum class FdKind {
  kCentral,     ///< (Φ(p + t d) − Φ(p − t d)) / 2t, second order
  kForward,     ///< (Φ(p + t d) − Φ(p)) / t, first order
  kBackward,    ///< (Φ(p) − Φ(p − t d)) / t, first order
  kStraddling,  ///< none: both perturbed rollouts changed their contact signature
};
/// "central", "forward", "backward" or "straddling".
const char* to_string(FdKind kind);

/// One finite-difference step t and the three difference quotients of Φ along a direction.
struct FdSample {
  double step = 0.0;      ///< t (units of the direction's scale)
  double central = 0.0;   ///< (Φ(p + t d) − Φ(p − t d)) / 2t
  double forward = 0.0;   ///< (Φ(p + t d) − Φ(p)) / t
  double backward = 0.0;  ///< (Φ(p) − Φ(p − t d)) / t
  std::string failure;    ///< non-empty if a perturbed rollout failed (the sample is then unused)
  /// Event-aware sweeps: steps whose contact signature (sensitivity/contact_signature.h) in
  /// the rollout at p + t d (p − t d) differs from the one at p; −1 if not checked.
  int events_plus = -1;
  int events_minus = -1;
  std::string first_event;  ///< the first difference (the + side's if it has one), for reports
  /// The quotient whose rollouts keep the signature of p: central if neither side changed it
  /// (or it was not checked), forward / backward if only the other side changed it,
  /// kStraddling if both did.
  FdKind usable() const;
  /// The quotient of `kind` (kCentral, kForward or kBackward).
  double value(FdKind kind) const;
};

/// A sweep over several steps and the chosen value.
struct FdSweep {
  double derivative = 0.0;          ///< the chosen quotient (meaningless if kind is kStraddling)
  double step = 0.0;                ///< the chosen step
  FdKind kind = FdKind::kCentral;   ///< which quotient was chosen
  std::vector<FdSample> samples;
  /// One line per sample ("t = …  central … forward … backward …", and with events the
  /// changed steps per side and the quotient the sample allows), for failure messages.
  std::string report() const;
};

/// Φ of a fresh rollout at p (|p|). Throws SimulationError naming the step if it fails.
double objective_value(Simulator& sim, const ObjectiveFunction& objective, const VecX& p);

/// Central difference of Φ along `direction` (|p|) with step t: ≈ dΦ/dp · direction.
double directional_derivative_fd(Simulator& sim, const ObjectiveFunction& objective, const VecX& p,
                                 const VecX& direction, double step);

/// Sweep of directional differences over `steps` (in decreasing order, ≥ 2 of them). The
/// chosen value is the central difference of the smaller step of the consecutive pair whose
/// values agree best (the plateau between truncation and round-off error).
/// A step whose perturbed rollout fails is recorded with its failure and skipped; throws
/// SimulationError if the unperturbed run fails or fewer than two steps succeed.
FdSweep directional_derivative_fd_sweep(Simulator& sim, const ObjectiveFunction& objective, const VecX& p,
                                        const VecX& direction, std::span<const double> steps);

/// Event-aware sweep (docs/gradients.md §4): as directional_derivative_fd_sweep, but every
/// perturbed rollout's contact signature is compared with the unperturbed one, and a sample
/// offers only the quotient whose rollouts stay on the unperturbed branch (FdSample::usable).
/// The choice takes the plateau (as above) among the samples allowing a central difference;
/// if none does, among those allowing a one-sided one (first order: compare with a looser
/// tolerance, fd_tolerance()); if every successful sample straddles, kind is kStraddling and
/// no value is chosen. Throws SimulationError if the unperturbed run or every sample fails.
/// `progress` (optional) is called after each rollout with the rollouts done and their
/// number 1 + 2·|steps| (for progress reports; it must not throw).
FdSweep directional_derivative_fd_sweep_events(Simulator& sim, const ObjectiveFunction& objective, const VecX& p,
                                               const VecX& direction, std::span<const double> steps,
                                               const std::function<void(int done, int total)>& progress = {});

/// gradient_fd_sweep with the event-aware choice of directional_derivative_fd_sweep_events.
FdSweep gradient_fd_sweep_events(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j,
                                 std::span<const double> steps,
                                 const std::function<void(int done, int total)>& progress = {});

/// The event-aware choice on recorded samples (sets derivative, step and kind); exposed for
/// tests. Returns false (kind kStraddling) if no sample offers a usable quotient.
bool choose_fd_value(FdSweep& sweep);

/// A one-sided difference is first order (error ≈ ½ t |Φ''|), so it is compared with this
/// multiple of the central tolerance: at a touchdown on g = 0 its error is 6e-6 at the step the
/// sweep picks (1e-8; ≈ 600 t, docs/gradients.md §4), while a 1 % error in the adjoint stays
/// 10× beyond the contact-rich one-sided tolerance 1e-3.
constexpr double kOneSidedToleranceFactor = 10.0;

/// Tolerance for comparing with the quotient `kind` given the central tolerance.
inline double fd_tolerance(FdKind kind, double central_tolerance) {
  return kind == FdKind::kCentral ? central_tolerance : kOneSidedToleranceFactor * central_tolerance;
}

/// An analytic derivative compared with an event-aware sweep.
struct FdCheck {
  FdKind kind = FdKind::kCentral;  ///< the sweep's chosen quotient
  double rel_error = 0.0;          ///< |a − fd| / max(|fd|, floor); +∞ when straddling
  double tolerance = 0.0;          ///< fd_tolerance(kind, central tolerance)
  bool compared = false;           ///< false when every sample straddles (nothing to compare with)
  bool pass = false;               ///< compared and within the tolerance, or not compared
};

/// Compares `analytic` with the sweep's chosen value: relative error with the absolute floor
/// `floor`, against fd_tolerance(kind, central_tolerance). A straddling sweep is not compared
/// and passes (callers report it); any compared value beyond its tolerance fails.
FdCheck check_derivative(double analytic, const FdSweep& sweep, double floor, double central_tolerance);

/// Noise estimate ν of a sweep's chosen quotient (absolute, dΦ/dp units; docs/task-format.md
/// "gradcheck"): the largest of
/// - the disagreement of the chosen quotient with its nearest neighbour of the same kind (the
///   plateau the sweep picked),
/// - the round-off of Φ over the step, 4 ε |Φ| / t,
/// - the noise of Φ measured by the sweep itself, δΦ / t: the second differences
///   D(s) = Φ(p + s d) − 2 Φ(p) + Φ(p − s d) = (forward − backward) s of the samples with
///   s ≤ t that keep the contact signature on both sides depart from their curvature trend
///   Φ'' s² (Φ'' from the sweep's largest such step) only by the noise of the rollouts (the
///   forward solves stop at their tolerance: on the quadruped δΦ ≈ 50 … 1700 ε|Φ|, far above
///   4 ε|Φ|, as Φ there is a small sum of squares of O(1) positions); δΦ is their largest
///   departure.
/// Zero for a straddling sweep.
double fd_noise(const FdSweep& sweep, double phi);

/// Adjoint vs direct: |a − d| / max(|a|, |d|, ‖g‖), ‖g‖ the selected gradient's norm. Both
/// passes make the same linear solves (in another order), whose round-off (≈ κ ε) is relative to
/// the whole gradient — the adjoint's λ carries one error shared by every component — so a
/// component's absolute error is bounded by the tolerance times ‖g‖, whatever its own size.
/// An exactly equal pair (e.g. both zero) has error 0.
double adjoint_direct_error(double adjoint, double direct, double g_norm);

/// Central difference ≈ dΦ/dp_j with the step t·max(1, |p_j|).
double gradient_fd(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j, double step);

/// Sweep of gradient_fd over relative steps (each scaled by max(1, |p_j|)); see
/// directional_derivative_fd_sweep for the choice. Returned steps are the absolute ones.
FdSweep gradient_fd_sweep(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j,
                          std::span<const double> steps);

}  // namespace addsim
