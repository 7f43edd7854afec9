#include "addsim/solver/reused_factorization.h"

#include "addsim/core/error.h"
#include "addsim/solver/step_common.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <Eigen/Dense>

namespace addsim {

namespace {
using namespace step;
// GMRES never runs longer than this (Krylov basis memory: this many vectors of |q|).
constexpr int kMaxKrylov = 40;
// Typical Krylov dimension, for the Gram–Schmidt part of the cost of one iteration.
constexpr int kTypicalKrylov = 10;
// Early refactorisation: from this iteration on, GMRES extrapolates its mean residual
// reduction per iteration so far and gives up once reaching the target would take more
// than kStagnationMargin × its budget (the cost of a refactorisation). GMRES often speeds
// up later (superlinear convergence), hence the margin; the first iterations say little.
constexpr int kStagnationCheckFrom = 4;
constexpr double kStagnationMargin = 1.25;
// A background factorisation is adopted only once the caller has done GMRES iterations
// worth this many factorisations since submitting it: by then a helper with a core of its
// own has finished, and one that shares its core with other load rarely keeps the caller
// waiting. Counted, not timed, so the adoption points are reproducible. (Shared 2-core
// machine at load ≈ 1, two threads, wall time: tori drop 6.5–6.7 s when adopting at the
// next step whatever the work done, 5.9–6.0 s with 1.0; cylinder drop 0.75–0.82 s vs
// 0.57–0.68 s.)
constexpr double kBackgroundLead = 1.0;
}  // namespace

ReusedFactorization::ReusedFactorization(const SparsePattern* pattern, std::unique_ptr<LinearSolver> lu, bool enabled)
    : pattern_(pattern), lu_(std::move(lu)), enabled_(enabled) {}

Clock::time_point ReusedFactorization::start_timer() const { return timed_ ? Clock::now() : Clock::time_point{}; }

double ReusedFactorization::stop_timer(Clock::time_point t0) const { return timed_ ? ms_since(t0) : 0.0; }

bool ReusedFactorization::factorize(const VecX& values) {
  const auto t0 = start_timer();
  const bool ok = lu_->factorize(values);
  stats_.factor_ms += stop_timer(t0);
  ++stats_.factorizations;
  if (background_ != Background::kNone) superseded_ = true;
  have_lu_ = ok;
  // The new LU is of the current configuration: the reference of later rotations.
  adopt_lu(configuration_);
  return ok;
}

void ReusedFactorization::adopt_lu(const VecX& reference) {
  refactor_next_ = false;
  if (!groups_.empty()) {
    reference_ = reference;
    rotated_ = false;
  }
  excess_iterations_ = 0.0;
  // One GMRES iteration: two triangular solves, one matrix product, and the Gram–Schmidt
  // work against the basis.
  const double n = pattern_->size();
  const double iteration = lu_->solve_flops() + 2.0 * pattern_->nnz() + 4.0 * n * kTypicalKrylov;
  factor_to_iteration_ = lu_->factor_flops() / iteration;
}

void ReusedFactorization::set_background(WorkerThread* worker, std::unique_ptr<LinearSolver> spare) {
  ADDSIM_CHECK(background_ == Background::kNone, "set_background while a background factorisation is pending");
  ADDSIM_CHECK((worker == nullptr) == (spare == nullptr), "a background factorisation needs a worker and a spare solver");
  worker_ = worker;
  spare_ = std::move(spare);
}

bool ReusedFactorization::factorize_in_background(const VecX& values, const VecX& q) {
  if (!worker_ || !reuses() || background_ != Background::kNone || !have_lu_ || refactor_next_) return false;
  background_values_ = values;
  background_reference_ = q;
  superseded_ = false;
  background_work_ = 0.0;
  background_ = Background::kRunning;
  worker_->start([this] {
    const auto t0 = Clock::now();
    background_ok_ = spare_->factorize(background_values_);
    background_task_ms_ = ms_since(t0);
  });
  return true;
}

void ReusedFactorization::reset() {
  if (background_ == Background::kRunning) {
    background_ = Background::kFinished;  // wait() may rethrow the worker's exception
    worker_->wait();
  }
  background_ = Background::kNone;
  background_ok_ = false;
  superseded_ = false;
  background_work_ = 0.0;
  have_lu_ = false;
  refactor_next_ = false;
  excess_iterations_ = 0.0;
  rotated_ = false;
}

bool ReusedFactorization::background_running() {
  if (background_ == Background::kRunning && worker_->finished()) {
    background_ = Background::kFinished;
    worker_->wait();
  }
  return background_ == Background::kRunning;
}

bool ReusedFactorization::install_background() {
  if (background_ == Background::kNone) return false;
  if (!superseded_ && background_work_ < kBackgroundLead * factor_to_iteration_) return false;
  if (background_ == Background::kRunning) {
    background_ = Background::kFinished;  // wait() may rethrow the worker's exception
    worker_->wait();
  }
  background_ = Background::kNone;
  stats_.background_ms += background_task_ms_;
  if (superseded_ || !background_ok_) return false;
  spare_ = adopt(std::move(spare_), background_reference_);
  ++stats_.background_factorizations;
  return true;
}

std::unique_ptr<LinearSolver> ReusedFactorization::adopt(std::unique_ptr<LinearSolver> lu, const VecX& reference) {
  ADDSIM_CHECK(lu != nullptr, "adopt: no solver");
  std::swap(lu_, lu);
  have_lu_ = true;
  adopt_lu(reference);
  return lu;
}

void ReusedFactorization::set_relative_tolerance(double tolerance) {
  ADDSIM_CHECK(tolerance > 0.0 && tolerance < 1.0, "GMRES relative tolerance outside (0, 1)");
  relative_tolerance_ = tolerance;
}

void ReusedFactorization::set_rotation_groups(std::vector<RotationGroup> groups) {
  groups_ = std::move(groups);
  rotations_.assign(groups_.size(), Mat3::Identity());
  rotated_ = false;
}

void ReusedFactorization::set_configuration(const VecX& q) {
  if (groups_.empty()) return;
  configuration_ = q;
  rotated_ = false;
  if (!have_lu_ || reference_.size() != q.size()) return;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const RotationGroup& grp = groups_[g];
    const auto ref = reference_.segment(grp.first_dof, 3 * grp.points).reshaped(3, grp.points);
    const auto cur = q.segment(grp.first_dof, 3 * grp.points).reshaped(3, grp.points);
    const Vec3 c_ref = ref.rowwise().mean(), c_cur = cur.rowwise().mean();
    // Kabsch: R = argmin Σ‖(x_k − c) − R (X_k − C)‖² over rotations, from the SVD of the
    // cross-covariance H = Σ (x_k − c)(X_k − C)ᵀ = U S Vᵀ: R = U diag(1, 1, det(U Vᵀ)) Vᵀ.
    const Mat3 H = (cur.colwise() - c_cur) * (ref.colwise() - c_ref).transpose();
    const Eigen::JacobiSVD<Mat3> svd(H, Eigen::ComputeFullU | Eigen::ComputeFullV);
    Mat3 D = Mat3::Identity();
    D(2, 2) = (svd.matrixU() * svd.matrixV().transpose()).determinant() < 0.0 ? -1.0 : 1.0;
    rotations_[g] = svd.matrixU() * D * svd.matrixV().transpose();
    if (!rotations_[g].allFinite()) rotations_[g].setIdentity();
  }
  rotated_ = true;
}

void ReusedFactorization::precondition(const VecX& y, VecX& z, bool transpose) {
  if (!rotated_) {
    lu_->precondition(y, z, transpose);
    return;
  }
  // z = Q LU⁻¹ Qᵀ y, Q = diag(R_g) on each group's points (identity elsewhere).
  rotated_rhs_ = y;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto block = rotated_rhs_.segment(groups_[g].first_dof, 3 * groups_[g].points).reshaped(3, groups_[g].points);
    block = rotations_[g].transpose() * block;
  }
  lu_->precondition(rotated_rhs_, z, transpose);
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto block = z.segment(groups_[g].first_dof, 3 * groups_[g].points).reshaped(3, groups_[g].points);
    block = rotations_[g] * block;
  }
}

void ReusedFactorization::multiply(const VecX& values, const VecX& x, VecX& y, bool transpose) const {
  y.setZero(x.size());
  if (transpose)
    pattern_->transpose_multiply_add(values, x, y);
  else
    pattern_->multiply_add(values, x, y);
}

bool ReusedFactorization::solve(const VecX& values, const VecX& b, VecX& x, bool transpose,
                                double absolute_tolerance, const VecX* initial_guess) {
  ++stats_.solves;
  // A single solve gives up on the old LU once it has cost as much as a refactorisation.
  const int budget = static_cast<int>(std::min<double>(kMaxKrylov, factor_to_iteration_));
  if (enabled_ && have_lu_ && !refactor_next_ && budget >= 2) {
    const auto t0 = start_timer();
    int iterations = 0;
    const double target = std::max(relative_tolerance_ * b.norm(), absolute_tolerance);
    bool converged;
    if (initial_guess) {
      // Solve for the correction d = x − x₀ from the residual of the guess.
      multiply(values, *initial_guess, guess_residual_, transpose);
      guess_residual_ = b - guess_residual_;
      converged = gmres(values, guess_residual_, x, transpose, target, budget, iterations);
      x += *initial_guess;
    } else {
      converged = gmres(values, b, x, transpose, target, budget, iterations);
    }
    stats_.krylov_iterations += iterations;
    stats_.solve_ms += stop_timer(t0);
    if (converged) {
      // Ski-rental rule: a fresh LU solves in one iteration; once the iterations beyond
      // that, summed since the last factorisation, have cost a factorisation, the old LU
      // has paid for itself and the next solve refactorises.
      excess_iterations_ += iterations - 1;
      background_work_ += iterations;
      refactor_next_ = excess_iterations_ >= factor_to_iteration_;
      return true;
    }
  }
  if (!factorize(values)) return false;
  const auto t0 = start_timer();
  ++stats_.direct_solves;
  if (absolute_tolerance > 0.0)
    lu_->solve_within(b, x, transpose, std::max(relative_tolerance_ * b.norm(), absolute_tolerance),
                      refine_to_tolerance_);
  else
    lu_->solve(b, x, transpose);
  stats_.solve_ms += stop_timer(t0);
  return true;
}

bool ReusedFactorization::solve_with_current_lu(const VecX& b, VecX& x) {
  if (!have_lu_) return false;
  ++stats_.solves;
  const auto t0 = start_timer();
  precondition(b, x, false);
  stats_.solve_ms += stop_timer(t0);
  return true;
}

bool ReusedFactorization::gmres(const VecX& values, const VecX& b, VecX& x, bool transpose, double target,
                                int max_iterations, int& iterations) {
  // Right-preconditioned GMRES with the preconditioned directions kept (as in flexible
  // GMRES), so the solution needs no extra triangular solve: x = Σ y_j M⁻¹ v_j. The Arnoldi
  // residual equals the true residual of A x = b, checked once more at the end.
  const int n = static_cast<int>(b.size());
  iterations = 0;
  const double beta = b.norm();
  if (beta == 0.0) {
    x.setZero(n);
    return true;
  }
  if (static_cast<int>(basis_.size()) < max_iterations + 1) basis_.resize(max_iterations + 1);
  if (static_cast<int>(preconditioned_.size()) < max_iterations) preconditioned_.resize(max_iterations);
  // Work arrays are members: sized once for kMaxKrylov, no allocation per solve.
  Eigen::MatrixXd& H = hessenberg_;
  Eigen::VectorXd &g = rhs_, &cs = cos_, &sn = sin_;
  H.setZero(kMaxKrylov + 1, kMaxKrylov);
  g.setZero(kMaxKrylov + 1);
  cs.resize(kMaxKrylov);
  sn.resize(kMaxKrylov);
  g[0] = beta;
  basis_[0] = b / beta;
  int k = 0;
  bool reached = false;
  while (k < max_iterations) {
    precondition(basis_[k], preconditioned_[k], transpose);
    if (!preconditioned_[k].allFinite()) return false;
    multiply(values, preconditioned_[k], w_, transpose);
    // Modified Gram–Schmidt.
    for (int j = 0; j <= k; ++j) {
      H(j, k) = basis_[j].dot(w_);
      w_ -= H(j, k) * basis_[j];
    }
    H(k + 1, k) = w_.norm();
    // Apply the earlier Givens rotations to the new column, then one more to zero H(k+1, k).
    for (int j = 0; j < k; ++j) {
      const double t = cs[j] * H(j, k) + sn[j] * H(j + 1, k);
      H(j + 1, k) = -sn[j] * H(j, k) + cs[j] * H(j + 1, k);
      H(j, k) = t;
    }
    const double rho = std::hypot(H(k, k), H(k + 1, k));
    if (rho == 0.0) return false;
    cs[k] = H(k, k) / rho;
    sn[k] = H(k + 1, k) / rho;
    const double hk1 = H(k + 1, k);
    H(k, k) = rho;
    H(k + 1, k) = 0.0;
    g[k + 1] = -sn[k] * g[k];
    g[k] = cs[k] * g[k];
    ++k;
    if (std::abs(g[k]) <= target) {
      reached = true;
      break;
    }
    if (hk1 == 0.0) break;  // happy breakdown: the Krylov space is invariant
    if (early_refactorization_ && k >= kStagnationCheckFrom) {
      // Iterations needed at the mean rate so far: log(target/β) / (log(|g_k|/β) / k).
      const double rate = std::log(std::abs(g[k]) / beta) / k;
      if (rate >= 0.0 || std::log(target / beta) / rate > kStagnationMargin * max_iterations) {
        iterations = k;
        return false;
      }
    }
    if (k < max_iterations) basis_[k] = w_ / hk1;
  }
  iterations = k;
  const Eigen::VectorXd y = H.topLeftCorner(k, k).triangularView<Eigen::Upper>().solve(g.head(k));
  x.setZero(n);
  for (int j = 0; j < k; ++j) x += y[j] * preconditioned_[j];
  if (!x.allFinite()) return false;
  // The recurrence's residual drifts from the true one near machine precision: check.
  multiply(values, x, residual_, transpose);
  residual_ = b - residual_;
  return (reached || std::abs(g[k]) <= target) && residual_.norm() <= 4.0 * target;
}

std::unique_ptr<ReusedFactorization> make_step_solver(const Model& model, const FactorizationOptions& options) {
  auto lu = std::make_unique<ReusedFactorization>(
      &model.pattern(), make_linear_solver(model.solver().linear_solver, &model.pattern(), options),
      model.solver().reuse_factorization);
  lu->set_rotation_groups(fem_rotation_groups(model));
  lu->set_refine_to_tolerance(model.solver().refine_to_tolerance);
  return lu;
}

std::vector<ReusedFactorization::RotationGroup> fem_rotation_groups(const Model& model) {
  std::vector<ReusedFactorization::RotationGroup> groups;
  for (const auto& b : model.bodies())
    if (b->kind() == BodyKind::kFem) groups.push_back({b->dof_offset(), b->dof_count() / 3});
  return groups;
}

}  // namespace addsim
