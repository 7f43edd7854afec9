#pragma once
/// Finite-difference twins of the gradient passes: central differences of Φ obtained by
/// re-running the simulator at perturbed parameters. Slow (two rollouts per value) and
/// only as accurate as the forward tolerance allows; meant for tests and gradient checks.

#include <span>
#include <string>
#include <vector>

#include "addsim/sensitivity/objective_function.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// One finite-difference step t and the three difference quotients of Φ along a direction.
struct FdSample {
  double step = 0.0;      ///< t (units of the direction's scale)
  double central = 0.0;   ///< (Φ(p + t d) − Φ(p − t d)) / 2t
  double forward = 0.0;   ///< (Φ(p + t d) − Φ(p)) / t
  double backward = 0.0;  ///< (Φ(p) − Φ(p − t d)) / t
  std::string failure;    ///< non-empty if a perturbed rollout failed (the sample is then unused)
};

/// A sweep over several steps and the chosen value.
struct FdSweep {
  double derivative = 0.0;  ///< central difference of the chosen step
  double step = 0.0;        ///< the chosen step
  std::vector<FdSample> samples;
  /// One line per sample ("t = …  central … forward … backward …"), for failure messages.
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

/// Central difference ≈ dΦ/dp_j with the step t·max(1, |p_j|).
double gradient_fd(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j, double step);

/// Sweep of gradient_fd over relative steps (each scaled by max(1, |p_j|)); see
/// directional_derivative_fd_sweep for the choice. Returned steps are the absolute ones.
FdSweep gradient_fd_sweep(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j,
                          std::span<const double> steps);

}  // namespace addsim
