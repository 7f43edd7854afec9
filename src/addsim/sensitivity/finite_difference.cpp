#include "addsim/sensitivity/finite_difference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "addsim/core/error.h"

namespace addsim {

std::string FdSweep::report() const {
  std::ostringstream out;
  out.precision(12);
  for (const FdSample& s : samples) {
    out << "t = " << s.step;
    if (!s.failure.empty()) {
      out << "  rollout failed: " << s.failure << "\n";
      continue;
    }
    out << "  central = " << s.central << "  forward = " << s.forward << "  backward = " << s.backward
        << (s.step == step ? "  <- chosen" : "") << "\n";
  }
  return out.str();
}

double objective_value(Simulator& sim, const ObjectiveFunction& objective, const VecX& p) {
  const Trajectory traj = sim.run(p);
  if (!traj.completed()) throw SimulationError("finite differences: " + traj.failure, traj.failed_step);
  return objective.evaluate(sim.model(), traj, nullptr);
}

double directional_derivative_fd(Simulator& sim, const ObjectiveFunction& objective, const VecX& p,
                                 const VecX& direction, double step) {
  ADDSIM_CHECK(direction.size() == p.size(), "direction must have |p| entries");
  const double plus = objective_value(sim, objective, p + step * direction);
  const double minus = objective_value(sim, objective, p - step * direction);
  return (plus - minus) / (2.0 * step);
}

FdSweep directional_derivative_fd_sweep(Simulator& sim, const ObjectiveFunction& objective, const VecX& p,
                                        const VecX& direction, std::span<const double> steps) {
  ADDSIM_CHECK(direction.size() == p.size(), "direction must have |p| entries");
  ADDSIM_CHECK(steps.size() >= 2, "a finite-difference sweep needs at least two steps");
  FdSweep out;
  const double base = objective_value(sim, objective, p);
  for (double t : steps) {
    FdSample sample;
    sample.step = t;
    try {
      const double plus = objective_value(sim, objective, p + t * direction);
      const double minus = objective_value(sim, objective, p - t * direction);
      sample.central = (plus - minus) / (2.0 * t);
      sample.forward = (plus - base) / t;
      sample.backward = (base - minus) / t;
    } catch (const SimulationError& e) {
      sample.failure = e.what();
    }
    out.samples.push_back(sample);
  }
  // Plateau: the pair of consecutive steps whose central values agree best; the smaller
  // step of that pair has the smaller truncation error.
  double best = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k + 1 < out.samples.size(); ++k) {
    const FdSample& a = out.samples[k];
    const FdSample& b = out.samples[k + 1];
    if (!a.failure.empty() || !b.failure.empty()) continue;
    const double change = std::abs(a.central - b.central);
    if (change < best) {
      best = change;
      out.derivative = b.central;
      out.step = b.step;
    }
  }
  if (!(best < std::numeric_limits<double>::infinity()))
    throw SimulationError("finite differences: fewer than two consecutive steps of the sweep succeeded:\n" +
                              out.report(),
                          -1);
  return out;
}

double gradient_fd(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j, double step) {
  ADDSIM_CHECK(j >= 0 && j < p.size(), "parameter index out of range");
  VecX e = VecX::Zero(p.size());
  e[j] = 1.0;
  return directional_derivative_fd(sim, objective, p, e, step * std::max(1.0, std::abs(p[j])));
}

FdSweep gradient_fd_sweep(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j,
                          std::span<const double> steps) {
  ADDSIM_CHECK(j >= 0 && j < p.size(), "parameter index out of range");
  VecX e = VecX::Zero(p.size());
  e[j] = 1.0;
  const double scale = std::max(1.0, std::abs(p[j]));
  std::vector<double> absolute(steps.begin(), steps.end());
  for (double& t : absolute) t *= scale;
  return directional_derivative_fd_sweep(sim, objective, p, e, absolute);
}

}  // namespace addsim
