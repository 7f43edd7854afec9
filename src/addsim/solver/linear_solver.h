#pragma once
/// Sparse LU for the step Jacobian over a fixed pattern: the symbolic analysis is done
/// once per pattern (DESIGN.md §5) and each Newton iteration only refactorises. Backed by
/// SuiteSparse UMFPACK (GPL, optional at build time) or KLU, Eigen's SparseLU, or a dense
/// LU for small systems. All solve with A and with Aᵀ (the adjoint needs the transpose).

#include <limits>
#include <memory>
#include <string>

#include "addsim/math/sparse_assembly.h"
#include "addsim/model/model.h"

namespace addsim {

class WorkerThread;

class LinearSolver {
 public:
  virtual ~LinearSolver() = default;
  /// Refactorises with new values on the pattern given at construction; false if singular.
  virtual bool factorize(const VecX& values) = 0;
  /// x = A⁻¹ b (transpose = false) or A⁻ᵀ b; uses the last factorisation.
  virtual void solve(const VecX& b, VecX& x, bool transpose = false) = 0;
  /// x ≈ A⁻¹ b as a preconditioner: like solve() but without refinement steps.
  virtual void precondition(const VecX& b, VecX& x, bool transpose = false) { solve(b, x, transpose); }
  /// Flops of the last numeric factorisation and of one solve with it (0 if unknown: then
  /// ReusedFactorization never reuses the factorisation).
  virtual double factor_flops() const { return 0.0; }
  virtual double solve_flops() const { return 0.0; }
  /// True if factor_flops() and solve_flops() are reported after a factorisation.
  virtual bool counts_flops() const { return false; }
  virtual const char* name() const = 0;
  /// A helper thread the factorisation may fork work to (null: none); ignored by default.
  virtual void set_worker(WorkerThread*) {}
};

/// Work vectors of refine_direct_solve(), kept by the solver so that a solve allocates nothing.
struct RefinementWork {
  VecX product, residual, correction;
};

/// Iterative refinement of a direct solve whose pivoting is restricted (KLU's pivot order kept
/// across refactorisations, the block LU's pivots within blocks), so that a poorly conditioned
/// pivot may cost digits: given x = A⁻¹ b (or A⁻ᵀ b) from `substitute(b, x, transpose)`,
/// x += A⁻¹ (b − A x) while the residual norm falls by half or more, at most `max_steps` times.
template <class Substitute>
void refine_direct_solve(const SparsePattern& pattern, const VecX& values, const VecX& b, VecX& x,
                         bool transpose, int max_steps, RefinementWork& work, Substitute&& substitute) {
  double last = std::numeric_limits<double>::infinity();
  for (int step = 0; step < max_steps; ++step) {
    work.product.setZero(x.size());
    if (transpose)
      pattern.transpose_multiply_add(values, x, work.product);
    else
      pattern.multiply_add(values, x, work.product);
    work.residual = b - work.product;
    const double norm = work.residual.norm();
    if (!(norm < 0.5 * last) || norm == 0.0) break;
    last = norm;
    substitute(work.residual, work.correction, transpose);
    x += work.correction;
  }
}

/// Creates the solver `kind` for `pattern` (kAuto: dense below 300 DOF, KLU below 1,000,
/// CHOLMOD-BiCGSTAB from 4,000 DOF when built with SuiteSparse, UMFPACK in between; Eigen
/// SparseLU without it). Throws InputError if kUmfpack, kKlu or kCholmodBicgstab is
/// requested but not available.
std::unique_ptr<LinearSolver> make_linear_solver(LinearSolverKind kind, const SparsePattern* pattern);

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
