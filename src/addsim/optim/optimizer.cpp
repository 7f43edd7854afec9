#include "addsim/optim/optimizer.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/SparseCore>
#include <LBFGSB.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#include <optional>
#include <random>
#include <stdexcept>

#include <pagmo/algorithms/cmaes.hpp>
#include <pagmo/population.hpp>
#include <pagmo/problem.hpp>

#include "addsim/core/error.h"

namespace addsim {

const char* to_string(OptimizerMethod method) {
  switch (method) {
    case OptimizerMethod::kLbfgsb: return "lbfgsb";
    case OptimizerMethod::kGaussNewton: return "gauss_newton";
    case OptimizerMethod::kAdam: return "adam";
    case OptimizerMethod::kCmaes: return "cmaes";
  }
  return "?";
}

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kPhiRatio: return "phi_ratio";
    case StopReason::kGradient: return "gradient";
    case StopReason::kSimulationBudget: return "simulation_budget";
    case StopReason::kTimeBudget: return "time_budget";
    case StopReason::kLineSearch: return "line_search";
    case StopReason::kNoProgress: return "no_progress";
    case StopReason::kInitialFailure: return "initial_failure";
    case StopReason::kInterrupted: return "interrupted";
    case StopReason::kPhiChange: return "phi_change";
    case StopReason::kStall: return "stall";
    case StopReason::kPhiBelow: return "phi_below";
  }
  return "?";
}

bool reached_goal(StopReason reason) { return reason == StopReason::kPhiRatio || reason == StopReason::kPhiBelow; }

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Thrown inside a method to end the run; the tracker's best point is the result.
struct Stop {
  StopReason reason;
  std::string message;
};

// ‖P(x − g) − x‖₂: the gradient with the components that point out of an active bound removed.
double projected_gradient_norm(const VecX& x, const VecX& g, const VecX& lo, const VecX& hi) {
  return ((x - g).cwiseMax(lo).cwiseMin(hi) - x).norm();
}

// Wraps the problem for the methods: budgets, counters, the best point, callbacks.
class Tracker {
 public:
  Tracker(SimulationProblem& problem, const OptimizerOptions& options, const OptimizerCallbacks& callbacks,
          const OptimizerStart& start)
      : problem_(problem), options_(options), callbacks_(callbacks), start_(start),
        sims_at_start_(problem.simulations()), failures_at_start_(problem.failures()),
        t0_(std::chrono::steady_clock::now()), iteration_(start.iteration), phi0_(start.phi0) {}

  double elapsed() const {
    return start_.seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  long simulations() const { return start_.simulations + problem_.simulations() - sims_at_start_; }
  int iteration() const { return iteration_; }
  double phi0() const { return phi0_; }
  const VecX& x_best() const { return x_best_; }
  double phi_best() const { return phi_best_; }
  const VecX& gradient_best() const { return g_best_; }
  void count_restart() { ++restarts_; }

  // Throws Stop when a budget is spent (checked before every simulation).
  void check_budget() const {
    if (simulations() >= options_.max_simulations)
      throw Stop{StopReason::kSimulationBudget, "spent " + std::to_string(simulations()) + " simulations"};
    if (elapsed() >= options_.max_seconds) throw Stop{StopReason::kTimeBudget, "spent the time budget"};
    const long n = options_.stall_simulations, done = static_cast<long>(best_after_.size());
    if (n > 0 && done > n && best_after_[done - 1] * options_.stall_factor > best_after_[done - 1 - n])
      throw Stop{StopReason::kStall, "the last " + std::to_string(n) + " simulations lowered Phi by less than the stall factor"};
  }

  Evaluation evaluate(const VecX& x, bool gradient) {
    // Simulations are deterministic: a point evaluated last time (L-BFGS-B evaluates its
    // start again; a line search whose step fell below the round-off of x asks for the same
    // point) is answered from the cache instead of a new simulation.
    if (cached_ && cached_->x.size() == x.size() && cached_->x == x && (!gradient || cached_->gradient.size() > 0 ||
                                                                          cached_->failed))
      return *cached_;
    check_budget();
    Evaluation e = problem_.evaluate(x, gradient);
    record(e.x, e.phi, e.gradient, e.failed, e.failure);
    cached_ = e;
    return e;
  }

  // ρ at x, and dρ/dx only if Φ(x) < jacobian_below (Gauss–Newton: at the start, +∞, and at
  // the trial points it accepts, so a rejected trial costs one simulation and no sweep). The
  // Jacobian comes from the trajectory of the same run; a failing sweep fails the point.
  LeastSquaresEvaluation residuals(const VecX& x, double jacobian_below) {
    check_budget();
    LeastSquaresEvaluation e = problem_.evaluate_residuals(x, false);
    if (!e.failed && e.phi < jacobian_below) problem_.add_jacobian(e);
    VecX g;
    if (!e.failed && e.jacobian.size() > 0) g = e.jacobian.transpose() * e.residuals;
    record(e.x, e.phi, g, e.failed, e.failure);
    return e;
  }

  // Evaluates a batch of points (values only) concurrently, one thread per simulator slot,
  // then records them in order as if evaluated one after another. The batch is cut to the
  // remaining simulation budget (Stop if none is left).
  std::vector<Evaluation> evaluate_batch(const std::vector<VecX>& xs) {
    check_budget();
    const size_t n = std::min<size_t>(xs.size(), static_cast<size_t>(options_.max_simulations - simulations()));
    std::vector<Evaluation> out(n);
    const int threads = std::max(1, std::min(problem_.slots(), static_cast<int>(n)));
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&](int slot) {
      for (size_t k = next++; k < n; k = next++) {
        try {
          out[k] = problem_.evaluate(xs[k], false, slot);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
      }
    };
    std::vector<std::thread> helpers;
    for (int s = 1; s < threads; ++s) helpers.emplace_back(work, s);
    work(0);
    for (std::thread& h : helpers) h.join();
    if (error) std::rethrow_exception(error);
    for (const Evaluation& e : out) record(e.x, e.phi, e.gradient, e.failed, e.failure);
    return out;
  }

  // Ends an iteration: reports it, then checks the tolerances and the callback's answer.
  void end_iteration() {
    ++iteration_;
    IterationRecord r;
    r.iteration = iteration_;
    r.simulations = simulations();
    r.phi = phi_best_;
    r.phi0 = phi0_;
    if (g_best_.size() > 0) r.gradient_norm = g_best_.norm();
    r.x_best = x_best_;
    r.elapsed = elapsed();
    if (callbacks_.on_iteration && !callbacks_.on_iteration(r))
      throw Stop{StopReason::kInterrupted, "stopped by the caller"};
    check_tolerances();
    // Relative decrease of the best Φ over this iteration (Gauss–Newton and L-BFGS-B, whose
    // every iteration is an accepted descent step).
    const double previous = std::isnan(phi_last_iteration_) ? phi0_ : phi_last_iteration_;
    phi_last_iteration_ = phi_best_;
    if (options_.phi_change_tolerance > 0.0 &&
        (options_.method == OptimizerMethod::kGaussNewton || options_.method == OptimizerMethod::kLbfgsb) &&
        previous - phi_best_ <= options_.phi_change_tolerance * previous)
      throw Stop{StopReason::kPhiChange, "an iteration lowered Phi by less than the phi_change tolerance"};
  }

  // Φ/Φ₀ and the projected gradient at the best point.
  void check_tolerances() const {
    if (options_.phi_ratio_tolerance > 0.0 && phi_best_ <= options_.phi_ratio_tolerance * phi0_)
      throw Stop{StopReason::kPhiRatio, "reached the Phi/Phi0 tolerance"};
    if (options_.phi_below > 0.0 && phi_best_ <= options_.phi_below)
      throw Stop{StopReason::kPhiBelow, "reached Phi <= phi_below"};
    if (options_.gradient_tolerance > 0.0 && g_best_.size() > 0 &&
        projected_gradient_norm(x_best_, g_best_, problem_.lower(), problem_.upper()) <= options_.gradient_tolerance)
      throw Stop{StopReason::kGradient, "reached the gradient tolerance"};
  }

  OptimizationResult result(StopReason reason, std::string message) const {
    OptimizationResult r;
    r.x_best = x_best_;
    r.values_best = x_best_.size() > 0 ? problem_.values(x_best_) : VecX();
    r.phi_best = phi_best_;
    r.phi0 = phi0_;
    r.gradient_best = g_best_;
    r.simulations = simulations();
    r.failed_simulations = problem_.failures() - failures_at_start_;
    r.iterations = iteration_;
    r.seconds = elapsed();
    r.reason = reason;
    r.message = std::move(message);
    r.restarts = restarts_;
    return r;
  }

 private:
  void record(const VecX& x, double phi, const VecX& g, bool failed, const std::string& failure) {
    if (std::isnan(phi0_)) phi0_ = phi;
    if (!failed && (phi < phi_best_ || x_best_.size() == 0 || (phi == phi_best_ && g.size() > 0))) {
      phi_best_ = phi;
      x_best_ = x;
      g_best_ = g;
    }
    if (x_best_.size() == 0) x_best_ = x;
    best_after_.push_back(phi_best_);
    if (callbacks_.on_evaluation) {
      EvaluationRecord r;
      r.iteration = iteration_;
      r.simulations = simulations();
      r.phi = phi;
      if (g.size() > 0) r.gradient_norm = g.norm();
      r.x = x;
      r.values = problem_.values(x);
      r.failed = failed;
      r.failure = failure;
      r.elapsed = elapsed();
      callbacks_.on_evaluation(r);
    }
  }

  SimulationProblem& problem_;
  const OptimizerOptions& options_;
  const OptimizerCallbacks& callbacks_;
  OptimizerStart start_;
  long sims_at_start_, failures_at_start_;
  std::chrono::steady_clock::time_point t0_;
  int iteration_;
  double phi0_;
  VecX x_best_, g_best_;
  double phi_best_ = kInf;
  std::vector<double> best_after_;  ///< best Φ after each simulation of this run (stall test)
  double phi_last_iteration_ = std::numeric_limits<double>::quiet_NaN();  ///< best Φ at the last iteration's end
  std::optional<Evaluation> cached_;
  int restarts_ = 0;
};

// ---------------------------------------------------------------------------------------
// L-BFGS-B (LBFGS++): the objective functor and a line search that treats Φ = +∞ as a
// failed trial. LBFGS++'s Moré–Thuente search interpolates with the trial values, which is
// meaningless for +∞; on the first failed trial this search backtracks instead (halving the
// step from the failed one, Armijo condition), and after every accepted step it ends one
// iteration of the tracker (LBFGS++ has no iteration hook of its own).

struct FailedTrial {
  double step;
};

// Thrown by the line search before its first trial when the restart rule fires
// (OptimizerOptions::lbfgs_restart_iterations); run_lbfgsb restarts LBFGS++ from the best point.
struct RestartLbfgs {};

struct LbfgsObjective {
  Tracker* tracker;
  double first_step = 0.0;  ///< OptimizerOptions::lbfgs_first_step
  bool first_step_phi = false;  ///< OptimizerOptions::lbfgs_first_step_phi
  long restart_iterations = 0;  ///< OptimizerOptions::lbfgs_restart_iterations
  double restart_factor = 2.0;  ///< OptimizerOptions::lbfgs_restart_factor
  bool weak_wolfe = false;      ///< OptimizerOptions::lbfgs_line_search == kWeakWolfe
  bool first_search = true;
  /// The best Φ at the start of each line search since the current (re)start.
  std::vector<double> best_at_search = {};
  /// The best point at a restart, answered without a simulation when LBFGS++ evaluates its start.
  std::optional<Evaluation> restart_point = std::nullopt;
  // The restart rule, at the start of a line search: the last restart_iterations iterations
  // since the current (re)start lowered the best Φ by less than restart_factor.
  bool restart_due() {
    if (restart_iterations <= 0) return false;
    best_at_search.push_back(tracker->phi_best());
    const long n = static_cast<long>(best_at_search.size());
    return n > restart_iterations && best_at_search[n - 1] * restart_factor > best_at_search[n - 1 - restart_iterations];
  }
  // Ends an iteration of the tracker at its accepted point x (the line search started at xp).
  // An accepted point equal to the start (the step vanished in x's round-off, e.g. at Φ ≈ 0,
  // where every trial along the direction rounds to the same Φ) leaves LBFGS++'s memory as it
  // was (it skips the pair s = 0), so every later iteration would replay the same trials
  // until the budget ends: the run stops there as converged. With the restart rule on, the
  // rule decides instead (a restart empties the memory).
  void accept(const VecX& x, const VecX& xp) {
    tracker->end_iteration();
    if (restart_iterations <= 0 && x == xp)
      throw Stop{StopReason::kNoProgress,
                 "L-BFGS-B converged: the line search returned to its start (no step along the search direction "
                 "changes x or lowers Phi)"};
  }
  double operator()(const VecX& x, VecX& grad) {
    if (restart_point && restart_point->x == x) {
      grad = restart_point->gradient;
      const double phi = restart_point->phi;
      restart_point.reset();
      return phi;
    }
    restart_point.reset();
    const Evaluation e = tracker->evaluate(x, true);
    if (e.failed) {
      grad.setZero();
      return kInf;
    }
    grad = e.gradient;
    return e.phi;
  }
};

template <typename Scalar>
class GuardedLineSearch {
 public:
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  template <typename Param>
  static void LineSearch(LbfgsObjective& f, Scalar& fx, Vector& x, Vector& grad, Scalar& step, Scalar step_max,
                         const Vector& drt, const Vector& xp, const Param& param) {
    // The restart rule is checked between iterations only: a line search is never cut.
    if (f.restart_due()) throw RestartLbfgs{};
    // LBFGS++ starts every line search at step 1; the first direction is normalised, so that
    // is a unit step in x unless lbfgs_first_step caps it.
    if (f.first_search && f.first_step > 0.0) step = std::min(step, static_cast<Scalar>(f.first_step / drt.norm()));
    // lbfgs_first_step_phi: at most Φ/‖∇Φ‖ long (the linear model's zero along −∇Φ).
    if (f.first_search && f.first_step_phi && std::isfinite(fx) && grad.norm() > 0.0)
      step = std::min(step, static_cast<Scalar>(fx / grad.norm() / drt.norm()));
    f.first_search = false;
    const Scalar fx_init = fx;
    const Scalar dg_init = grad.dot(drt);
    const Vector grad_init = grad;
    if (f.weak_wolfe) {
      weak_wolfe(f, fx, x, grad, step, step_max, drt, xp, param, fx_init, dg_init, grad_init);
      return;
    }
    // Moré–Thuente on a functor that throws at the first failed simulation.
    auto guarded = [&](const Vector& xt, Vector& g) {
      const Scalar v = f(xt, g);
      if (!std::isfinite(v)) throw FailedTrial{(xt - xp).dot(drt) / drt.squaredNorm()};
      return v;
    };
    try {
      LBFGSpp::LineSearchMoreThuente<Scalar>::LineSearch(guarded, fx, x, grad, step, step_max, drt, xp, param);
      f.accept(x, xp);
      return;
    } catch (const FailedTrial& failed) {
      step = failed.step;
    } catch (const std::runtime_error&) {
      // Moré–Thuente ran out of trials (typically still extrapolating along a direction
      // whose quasi-Newton length is far too short); its last trial is kept when it
      // satisfies the sufficient-decrease condition, as any backtracking search would.
      if (std::isfinite(fx) && fx <= fx_init + param.ftol * step * dg_init) {
        f.accept(x, xp);
        return;
      }
      throw;
    }
    // Backtracking from the failed step: Armijo decrease with a finite Φ.
    for (int k = 0; k < param.max_linesearch; ++k) {
      step *= 0.5;
      if (step < param.min_step) break;
      x.noalias() = xp + step * drt;
      fx = f(x, grad);
      if (std::isfinite(fx) && fx <= fx_init + param.ftol * step * dg_init) {
        f.accept(x, xp);
        return;
      }
    }
    x = xp;
    fx = fx_init;
    grad = grad_init;
    throw std::runtime_error("no step along the search direction gives a completed simulation with a decrease");
  }

 private:
  // The weak Wolfe conditions by bisection and doubling [Lewis and Overton 2013, §4.2]:
  // accept the first trial with Φ ≤ Φ₀ + ftol·t·g₀ᵀd (sufficient decrease) and gᵀd ≥
  // wolfe·g₀ᵀd (the slope has risen enough); a trial without the decrease (or a failed
  // simulation) is an upper end, one without the rise a lower end; the next trial is their
  // midpoint, or twice the step (at most step_max) while no upper end is known. Unlike
  // Moré–Thuente's strong conditions (|gᵀd| ≤ wolfe·|g₀ᵀd|), a trial past a shallow local
  // minimum along d where Φ is still lower is accepted, so the step is not drawn into the
  // ripples of a rippled Φ. Out of trials, the last trial with the decrease is taken.
  template <typename Param>
  static void weak_wolfe(LbfgsObjective& f, Scalar& fx, Vector& x, Vector& grad, Scalar& step, Scalar step_max,
                         const Vector& drt, const Vector& xp, const Param& param, Scalar fx_init, Scalar dg_init,
                         const Vector& grad_init) {
    if (!(dg_init < 0.0)) throw std::logic_error("the moving direction does not decrease the objective function value");
    Scalar lo = 0.0, hi = std::numeric_limits<Scalar>::infinity();
    Scalar fx_lo = fx_init;
    Vector grad_lo = grad_init;
    for (int k = 0; k < param.max_linesearch; ++k) {
      if (step < param.min_step) break;
      x.noalias() = xp + step * drt;
      fx = f(x, grad);
      if (!std::isfinite(fx) || fx > fx_init + param.ftol * step * dg_init) {
        hi = step;
      } else if (grad.dot(drt) < param.wolfe * dg_init && step < step_max) {
        lo = step;
        fx_lo = fx;
        grad_lo = grad;
      } else {
        f.accept(x, xp);
        return;
      }
      step = std::isfinite(hi) ? 0.5 * (lo + hi) : std::min(2.0 * step, step_max);
    }
    if (lo > 0.0) {
      step = lo;
      x.noalias() = xp + lo * drt;
      fx = fx_lo;
      grad = grad_lo;
      f.accept(x, xp);
      return;
    }
    x = xp;
    fx = fx_init;
    grad = grad_init;
    throw std::runtime_error("the weak Wolfe line search found no step with a sufficient decrease");
  }
};

void run_lbfgsb(SimulationProblem& problem, Tracker& t, const VecX& x0, const OptimizerOptions& o) {
  LBFGSpp::LBFGSBParam<double> param;
  param.m = o.lbfgs_memory;
  param.epsilon = o.gradient_tolerance;
  param.epsilon_rel = 0.0;
  param.past = 0;
  param.max_iterations = 0;
  param.max_linesearch = o.lbfgs_max_linesearch;
  LBFGSpp::LBFGSBSolver<double, GuardedLineSearch> solver(param);
  LbfgsObjective f{&t, o.lbfgs_first_step, o.lbfgs_first_step_phi, o.lbfgs_restart_iterations, o.lbfgs_restart_factor,
                   o.lbfgs_line_search == LbfgsLineSearch::kWeakWolfe};
  VecX x = x0;
  double fx = 0.0;
  // With the restart rule, a restart (also after a failed line search, if the best Φ fell since
  // the last restart) begins LBFGS++ again from the best point with an empty memory and the
  // first-trial caps of a fresh run; its start is answered from the best evaluation.
  auto restart = [&] {
    if (t.gradient_best().size() != t.x_best().size())
      throw Stop{StopReason::kNoProgress, "no gradient at the best point to restart L-BFGS-B from"};
    x = t.x_best();
    Evaluation best;
    best.x = x;
    best.phi = t.phi_best();
    best.gradient = t.gradient_best();
    f.restart_point = std::move(best);
    f.first_search = true;
    f.best_at_search.clear();
    t.count_restart();
  };
  for (;;) {
    const double best_at_start = t.phi_best();
    try {
      solver.minimize(f, x, fx, problem.lower(), problem.upper());
      break;
    } catch (const RestartLbfgs&) {
      restart();
    } catch (const std::logic_error& e) {
      if (f.restart_iterations <= 0 || !(t.phi_best() < best_at_start)) throw Stop{StopReason::kLineSearch, e.what()};
      restart();
    } catch (const std::runtime_error& e) {
      if (f.restart_iterations <= 0 || !(t.phi_best() < best_at_start)) throw Stop{StopReason::kLineSearch, e.what()};
      restart();
    }
  }
  // LBFGS++ returns when its projected-gradient test passes.
  throw Stop{StopReason::kGradient, "LBFGS++ converged (projected gradient)"};
}

// ---------------------------------------------------------------------------------------
// Gauss–Newton / Levenberg–Marquardt with bounds by projection: (JᵀJ + λ D) δ = −Jᵀρ with
// D = diag(JᵀJ) (Marquardt's scaling); a step that lowers Φ is taken and λ shrinks by 3,
// otherwise (also for a failed simulation) λ grows by 4 from the same point, or with
// lm_step_shrink (from the lm_shrink_after-th rejection in a row on) further until the scaled
// step is that fraction of the rejected one (lm_damping_after_rejection). The Jacobian
// (direct sweep) is computed at the start and at taken steps only: a rejected trial costs
// one simulation.

// JᵀJ for a residual Jacobian J (|ρ| × |x|) whose rows are partly sparse: per-step
// regularisers (control_smoothness: two entries per row) next to a few dense rows of
// tracking residuals. The sparse rows' product is formed as a sparse product and the dense
// rows' by a symmetric rank update, so the cost follows the dense rows: cube drag (372 rows,
// 12 dense, 360 columns) 1.6 M instead of 48 M multiply–adds.
MatX normal_matrix(const MatX& J) {
  const Eigen::Index rows = J.rows(), n = J.cols();
  // A row with at most this many non-zeros is sparse (a few per-step controls).
  const Eigen::Index sparse_limit = std::max<Eigen::Index>(8, n / 16);
  std::vector<Eigen::Index> dense_rows;
  std::vector<Eigen::Triplet<double>> sparse_entries;
  Eigen::Index sparse_count = 0;
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Eigen::Index nnz = (J.row(r).array() != 0.0).count();
    if (nnz > sparse_limit) {
      dense_rows.push_back(r);
      continue;
    }
    for (Eigen::Index c = 0; c < n; ++c)
      if (J(r, c) != 0.0) sparse_entries.emplace_back(sparse_count, c, J(r, c));
    ++sparse_count;
  }
  MatX A = MatX::Zero(n, n);
  if (!dense_rows.empty()) {
    MatX Jd(static_cast<Eigen::Index>(dense_rows.size()), n);
    for (size_t k = 0; k < dense_rows.size(); ++k) Jd.row(static_cast<Eigen::Index>(k)) = J.row(dense_rows[k]);
    A.selfadjointView<Eigen::Lower>().rankUpdate(Jd.transpose());
    A.triangularView<Eigen::StrictlyUpper>() = A.transpose();
  }
  if (sparse_count > 0) {
    Eigen::SparseMatrix<double> Js(sparse_count, n);
    Js.setFromTriplets(sparse_entries.begin(), sparse_entries.end());
    const Eigen::SparseMatrix<double> JtJ = Js.transpose() * Js;
    for (Eigen::Index c = 0; c < JtJ.outerSize(); ++c)
      for (Eigen::SparseMatrix<double>::InnerIterator it(JtJ, c); it; ++it) A(it.row(), it.col()) += it.value();
  }
  return A;
}

// δ = −M⁻¹ g for the damped normal matrix M (symmetric, positive semi-definite plus the
// regularisers): Cholesky (blocked) first, LDLᵀ if round-off leaves M indefinite.
VecX solve_normal_equations(const MatX& M, const VecX& g) {
  Eigen::LLT<MatX> llt(M);
  if (llt.info() == Eigen::Success) return llt.solve(-g);
  return M.ldlt().solve(-g);
}

void run_gauss_newton(SimulationProblem& problem, Tracker& t, const VecX& x0, const OptimizerOptions& o) {
  LeastSquaresEvaluation cur = t.residuals(x0, kInf);
  if (cur.failed) throw Stop{StopReason::kInitialFailure, "the simulation at the start failed: " + cur.failure};
  double lambda = o.lm_damping;
  int rejected_in_row = 0;  // rejected trials since the last accepted step (lm_shrink_after)
  // λ beyond this makes the step smaller than round-off of x: nothing left to try.
  constexpr double kMaxDamping = 1e16;
  for (;;) {
    const VecX g = cur.jacobian.transpose() * cur.residuals;
    const MatX A = normal_matrix(cur.jacobian);
    // Columns without influence keep a unit scale so that the damped system stays regular.
    VecX D = A.diagonal();
    const double dmax = D.maxCoeff();
    for (Eigen::Index k = 0; k < D.size(); ++k)
      if (!(D[k] > 1e-14 * dmax)) D[k] = dmax > 0.0 ? 1e-14 * dmax : 1.0;
    // lm_scale_floor τ: no column's scale below τ·max (τ = 1: Levenberg's D = const · I).
    if (o.lm_scale_floor > 0.0)
      for (Eigen::Index k = 0; k < D.size(); ++k) D[k] = std::max(D[k], o.lm_scale_floor * dmax);
    for (;;) {
      MatX M = A;
      M.diagonal() += lambda * D;
      // A regulariser so that plain Gauss–Newton (λ = 0) still solves a rank-deficient JᵀJ.
      M.diagonal() += 1e-14 * D;
      const VecX delta = solve_normal_equations(M, g);
      const VecX x_new = problem.project(cur.x + delta);
      if ((x_new - cur.x).norm() <= 1e-15 * (1.0 + cur.x.norm()))
        throw Stop{StopReason::kNoProgress, "the Gauss-Newton step is below round-off"};
      // Decrease the linear model predicts for the projected step: below the round-off of Φ
      // the point is stationary (a minimum, possibly a local one).
      const VecX step = x_new - cur.x;
      const double predicted = -(g.dot(step) + 0.5 * step.dot(A * step));
      if (predicted <= 1e-15 * cur.phi)
        throw Stop{StopReason::kNoProgress, "Gauss-Newton reached a stationary point (predicted decrease below round-off)"};
      // The Jacobian only if the step is taken (Φ lowered).
      LeastSquaresEvaluation next = t.residuals(x_new, cur.phi);
      if (!next.failed && next.phi < cur.phi) {
        cur = std::move(next);
        lambda = lambda / 3.0;
        if (lambda < 1e-12) lambda = 0.0;
        rejected_in_row = 0;
        t.end_iteration();
        break;
      }
      ++rejected_in_row;
      lambda = lm_damping_after_rejection(A, D, g, lambda, rejected_in_row >= o.lm_shrink_after ? o.lm_step_shrink : 0.0);
      if (lambda > kMaxDamping) throw Stop{StopReason::kNoProgress, "Levenberg-Marquardt damping overflow"};
    }
  }
}

}  // namespace

double lm_damping_after_rejection(const MatX& A, const VecX& D, const VecX& g, double lambda, double shrink) {
  const double grown = lambda > 0.0 ? 4.0 * lambda : 1e-6;
  if (!(shrink > 0.0)) return grown;
  // Scaled problem: S = D^-½ A D^-½ with eigenpairs (σ_k, u_k), ĝ = D^-½ g; the scaled step
  // D^½ δ(μ) = −Σ_k c_k u_k / (σ_k + μ + 1e-14), c = Uᵀ ĝ.
  const VecX s = D.cwiseSqrt().cwiseInverse();
  const MatX S = s.asDiagonal() * A * s.asDiagonal();
  const Eigen::SelfAdjointEigenSolver<MatX> eig(S);
  const VecX sigma = eig.eigenvalues();
  const VecX c2 = (eig.eigenvectors().transpose() * s.cwiseProduct(g)).cwiseAbs2();
  auto length2 = [&](double mu) {
    double sum = 0.0;
    for (Eigen::Index k = 0; k < sigma.size(); ++k) {
      const double d = std::max(sigma[k], 0.0) + mu + 1e-14;
      sum += c2[k] / (d * d);
    }
    return sum;
  };
  const double target2 = shrink * shrink * length2(lambda);
  if (!(target2 > 0.0) || length2(grown) <= target2) return grown;
  // length2 ≤ ‖c‖²/μ² bounds the bracket's upper end.
  double lo = grown, hi = std::max(grown, std::sqrt(c2.sum() / target2));
  while (length2(hi) > target2) hi *= 2.0;
  while (hi > lo * (1.0 + 1e-6)) {
    const double mid = std::sqrt(lo * hi);
    (length2(mid) > target2 ? lo : hi) = mid;
  }
  return hi;
}

namespace {

// ---------------------------------------------------------------------------------------
// ADAM [Kingma and Ba 2015] with bounds by projection; a failed simulation returns to the
// last completed point with half the learning rate.

void run_adam(SimulationProblem& problem, Tracker& t, const VecX& x0, const OptimizerOptions& o) {
  const Eigen::Index n = x0.size();
  VecX m = VecX::Zero(n), v = VecX::Zero(n);
  VecX x = x0, x_good = x0;
  double lr = o.adam_learning_rate;
  int k = 0;
  bool first = true;
  for (;;) {
    const Evaluation e = t.evaluate(x, true);
    if (e.failed) {
      if (first) throw Stop{StopReason::kInitialFailure, "the simulation at the start failed: " + e.failure};
      x = x_good;
      lr *= 0.5;
      continue;
    }
    if (!first) t.end_iteration();
    first = false;
    ++k;
    m = o.adam_beta1 * m + (1.0 - o.adam_beta1) * e.gradient;
    v = o.adam_beta2 * v + (1.0 - o.adam_beta2) * e.gradient.cwiseAbs2();
    const VecX m_hat = m / (1.0 - std::pow(o.adam_beta1, k));
    const VecX v_hat = v / (1.0 - std::pow(o.adam_beta2, k));
    x_good = x;
    x = problem.project(x - lr * (m_hat.array() / (v_hat.array().sqrt() + o.adam_epsilon)).matrix());
    lr *= o.adam_decay;
  }
}

// ---------------------------------------------------------------------------------------
// CMA-ES (pagmo::cmaes), one generation per evolve() call with its memory kept.

// pagmo's CMA-ES starts with per-coordinate standard deviations σ₀·(box width) and needs
// finite bounds. It therefore works on z = (x − x0)/σ in the uniform box [−R, R] (σ₀ = 1/2R:
// a unit standard deviation in z, σ in x, for every coordinate), and each sample is
// projected onto the problem's bounds before it is simulated (repair by projection), so
// every simulated point is feasible and the best point is one of them.
//
// pagmo 2.18's cmaes evaluates its population one individual after another and has no
// batch evaluator. Its samples of a generation are drawn before any of them is evaluated,
// from its random engine and its memory only, so a copy of the algorithm replaying the
// generation on a recording problem (fitness 0) yields exactly the points the real
// generation will ask for. Those are simulated in parallel, one Simulator per thread,
// and the real generation then reads their values from the cache.
constexpr double kCmaesBox = 1e3;

struct CmaesShared {
  bool recording = false;
  std::vector<pagmo::vector_double> requested;   // recording: the generation's samples
  std::map<pagmo::vector_double, double> cache;  // their Φ, filled between the two passes
};

struct PagmoProblem {
  Tracker* tracker = nullptr;
  const SimulationProblem* problem = nullptr;
  CmaesShared* shared = nullptr;
  VecX x0;
  double sigma = 1.0;
  int n = 0;
  VecX to_x(const pagmo::vector_double& z) const {
    return problem->project(x0 + sigma * Eigen::Map<const VecX>(z.data(), n));
  }
  pagmo::vector_double fitness(const pagmo::vector_double& z) const {
    if (shared->recording) {
      shared->requested.push_back(z);
      return {0.0};
    }
    if (auto it = shared->cache.find(z); it != shared->cache.end()) return {it->second};
    // pagmo ranks by value; +∞ is a valid "worst" fitness.
    return {tracker->evaluate(to_x(z), false).phi};
  }
  std::pair<pagmo::vector_double, pagmo::vector_double> get_bounds() const {
    return {pagmo::vector_double(n, -kCmaesBox), pagmo::vector_double(n, kCmaesBox)};
  }
};

void run_cmaes(SimulationProblem& problem, Tracker& t, const VecX& x0, const OptimizerOptions& o) {
  if (!(o.cmaes_sigma > 0.0)) throw InputError("optimizer: cmaes sigma must be positive");
  const Evaluation e0 = t.evaluate(x0, false);
  if (e0.failed) throw Stop{StopReason::kInitialFailure, "the simulation at the start failed: " + e0.failure};
  CmaesShared shared;
  PagmoProblem udp;
  udp.tracker = &t;
  udp.problem = &problem;
  udp.shared = &shared;
  udp.x0 = x0;
  udp.sigma = o.cmaes_sigma;
  udp.n = static_cast<int>(x0.size());
  pagmo::problem prob(udp);
  const int lambda = o.cmaes_population > 0 ? o.cmaes_population
                                            : std::max(5, 4 + static_cast<int>(std::floor(3.0 * std::log(udp.n))));
  // The initial population: λ copies of the start (z = 0) with its known Φ (no extra
  // simulations); the first generation then samples N(x0, σ² I).
  pagmo::population pop(prob, 0u, o.cmaes_seed);
  for (int k = 0; k < lambda; ++k) pop.push_back(pagmo::vector_double(udp.n, 0.0), {e0.phi});
  // One generation per call with memory; pagmo's own ftol/xtol exits are disabled (0), the
  // tracker's budgets and tolerances end the run.
  pagmo::cmaes algo(1u, -1, -1, -1, -1, 0.5 / kCmaesBox, 0.0, 0.0, true, true, o.cmaes_seed);
  for (;;) {
    t.check_budget();
    const long before = t.simulations();
    if (problem.slots() > 1) {
      // Replay the generation on copies to learn its samples, then simulate them in parallel.
      shared.requested.clear();
      shared.cache.clear();
      shared.recording = true;
      pagmo::cmaes replay = algo;
      pagmo::population dry = pop;
      try {
        replay.evolve(dry);
      } catch (...) {
        shared.recording = false;
        throw;
      }
      shared.recording = false;
      std::vector<VecX> xs;
      for (const auto& z : shared.requested) xs.push_back(udp.to_x(z));
      const std::vector<Evaluation> es = t.evaluate_batch(xs);
      for (size_t k = 0; k < es.size(); ++k) shared.cache[shared.requested[k]] = es[k].phi;
    }
    pop = algo.evolve(pop);
    if (t.simulations() == before) throw Stop{StopReason::kNoProgress, "CMA-ES converged (its step size vanished)"};
    t.end_iteration();
  }
}

}  // namespace

OptimizationResult minimize(SimulationProblem& problem, const VecX& x0_in, const OptimizerOptions& options,
                            const OptimizerCallbacks& callbacks, const OptimizerStart& start) {
  if (options.max_simulations <= 0) throw InputError("optimizer: the simulation budget must be positive");
  if (!(options.max_seconds > 0.0)) throw InputError("optimizer: the time budget must be positive");
  if (x0_in.size() != problem.size())
    throw InputError("optimizer: x0 has " + std::to_string(x0_in.size()) + " entries for " +
                     std::to_string(problem.size()) + " parameters");
  if (options.method == OptimizerMethod::kGaussNewton && !problem.least_squares()) {
    const int bad = problem.objective().first_non_least_squares_term();
    throw InputError("optimizer: gauss_newton needs a sum-of-squares objective; term " + std::to_string(bad) + " (" +
                     std::string(problem.objective().term(bad).name()) + ") is not one");
  }
  const VecX x0 = problem.project(x0_in);
  Tracker t(problem, options, callbacks, start);
  try {
    switch (options.method) {
      case OptimizerMethod::kLbfgsb: {
        const Evaluation e0 = t.evaluate(x0, true);
        if (e0.failed) throw Stop{StopReason::kInitialFailure, "the simulation at the start failed: " + e0.failure};
        t.check_tolerances();
        run_lbfgsb(problem, t, x0, options);
        break;
      }
      case OptimizerMethod::kGaussNewton:
        problem.set_jacobian_mode(options.gn_jacobian);
        run_gauss_newton(problem, t, x0, options);
        break;
      case OptimizerMethod::kAdam: run_adam(problem, t, x0, options); break;
      case OptimizerMethod::kCmaes: run_cmaes(problem, t, x0, options); break;
    }
  } catch (const Stop& s) {
    return t.result(s.reason, s.message);
  }
  return t.result(StopReason::kNoProgress, "the method returned");
}

}  // namespace addsim
