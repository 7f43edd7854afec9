#pragma once
/// Solves a sequence of sparse systems on one pattern — the step Jacobians of successive
/// Newton iterations and time steps (or of the adjoint's steps, backwards) — reusing one
/// LU factorisation across them: A x = b is solved by GMRES on the *current* matrix,
/// right-preconditioned with the LU of an earlier one, to a relative residual of
/// kRelativeTolerance, so the solution is that of A (not of the old matrix) to about the
/// accuracy of a direct solve, and Newton's iterates and converged states do not change
/// beyond round-off. A new factorisation is made when the GMRES work beyond one
/// iteration per solve has added up to the cost of one (or when a single solve would cost
/// more than refactorising, as soon as its convergence so far predicts that). The policy counts floating-point operations (from the factorisation's own
/// statistics), not time, so runs are reproducible bit for bit. docs/solver.md has the
/// measurements.
///
/// Rotation-compensated reuse: the step Jacobian of a body whose terms are isotropic
/// (FEM elasticity, viscosity, consistent mass) transforms under a rigid rotation R of the
/// body as A(R x) = Q A(x) Qᵀ with Q = diag(R, …, R) on its nodes. A tumbling body therefore
/// makes an old LU a poor preconditioner although its shape barely changed. For each
/// registered group of 3-DOF points (set_rotation_groups) the best-fit rotation R from the
/// configuration at the last factorisation to the current one (set_configuration; Kabsch's
/// SVD of the point covariance) is applied around the old LU: M⁻¹ = Q LU⁻¹ Qᵀ (for Aᵀ alike,
/// as Aᵀ ≈ Q A₀ᵀ Qᵀ). Contact and attachments break the invariance only locally; GMRES
/// still solves A (not M) to the tolerance, so only the iteration count depends on it.

#include <chrono>
#include <memory>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/solver/linear_solver.h"
#include "addsim/solver/worker_thread.h"

namespace addsim {

class ReusedFactorization {
 public:
  /// `lu` must be built on `pattern`. With `enabled` false every solve refactorises (the
  /// plain direct path, for comparisons).
  ReusedFactorization(const SparsePattern* pattern, std::unique_ptr<LinearSolver> lu, bool enabled = true);

  /// Solves A x = b (transpose: Aᵀ x = b) for the matrix with nonzero `values` on the
  /// pattern, to ‖b − A x‖ ≤ max(relative_tolerance() ‖b‖, absolute_tolerance) when GMRES
  /// runs; a direct solve (on a new LU) refines to that residual too with
  /// set_refine_to_tolerance() and absolute_tolerance > 0, else as LinearSolver::solve().
  /// False if A had to be factorised and is singular (x is then unspecified).
  /// `initial_guess` (optional) starts GMRES there (e.g. the previous system's solution).
  bool solve(const VecX& values, const VecX& b, VecX& x, bool transpose = false, double absolute_tolerance = 0.0,
             const VecX* initial_guess = nullptr);

  /// A group of `points` consecutive 3-DOF points starting at DOF `first_dof` that moves
  /// as one body (an FEM body's nodes).
  struct RotationGroup {
    int first_dof = 0;
    int points = 0;
  };
  /// Registers the groups whose rotation compensates the reused LU (none by default).
  void set_rotation_groups(std::vector<RotationGroup> groups);
  /// The configuration q of the system solved next (call before solve(); ignored without
  /// rotation groups). A factorisation records it as the groups' reference.
  void set_configuration(const VecX& q);

  /// Solves with the current LU as it stands, x = LU⁻¹ b (the rotation compensation
  /// applied as in GMRES's preconditioner), without GMRES or refactorising: the chord step
  /// of Simulator::solve_step (solver.chord_contraction). False without a current LU.
  bool solve_with_current_lu(const VecX& b, VecX& x);
  /// Forgets the factorisation: the next solve factorises (e.g. after a discontinuous
  /// change of the system such as a new contact active set).
  void invalidate() { have_lu_ = false; }
  /// Back to the state after construction, keeping the symbolic analysis and the
  /// workspaces: no LU, no reuse bookkeeping, no background factorisation (a running one is
  /// waited for and discarded). Simulator::run calls it first, so that a run's result does
  /// not depend on the runs the same simulator made before (optimisers and batches reuse
  /// simulators; their evaluations must depend only on the parameters).
  void reset();

  /// Factorisation ahead, on a second core (two-thread forward runs). With a worker and a
  /// second solver on the same pattern (`spare`), factorize_in_background() hands a copy of
  /// a matrix to the worker, which factorises it into the spare while solves go on with the
  /// current LU; install_background() makes it the current LU. The caller calls both at
  /// fixed points of its algorithm and the adoption depends on counted work only, so which
  /// LU preconditions which solve never depends on timing and runs are reproducible bit for
  /// bit. A foreground factorisation made in between supersedes the background one (it is
  /// of a later matrix), which is then dropped. `worker` must outlive the background job
  /// (not this object).
  void set_background(WorkerThread* worker, std::unique_ptr<LinearSolver> spare);
  bool has_background() const { return worker_ != nullptr; }
  /// Lets the LU, and the spare if set_background gave one, fork work to `worker` inside
  /// their factorisations (LinearSolver::set_worker; BlockSchurLu's subtrees).
  void set_worker(WorkerThread* worker) {
    lu_->set_worker(worker);
    if (spare_) spare_->set_worker(worker);
  }
  /// Starts factorising the matrix with nonzero `values`, linearised at configuration q
  /// (the rotation reference of that LU), unless a background factorisation is already
  /// pending or the next solve would refactorise anyway. True if started.
  bool factorize_in_background(const VecX& values, const VecX& q);
  /// True while the worker is still factorising (non-blocking). Once it has finished the
  /// worker is free for other fork–join work; the LU waits for install_background().
  bool background_running();
  /// Adopts a pending background factorisation, waiting for the worker if it has not
  /// finished, once the solves since its submission have done GMRES iterations worth one
  /// factorisation (reused_factorization.cpp); before that, and without one, a no-op.
  /// True if an LU was adopted. A superseded or singular one is dropped.
  bool install_background();

  /// Makes `lu`, a solver on the same pattern already factorised (successfully) for the
  /// matrix linearised at configuration `reference`, the current LU, as if this object had
  /// factorised it (e.g. on another thread); returns the previous solver, for reuse.
  std::unique_ptr<LinearSolver> adopt(std::unique_ptr<LinearSolver> lu, const VecX& reference);

  const char* name() const { return lu_->name(); }
  /// True if solves reuse LUs: enabled, and the solver reports the flop counts the reuse
  /// rule needs (UMFPACK, dense LU).
  bool reuses() const { return enabled_ && lu_->counts_flops(); }

  /// Counters since construction: factorisations, solves, GMRES iterations, and the time
  /// (ms) spent factorising and solving (solve time includes GMRES).
  struct Stats {
    long factorizations = 0, solves = 0, krylov_iterations = 0;
    /// Solves by substitution on a new LU (after a factorisation), the rest of `solves`
    /// being GMRES on a kept one or solve_with_current_lu().
    long direct_solves = 0;
    double factor_ms = 0.0, solve_ms = 0.0;
    /// Factorisations made in the background and adopted (not in `factorizations`), and
    /// the worker's time on all of them (off the caller's critical path).
    long background_factorizations = 0;
    double background_ms = 0.0;
  };
  const Stats& stats() const { return stats_; }
  /// Whether factor_ms and solve_ms are measured (off by default: two clock reads per
  /// factorisation and per solve, ≈ 1 % of a 75-DOF step; Simulator::set_phase_timing).
  void set_timing(bool on) { timed_ = on; }

  /// Relative residual ‖b − A x‖ / ‖b‖ at which GMRES stops (default).
  static constexpr double kRelativeTolerance = 1e-12;
  /// Sets the relative residual at which GMRES stops; kRelativeTolerance by default. Throws
  /// InternalError outside (0, 1).
  void set_relative_tolerance(double tolerance);
  double relative_tolerance() const { return relative_tolerance_; }
  /// With `enabled` (the default), GMRES gives up on the old LU as soon as its convergence so
  /// far predicts more iterations than a refactorisation costs (instead of after that many;
  /// thresholds in reused_factorization.cpp). The solution is unchanged, only the work.
  void set_early_refactorization(bool enabled) { early_refactorization_ = enabled; }
  /// With `enabled` (solver.refine_to_tolerance), a direct solve given an absolute tolerance
  /// stops its iterative refinement once the residual meets the tolerance GMRES would stop at
  /// (LinearSolver::solve_within); off by default: refinement while the residual halves.
  void set_refine_to_tolerance(bool enabled) { refine_to_tolerance_ = enabled; }
  /// The refinement counters of the current LU's solver (null if it does not refine; after
  /// adopt() those of the adopted solver).
  const RefinementCounts* refinement_counts() const { return lu_->refinement_counts(); }

 private:
  bool factorize(const VecX& values);
  /// The clock if timed_, else a default time point (no clock read).
  std::chrono::steady_clock::time_point start_timer() const;
  /// Milliseconds since t0 if timed_, else 0.
  double stop_timer(std::chrono::steady_clock::time_point t0) const;
  // Resets the reuse bookkeeping for a new current LU of the matrix at `reference`.
  void adopt_lu(const VecX& reference);
  // GMRES with the current LU as right preconditioner; true if it reached the tolerance
  // within max_iterations (x set), and the iterations it took.
  bool gmres(const VecX& values, const VecX& b, VecX& x, bool transpose, double target, int max_iterations,
             int& iterations);
  void multiply(const VecX& values, const VecX& x, VecX& y, bool transpose) const;
  // z = M⁻¹ y with the rotation compensation of the groups (plain LU solve without).
  void precondition(const VecX& y, VecX& z, bool transpose);

  const SparsePattern* pattern_;
  std::unique_ptr<LinearSolver> lu_;
  bool enabled_;
  bool have_lu_ = false;
  bool refactor_next_ = false;
  double relative_tolerance_ = kRelativeTolerance;
  bool early_refactorization_ = true;
  bool refine_to_tolerance_ = false;
  bool timed_ = false;  ///< set_timing
  // Cost of one factorisation in units of one GMRES iteration (flop ratio).
  double factor_to_iteration_ = 0.0;
  // GMRES iterations beyond one per solve since the last factorisation.
  double excess_iterations_ = 0.0;
  Stats stats_;
  std::vector<RotationGroup> groups_;
  VecX configuration_, reference_;         ///< current q, and q at the last factorisation
  std::vector<Mat3> rotations_;            ///< per group: best-fit rotation reference → current
  bool rotated_ = false;                   ///< rotations_ hold the fit for the current configuration
  VecX rotated_rhs_;
  std::vector<VecX> basis_, preconditioned_;
  VecX w_, residual_, guess_residual_;
  Eigen::MatrixXd hessenberg_;             ///< GMRES Hessenberg matrix (with Givens rotations applied)
  Eigen::VectorXd rhs_, cos_, sin_;        ///< GMRES rotated right-hand side and rotations
  // Background factorisation (set_background).
  enum class Background { kNone, kRunning, kFinished };
  WorkerThread* worker_ = nullptr;
  std::unique_ptr<LinearSolver> spare_;    ///< the LU being factorised in the background
  Background background_ = Background::kNone;
  bool background_ok_ = false;             ///< the worker's factorisation succeeded
  bool superseded_ = false;                ///< a foreground factorisation came after the submission
  double background_task_ms_ = 0.0;
  double background_work_ = 0.0;           ///< GMRES iterations since the submission
  VecX background_values_, background_reference_;
};

/// The rotation groups of `model`: one per FEM body (its nodes).
std::vector<ReusedFactorization::RotationGroup> fem_rotation_groups(const Model& model);

/// The step-Jacobian solver of `model`, as the forward run, the adjoint and the direct pass
/// use it: its solver.linear_solver and solver.reuse_factorization, and its FEM bodies'
/// rotations compensated in the reuse. `options`: the factors' arithmetic and pivot choice —
/// the forward run passes the model's solver().factorization, the sensitivities keep the
/// defaults (double, partial pivoting).
std::unique_ptr<ReusedFactorization> make_step_solver(const Model& model, const FactorizationOptions& options = {});

}  // namespace addsim
