#include "addsim/solver/linear_solver.h"

#include <Eigen/SparseLU>

#include "addsim/core/error.h"

#ifdef ADDSIM_HAVE_UMFPACK
#include <umfpack.h>
#endif

namespace addsim {

namespace {

class EigenLu final : public LinearSolver {
 public:
  explicit EigenLu(const SparsePattern* pattern) : pattern_(pattern) {
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
  const SparsePattern* pattern_;
  VecX values_;
  SparseMat matrix_;
  Eigen::SparseLU<SparseMat, Eigen::COLAMDOrdering<int>> lu_;
};

#ifdef ADDSIM_HAVE_UMFPACK
class Umfpack final : public LinearSolver {
 public:
  explicit Umfpack(const SparsePattern* pattern) : pattern_(pattern), values_(VecX::Zero(pattern->nnz())) {
    umfpack_di_defaults(control_);
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
    return status == UMFPACK_OK;
  }
  void solve(const VecX& b, VecX& x, bool transpose) override {
    x.resize(b.size());
    const int status = umfpack_di_solve(transpose ? UMFPACK_At : UMFPACK_A, pattern_->outer().data(),
                                        pattern_->inner().data(), values_.data(), x.data(), b.data(), numeric_,
                                        control_, info_);
    ADDSIM_CHECK(status == UMFPACK_OK || status == UMFPACK_WARNING_singular_matrix, "UMFPACK solve failed");
  }
  const char* name() const override { return "umfpack"; }

 private:
  const SparsePattern* pattern_;
  VecX values_;
  void* symbolic_ = nullptr;
  void* numeric_ = nullptr;
  double control_[UMFPACK_CONTROL];
  double info_[UMFPACK_INFO];
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

std::unique_ptr<LinearSolver> make_linear_solver(LinearSolverKind kind, const SparsePattern* pattern) {
#ifdef ADDSIM_HAVE_UMFPACK
  if (kind == LinearSolverKind::kAuto || kind == LinearSolverKind::kUmfpack) return std::make_unique<Umfpack>(pattern);
#else
  if (kind == LinearSolverKind::kUmfpack)
    throw InputError("solver.linear_solver = \"umfpack\" but this build has no UMFPACK (ADDSIM_WITH_UMFPACK=OFF or not found)");
#endif
  return std::make_unique<EigenLu>(pattern);
}

}  // namespace addsim
