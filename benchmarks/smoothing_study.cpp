// Landscape and optimisation study of the contact models (docs/validation/optimization.md,
// "Why the landscape has kinks, and what smooths it"). Two modes:
//
//   smoothing_study line TASK OUT.csv PARAM FROM TO N [PATH=VALUE ...]
//     Φ and the adjoint dΦ/dPARAM at N equidistant values of the scalar parameter PARAM
//     (e.g. bodies.ball.velocity.0.0), all other parameters at the task's values; per sample
//     also the contact events of the run: Σ over steps of the points in contact and of the
//     points on the clamped (sliding) branch of the linear friction law. Samples run on two
//     threads.
//   smoothing_study bfgs TASK OUT.csv MAX_SIMS [PATH=VALUE ...]
//     A plain BFGS (inverse-Hessian update, Armijo backtracking, a failed simulation counts as
//     Φ = +∞) over the task's selected parameters from the task's start; one CSV row per
//     simulation (sims, Φ, √(2Φ), ‖∇Φ‖, the parameters). Stops at √(2Φ) < 1 mm, at MAX_SIMS,
//     or when the line search fails. A measuring tool, not the project's optimiser (src/addsim/optim).
//
// PATH=VALUE are overrides as for `addsim gradient --set` (e.g. contact.smoothing=0.002).
// Example: build/benchmarks/smoothing_study line tasks/ball_to_target.json out.csv
//            bodies.ball.velocity.0.0 1.5 2.5 101 contact.model=\"tanh\"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "addsim/io/task.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/solver/simulator.h"
#include "addsim/terms/contact_term.h"

using namespace addsim;

namespace {

struct Events {
  long contacts = 0;  // Σ_steps points with a contact force
  long clamped = 0;   // Σ_steps points on the clamped branch of eq. linPenT
};

// Contact events of a completed run: every point/proxy against every obstacle at every step.
Events count_events(const Model& model, const Trajectory& traj) {
  Events e;
  const TimeScheme& scheme = model.scheme();
  for (int i = 1; i < static_cast<int>(traj.q.size()); ++i) {
    const VecX v = traj.velocity(scheme, i), a = traj.acceleration(scheme, i);
    const TermContext ctx{traj.q[i], v, a, traj.p, i, scheme};
    for (const auto& t : model.terms()) {
      auto tally = [&](const ContactForce& f) {
        if (f.regime == ContactRegime::kSeparated) return;
        ++e.contacts;
        if (f.regime == ContactRegime::kSlip) ++e.clamped;
      };
      if (const auto* pc = dynamic_cast<const PointContactTerm*>(t.get())) {
        for (int o = 0; o < pc->num_obstacles(); ++o)
          for (int k = 0; k < pc->num_points(); ++k) tally(pc->force(ctx, k, o));
      } else if (const auto* rc = dynamic_cast<const RigidContactTerm*>(t.get())) {
        for (int o = 0; o < rc->num_obstacles(); ++o)
          for (int k = 0; k < rc->num_points(); ++k) tally(rc->force(ctx, k, o));
      }
    }
  }
  return e;
}

int line(const Task& task, const std::string& out, const std::string& param, double from, double to, int n) {
  const Model& model = *task.scene.model;
  const ParamRange r = model.params().require(param);
  if (r.size != 1) {
    std::fprintf(stderr, "%s names %d values; name one scalar\n", param.c_str(), r.size);
    return 2;
  }
  struct Sample {
    double x = 0, phi = NAN, dphi = NAN;
    Events e;
    bool ok = false;
  };
  std::vector<Sample> samples(n);
  std::atomic<int> next{0};
  auto worker = [&]() {
    Simulator sim(model, 1);
    for (int k = next++; k < n; k = next++) {
      Sample& s = samples[k];
      s.x = n > 1 ? from + (to - from) * k / (n - 1) : from;
      VecX p = task.p();
      p[r.offset] = s.x;
      try {
        const Trajectory traj = sim.run(p);
        if (!traj.completed()) continue;
        const GradientResult g = gradient_adjoint(model, traj, task.objective);
        s.phi = g.phi;
        s.dphi = g.dphi_dp[r.offset];
        s.e = count_events(model, traj);
        s.ok = true;
      } catch (const std::exception&) {
      }
    }
  };
  std::thread helper(worker);
  worker();
  helper.join();
  FILE* f = std::fopen(out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", out.c_str());
    return 2;
  }
  std::fprintf(f, "x,phi,dphi,contacts,clamped,completed\n");
  for (const Sample& s : samples)
    std::fprintf(f, "%.10g,%.17g,%.17g,%ld,%ld,%d\n", s.x, s.phi, s.dphi, s.e.contacts, s.e.clamped, s.ok ? 1 : 0);
  std::fclose(f);
  return 0;
}

int bfgs(const Task& task, const std::string& out, int max_sims) {
  const Model& model = *task.scene.model;
  const ParameterSelection& sel = task.selection;
  const int m = sel.size();
  Simulator sim(model);
  FILE* f = std::fopen(out.c_str(), "w");
  if (!f) return 2;
  std::fprintf(f, "sims,phi,distance,gradient_norm,accepted");
  for (const std::string& name : sel.names()) std::fprintf(f, ",%s", name.c_str());
  std::fprintf(f, "\n");
  int sims = 0;
  const VecX p0 = task.p();
  auto evaluate = [&](const VecX& x, VecX& grad) {
    ++sims;
    const VecX p = sel.scatter(p0, x);
    double phi = std::numeric_limits<double>::infinity();
    grad = VecX::Zero(m);
    try {
      const Trajectory traj = sim.run(p);
      if (traj.completed()) {
        const GradientResult g = gradient_adjoint(model, traj, task.objective);
        phi = g.phi;
        grad = sel.select(g.dphi_dp);
      }
    } catch (const std::exception&) {
    }
    return phi;
  };
  auto log = [&](double phi, const VecX& g, const VecX& x, bool accepted) {
    std::fprintf(f, "%d,%.17g,%.10g,%.10g,%d", sims, phi, std::sqrt(2.0 * phi), g.norm(), accepted ? 1 : 0);
    for (int k = 0; k < m; ++k) std::fprintf(f, ",%.12g", x[k]);
    std::fprintf(f, "\n");
    std::fflush(f);
  };
  VecX x = sel.gather(p0), g;
  double phi = evaluate(x, g);
  log(phi, g, x, true);
  if (!std::isfinite(phi)) {
    std::fprintf(stderr, "start failed\n");
    std::fclose(f);
    return 3;
  }
  Eigen::MatrixXd Hinv = Eigen::MatrixXd::Identity(m, m);
  bool scaled = false;
  const char* stop = "budget";
  while (sims < max_sims) {
    if (std::sqrt(2.0 * phi) < 1e-3) {
      stop = "within 1 mm";
      break;
    }
    VecX d = -Hinv * g;
    if (g.dot(d) >= 0.0) {  // not a descent direction: restart from steepest descent
      Hinv.setIdentity();
      scaled = false;
      d = -g;
    }
    // First step (or after a restart): at most 1 unit of the parameters.
    double t = scaled ? 1.0 : std::min(1.0, 1.0 / d.norm());
    VecX xn, gn;
    double phin = 0.0;
    bool accepted = false;
    while (sims < max_sims) {
      xn = x + t * d;
      phin = evaluate(xn, gn);
      accepted = std::isfinite(phin) && phin <= phi + 1e-4 * t * g.dot(d);
      log(phin, gn, xn, accepted);
      if (accepted) break;
      t *= 0.5;
      if (t < 1e-10) break;
    }
    if (!accepted) {
      stop = "line search failed";
      break;
    }
    const VecX s = xn - x, y = gn - g;
    const double ys = y.dot(s);
    if (ys > 1e-12 * s.norm() * y.norm()) {
      if (!scaled) {
        Hinv = Eigen::MatrixXd::Identity(m, m) * (ys / y.dot(y));
        scaled = true;
      }
      const double rho = 1.0 / ys;
      const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(m, m);
      Hinv = (I - rho * s * y.transpose()) * Hinv * (I - rho * y * s.transpose()) + rho * s * s.transpose();
    }
    x = xn, g = gn, phi = phin;
  }
  if (std::sqrt(2.0 * phi) < 1e-3) stop = "within 1 mm";
  std::fclose(f);
  std::printf("%s: %d simulations, Phi = %.6g, distance = %.6g m, stop: %s\n", task.name.c_str(), sims, phi,
              std::sqrt(2.0 * phi), stop);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: smoothing_study line TASK OUT.csv PARAM FROM TO N [PATH=VALUE ...]\n"
      "       smoothing_study bfgs TASK OUT.csv MAX_SIMS [PATH=VALUE ...]\n";
  if (argc < 5) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  const std::string mode = argv[1];
  try {
    if (mode == "line" && argc >= 8) {
      const std::vector<std::string> sets(argv + 8, argv + argc);
      const Task task = load_task_file(argv[2], sets);
      return line(task, argv[3], argv[4], std::atof(argv[5]), std::atof(argv[6]), std::atoi(argv[7]));
    }
    if (mode == "bfgs") {
      const std::vector<std::string> sets(argv + 5, argv + argc);
      const Task task = load_task_file(argv[2], sets);
      return bfgs(task, argv[3], std::atoi(argv[4]));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "smoothing_study: %s\n", e.what());
    return 2;
  }
  std::fputs(usage.c_str(), stderr);
  return 2;
}
