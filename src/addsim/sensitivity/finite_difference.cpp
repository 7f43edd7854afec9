#include "addsim/sensitivity/finite_difference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "addsim/core/error.h"
#include "addsim/sensitivity/contact_signature.h"

namespace addsim {

const char* to_string(FdKind kind) {
  switch (kind) {
    case FdKind::kCentral: return "central";
    case FdKind::kForward: return "forward";
    case FdKind::kBackward: return "backward";
    case FdKind::kStraddling: return "straddling";
  }
  return "?";
}

FdKind FdSample::usable() const {
  const bool plus = events_plus > 0, minus = events_minus > 0;
  if (plus && minus) return FdKind::kStraddling;
  if (plus) return FdKind::kBackward;
  if (minus) return FdKind::kForward;
  return FdKind::kCentral;
}

double FdSample::value(FdKind kind) const {
  switch (kind) {
    case FdKind::kCentral: return central;
    case FdKind::kForward: return forward;
    case FdKind::kBackward: return backward;
    case FdKind::kStraddling: break;
  }
  ADDSIM_CHECK(false, "a straddling sample has no usable quotient");
  return 0.0;
}

std::string FdSweep::report() const {
  std::ostringstream out;
  out.precision(12);
  for (const FdSample& s : samples) {
    out << "t = " << s.step;
    if (!s.failure.empty()) {
      out << "  rollout failed: " << s.failure << "\n";
      continue;
    }
    out << "  central = " << s.central << "  forward = " << s.forward << "  backward = " << s.backward;
    if (s.events_plus >= 0)
      out << "  changed steps +t/-t = " << s.events_plus << "/" << s.events_minus
          << "  usable: " << to_string(s.usable());
    if (s.step == step && kind != FdKind::kStraddling) out << "  <- chosen (" << to_string(kind) << ")";
    if (!s.first_event.empty()) out << "\n    first change: " << s.first_event;
    out << "\n";
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

bool choose_fd_value(FdSweep& sweep) {
  // Central differences when any sample allows one, otherwise one-sided ones.
  std::vector<const FdSample*> picked;
  for (FdKind kind : {FdKind::kCentral, FdKind::kForward}) {
    picked.clear();
    for (const FdSample& s : sweep.samples) {
      if (!s.failure.empty()) continue;
      const FdKind u = s.usable();
      if (kind == FdKind::kCentral ? u == FdKind::kCentral : u == FdKind::kForward || u == FdKind::kBackward)
        picked.push_back(&s);
    }
    if (!picked.empty()) break;
  }
  if (picked.empty()) {
    sweep.kind = FdKind::kStraddling;
    sweep.derivative = 0.0;
    sweep.step = 0.0;
    return false;
  }
  // Plateau among the usable samples in sweep order: the consecutive pair whose values agree
  // best, taking its smaller step; a single usable sample is taken as it is.
  const FdSample* chosen = picked.front();
  double best = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k + 1 < picked.size(); ++k) {
    const FdSample& a = *picked[k];
    const FdSample& b = *picked[k + 1];
    const double change = std::abs(a.value(a.usable()) - b.value(b.usable()));
    if (change < best) {
      best = change;
      chosen = picked[k + 1];
    }
  }
  sweep.kind = chosen->usable();
  sweep.derivative = chosen->value(sweep.kind);
  sweep.step = chosen->step;
  return true;
}

FdCheck check_derivative(double analytic, const FdSweep& sweep, double floor, double central_tolerance) {
  FdCheck out;
  out.kind = sweep.kind;
  out.tolerance = fd_tolerance(sweep.kind, central_tolerance);
  if (sweep.kind == FdKind::kStraddling) {
    out.rel_error = std::numeric_limits<double>::infinity();
    out.pass = true;
    return out;
  }
  out.compared = true;
  out.rel_error = std::abs(analytic - sweep.derivative) / std::max(std::abs(sweep.derivative), std::max(floor, 1e-300));
  out.pass = out.rel_error <= out.tolerance;
  return out;
}

double fd_noise(const FdSweep& sweep, double phi) {
  if (sweep.kind == FdKind::kStraddling || !(sweep.step > 0.0)) return 0.0;
  // The plateau: the chosen quotient against its neighbours of the same kind (the closer one).
  double spread = 0.0;
  for (std::size_t i = 0; i < sweep.samples.size(); ++i) {
    const FdSample& s = sweep.samples[i];
    if (s.step != sweep.step || !s.failure.empty()) continue;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t n : {i - 1, i + 1}) {
      if (n >= sweep.samples.size()) continue;
      const FdSample& o = sweep.samples[n];
      if (!o.failure.empty() || o.usable() != sweep.kind) continue;
      best = std::min(best, std::abs(o.value(sweep.kind) - s.value(sweep.kind)));
    }
    if (std::isfinite(best)) spread = best;
  }
  // Round-off of one Φ (a sum over steps and terms) over the step.
  constexpr double kPhiRoundoff = 4.0;
  const double roundoff = kPhiRoundoff * std::numeric_limits<double>::epsilon() * std::abs(phi) / sweep.step;
  // The rollouts' own noise: second differences D(s) = (forward − backward) s of the samples
  // on the unperturbed branch on both sides, against the curvature trend Φ'' s² of the largest
  // such step; their largest departure at steps s ≤ t is δΦ, a noise of Φ differences.
  const FdSample* reference = nullptr;
  for (const FdSample& s : sweep.samples)
    if (s.failure.empty() && s.usable() == FdKind::kCentral && (!reference || s.step > reference->step))
      reference = &s;
  double phi_noise = 0.0;
  if (reference) {
    const double curvature = (reference->forward - reference->backward) / reference->step;
    for (const FdSample& s : sweep.samples) {
      if (!s.failure.empty() || s.usable() != FdKind::kCentral || s.step > sweep.step) continue;
      const double second = (s.forward - s.backward) * s.step;
      phi_noise = std::max(phi_noise, std::abs(second - curvature * s.step * s.step));
    }
  }
  return std::max({spread, roundoff, phi_noise / sweep.step});
}

double adjoint_direct_error(double adjoint, double direct, double g_norm) {
  const double scale = std::max({std::abs(adjoint), std::abs(direct), g_norm});
  return scale > 0.0 ? std::abs(adjoint - direct) / scale : 0.0;
}

FdSweep directional_derivative_fd_sweep_events(Simulator& sim, const ObjectiveFunction& objective, const VecX& p,
                                               const VecX& direction, std::span<const double> steps,
                                               const std::function<void(int done, int total)>& progress) {
  ADDSIM_CHECK(direction.size() == p.size(), "direction must have |p| entries");
  ADDSIM_CHECK(!steps.empty(), "a finite-difference sweep needs at least one step");
  const Model& model = sim.model();
  // Φ and the contact signature of one rollout; a failed rollout throws.
  const int rollouts = 1 + 2 * static_cast<int>(steps.size());
  int done = 0;
  auto rollout = [&](const VecX& at, ContactSignature& signature) {
    const Trajectory traj = sim.run(at);
    if (progress) progress(++done, rollouts);
    if (!traj.completed()) throw SimulationError("finite differences: " + traj.failure, traj.failed_step);
    signature = contact_signature(model, traj);
    return objective.evaluate(model, traj, nullptr);
  };
  FdSweep out;
  ContactSignature nominal, plus_sig, minus_sig;
  const double base = rollout(p, nominal);
  for (double t : steps) {
    FdSample sample;
    sample.step = t;
    try {
      const double plus = rollout(p + t * direction, plus_sig);
      const double minus = rollout(p - t * direction, minus_sig);
      sample.central = (plus - minus) / (2.0 * t);
      sample.forward = (plus - base) / t;
      sample.backward = (base - minus) / t;
      const SignatureDifference dp = compare(nominal, plus_sig), dm = compare(nominal, minus_sig);
      sample.events_plus = dp.steps;
      sample.events_minus = dm.steps;
      if (!dp.same()) sample.first_event = "+t " + dp.first;
      else if (!dm.same()) sample.first_event = "-t " + dm.first;
    } catch (const SimulationError& e) {
      sample.failure = e.what();
      // A failed + rollout skips the − one: count it as done.
      if (progress && done % 2 == 0) progress(++done, rollouts);
    }
    out.samples.push_back(sample);
  }
  const bool any_success = std::any_of(out.samples.begin(), out.samples.end(),
                                       [](const FdSample& s) { return s.failure.empty(); });
  if (!any_success)
    throw SimulationError("finite differences: every step of the sweep failed:\n" + out.report(), -1);
  choose_fd_value(out);
  return out;
}

namespace {
// Unit direction e_j and the sweep's relative steps scaled by max(1, |p_j|) (absolute steps).
void coordinate_sweep(const VecX& p, int j, std::span<const double> steps, VecX& e, std::vector<double>& absolute) {
  ADDSIM_CHECK(j >= 0 && j < p.size(), "parameter index out of range");
  e = VecX::Zero(p.size());
  e[j] = 1.0;
  const double scale = std::max(1.0, std::abs(p[j]));
  absolute.assign(steps.begin(), steps.end());
  for (double& t : absolute) t *= scale;
}
}  // namespace

FdSweep gradient_fd_sweep_events(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j,
                                 std::span<const double> steps,
                                 const std::function<void(int done, int total)>& progress) {
  VecX e;
  std::vector<double> absolute;
  coordinate_sweep(p, j, steps, e, absolute);
  return directional_derivative_fd_sweep_events(sim, objective, p, e, absolute, progress);
}

double gradient_fd(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j, double step) {
  ADDSIM_CHECK(j >= 0 && j < p.size(), "parameter index out of range");
  VecX e = VecX::Zero(p.size());
  e[j] = 1.0;
  return directional_derivative_fd(sim, objective, p, e, step * std::max(1.0, std::abs(p[j])));
}

FdSweep gradient_fd_sweep(Simulator& sim, const ObjectiveFunction& objective, const VecX& p, int j,
                          std::span<const double> steps) {
  VecX e;
  std::vector<double> absolute;
  coordinate_sweep(p, j, steps, e, absolute);
  return directional_derivative_fd_sweep(sim, objective, p, e, absolute);
}

}  // namespace addsim
