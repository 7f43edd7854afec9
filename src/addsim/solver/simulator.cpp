#include "addsim/solver/simulator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "addsim/core/error.h"
#include "addsim/solver/contact_correction.h"
#include "addsim/solver/hybrid_contact.h"
#include "addsim/solver/initial_acceleration.h"
#include "addsim/solver/newton_step.h"
#include "addsim/solver/sqp_solver.h"
#include "addsim/solver/step_common.h"
#include "addsim/terms/spring_term.h"

namespace addsim {

namespace {
using namespace step;
// Absolute linear-solve tolerance of a Newton direction, as a fraction of the Newton tolerance.
constexpr double kLinearToleranceFraction = 1e-3;
// Inexact-Newton forcing (see solve_step): fraction of the predicted next ‖r‖, the cap
// relative to ‖r‖, and how far above the tolerance an iterate must be to estimate C.
constexpr double kForcing = 0.1;
constexpr double kMaxForcing = 1e-2;
constexpr double kWellResolved = 1e3;
// A full step is expected to converge when C ‖r‖² is below this fraction of the tolerance.
constexpr double kSureConvergence = 0.1;
// Two threads: the Newton iteration of a step whose Jacobian the helper factorises ahead.
// The second one's is closer to the step's converged Jacobian than the first one's, taken
// at the extrapolated guess (tori drop, adopting at the next step: 0.42 instead of 0.44
// foreground factorisations per step, 4 % less wall time; docs/solver.md); steps that
// converge in one iteration submit none.
constexpr int kBackgroundIteration = 2;
// A step whose bodies are all within their relative tolerance or their own round-off floor
// counts as converged on the tolerance while ‖r‖ < this × tolerance (docs/solver.md,
// "Acceptance"): a rigid body spinning at |θ| ≈ π with h = 1e-3 has its floor at 1.8e-10 N m.
constexpr double kSilentFloorFactor = 1e3;
// Fallback initial guesses q^{i-1} + α h v^{i-1} when both extrapolations are inadmissible,
// in the order tried (docs/solver.md, "Initial guess"); α = 0 is the previous state.
constexpr double kFallbackGuessScales[] = {0.5, 0.25, 0.125, 0.0};
// An exact Newton direction whose line search needed this many halvings (or found no
// decrease) is compared with the clamped-spring direction (docs/solver.md, "Compressed springs").
constexpr int kClampedRetryHalvings = 4;
}  // namespace

const char* to_string(StepAcceptance a) {
  switch (a) {
    case StepAcceptance::kTolerance: return "tolerance";
    case StepAcceptance::kRoundoffFloor: return "roundoff_floor";
    case StepAcceptance::kTinyStep: return "tiny_step";
  }
  return "?";
}

int Trajectory::output_of(int j) const {
  if (!substepped()) return j;
  const auto it = std::lower_bound(output_index.begin(), output_index.end(), j);
  return it != output_index.end() && *it == j ? static_cast<int>(it - output_index.begin()) : -1;
}

void Trajectory::internal_rates(const TimeScheme& s, int j, VecX& v, VecX& a) const {
  VecX v_hist, a_hist;
  bdf_history_terms(s, history(), j, v_hist, a_hist);
  bdf_rates(s, j, state(j), v_hist, a_hist, v, a);
}

VecX Trajectory::velocity(const TimeScheme& s, int i) const {
  if (i == 0) return v0;
  VecX v, a;
  internal_rates(scheme(s), substepped() ? output_index[i] : i, v, a);
  return v;
}

VecX Trajectory::acceleration(const TimeScheme& s, int i) const {
  VecX v, a;
  internal_rates(scheme(s), substepped() ? output_index[i] : i, v, a);
  return a;
}

Simulator::Simulator(const Model& model, int threads) : model_(model) {
  retry_.max_depth = std::max(0, model.solver().substep_retry);
  ADDSIM_CHECK(model.finalized(), "the model must be finalised before simulating");
  assembly_ = Assembly(&model.pattern(), &model.stencils());
  if (threads <= 0) threads = model.solver().threads;
  ADDSIM_CHECK(threads == 1 || threads == 2, "a simulator runs on 1 or 2 threads");
  const bool splittable = std::any_of(model.terms().begin(), model.terms().end(),
                                      [](const auto& t) { return t->item_count() > 1; });
  has_springs_ = std::any_of(model.terms().begin(), model.terms().end(),
                             [](const auto& t) { return dynamic_cast<const SpringTerm*>(t.get()) != nullptr; });
  if (threads == 2 && splittable) {
    worker_ = std::make_unique<WorkerThread>();
    worker_assembly_ = Assembly(&model.pattern(), &model.stencils());
    // The fixed split (helper_share): the helper takes the upper items of each splittable term.
    double unsplit = 0.0, items = 0.0;
    for (const auto& t : model.terms()) {
      if (const int n = t->item_count(); n > 1)
        items += n;
      else
        unsplit += kUnsplitTermItems;
    }
    helper_share_ = std::min(1.0, 0.5 * (1.0 + unsplit / items));
    for (const auto& t : model.terms()) {
      const int n = t->item_count();
      helper_begin_.push_back(n > 1 ? n - static_cast<int>(std::lround(helper_share_ * n)) : 0);
    }
  }
  // The forward Newton's factors in solver.factorization_precision with solver.pivot_threshold
  // (the residual, the iterate and the convergence tests stay double); the sensitivities make
  // their own, double ones with partial pivoting.
  const FactorizationOptions& factorization = model.solver().factorization;
  lu_ = make_step_solver(model, factorization);
  // Its matrix then needs float accuracy only: terms may form its blocks cheaper.
  assembly_.float_step_blocks = worker_assembly_.float_step_blocks =
      factorization.precision == FactorizationPrecision::kSingle;
  // Two threads: the helper also factorises ahead (solve_step), between evaluations.
  if (worker_ && lu_->reuses())
    lu_->set_background(worker_.get(),
                        make_linear_solver(model.solver().linear_solver, &model.pattern(), factorization));
  // ... and takes independent subtrees of a block LU's factorisation (BlockSchurLu).
  if (worker_) lu_->set_worker(worker_.get());
  if (auto h = std::make_shared<HybridContact>(model); h->active()) hybrid_ = std::move(h);
  if (model.solver().contact_correction)
    if (auto c = std::make_unique<ContactCorrection>(model); c->active()) contact_correction_ = std::move(c);
  if (auto c = std::make_shared<SqpContact>(model); c->active()) sqp_ = std::move(c);
}

double Simulator::relative_residual(const VecX& r, const VecX& r_abs, int* body) const {
  double worst = 0.0;
  if (body) *body = -1;
  for (std::size_t b = 0; b < model_.bodies().size(); ++b) {
    const Body& bd = *model_.bodies()[b];
    const double scale = r_abs.segment(bd.dof_offset(), bd.dof_count()).norm();
    const double res = r.segment(bd.dof_offset(), bd.dof_count()).norm();
    // |r_i| ≤ r_abs,i, so r_abs,b = 0 means nothing acts on b and r_b = 0 too.
    const double rel = scale > 0.0 ? res / scale : 0.0;
    if (rel > worst) {
      worst = rel;
      if (body) *body = static_cast<int>(b);
    }
  }
  return worst;
}

double Simulator::scaled_tolerance(const VecX& r_abs) {
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& b : model_.bodies())
    if (const double scale = r_abs.segment(b->dof_offset(), b->dof_count()).norm(); scale > 0.0)
      smallest = std::min(smallest, scale);
  step_tolerance_ = std::min(model_.solver().tolerance, model_.solver().relative_tolerance * smallest);
  return step_tolerance_;
}

double Simulator::newton_forcing(const std::vector<double>& history, double norm, double tol) {
  // Inexact Newton: the direction needs a linear residual well below the ‖r‖ the step
  // will reach, not below round-off. With quadratic convergence ‖r_{k+1}‖ ≈ C ‖r_k‖²
  // (C from the last two well-resolved, decreasing iterates, of this or an earlier step), a
  // linear residual of kForcing · C ‖r_k‖² changes ‖r_{k+1}‖ by at most that fraction; it
  // is capped at 1e-2 ‖r_k‖ and floored by solve_linear at 1e-3 of the tolerance.
  if (history.size() >= 2) {
    const double prev = history[history.size() - 2];
    if (norm >= kWellResolved * tol && prev > norm) newton_constant_ = norm / (prev * prev);
  }
  // Near convergence the linear error must stay below the tolerance itself, or it alone
  // could cost one more iteration: solve to the floor when the next ‖r‖ should be < 10 tol.
  const double predicted = newton_constant_ * norm * norm;
  if (predicted < 10.0 * tol) return 0.0;
  return std::min(kMaxForcing * norm, kForcing * predicted);
}

bool Simulator::solve_linear(const VecX& q, const VecX& values, const VecX& b, VecX& x, StepReport& rep,
                             double tolerance) {
  const ReusedFactorization::Stats before = lu_->stats();
  // A Newton step solved to a linear residual of ε_lin leaves ‖r‖ ≈ ε_lin (+ the quadratic
  // term) at the next iterate: kLinearToleranceFraction × tolerance keeps that far below the
  // convergence test, so the converged state is unchanged to well within the tolerance.
  // (The tolerance of a step with light bodies is scaled down, scaled_tolerance.)
  const double floor =
      kLinearToleranceFraction * (step_tolerance_ > 0.0 ? step_tolerance_ : model_.solver().tolerance);
  lu_->set_configuration(q);
  const bool ok = lu_->solve(values, b, x, false, std::max(tolerance, floor));
  const ReusedFactorization::Stats& after = lu_->stats();
  rep.factor_ms += after.factor_ms - before.factor_ms;
  rep.solve_ms += after.solve_ms - before.solve_ms;
  rep.factorizations += static_cast<int>(after.factorizations - before.factorizations);
  rep.krylov_iterations += static_cast<int>(after.krylov_iterations - before.krylov_iterations);
  return ok;
}

void Simulator::evaluate(const TermContext& ctx, Assembly& out) const {
  if (!worker_) {
    for (const auto& t : model_.terms()) t->evaluate(ctx, out);
    return;
  }
  // Fork–join: the helper takes the upper items of every splittable term (helper_share),
  // this thread the lower ones and the other terms. The split is fixed, so results are
  // reproducible run to run (they differ from one thread's at round-off). While the helper
  // is still factorising ahead (solve_step), this thread does both halves, into the same two
  // assemblies: the sums, and so the results, do not depend on which thread did them.
  const EvalMode mode = out.mode();
  const JacobianWeights weights = out.weights();
  auto upper = [&] {
    worker_assembly_.stick_predictor_ratio = out.stick_predictor_ratio;
    worker_assembly_.reset(mode, weights);
    const auto& terms = model_.terms();
    for (size_t j = 0; j < terms.size(); ++j)
      if (const int n = terms[j]->item_count(); n > 1 && helper_begin_[j] < n)
        terms[j]->evaluate_items(ctx, worker_assembly_, helper_begin_[j], n);
  };
  auto lower = [&] {
    const auto& terms = model_.terms();
    for (size_t j = 0; j < terms.size(); ++j) {
      if (const int n = terms[j]->item_count(); n > 1) {
        if (helper_begin_[j] > 0) terms[j]->evaluate_items(ctx, out, 0, helper_begin_[j]);
      } else {
        terms[j]->evaluate(ctx, out);
      }
    }
  };
  if (lu_->background_running() || mode == EvalMode::kResidual) {
    if (lu_->background_running()) {
      lower();
      upper();
    } else {
      worker_->run_alongside([task = &upper] { (*task)(); }, lower);
    }
    out.add_from(worker_assembly_);
    return;
  }
  // With Jacobians, the helper's assembly is added inside the fork–join: after a barrier
  // (both sides' items done) each side adds half of the Jacobian's value arrays, the caller
  // also the vectors — element by element the sums of Assembly::add_from, so the same bits,
  // and the caller no longer adds ≈ 3 µs of arrays alone after the join. A side whose items
  // throw still arrives at the barrier (the exception then propagates from run_alongside).
  std::atomic<int> arrived{0};
  struct Arrive {
    std::atomic<int>& count;
    ~Arrive() { count.fetch_add(1, std::memory_order_acq_rel); }
  };
  const auto add_half = [&](int half) {
    const auto add = [&](VecX& to, const VecX& from) {
      const Eigen::Index n = to.size(), mid = n / 2;
      const Eigen::Index begin = half == 0 ? 0 : mid, end = half == 0 ? mid : n;
      to.segment(begin, end - begin) += from.segment(begin, end - begin);
    };
    if (mode == EvalMode::kResidualAndJacobians) {
      add(out.kq, worker_assembly_.kq);
      add(out.kv, worker_assembly_.kv);
      add(out.ka, worker_assembly_.ka);
    } else {
      add(out.jac, worker_assembly_.jac);
    }
  };
  const auto helper_side = [&] {
    {
      Arrive arrive{arrived};
      upper();
    }
    WorkerThread::spin_until_at_least(arrived, 2);
    add_half(1);
  };
  // The task captures one pointer, which std::function keeps without a heap allocation.
  worker_->run_alongside(
      [task = &helper_side] { (*task)(); },
      [&] {
        {
          Arrive arrive{arrived};
          lower();
        }
        WorkerThread::spin_until_at_least(arrived, 2);
        add_half(0);
        out.r += worker_assembly_.r;
        out.r_abs += worker_assembly_.r_abs;
        if (out.has_predictor() && worker_assembly_.has_predictor()) out.r_predictor += worker_assembly_.r_predictor;
      });
}

void Simulator::set_phase_timing(bool on) {
  phase_timing_ = on;
  lu_->set_timing(on);
}

bool Simulator::admissible(const TermContext& ctx, std::string* why) const {
  for (const auto& t : model_.terms())
    if (!t->admissible(ctx, why)) return false;
  return true;
}

double Simulator::evaluate_trial(int step, const VecX& q, const VecX& v_hist, const VecX& a_hist, const VecX& p,
                                 EvalMode mode, VecX& v, VecX& a, Assembly& out, std::string* why,
                                 const std::function<const VecX&(const TermContext&)>& finish) const {
  const TimeScheme& s = scheme();
  bdf_rates(s, step, q, v_hist, a_hist, v, a);
  const TermContext ctx{q, v, a, p, s.row(step), s};
  if (!admissible(ctx, why)) return std::numeric_limits<double>::infinity();
  out.reset(mode, bdf_weights(s, step, 0));
  evaluate(ctx, out);
  const double norm = (finish ? finish(ctx) : out.r).norm();
  if (std::isfinite(norm)) return norm;
  if (why) *why = "residual is not finite";
  return std::numeric_limits<double>::infinity();
}

Trajectory Simulator::run(const VecX& p, const std::function<void(const StepReport&)>& progress,
                          const std::function<bool(const Trajectory&)>& after_step) {
  const auto t0 = Clock::now();
  model_.params().check(p);
  // Every run starts from the simulator's initial state (the symbolic analysis is kept): no
  // LU or inexact-Newton estimate of an earlier run carries over, so the trajectory depends
  // only on p, whichever runs this simulator made before (optimisers reuse simulators).
  lu_->reset();
  step_tolerance_ = 0.0;
  newton_constant_ = 0.0;
  last_step_iterations_ = 0;
  alt_guess_won_ = true;
  grid_ = nullptr;
  const TimeScheme& s = model_.scheme();
  const int max_depth = retry_.max_depth;
  Trajectory traj;
  traj.p = p;
  model_.initial_state(p, traj.q0, traj.v0);
  traj.q.reserve(s.steps + 1);
  traj.q.push_back(traj.q0);
  traj.reports.reserve(s.steps);
  auto fail = [&](int i, const std::string& what) {
    traj.failed_step = i;
    std::ostringstream msg;
    msg << "step " << i << " (t = " << i * s.h << " s) did not converge: " << what;
    traj.failure = msg.str();
  };
  if (s.uses_initial_acceleration()) {
    // Constant-acceleration start-up: the virtual history reads a⁰ from the dynamics at t₀.
    std::string why;
    if (!InitialAcceleration(model_).solve(traj.q0, traj.v0, p, traj.a0, &why)) {
      traj.failed_step = 0;
      traj.failure = "integrator_startup constant_acceleration: " + why;
      traj.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      return traj;
    }
  }
  for (int i = 1; i <= s.steps; ++i) {
    const int j = traj.internal_steps() + 1;
    if (traj.substepped()) traj.grid.push_step(0, i);
    StepReport rep = advance(traj, j, p);
    if (!rep.converged && max_depth > 0) {
      // Retry the interval as sub-steps (docs/solver.md): the failed attempt leaves no state.
      if (!traj.substepped()) start_grid(traj);
      else traj.grid.pop_step();
      StepReport agg;
      agg.step = i;
      agg.substeps = 0;
      agg.iterations = rep.iterations;
      agg.line_search_halvings = rep.line_search_halvings;
      agg.assemblies = rep.assemblies;
      agg.factorizations = rep.factorizations;
      agg.wall_ms = rep.wall_ms;
      const bool ok = solve_substeps(traj, i, 1, p, agg);
      agg.converged = ok;
      agg.note = "retried as " + std::to_string(agg.substeps) + " sub-steps (down to h/" +
                 std::to_string(1 << agg.substep_depth) + ") after: " + rep.failure;
      if (ok) {
        agg.residual_norm = traj.x_reports.back().residual_norm;
        agg.tolerance_used = traj.x_reports.back().tolerance_used;
        agg.contact = traj.x_reports.back().contact;
      } else {
        agg.failure = agg.failure + " (after sub-step retry down to h/" + std::to_string(1 << max_depth) +
                      "; first attempt: " + rep.failure + ")";
      }
      rep = std::move(agg);
    } else if (traj.substepped() && !rep.converged) {
      traj.grid.pop_step();
    } else if (traj.substepped()) {
      traj.x_reports.push_back(rep);
    }
    rep.step = i;
    traj.reports.push_back(rep);
    if (progress) progress(rep);
    if (!rep.converged) {
      std::ostringstream what;
      what << rep.failure << " (‖r‖ = " << rep.residual_norm << " after " << rep.iterations << " iterations)";
      fail(i, what.str());
      if (after_step) after_step(traj);
      break;
    }
    if (traj.substepped()) {
      traj.q.push_back(traj.x.back());
      traj.output_index.push_back(traj.internal_steps());
    }
    if (after_step && !after_step(traj) && i < s.steps) {
      traj.failure = "stopped after step " + std::to_string(i) + " of " + std::to_string(s.steps);
      break;
    }
  }
  grid_ = nullptr;
  traj.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return traj;
}

void Simulator::start_grid(Trajectory& traj) {
  // The steps so far, as grid steps of depth 0: the same coefficients as the model's scheme.
  traj.grid = model_.scheme().grid();
  const int m = static_cast<int>(traj.q.size()) - 1;
  for (int j = 1; j <= m; ++j) traj.grid.push_step(0, j);
  traj.x = traj.q;
  traj.x_reports = traj.reports;
  traj.output_index.resize(m + 1);
  for (int k = 0; k <= m; ++k) traj.output_index[k] = k;
  grid_ = &traj.grid;
}

bool Simulator::solve_substeps(Trajectory& traj, int row, int depth, const VecX& p, StepReport& agg) {
  for (int half = 0; half < 2; ++half) {
    const int j = traj.internal_steps() + 1;
    traj.grid.push_step(depth, row);
    StepReport rep = advance(traj, j, p);
    agg.iterations += rep.iterations;
    agg.line_search_halvings += rep.line_search_halvings;
    agg.assemblies += rep.assemblies;
    agg.factorizations += rep.factorizations;
    agg.wall_ms += rep.wall_ms;
    if (rep.converged) {
      rep.step = row;
      rep.substeps = 1;
      rep.substep_depth = depth;
      traj.x_reports.push_back(std::move(rep));
      ++agg.substeps;
      agg.substep_depth = std::max(agg.substep_depth, depth);
      continue;
    }
    traj.grid.pop_step();
    if (depth >= retry_.max_depth) {
      agg.failure = rep.failure;
      agg.residual_norm = rep.residual_norm;
      return false;
    }
    if (!solve_substeps(traj, row, depth + 1, p, agg)) return false;
  }
  return true;
}

StepReport Simulator::advance(Trajectory& traj, int i, const VecX& p) {
  const TimeScheme& s = scheme();
  const double h = s.at(i).h;
  std::vector<VecX>& states = traj.substepped() ? traj.x : traj.q;
  const StateHistory hist = traj.history();
  // Initial guess: constant-velocity extrapolation q^{i-1} + h v^{i-1}, in this step's chart.
  if (i == 1) {
    q_guess_ = states[0] + h * traj.v0;
  } else {
    traj.internal_rates(s, i - 1, v_, a_);
    q_guess_ = states[i - 1] + h * v_;
  }
  bool recharted = false;
  for (const ChartSwitch& c : traj.charts)
    if (c.step == i - 1) {
      c.body->rechart(q_guess_);
      recharted = true;
    }
  // The plain Newton solver also tries constant-acceleration extrapolation: the q^i whose
  // BDF acceleration equals a^{i-1}, q^i = h² (a^{i-1} − a_hist) / ca_i[0]. It follows
  // gravity and the centripetal acceleration of spinning bodies, so free flight and steady
  // contact start at a much smaller residual; solve_step keeps whichever guess has the
  // smaller ‖r‖ (at impacts that is often the constant-velocity one).
  const bool second_guess = !hybrid_ && !sqp_ && i >= 2 && !recharted;
  if (second_guess) {
    bdf_history_terms(s, hist, i, v_hist_, a_hist_);
    traj.internal_rates(s, i - 1, v_, a_);
    guess_ca_ = (h * h / s.at(i).ca[0]) * (a_ - a_hist_);
  }
  StepReport rep = solve_step(i, hist, p, q_guess_, second_guess ? &guess_ca_ : nullptr);
  if (!rep.converged && rep.iterations == 0 && !std::isfinite(rep.residual_norm)) {
    // Both extrapolations are inadmissible (an element inverted, or r not finite): soft
    // material at impact. Shorter extrapolations q^{i-1} + α h v^{i-1}, α = 1/2, 1/4, 1/8,
    // then q^{i-1} itself, are tried in that order (docs/solver.md, "Initial guess"); the
    // line search then walks from an admissible point. The step solves the same equation,
    // so the solution (and its linearisation for the adjoint) does not depend on the guess.
    // Steps whose first guess is admissible never get here: their results are unchanged.
    const std::string first_failure = rep.failure;
    int assemblies = rep.assemblies;
    double wall_ms = rep.wall_ms;
    for (const double alpha : kFallbackGuessScales) {
      if (i == 1) {
        q_guess_ = states[0] + (alpha * h) * traj.v0;
      } else {
        traj.internal_rates(s, i - 1, v_, a_);
        q_guess_ = states[i - 1] + (alpha * h) * v_;
      }
      for (const ChartSwitch& c : traj.charts)
        if (c.step == i - 1) c.body->rechart(q_guess_);
      rep = solve_step(i, hist, p, q_guess_, nullptr);
      assemblies += rep.assemblies;
      wall_ms += rep.wall_ms;
      rep.assemblies = assemblies;
      rep.wall_ms = wall_ms;
      if (rep.converged || rep.iterations > 0 || std::isfinite(rep.residual_norm)) {
        std::ostringstream note;
        note << "initial guess q^{i-1} + " << alpha << " h v^{i-1} after: " << first_failure;
        rep.note = rep.note.empty() ? note.str() : note.str() + "; " + rep.note;
        break;
      }
    }
    if (!rep.converged && rep.iterations == 0 && !std::isfinite(rep.residual_norm))
      rep.failure = first_failure + " (and at q^{i-1} + α h v^{i-1}, α = 1/2, 1/4, 1/8, 0: " + rep.failure + ")";
  }
  // A step that only the floor or a tiny Newton step accepted, with contributions that did
  // not cancel even to kFloorFailureRelativeResidual, is not resolved in double precision
  // (E = 1e30, dt = 1e300, …): it fails rather than being kept as converged.
  if (rep.accepted_at_floor() && rep.relative_residual > kFloorFailureRelativeResidual) {
    std::ostringstream why;
    why << "accepted only at the " << (rep.acceptance == StepAcceptance::kTinyStep ? "tiny-Newton-step" : "round-off")
        << " floor with relative residual " << rep.relative_residual;
    if (rep.relative_residual_body >= 0)
      why << " on body '" << model_.bodies()[rep.relative_residual_body]->name() << "'";
    why << " (> " << kFloorFailureRelativeResidual
        << "): the step cannot be resolved in double precision; check the scales of dt, masses and stiffnesses";
    rep.converged = false;
    rep.failure = why.str();
  }
  if (!rep.converged) return rep;
  states.push_back(q_guess_);
  // Chart switch (docs/rigid.md): a body whose coordinates left their good region (|θ| > 1.25π)
  // is read by the following steps in its other chart. Deferred while the next step still
  // reads v⁰ (or a⁰) directly (BDF start-up), since v⁰ is not re-expressed.
  bool next_reads_initial;
  if (traj.substepped()) {
    next_reads_initial = s.next_reads_initial_state();
  } else {
    const JacobianWeights wv0 = bdf_v0_weights(s, std::min(i + 1, s.steps));
    const JacobianWeights wa0 = bdf_a0_weights(s, std::min(i + 1, s.steps));
    next_reads_initial = wv0.wv != 0.0 || wv0.wa != 0.0 || wa0.wv != 0.0 || wa0.wa != 0.0;
  }
  const bool last = traj.substepped() ? false : i >= s.steps;
  if (!last && !next_reads_initial)
    for (const auto& b : model_.bodies())
      if (b->wants_rechart(q_guess_)) traj.charts.push_back({i, b.get()});
  return rep;
}

StepReport Simulator::solve_step(int step, const StateHistory& hist, const VecX& p, VecX& q, const VecX* alt_guess) {
  if (hybrid_) return hybrid_->solve_step(*this, step, hist, p, q);
  if (sqp_) return sqp_->solve_step(*this, step, hist, p, q);
  const auto t_step = Clock::now();
  const TimeScheme& s = scheme();
  const SolverSettings& opt = model_.solver();
  StepReport rep;
  rep.step = step;
  // A factorisation made ahead during an earlier step preconditions this one, once the
  // GMRES work since its submission is worth a factorisation (install_background).
  const long adopted = lu_->stats().background_factorizations;
  lu_->install_background();
  rep.background_factorizations = static_cast<int>(lu_->stats().background_factorizations - adopted);
  bdf_history_terms(s, hist, step, v_hist_, a_hist_);

  // solver.clamped_first_iteration: the step Jacobians evaluated before the first iteration
  // (at the guesses) leave out the transverse stiffness of compressed springs. From an
  // extrapolated guess, a flat sheet's compressed springs make the exact matrix nearly
  // singular out of plane and its full step overshoots; the clamped (PSD) matrix's first
  // step lands closer (docs/solver.md, "Newton iterations per step on the Table 2 scenes").
  const bool clamp_first = opt.clamped_first_iteration && has_springs_;
  // solver.stick_predictor_ratio: likewise, the step Jacobians at the guesses linearise the
  // friction of slipping points near the cone's edge with the stick law, and the first
  // direction solves that model (its residual r + r_predictor). From the extrapolated guess
  // a foot that comes to rest within the step is still sliding; the exact slip branch has no
  // stiffness along the sliding direction, and its full step throws the foot across the kink
  // of eq. linPenT, back and forth for several iterations (docs/solver.md, "Stick predictor").
  const double predictor = opt.stick_predictor_ratio;
  // solver.chord_contraction ρ: near the root a step's Jacobian changes little between
  // iterations, so the LU of the last one still contracts ‖r‖ (linearly, by about the factor
  // the last Newton step achieved). A chord step costs a residual evaluation and two
  // triangular solves instead of the partials, a factorisation and the solves.
  const double chord = opt.chord_contraction;
  bool chord_next = false;  // the next direction solves with the current LU (a chord step)
  // solver.chord_acceleration m: Anderson mixing of the chord steps (chord_accelerate).
  const int chord_depth = chord > 0.0 ? opt.chord_acceleration : 0;
  // The state of assembly_'s evaluation while it is a residual-only one (residual_only):
  // partials at that state can be added to it (complete_partials).
  residual_q_.resize(q.size());
  bool residual_only = false;
  // Evaluates r at q_eval (and partials if asked); returns ‖r‖ or +inf when the state is
  // inadmissible or not finite (then `why` says which).
  // The first-iteration models (clamped springs, stick predictor) apply to the evaluations
  // before the first iteration only.
  auto set_first_iteration_models = [&]() {
    if (clamp_first) assembly_.clamp_compressed_springs = rep.iterations == 0;
    if (predictor > 0.0) assembly_.stick_predictor_ratio = rep.iterations == 0 ? predictor : 0.0;
  };
  auto eval = [&](const VecX& q_eval, EvalMode mode, std::string* why) {
    const auto t0 = phase_timing_ ? Clock::now() : Clock::time_point{};
    set_first_iteration_models();
    const double norm = evaluate_trial(step, q_eval, v_hist_, a_hist_, p, mode, v_, a_, assembly_, why);
    residual_only = mode == EvalMode::kResidual && std::isfinite(norm);
    if (residual_only) std::memcpy(residual_q_.data(), q_eval.data(), sizeof(double) * q_eval.size());
    if (phase_timing_) rep.assembly_ms += ms_since(t0);
    ++rep.assemblies;
    return norm;
  };
  // The step Jacobian at q: added to the residual-only evaluation at q when assembly_ holds
  // one (Assembly::reset_step_partials: the terms' partials without their residual scatter,
  // the admissibility test and the reset of r), else by eval(). The same numbers either way:
  // evaluations are functions of the state.
  auto complete_partials = [&](std::string* why) {
    // Only if assembly_ still holds that evaluation: not after an evaluation outside eval()
    // (retry_with_clamped_springs), whose reset left another mode.
    if (!(residual_only && assembly_.mode() == EvalMode::kResidual &&
          std::memcmp(residual_q_.data(), q.data(), sizeof(double) * q.size()) == 0))
      return eval(q, EvalMode::kResidualAndStepJacobian, why);
    residual_only = false;
    const auto t0 = phase_timing_ ? Clock::now() : Clock::time_point{};
    set_first_iteration_models();
    bdf_rates(s, step, q, v_hist_, a_hist_, v_, a_);
    const TermContext ctx{q, v_, a_, p, s.row(step), s};
    assembly_.reset_step_partials(bdf_weights(s, step, 0));
    evaluate(ctx, assembly_);
    assembly_.finish_step_partials();
    if (phase_timing_) rep.assembly_ms += ms_since(t0);
    ++rep.assemblies;
    return assembly_.r.norm();
  };

  std::string why;
  double norm = std::numeric_limits<double>::infinity();
  if (alt_guess) {
    // Start from the alternative guess if its residual is smaller (ties: the alternative). The
    // partials at the chosen start are formed with its residual when the guess that won the
    // previous step wins again — winners come in runs (the soft-feet quadruped's constant-
    // velocity guess wins 34 of 143 steps, in runs of 3–4 around the knees' target kinks) —
    // and by a second evaluation otherwise. Evaluations are functions of the state, so the
    // chosen start, its ‖r‖ and partials are the same numbers in either order.
    std::string why_alt;
    bool took_alt;
    if (alt_guess_won_) {
      const double norm_q = eval(q, EvalMode::kResidual, &why);
      const double norm_alt = eval(*alt_guess, EvalMode::kResidualAndStepJacobian, &why_alt);
      took_alt = norm_alt <= norm_q;
      if (took_alt) norm = norm_alt;
    } else {
      const double norm_alt = eval(*alt_guess, EvalMode::kResidual, &why_alt);
      const double norm_q = eval(q, EvalMode::kResidualAndStepJacobian, &why);
      took_alt = norm_alt <= norm_q;
      norm = took_alt ? eval(*alt_guess, EvalMode::kResidualAndStepJacobian, &why) : norm_q;
    }
    if (took_alt) q = *alt_guess;
    alt_guess_won_ = took_alt;
  }
  if (!std::isfinite(norm)) norm = eval(q, EvalMode::kResidualAndStepJacobian, &why);
  if (initial_guess_failed(norm, why, t_step, rep)) return rep;
  // Step Jacobian at q and the round-off floor of ‖r‖: rounding q (|q| large, stiff
  // couplings) or the summed contributions perturbs r by about ε (|J||q| + Σ|contributions|).
  // The |J||q| pass over the nonzeros (as much as a band substitution on the sheet flip) is
  // made only when a test reads it: each row of |J||q| is at most ‖J_i‖ ‖q‖ (Cauchy–Schwarz),
  // so ‖|J||q|‖ ≤ ‖J‖_F ‖q‖, and while ‖r‖ exceeds the floor with that bound every
  // `‖r‖ ≤ floor` test (here and in step::newton_step) is false with the exact floor too:
  // the same decisions and numbers, with the pass made about once a step instead of once
  // per Jacobian. (kFloorBoundMargin covers the rounding of the bound's own products.)
  constexpr double kFloorBoundMargin = 1.0 + 1e-6;
  double floor_r_abs = 0.0;   // ‖Σ|contributions|‖ of the floor's evaluation
  double floor_jq_bound = 0.0;  // ‖J‖_F ‖q‖ ≥ ‖|J||q|‖ of the last Jacobian
  bool jq_exact = false;      // jq_abs_ holds |J||q| of the last Jacobian
  double jq_norm = 0.0;
  auto exact_jq = [&]() {
    if (!jq_exact) {
      jq_abs_.setZero(model_.num_dofs());
      model_.pattern().abs_multiply_add(jac_, floor_q_, jq_abs_);
      jq_norm = jq_abs_.norm();
      jq_exact = true;
    }
    return jq_norm;
  };
  // The floor as a test of ‖r‖ = `level` against it needs it: its bound when ‖r‖ is above
  // the bound (the test fails either way), else the exact value.
  auto floor_for = [&](double level) {
    if (level > kRoundoffFactor * (floor_r_abs + kFloorBoundMargin * floor_jq_bound))
      return kRoundoffFactor * (floor_r_abs + kFloorBoundMargin * floor_jq_bound);
    return kRoundoffFactor * (floor_r_abs + exact_jq());
  };
  auto jacobian_and_floor = [&]() {
    // The evaluation at q formed dr/dq^i directly (kResidualAndStepJacobian); taken over
    // by swapping, since the line search's trial evaluations reuse assembly_.
    jac_.swap(assembly_.jac);
    floor_q_ = q;
    jq_exact = false;
    floor_jq_bound = jac_.norm() * q.norm();
    floor_r_abs = assembly_.r_abs.norm();
  };
  // The floor at a chord iterate: its own Σ|contributions|, and |J||q| of the Jacobian and
  // state last factorised (near the root q moves by a Newton step or less, so |J||q| barely
  // changes; recomputing it over all nonzeros costs about as much as the chord step's solves).
  auto chord_floor = [&]() { floor_r_abs = assembly_.r_abs.norm(); };
  // Converged below the tolerance, or at the round-off floor, where further "decreases"
  // would only be noise.
  jacobian_and_floor();
  const double tol = opt.tolerance;
  // Every body's ‖r_b‖ within relative_tolerance of its Σ|contributions| (assembly_ at the
  // state just evaluated); the linear solves are held to the tolerance this implies.
  const double rel_tol = opt.relative_tolerance;
  // A body meets it when ‖r_b‖ ≤ ρ ‖r_abs,b‖ or when r_b is within the body's own round-off
  // floor 64 ε (‖r_abs,b‖ + ‖(|J||q|)_b‖): a body on which nothing but its inertia acts
  // (free spin without gravity) has r_abs,b = |r_b| at round-off level.
  auto resolved = [&]() {
    exact_jq();
    for (const auto& b : model_.bodies()) {
      const int o = b->dof_offset(), n = b->dof_count();
      const double scale = assembly_.r_abs.segment(o, n).norm();
      const double floor_b = kRoundoffFactor * (scale + jq_abs_.segment(o, n).norm());
      if (assembly_.r.segment(o, n).norm() > std::max(rel_tol * scale, floor_b)) return false;
    }
    return true;
  };
  const double tol_scaled = scaled_tolerance(assembly_.r_abs);

  // Trial evaluations of the line search. The full step is usually accepted; its partials
  // are evaluated right away when another iteration is expected to follow: from the second
  // iteration of a step on, and in the first when the previous step needed more than one
  // (steps of one run converge alike: tori, ball). Otherwise (mildly nonlinear steps, which
  // the first full step usually converges) the trial is evaluated without partials, and
  // they are added below only if another iteration follows. (Predicting from the quadratic
  // model C ‖r‖² instead was too pessimistic for stiff rigid joints: the quadruped lost 6 %.)
  // After an iteration whose line search halved, the next full step is rejected more often
  // than not (contact kinks: the soft-feet quadruped's long steps halve in most iterations),
  // so its partials would be wasted: such a trial is evaluated without them (residual only,
  // the merit needs nothing else), and they follow at the accepted state. Either way the
  // partials at the accepted state are the same numbers, so the iterates are unchanged
  // (docs/solver.md, "Soft-feet quadruped").
  bool expect_more = false;
  bool eager = false;           // this iteration's full-step trial also forms the partials
  bool full_last_step = true;   // the previous iteration of this step took the full step
  bool clamped_step = false;  // the clamped-spring Newton matrix took over in this step
  const TrialEval trial_eval = [&](const VecX& q_trial, bool first_trial, std::string* trial_why) {
    return eval(q_trial, first_trial && eager ? EvalMode::kResidualAndStepJacobian : EvalMode::kResidual, trial_why);
  };
  const TrialEval chord_eval = [&](const VecX& q_trial, bool, std::string* trial_why) {
    return eval(q_trial, EvalMode::kResidual, trial_why);
  };
  // solver.contact_correction: the undamped Newton direction from q gets the contact laws'
  // nonlinear correction (solver/contact_correction.h; the velocities at q are recomputed, the
  // line search's trials overwrite v_). Not in the first iteration of a step in which the stick
  // predictor changed the Newton matrix, which then is not the exact contact laws'.
  // Formed only when the model has such contact (a scene without it allocates nothing here).
  const VecX* refine_jac = &jac_;
  std::function<void(VecX&)> correct_contacts;
  if (contact_correction_)
    correct_contacts = [&, step_weights = bdf_weights(s, step, 0)](VecX& dq) {
      bdf_rates(s, step, q, v_hist_, a_hist_, correction_v_, correction_a_);
      rep.corrected_contact_points +=
          contact_correction_->correct(q, correction_v_, p, s.h, step_weights, *refine_jac, norm, dq,
                                            worker_.get());
    };
  const std::function<void(VecX&)> no_correction;

  while (true) {
    // The round-off floor is only accepted once Newton has tried to go below it: a guess
    // that merely starts at the floor (exact extrapolation, e.g. free fall) is still
    // polished by one iteration, else its O(floor) error would be kept and compound.
    // The tolerance test is absolute and relative per body (a light body's weight can be
    // below any fixed force tolerance: docs/solver.md, "Acceptance").
    if (norm < tol && resolved()) {
      rep.converged = true;
      break;
    }
    if (rep.iterations > 0 && norm <= floor_for(norm)) {
      rep.converged = true;
      rep.acceptance = StepAcceptance::kRoundoffFloor;
      break;
    }
    if (rep.iterations >= opt.max_iterations) {
      rep.failure = "iteration cap of " + std::to_string(opt.max_iterations) + " reached";
      break;
    }
    // Newton direction (dr/dq^i + μ D) Δq = −r with Levenberg–Marquardt damping only when
    // the undamped direction finds no decrease (step::newton_step), then the line search.
    r_ = -assembly_.r;  // the line search overwrites assembly_
    // The stick predictor's model residual (first iteration: assembly_ holds the guess's
    // evaluation with the predictor on).
    if (rep.iterations == 0 && assembly_.has_predictor()) r_ -= assembly_.r_predictor;
    ++rep.iterations;
    if (chord_next) {
      // Chord step: the full step only (a halving would mean the old LU no longer serves).
      chord_next = false;
      ++rep.chord_iterations;
      const double before = norm;
      std::string chord_why;
      if (lu_->solve_with_current_lu(r_, newton_.dq) && newton_.dq.allFinite()) {
        if (chord_depth > 0) chord_accelerate(q, newton_.dq, chord_depth);
        const LineSearchResult ls = backtrack(q, newton_.dq, norm, 0, chord_eval, newton_.q_trial, &chord_why, rep);
        if (ls.decreased) {
          q = newton_.q_trial;
          norm = ls.trial;
          rep.residual_history.push_back(norm);
          if (norm < tol && resolved()) {
            rep.converged = true;
            break;
          }
          if (norm <= chord * before) {
            chord_floor();
            chord_next = true;
            continue;
          }
        }
      }
      // It shrank ‖r‖ by less than ρ (or not at all): the partials at q, and Newton again.
      // After a decrease assembly_ holds the residual-only evaluation at q (the accepted trial).
      norm = complete_partials(&why);
      jacobian_and_floor();
      continue;
    }
    const double linear_tol = newton_forcing(rep.residual_history, norm, tol_scaled);
    // solver.fresh_factorization_iterations n: the first n Newton iterations of the step
    // factorise their Jacobian rather than try GMRES on the kept LU first. Those iterations take
    // the step's large moves (the soft-feet quadruped: 10²–10⁴ N of motor-driven residual at the
    // guess, then its feet's contact nodes), and the kept LU — of an earlier Jacobian — then
    // preconditions so poorly that GMRES gives up after its first iterations in most of them
    // (130 of 144 second iterations) and factorises anyway: those iterations were the waste. A
    // solve on a fresh LU equals the one after a failed GMRES bit for bit; where GMRES would
    // have converged the direction differs at round-off (docs/solver.md).
    if (rep.iterations <= opt.fresh_factorization_iterations) lu_->invalidate();
    // Except when the quadratic model predicts convergence by a wide margin: the converged
    // trial's partials would never be used (tori drop: one Jacobian fewer in most steps).
    const bool converges =
        newton_constant_ > 0.0 && newton_constant_ * norm * norm < kSureConvergence * tol_scaled;
    // Chord ahead: the quadratic model predicts that this step shrinks ‖r‖ by C ‖r‖ < ρ, so
    // the next direction will reuse this LU and the trial's partials would not be used.
    const bool chord_ahead = chord > 0.0 && !converges && newton_constant_ > 0.0 && newton_constant_ * norm < chord;
    expect_more = (rep.iterations > 1 || last_step_iterations_ > 1) && !converges && !chord_ahead;
    // Floor ahead: the quadratic model puts the next ‖r‖ below the round-off floor by a wide
    // margin (stiff steps end there, far above the tolerance: the soft-feet quadruped ends every
    // step at ‖r‖ ≈ 2e-10 N below a floor of ≈ 9e-8 N). Its trial is then evaluated without
    // partials and accepted at the floor below; the partials at the accepted state, if another
    // iteration follows after all, are the same numbers either way.
    const double predicted = newton_constant_ * norm * norm;
    const bool floor_ahead =
        newton_constant_ > 0.0 && predicted < kSureConvergence * floor_for(predicted / kSureConvergence);
    eager = expect_more && full_last_step && !floor_ahead;
    const int damped_before = rep.damped_iterations;
    // With two threads the helper factorises this Jacobian while Newton goes on with the
    // older LU; the new one preconditions from a later step on (install above).
    if (rep.iterations == kBackgroundIteration) lu_->factorize_in_background(jac_, q);
    // Once a step has taken a clamped-spring direction, it keeps that Newton matrix until a full
    // step is accepted: back on the exact one too early, the iterates return to the fold
    // (docs/solver.md, "Compressed springs").
    const bool clamped = clamped_step && retry_with_clamped_springs(step, q, p, rep) == ClampedRetry::kClamped;
    bool trial_in_assembly = true;  // assembly_ holds the evaluation at the accepted trial
    refine_jac = clamped ? &clamped_jac_ : &jac_;
    // (The predictor moved the first matrix only if it shifted some point's force: r_predictor ≠ 0.)
    const bool correct = contact_correction_ && !(rep.iterations == 1 && assembly_.has_predictor() &&
                                                  (assembly_.r_predictor.array() != 0.0).any());
    NewtonStepResult it = newton_step(*this, model_.pattern(), *refine_jac, r_, q, norm, floor_for(norm), linear_tol,
                                      opt.max_halvings, trial_eval, newton_, rep,
                                      correct ? correct_contacts : no_correction);
    if (clamped) {
      ++rep.clamped_spring_iterations;
      // A full clamped step was accepted: the iterate has left the fold, and the exact
      // Jacobian converges quadratically from here (the clamped one only linearly).
      if (it.accepted && it.halvings == 0) clamped_step = false;
    }
    // No decrease, or only after kClampedRetryHalvings halvings, along the exact Newton
    // directions: typically near a fold of the exact Jacobian (compressed springs of a
    // crumpled sheet), where ‖r‖ creeps down by tiny steps until the iteration cap. Then the
    // direction of the clamped, positive semi-definite spring blocks is tried on the same
    // merit, and the lower of the two trials is kept.
    const ClampedRetry retry = !clamped && !it.at_floor && (!it.accepted || it.halvings >= kClampedRetryHalvings)
                                   ? retry_with_clamped_springs(step, q, p, rep)
                                   : ClampedRetry::kNotEvaluated;
    // A retry that found no compressed spring to clamp (or an inadmissible q) has still
    // evaluated assembly_ at q: the accepted trial's r and r_abs are gone from it, so the tests
    // below must not read it (the partials at the trial are formed by a full evaluation).
    if (retry == ClampedRetry::kNothingClamped) trial_in_assembly = false;
    if (retry == ClampedRetry::kClamped) {
      clamped_q_.swap(newton_.q_trial);  // the exact direction's trial (if accepted)
      const NewtonStepResult exact = it;
      it = newton_step(*this, model_.pattern(), clamped_jac_, r_, q, norm, floor_for(norm), linear_tol, opt.max_halvings,
                       trial_eval, newton_, rep);
      if (it.accepted && (!exact.accepted || it.trial < exact.trial)) {
        ++rep.clamped_spring_iterations;
        clamped_step = true;
      } else if (exact.accepted) {
        it = exact;
        it.halvings = std::max(it.halvings, 1);  // its partials at q are not in assembly_: re-evaluate
        trial_in_assembly = false;
        newton_.q_trial.swap(clamped_q_);
      } else {
        it = exact;
      }
    }
    if (it.at_floor) {
      rep.converged = true;
      rep.acceptance = it.tiny_step ? StepAcceptance::kTinyStep : StepAcceptance::kRoundoffFloor;
      rep.note = it.tiny_step ? "accepted: the Newton step no longer moves q" : "converged at the round-off floor of ‖r‖";
      // The line search's trials overwrote the evaluation at q, which the report reads.
      eval(q, EvalMode::kResidual, &why);
      break;
    }
    if (!it.accepted) {
      rep.failure = it.failure;
      break;
    }
    q = newton_.q_trial;
    full_last_step = it.halvings == 0;
    rep.residual_history.push_back(it.trial);
    // converged: the partials at q are not needed. resolved() reads assembly_, so the test is
    // made here only when assembly_ holds the accepted trial; after the clamped retry fell back
    // to the exact direction it holds the clamped trial's, and the test at the top of the loop
    // decides on the re-evaluation at q.
    if (it.trial < tol && trial_in_assembly && resolved()) {
      norm = it.trial;
      rep.converged = true;
      break;
    }
    // At the round-off floor (a trial evaluated without partials, whose evaluation assembly_
    // still holds): accepted without them, on the floor of this state's Σ|contributions| and
    // the last Jacobian's |J||q| (q moved by one Newton step since; the chord iterates' floor,
    // chord_floor, is formed alike). Else the partials at q are evaluated and the test at the
    // top of the loop decides.
    if (trial_in_assembly && !(it.halvings == 0 && eager)) {
      const double last_r_abs = floor_r_abs;
      floor_r_abs = assembly_.r_abs.norm();
      if (it.trial <= floor_for(it.trial)) {
        norm = it.trial;
        rep.converged = true;
        rep.acceptance = StepAcceptance::kRoundoffFloor;
        break;
      }
      floor_r_abs = last_r_abs;
    }
    // A full, undamped step on the exact Jacobian that shrank ‖r‖ by ρ: its LU takes the next step.
    if (chord_ahead && it.halvings == 0 && !clamped && !clamped_step && rep.damped_iterations == damped_before &&
        it.trial <= chord * norm) {
      norm = it.trial;
      chord_floor();
      chord_next = true;
      if (chord_depth > 0) chord_history_ = -1;  // a new chord sequence: no differences yet
      continue;
    }
    // The partials at q: from the accepted trial if it was evaluated with them, else added to
    // its residual-only evaluation (trials other than an eager first one are residual-only).
    norm = it.halvings == 0 && eager ? it.trial : complete_partials(&why);
    jacobian_and_floor();
  }
  last_step_iterations_ = rep.iterations;
  rep.residual_norm = norm;
  if (rep.converged) {
    rep.relative_residual = relative_residual(assembly_.r, assembly_.r_abs, &rep.relative_residual_body);
    // At the floor but within the relative tolerance (the absolute one lies below the
    // round-off of this step's forces), or with every body within its relative tolerance or
    // its own round-off floor while that floor is within kSilentFloorFactor × tolerance:
    // converged on the tolerance. A floor far above the tolerance means stiffness or |q|
    // swamp the body's forces (E = 1e30 Pa): flagged.
    if (rep.relative_residual <= rel_tol || (norm < kSilentFloorFactor * tol && resolved()))
      rep.acceptance = StepAcceptance::kTolerance;
  }
  rep.tolerance_used = std::max(tol_scaled, kRoundoffFactor * (floor_r_abs + exact_jq()));
  rep.wall_ms = ms_since(t_step);
  return rep;
}

void Simulator::chord_accelerate(const VecX& q, VecX& dq, int depth) {
  // Anderson mixing (type II, mixing parameter 1) of the fixed-point map g(x) = x + f(x),
  // f(x) = J₀⁻¹(−r(x)), the chord step on the kept LU J₀. With ΔX, ΔF the differences of the
  // last iterates and of their chord steps, γ = argmin ‖f − ΔF γ‖ and the next iterate is
  // x + f − (ΔX + ΔF) γ. For r linear near the root, f(x − ΔX γ) = f − ΔF γ, so this is the
  // chord step from the point of the iterates' affine span whose chord step is shortest — a
  // GMRES iteration on J₀⁻¹ J Δq = −J₀⁻¹ r (Walker & Ni 2011): the error components the plain
  // chord step contracts slowest (J₀ and J differ most) are removed first. The sequence's
  // first chord step is taken plain: the Newton step before it went from a point where r is
  // far from linear (its difference of chord steps is mostly the quadratic remainder), and
  // mixing it in measured worse (837 against 823 iterations on the sheet flip).
  const int n = static_cast<int>(q.size());
  if (chord_history_ < 0) {
    chord_history_ = 0;
    chord_x_prev_ = q;
    chord_f_prev_ = dq;
    return;
  }
  if (chord_dx_.rows() != n || chord_dx_.cols() != depth) {
    chord_dx_.resize(n, depth);
    chord_df_.resize(n, depth);
    chord_qr_.resize(n, depth);
  }
  // Newest difference first; the oldest beyond `depth` is dropped.
  const int used = std::min(chord_history_ + 1, depth);
  for (int k = used - 1; k >= 1; --k) {
    chord_dx_.col(k) = chord_dx_.col(k - 1);
    chord_df_.col(k) = chord_df_.col(k - 1);
  }
  chord_dx_.col(0) = q - chord_x_prev_;
  chord_df_.col(0) = dq - chord_f_prev_;
  chord_history_ = used;
  chord_x_prev_ = q;
  chord_f_prev_ = dq;
  // min ‖f − ΔF γ‖ by modified Gram–Schmidt, ΔF = Q R, newest column first; a column whose
  // part outside the newer ones is below 1e-10 of its length (no new direction) ends the
  // basis there, with the older ones.
  double r_mat[kMaxChordAcceleration][kMaxChordAcceleration] = {};
  double c[kMaxChordAcceleration] = {};
  int m = 0;
  for (int j = 0; j < used; ++j) {
    chord_qr_.col(j) = chord_df_.col(j);
    const double length = chord_qr_.col(j).norm();
    for (int i = 0; i < j; ++i) {
      r_mat[i][j] = chord_qr_.col(i).dot(chord_qr_.col(j));
      chord_qr_.col(j) -= r_mat[i][j] * chord_qr_.col(i);
    }
    const double rest = chord_qr_.col(j).norm();
    if (!(rest > 1e-10 * length)) break;
    r_mat[j][j] = rest;
    chord_qr_.col(j) /= rest;
    c[j] = chord_qr_.col(j).dot(dq);
    m = j + 1;
  }
  double gamma[kMaxChordAcceleration] = {};
  for (int i = m - 1; i >= 0; --i) {
    double sum = c[i];
    for (int j = i + 1; j < m; ++j) sum -= r_mat[i][j] * gamma[j];
    gamma[i] = sum / r_mat[i][i];
  }
  for (int j = 0; j < m; ++j) dq -= gamma[j] * (chord_dx_.col(j) + chord_df_.col(j));
}

Simulator::ClampedRetry Simulator::retry_with_clamped_springs(int step, const VecX& q, const VecX& p,
                                                              StepReport& rep) {
  if (!has_springs_) return ClampedRetry::kNotEvaluated;  // nothing to clamp: no assembly spent on it
  assembly_.clamp_compressed_springs = true;
  std::string why;
  const double norm =
      evaluate_trial(step, q, v_hist_, a_hist_, p, EvalMode::kResidualAndStepJacobian, v_, a_, assembly_, &why);
  assembly_.clamp_compressed_springs = false;
  ++rep.assemblies;
  if (!std::isfinite(norm)) return ClampedRetry::kNothingClamped;
  clamped_jac_.swap(assembly_.jac);
  return (clamped_jac_.array() != jac_.array()).any() ? ClampedRetry::kClamped : ClampedRetry::kNothingClamped;
}

}  // namespace addsim
