#pragma once
/// Sparse LU for the step Jacobian over a fixed pattern: the symbolic analysis is done
/// once per pattern (DESIGN.md §5) and each Newton iteration only refactorises. Backed by
/// SuiteSparse UMFPACK (GPL, optional at build time) or KLU, Eigen's SparseLU, or a dense
/// LU for small systems. All solve with A and with Aᵀ (the adjoint needs the transpose).

#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "addsim/math/sparse_assembly.h"
#include "addsim/model/model.h"

namespace addsim {

/// Counters of refine_direct_solve(): what the refinement of direct solves costs, and how
/// much of it the callers' tolerances needed (docs/solver.md, "Direct solves to the
/// requested tolerance").
struct RefinementCounts {
  long solves = 0;         ///< refined direct solves
  long products = 0;       ///< residual products b − A x
  long substitutions = 0;  ///< refinement substitutions (beyond each solve's first)
  long with_tolerance = 0; ///< solves given a tolerance (solve_within)
  /// Of those, by the refinements done when the residual was first seen within the
  /// tolerance: met_after[k] after k refinements; `unmet` if no computed residual met it
  /// (the one after the last refinement is not computed).
  long met_after[3] = {0, 0, 0};
  long unmet = 0;
};
class WorkerThread;

class LinearSolver {
 public:
  virtual ~LinearSolver() = default;
  /// Refactorises with new values on the pattern given at construction; false if singular.
  virtual bool factorize(const VecX& values) = 0;
  /// x = A⁻¹ b (transpose = false) or A⁻ᵀ b; uses the last factorisation.
  virtual void solve(const VecX& b, VecX& x, bool transpose = false) = 0;
  /// solve() for a caller that needs only ‖b − A x‖ ≤ `tolerance` (a Newton direction to the
  /// inexact-Newton forcing): with `stop_at_tolerance`, a solver that refines iteratively
  /// (refine_direct_solve) stops refining once the residual meets it; without, it refines as
  /// solve() does and only counts when the tolerance was met (refinement_counts()). Others
  /// solve as solve().
  virtual void solve_within(const VecX& b, VecX& x, bool transpose, double tolerance, bool stop_at_tolerance) {
    (void)tolerance;
    (void)stop_at_tolerance;
    solve(b, x, transpose);
  }
  /// x ≈ A⁻¹ b as a preconditioner: like solve() but without refinement steps.
  virtual void precondition(const VecX& b, VecX& x, bool transpose = false) { solve(b, x, transpose); }
  /// Flops of the last numeric factorisation and of one solve with it (0 if unknown: then
  /// ReusedFactorization never reuses the factorisation).
  virtual double factor_flops() const { return 0.0; }
  virtual double solve_flops() const { return 0.0; }
  /// True if factor_flops() and solve_flops() are reported after a factorisation.
  virtual bool counts_flops() const { return false; }
  virtual const char* name() const = 0;
  /// The counters of refine_direct_solve() since construction; null for solvers that do
  /// not refine.
  virtual const RefinementCounts* refinement_counts() const { return nullptr; }
  /// A helper thread the factorisation may fork work to (null: none); ignored by default.
  virtual void set_worker(WorkerThread*) {}
};

/// Work vectors of refine_direct_solve(), kept by the solver so that a solve allocates nothing.
struct RefinementWork {
  VecX product, residual, correction;
  RefinementCounts counts;
};

/// Iterative refinement of a direct solve whose pivoting is restricted (KLU's pivot order kept
/// across refactorisations, the block LU's pivots within blocks), so that a poorly conditioned
/// pivot may cost digits: given x = A⁻¹ b (or A⁻ᵀ b) from `substitute(b, x, transpose)`,
/// x += A⁻¹ (b − A x) while the residual norm falls by half or more, at most `max_steps` times.
/// With `tolerance` > 0 and `stop_at_tolerance`, it also stops once ‖b − A x‖ ≤ tolerance (the
/// accuracy the caller asked for; without `stop_at_tolerance` the tolerance is only counted).
template <class Substitute>
void refine_direct_solve(const SparsePattern& pattern, const VecX& values, const VecX& b, VecX& x,
                         bool transpose, int max_steps, RefinementWork& work, Substitute&& substitute,
                         double tolerance = 0.0, bool stop_at_tolerance = false) {
  RefinementCounts& counts = work.counts;
  ++counts.solves;
  const bool counted = tolerance > 0.0;
  if (counted) ++counts.with_tolerance;
  bool met = false;
  double last = std::numeric_limits<double>::infinity();
  for (int step = 0; step < max_steps; ++step) {
    work.product.setZero(x.size());
    if (transpose)
      pattern.transpose_multiply_add(values, x, work.product);
    else
      pattern.multiply_add(values, x, work.product);
    ++counts.products;
    work.residual = b - work.product;
    const double norm = work.residual.norm();
    if (counted && !met && norm <= tolerance) {
      met = true;
      ++counts.met_after[std::min(step, 2)];
      if (stop_at_tolerance) return;
    }
    if (!(norm < 0.5 * last) || norm == 0.0) break;
    last = norm;
    substitute(work.residual, work.correction, transpose);
    ++counts.substitutions;
    x += work.correction;
  }
  if (counted && !met) ++counts.unmet;
}

/// True for the solver kinds whose factorisation takes the forward Newton's options other than
/// their defaults — single-precision factors (solver.factorization_precision = "single") and a
/// pivot threshold below 1 (solver.pivot_threshold): `"banded"` (BandedLu) only. kAuto is not
/// among them: the choice must be explicit.
inline bool supports_factorization_options(LinearSolverKind kind) { return kind == LinearSolverKind::kBanded; }
/// The end of the one-line reason such an option is refused for another kind.
inline constexpr const char* kFactorizationOptionNeedsBanded =
    "needs solver.linear_solver = \"banded\" (the solver with single-precision factors and a pivot threshold)";

/// Creates the solver `kind` for `pattern` (kAuto: dense below 300 DOF, KLU below 1,000,
/// CHOLMOD-BiCGSTAB from 4,000 DOF when built with SuiteSparse, UMFPACK in between; Eigen
/// SparseLU without it), factorising with `options` (other than the defaults only where
/// supports_factorization_options). Throws InputError if kUmfpack, kKlu or kCholmodBicgstab is
/// requested but not available, kSingle for a kind without a single-precision factorisation,
/// or a threshold below 1 for a kind without one.
std::unique_ptr<LinearSolver> make_linear_solver(LinearSolverKind kind, const SparsePattern* pattern,
                                                 const FactorizationOptions& options = {});

/// Limits BLAS to one thread and stops OpenBLAS's worker pool, unless OPENBLAS_NUM_THREADS is
/// set (found at run time: a no-op with other BLAS libraries). Every solver that calls BLAS or
/// LAPACK calls it first (make_linear_solver, BlockSchurLu's constructor); idempotent.
void limit_blas_threads();

/// True if this build links UMFPACK.
bool have_umfpack();
/// True if this build links KLU.
bool have_klu();

/// Keeps freed heap memory in the process (glibc: mmap threshold 32 MiB, trim threshold
/// 1 GiB, unless MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ are set), so that repeated
/// sparse factorisations do not page-fault their memory in again (docs/solver.md). It changes
/// the whole process's allocator, so the library never calls it by itself: the `addsim`
/// executable and the benchmarks opt in at start-up; a host such as Python may set the two
/// environment variables instead. Idempotent; a no-op without glibc.
void keep_freed_memory();

}  // namespace addsim
