#include "addsim/solver/cholmod_bicgstab.h"

#include <algorithm>
#include <cmath>

#include "addsim/core/error.h"

#ifdef ADDSIM_HAVE_CHOLMOD
#include <cholmod.h>
#endif

namespace addsim {

#ifdef ADDSIM_HAVE_CHOLMOD
namespace {

// BiCGSTAB stops at ‖b − J x‖ ≤ kTolerance ‖b‖: a few ulps above what double precision
// resolves for these matrices, so the result is as good as an LU solve.
constexpr double kTolerance = 1e-13;
// Beyond this many iterations the preconditioner is too poor: use the LU instead.
constexpr int kMaxIterations = 40;
// After a failed Cholesky (S indefinite), skip that many factorisations before retrying.
constexpr int kRetryAfter = 8;

class CholmodBicgstab final : public LinearSolver {
 public:
  explicit CholmodBicgstab(const SparsePattern* pattern) : pattern_(pattern) {
    const int n = pattern->size();
    const auto& outer = pattern->outer();
    const auto& inner = pattern->inner();
    // Transpose map and the lower triangle of the (structurally symmetric) pattern.
    transpose_.resize(inner.size());
    std::vector<int> lower_outer(n + 1, 0), lower_inner;
    for (int c = 0; c < n; ++c) {
      for (int k = outer[c]; k < outer[c + 1]; ++k) {
        const int r = inner[k];
        const auto begin = inner.begin() + outer[r], end = inner.begin() + outer[r + 1];
        const auto it = std::lower_bound(begin, end, c);
        ADDSIM_CHECK(it != end && *it == c, "step Jacobian pattern is not structurally symmetric");
        transpose_[k] = static_cast<int>(it - inner.begin());
        if (r >= c) {
          lower_.push_back(k);
          lower_inner.push_back(r);
        }
      }
      lower_outer[c + 1] = static_cast<int>(lower_.size());
    }
    cholmod_start(&common_);
    common_.supernodal = CHOLMOD_SUPERNODAL;
    common_.print = 0;
    S_ = cholmod_allocate_sparse(n, n, lower_.size(), 1, 1, -1, CHOLMOD_REAL, &common_);
    std::copy(lower_outer.begin(), lower_outer.end(), static_cast<int*>(S_->p));
    std::copy(lower_inner.begin(), lower_inner.end(), static_cast<int*>(S_->i));
    std::fill_n(static_cast<double*>(S_->x), lower_.size(), 0.0);
    L_ = cholmod_analyze(S_, &common_);
    ADDSIM_CHECK(L_ != nullptr, "CHOLMOD symbolic analysis failed");
    B_ = cholmod_allocate_dense(n, 1, n, CHOLMOD_REAL, &common_);
    lu_ = make_linear_solver(LinearSolverKind::kUmfpack, pattern);
  }

  ~CholmodBicgstab() override {
    cholmod_free_dense(&X_, &common_);
    cholmod_free_dense(&Y_, &common_);
    cholmod_free_dense(&E_, &common_);
    cholmod_free_dense(&B_, &common_);
    cholmod_free_factor(&L_, &common_);
    cholmod_free_sparse(&S_, &common_);
    cholmod_finish(&common_);
  }

  bool factorize(const VecX& values) override {
    values_ = values;
    lu_current_ = false;
    if (skip_cholesky_ > 0) {
      --skip_cholesky_;
      return factorize_lu();
    }
    auto* sx = static_cast<double*>(S_->x);
    for (size_t m = 0; m < lower_.size(); ++m) {
      const int k = lower_[m];
      sx[m] = 0.5 * (values[k] + values[transpose_[k]]);
    }
    cholmod_factorize(S_, L_, &common_);
    if (common_.status != CHOLMOD_OK) {
      skip_cholesky_ = kRetryAfter;
      return factorize_lu();
    }
    use_lu_ = false;
    return true;
  }

  void solve(const VecX& b, VecX& x, bool transpose) override {
    if (!use_lu_ && bicgstab(b, x, transpose)) return;
    // The preconditioned iteration failed: solve exactly with the LU of J.
    if (!lu_current_) factorize_lu();
    lu_->solve(b, x, transpose);
  }

  const char* name() const override { return "cholmod_bicgstab"; }

 private:
  bool factorize_lu() {
    use_lu_ = true;
    lu_current_ = true;
    return lu_->factorize(values_);
  }

  // y = J x or Jᵀ x.
  void apply(const VecX& x, VecX& y, bool transpose) const {
    y.setZero(x.size());
    if (transpose)
      pattern_->transpose_multiply_add(values_, x, y);
    else
      pattern_->multiply_add(values_, x, y);
  }

  // z = S⁻¹ r with the Cholesky factor.
  void apply_cholesky(const VecX& r, VecX& z) {
    std::copy_n(r.data(), r.size(), static_cast<double*>(B_->x));
    cholmod_solve2(CHOLMOD_A, L_, B_, nullptr, &X_, nullptr, &Y_, &E_, &common_);
    z = Eigen::Map<const VecX>(static_cast<double*>(X_->x), r.size());
  }

  // Right-preconditioned BiCGSTAB [van der Vorst 1992]; false if it does not reach the
  // tolerance within kMaxIterations.
  bool bicgstab(const VecX& b, VecX& x, bool transpose) {
    const double bnorm = b.norm();
    x.setZero(b.size());
    if (bnorm == 0.0) return true;
    VecX r = b, r0 = b, p = VecX::Zero(b.size()), v = VecX::Zero(b.size()), y, z, s, t;
    double rho = 1.0, alpha = 1.0, omega = 1.0;
    for (int it = 0; it < kMaxIterations; ++it) {
      const double rho_new = r0.dot(r);
      if (rho_new == 0.0) return false;
      const double beta = (rho_new / rho) * (alpha / omega);
      rho = rho_new;
      p = r + beta * (p - omega * v);
      apply_cholesky(p, y);
      apply(y, v, transpose);
      const double r0v = r0.dot(v);
      if (r0v == 0.0) return false;
      alpha = rho / r0v;
      s = r - alpha * v;
      x += alpha * y;
      if (s.norm() <= kTolerance * bnorm) return verify(b, x, transpose, bnorm);
      apply_cholesky(s, z);
      apply(z, t, transpose);
      const double tt = t.squaredNorm();
      if (tt == 0.0) return false;
      omega = t.dot(s) / tt;
      x += omega * z;
      r = s - omega * t;
      if (r.norm() <= kTolerance * bnorm) return verify(b, x, transpose, bnorm);
      if (omega == 0.0 || !std::isfinite(omega)) return false;
    }
    return false;
  }

  // The recursively updated residual can drift from the true one: check it.
  bool verify(const VecX& b, const VecX& x, bool transpose, double bnorm) const {
    VecX Jx;
    apply(x, Jx, transpose);
    return (b - Jx).norm() <= 10.0 * kTolerance * bnorm;
  }

  const SparsePattern* pattern_;
  std::vector<int> transpose_;  // value index of (c, r) for the entry (r, c)
  std::vector<int> lower_;      // value indices of the lower triangle, CSC order
  VecX values_;
  cholmod_common common_;
  cholmod_sparse* S_ = nullptr;
  cholmod_factor* L_ = nullptr;
  cholmod_dense *B_ = nullptr, *X_ = nullptr, *Y_ = nullptr, *E_ = nullptr;
  std::unique_ptr<LinearSolver> lu_;
  bool use_lu_ = false;
  bool lu_current_ = false;
  int skip_cholesky_ = 0;
};

}  // namespace

std::unique_ptr<LinearSolver> make_cholmod_bicgstab(const SparsePattern* pattern) {
  return std::make_unique<CholmodBicgstab>(pattern);
}
#else
std::unique_ptr<LinearSolver> make_cholmod_bicgstab(const SparsePattern*) { return nullptr; }
#endif

}  // namespace addsim
