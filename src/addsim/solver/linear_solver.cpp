#include "addsim/solver/linear_solver.h"

#include <Eigen/LU>
#include <Eigen/SparseLU>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <mutex>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "addsim/core/error.h"
#include "addsim/solver/banded_lu.h"
#include "addsim/solver/block_schur_lu.h"
#include "addsim/solver/cholmod_bicgstab.h"

#ifdef ADDSIM_HAVE_UMFPACK
#include <umfpack.h>
#endif
#ifdef ADDSIM_HAVE_KLU
#include <klu.h>
#endif

namespace addsim {

namespace {

class EigenLu final : public LinearSolver {
 public:
  explicit EigenLu(const SparsePattern* pattern) {
    values_ = VecX::Zero(pattern->nnz());
    matrix_ = pattern->make_matrix(values_);
    lu_.analyzePattern(matrix_);
  }
  bool factorize(const VecX& values) override {
    // The pattern is fixed: overwrite the value array in place and refactorise.
    Eigen::Map<VecX>(matrix_.valuePtr(), matrix_.nonZeros()) = values;
    lu_.factorize(matrix_);
    return lu_.info() == Eigen::Success;
  }
  void solve(const VecX& b, VecX& x, bool transpose) override {
    if (transpose)
      x = lu_.transpose().solve(b);
    else
      x = lu_.solve(b);
  }
  const char* name() const override { return "eigen_sparselu"; }

 private:
  VecX values_;
  SparseMat matrix_;
  Eigen::SparseLU<SparseMat, Eigen::COLAMDOrdering<int>> lu_;
};

// Dense LU with partial pivoting of the pattern's matrix: for systems of a few dozen DOFs
// (rigid bodies, small articulated models) the dense kernels beat any sparse factorisation's
// bookkeeping. Its flop counts are exact (2n³/3 to factorise, 2n² to solve), so
// ReusedFactorization can reuse it.
class DenseLu final : public LinearSolver {
 public:
  explicit DenseLu(const SparsePattern* pattern) : pattern_(pattern), dense_(MatX::Zero(pattern->size(), pattern->size())) {}
  bool factorize(const VecX& values) override {
    const auto& outer = pattern_->outer();
    const auto& inner = pattern_->inner();
    for (int c = 0; c < pattern_->size(); ++c)
      for (int k = outer[c]; k < outer[c + 1]; ++k) dense_(inner[k], c) = values[k];
    lu_.compute(dense_);
    // Partial pivoting reports no failure: a zero or non-finite pivot means singular.
    const auto pivots = lu_.matrixLU().diagonal();
    return pivots.allFinite() && (pivots.array() != 0.0).all();
  }
  void solve(const VecX& b, VecX& x, bool transpose) override {
    if (transpose)
      x = lu_.transpose().solve(b);
    else
      x = lu_.solve(b);
  }
  double factor_flops() const override {
    const double n = pattern_->size();
    return 2.0 * n * n * n / 3.0;
  }
  double solve_flops() const override {
    const double n = pattern_->size();
    return 2.0 * n * n;
  }
  bool counts_flops() const override { return true; }
  const char* name() const override { return "dense_lu"; }

 private:
  const SparsePattern* pattern_;
  MatX dense_;  ///< entries outside the pattern stay zero
  Eigen::PartialPivLU<MatX> lu_;
};

#ifdef ADDSIM_HAVE_UMFPACK
class Umfpack final : public LinearSolver {
 public:
  explicit Umfpack(const SparsePattern* pattern) : pattern_(pattern), values_(VecX::Zero(pattern->nnz())) {
    umfpack_di_defaults(control_);
    // The pattern (a union of dense stencil blocks) is structurally symmetric with a full
    // diagonal. Without values at the symbolic analysis UMFPACK's automatic choice takes the
    // unsymmetric strategy (COLAMD on AᵀA), whose LU has 2.2× the fill and 4.4× the flops of
    // the symmetric one (AMD on A + Aᵀ, diagonal pivots preferred) on the tori-drop Jacobian;
    // off-diagonal pivots are still taken when a diagonal one fails the threshold test.
    control_[UMFPACK_STRATEGY] = UMFPACK_STRATEGY_SYMMETRIC;
    std::copy(std::begin(control_), std::end(control_), std::begin(control_plain_));
    control_plain_[UMFPACK_IRSTEP] = 0;
    const int n = pattern->size();
    const int status = umfpack_di_symbolic(n, n, pattern->outer().data(), pattern->inner().data(), nullptr,
                                           &symbolic_, control_, info_);
    if (status != UMFPACK_OK) throw InternalError("UMFPACK symbolic analysis failed: status " + std::to_string(status));
  }
  ~Umfpack() override {
    if (numeric_) umfpack_di_free_numeric(&numeric_);
    if (symbolic_) umfpack_di_free_symbolic(&symbolic_);
  }
  bool factorize(const VecX& values) override {
    values_ = values;
    if (numeric_) umfpack_di_free_numeric(&numeric_);
    const int status = umfpack_di_numeric(pattern_->outer().data(), pattern_->inner().data(), values_.data(),
                                          symbolic_, &numeric_, control_, info_);
    factor_flops_ = info_[UMFPACK_FLOPS];
    solve_flops_ = 2.0 * (info_[UMFPACK_LNZ] + info_[UMFPACK_UNZ]);
    return status == UMFPACK_OK;
  }
  double factor_flops() const override { return status_ok(factor_flops_); }
  double solve_flops() const override { return status_ok(solve_flops_); }
  bool counts_flops() const override { return true; }
  void precondition(const VecX& b, VecX& x, bool transpose) override { solve_with(b, x, transpose, control_plain_); }
  void solve(const VecX& b, VecX& x, bool transpose) override { solve_with(b, x, transpose, control_); }
  const char* name() const override { return "umfpack"; }

 private:
  const SparsePattern* pattern_;
  VecX values_;
  void* symbolic_ = nullptr;
  void* numeric_ = nullptr;
  double control_[UMFPACK_CONTROL];
  double control_plain_[UMFPACK_CONTROL];  ///< no iterative refinement (preconditioner use)
  double info_[UMFPACK_INFO];
  double factor_flops_ = 0.0, solve_flops_ = 0.0;

  static double status_ok(double v) { return std::isfinite(v) && v > 0.0 ? v : 0.0; }
  // Workspace of umfpack_di_wsolve (n ints, 5n doubles with iterative refinement): kept
  // across solves, as umfpack_di_solve would allocate it on every call.
  std::vector<int> work_int_;
  std::vector<double> work_;

  void solve_with(const VecX& b, VecX& x, bool transpose, double* control) {
    x.resize(b.size());
    work_int_.resize(b.size());
    work_.resize(5 * b.size());
    double info[UMFPACK_INFO];
    const int status = umfpack_di_wsolve(transpose ? UMFPACK_At : UMFPACK_A, pattern_->outer().data(),
                                         pattern_->inner().data(), values_.data(), x.data(), b.data(), numeric_,
                                         control, info, work_int_.data(), work_.data());
    ADDSIM_CHECK(status == UMFPACK_OK || status == UMFPACK_WARNING_singular_matrix, "UMFPACK solve failed");
  }
};
#endif


#ifdef ADDSIM_HAVE_KLU
// SuiteSparse KLU [Davis & Palamadai Natarajan 2010]: AMD ordering once per pattern, then a
// left-looking sparse LU without frontal matrices or BLAS calls, so its per-call overhead is
// small where UMFPACK's multifrontal bookkeeping dominates (a few hundred DOFs). Later
// factorisations keep the pivot sequence of the last full one (klu_refactor: no pivot
// search, 2.5× faster than UMFPACK on the 402-DOF soft-feet quadruped, docs/solver.md)
// while its pivot growth stays within kMinGrowthRatio of that full factorisation's;
// otherwise, or on a zero pivot, KLU pivots afresh. Solves add iterative refinement until
// the residual stops shrinking (as UMFPACK does), so a kept pivot order that lost accuracy
// still yields a solution to round-off.
class Klu final : public LinearSolver {
 public:
  explicit Klu(const SparsePattern* pattern) : pattern_(pattern) {
    klu_defaults(&common_);
    symbolic_ = klu_analyze(pattern->size(), outer(), inner(), &common_);
    if (!symbolic_) throw InternalError("KLU symbolic analysis failed: status " + std::to_string(common_.status));
  }
  ~Klu() override {
    if (numeric_) klu_free_numeric(&numeric_, &common_);
    klu_free_symbolic(&symbolic_, &common_);
  }
  bool factorize(const VecX& values) override {
    values_ = values;
    // Refactorisation on the kept pivot order, accepted while its reciprocal pivot growth
    // (max |A| / max |U| per column, at most 1) is not far below the full factorisation's.
    if (numeric_ && klu_refactor(outer(), inner(), values_.data(), symbolic_, numeric_, &common_) &&
        klu_rgrowth(outer(), inner(), values_.data(), symbolic_, numeric_, &common_) &&
        common_.rgrowth >= kMinGrowthRatio * full_growth_)
      return true;
    if (numeric_) klu_free_numeric(&numeric_, &common_);
    numeric_ = klu_factor(outer(), inner(), values_.data(), symbolic_, &common_);
    if (!numeric_ || common_.status != KLU_OK) {
      if (numeric_) klu_free_numeric(&numeric_, &common_);
      return false;
    }
    // The flop counts are those of the pivot order, kept until the next full factorisation.
    klu_flops(symbolic_, numeric_, &common_);
    factor_flops_ = common_.flops;
    solve_flops_ = 2.0 * (static_cast<double>(numeric_->lnz) + static_cast<double>(numeric_->unz));
    full_growth_ = klu_rgrowth(outer(), inner(), values_.data(), symbolic_, numeric_, &common_) ? common_.rgrowth : 0.0;
    return true;
  }
  void precondition(const VecX& b, VecX& x, bool transpose) override { substitute(b, x, transpose); }
  void solve(const VecX& b, VecX& x, bool transpose) override { solve_within(b, x, transpose, 0.0, false); }
  void solve_within(const VecX& b, VecX& x, bool transpose, double tolerance, bool stop_at_tolerance) override {
    substitute(b, x, transpose);
    refine_direct_solve(
        *pattern_, values_, b, x, transpose, kMaxRefinements, refinement_,
        [this](const VecX& rhs, VecX& out, bool t) { substitute(rhs, out, t); }, tolerance, stop_at_tolerance);
  }
  const RefinementCounts* refinement_counts() const override { return &refinement_.counts; }
  double factor_flops() const override { return factor_flops_; }
  double solve_flops() const override { return solve_flops_; }
  bool counts_flops() const override { return true; }
  const char* name() const override { return "klu"; }

 private:
  // Below this fraction of the last full factorisation's reciprocal pivot growth a kept pivot
  // order is abandoned (growth 100× worse costs two digits; refinement recovers them).
  static constexpr double kMinGrowthRatio = 1e-2;
  static constexpr int kMaxRefinements = 2;

  const SparsePattern* pattern_;
  klu_common common_;
  klu_symbolic* symbolic_ = nullptr;
  klu_numeric* numeric_ = nullptr;
  VecX values_;
  RefinementWork refinement_;
  double factor_flops_ = 0.0, solve_flops_ = 0.0, full_growth_ = 0.0;

  // KLU takes non-const arrays but does not write them.
  int* outer() const { return const_cast<int*>(pattern_->outer().data()); }
  int* inner() const { return const_cast<int*>(pattern_->inner().data()); }
  void substitute(const VecX& b, VecX& x, bool transpose) {
    x = b;
    const int n = static_cast<int>(b.size());
    const int ok = transpose ? klu_tsolve(symbolic_, numeric_, n, 1, x.data(), &common_)
                             : klu_solve(symbolic_, numeric_, n, 1, x.data(), &common_);
    ADDSIM_CHECK(ok, "KLU solve failed");
  }
};
#endif

}  // namespace

bool have_umfpack() {
#ifdef ADDSIM_HAVE_UMFPACK
  return true;
#else
  return false;
#endif
}

bool have_klu() {
#ifdef ADDSIM_HAVE_KLU
  return true;
#else
  return false;
#endif
}

// UMFPACK and CHOLMOD call BLAS on dense frontal blocks of a few hundred rows at most.
// OpenBLAS's thread pool then costs far more than it saves (UMFPACK refactorisation of the
// cylinder-drop Jacobian: 116 ms with the default threads vs 6.8 ms with one, on 2 cores)
// and competes with parallel rollouts. Unless the user set OPENBLAS_NUM_THREADS, BLAS is
// limited to one thread, found at run time so that any BLAS implementation links.
//
// Limiting the count does not stop the pool OpenBLAS (pthreads build) starts when the library
// loads: each worker polls its queue with sched_yield for 2^28 TSC ticks (≈ 0.1 s) after its
// last job before it sleeps, so every process spent up to ≈ 0.1 s of CPU per extra worker at
// start-up when a core was free (`addsim simulate` of the soft-feet quadruped: user + sys
// 0.32 s → 0.24 s, sys 0.10 → 0.03 s, same bits; docs/solver.md). With one thread no job is
// ever queued, so the pool is shut down (`blas_thread_shutdown_`, exported by OpenBLAS for its
// fork handlers); a caller that raises the count again later gets it back, as OpenBLAS
// restarts a stopped pool lazily at its next threaded call.
void limit_blas_threads() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
    using SetThreads = void (*)(int);
    auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    if (set == nullptr) return;
    set(1);
    using Shutdown = int (*)();
    if (auto shutdown = reinterpret_cast<Shutdown>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) shutdown();
  });
}

// Every numeric factorisation allocates UMFPACK's (or CHOLMOD's) work and factor memory —
// several MB for a few thousand DOFs — and frees the previous one. glibc serves such blocks
// by mmap or returns the top of the heap to the kernel on free (trim), so every
// factorisation page-faulted its memory in again (zero-filled by the kernel): on the bunny
// throw (2,631 DOF, 50 LUs) 89,000 minor page faults and 0.25 s of system time against 2.2 s
// of user time. Keeping freed memory in the process (heap allocation up to glibc's maximum
// mmap threshold, 32 MiB on 64 bit, and no trimming below 1 GiB of free heap) leaves 10,000
// faults and 0.05 s; the numbers computed are the same bit for bit. Unless the user set
// glibc's own variables. Process-wide, hence opt-in (linear_solver.h).
void keep_freed_memory() {
#ifdef __GLIBC__
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
  });
#endif
}

std::unique_ptr<LinearSolver> make_linear_solver(LinearSolverKind kind, const SparsePattern* pattern,
                                                 const FactorizationOptions& options) {
  limit_blas_threads();
  if (options.pivot_threshold != 1.0 && !supports_factorization_options(kind))
    throw InputError(std::string("solver.pivot_threshold: below 1 ") + kFactorizationOptionNeedsBanded);
  if (options.precision == FactorizationPrecision::kSingle) {
    if (!supports_factorization_options(kind))
      throw InputError(std::string("solver.factorization_precision: \"single\" ") + kFactorizationOptionNeedsBanded);
    return std::make_unique<BandedLu>(pattern, options);
  }
  // kAuto: from kIterativeMinDofs DOFs on, the CHOLMOD-preconditioned BiCGSTAB (3× faster
  // per refactorisation than UMFPACK on an 8,232-DOF soft cube, docs/solver.md; it falls
  // back to UMFPACK by itself where it does not pay). Below, UMFPACK's LU reused across
  // Newton iterations and steps (solver/reused_factorization.h) is faster: tori drop,
  // 2,184 DOF, 7.6 s vs 15.2 s (same session, under load).
  constexpr int kIterativeMinDofs = 4000;
  if (kind == LinearSolverKind::kAuto && pattern->size() >= kIterativeMinDofs) {
    if (auto solver = make_cholmod_bicgstab(pattern)) return solver;
  }
  // Below kDenseMaxDofs a dense LU (reused like UMFPACK's) beats both sparse LUs, whose
  // bookkeeping dominates small systems: quadruped (78 DOF) 15.9 vs 24.1 ms with Eigen's
  // SparseLU, 75-DOF sheet 16.3 vs 22.3 ms; UMFPACK's per-call overhead is larger still
  // there (docs/solver.md). At 465 DOF (soft ball) UMFPACK is faster again.
  constexpr int kDenseMaxDofs = 300;
  if (kind == LinearSolverKind::kAuto && pattern->size() < kDenseMaxDofs) return std::make_unique<DenseLu>(pattern);
  if (kind == LinearSolverKind::kDense) return std::make_unique<DenseLu>(pattern);
  if (kind == LinearSolverKind::kBanded) return std::make_unique<BandedLu>(pattern, options);
  if (kind == LinearSolverKind::kSchur) return std::make_unique<BlockSchurLu>(pattern);
  if (kind == LinearSolverKind::kCholmodBicgstab) {
    auto solver = make_cholmod_bicgstab(pattern);
    if (!solver)
      throw InputError("solver.linear_solver = \"cholmod\" but this build has no CHOLMOD (ADDSIM_WITH_UMFPACK=OFF or not found)");
    return solver;
  }
  // From kDenseMaxDofs to kKluMaxDofs KLU, whose refactorisation on a kept pivot order
  // beats UMFPACK's where the latter's multifrontal bookkeeping dominates: soft-feet
  // quadruped (402 DOF) 0.19 vs 0.48 ms CPU per factorisation, a solve 12 vs 17 µs; on the
  // tori drop (2,184 DOF) the two are even (5.4 vs 6.2 ms; a fresh KLU pivoting 8.3 ms), so
  // UMFPACK stays above (docs/solver.md).
  constexpr int kKluMaxDofs = 1000;
#ifdef ADDSIM_HAVE_KLU
  if ((kind == LinearSolverKind::kAuto && pattern->size() < kKluMaxDofs) || kind == LinearSolverKind::kKlu)
    return std::make_unique<Klu>(pattern);
#else
  if (kind == LinearSolverKind::kKlu)
    throw InputError("solver.linear_solver = \"klu\" but this build has no KLU (ADDSIM_WITH_UMFPACK=OFF or not found)");
#endif
#ifdef ADDSIM_HAVE_UMFPACK
  if (kind == LinearSolverKind::kAuto || kind == LinearSolverKind::kUmfpack) return std::make_unique<Umfpack>(pattern);
#else
  if (kind == LinearSolverKind::kUmfpack)
    throw InputError("solver.linear_solver = \"umfpack\" but this build has no UMFPACK (ADDSIM_WITH_UMFPACK=OFF or not found)");
#endif
  return std::make_unique<EigenLu>(pattern);
}

}  // namespace addsim
