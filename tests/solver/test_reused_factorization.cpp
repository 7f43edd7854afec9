// ReusedFactorization: solutions of a drifting sequence of nonsymmetric sparse systems
// (a 3-D grid Laplacian plus mass, with a nonsymmetric part, perturbed a little per
// system) equal fresh direct solves to the documented relative residual, for A and Aᵀ;
// the old LU is reused while the matrices drift slowly and replaced after a jump.

#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <thread>

#include "addsim/core/error.h"
#include "addsim/solver/linear_solver.h"
#include "addsim/solver/reused_factorization.h"
#include "addsim/solver/worker_thread.h"
#include "../support/linear_system.h"

namespace addsim {
namespace {

struct Grid {
  StencilSet stencils;
  SparsePattern pattern;
  int n = 0;
};

// Edges of an m × m × m grid, one 2-DOF stencil per edge.
Grid make_grid(int m) {
  Grid g;
  g.n = m * m * m;
  auto id = [m](int i, int j, int k) { return i + m * (j + m * k); };
  for (int k = 0; k < m; ++k)
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i) {
        if (i + 1 < m) g.stencils.add({id(i, j, k), id(i + 1, j, k)});
        if (j + 1 < m) g.stencils.add({id(i, j, k), id(i, j + 1, k)});
        if (k + 1 < m) g.stencils.add({id(i, j, k), id(i, j, k + 1)});
      }
  g.pattern = SparsePattern(g.n, g.stencils);
  return g;
}

// Values of M + L + N: mass `mass` on the diagonal, a Laplacian with per-edge stiffness,
// and an antisymmetric coupling of size `skew` (like friction's nonsymmetric part).
VecX matrix_values(const Grid& g, double mass, double skew, std::mt19937& rng, double jitter) {
  std::uniform_real_distribution<double> u(1.0 - jitter, 1.0 + jitter);
  VecX values = VecX::Zero(g.pattern.nnz());
  for (int i = 0; i < g.n; ++i) values[g.pattern.diagonal_index(i)] += mass * u(rng);
  for (int s = 0; s < g.stencils.count(); ++s) {
    const int* map = g.pattern.map(s);
    const double k = 10.0 * u(rng);
    values[map[0]] += k;   // (0, 0)
    values[map[3]] += k;   // (1, 1)
    values[map[1]] += -k + skew;  // (1, 0)
    values[map[2]] += -k - skew;  // (0, 1)
  }
  return values;
}

// The LUs that report flop counts (and so are reused): UMFPACK, KLU, the dense, the banded and
// the block (schur) LU — the grid has no DOF blocks, so the latter is one dense block here.
class ReusedLu : public ::testing::TestWithParam<LinearSolverKind> {};

TEST_P(ReusedLu, MatchesDirectSolvesOnADriftingSequence) {
  if (GetParam() == LinearSolverKind::kUmfpack && !have_umfpack()) GTEST_SKIP() << "needs UMFPACK";
  if (GetParam() == LinearSolverKind::kKlu && !have_klu()) GTEST_SKIP() << "needs KLU";
  const Grid g = make_grid(9);
  std::mt19937 rng(7);
  ReusedFactorization reused(&g.pattern, make_linear_solver(GetParam(), &g.pattern));
  const auto direct = make_linear_solver(LinearSolverKind::kEigenLu, &g.pattern);
  std::normal_distribution<double> normal;
  for (int system = 0; system < 12; ++system) {
    // Entries drift by 0.1 % per system; system 6 jumps (mass ×20).
    const double mass = system >= 6 ? 100.0 : 5.0;
    const VecX values = matrix_values(g, mass, 2.0, rng, 0.001);
    VecX b(g.n);
    for (int i = 0; i < g.n; ++i) b[i] = normal(rng);
    for (bool transpose : {false, true}) {
      VecX x, x_direct;
      ASSERT_TRUE(reused.solve(values, b, x, transpose));
      ASSERT_TRUE(direct->factorize(values));
      direct->solve(b, x_direct, transpose);
      EXPECT_LT(test::relative_residual(g.pattern, g.n, values, b, x, transpose), 4.0 * ReusedFactorization::kRelativeTolerance)
          << "system " << system << (transpose ? " (transposed)" : "");
      EXPECT_LT((x - x_direct).norm(), 1e-9 * x_direct.norm()) << "system " << system;
    }
  }
  const ReusedFactorization::Stats& s = reused.stats();
  EXPECT_EQ(s.solves, 24);
  // One factorisation at the start and one after the jump suffice for slow drift; GMRES did the rest.
  EXPECT_GE(s.factorizations, 2);
  EXPECT_LE(s.factorizations, 6);
  EXPECT_GT(s.krylov_iterations, 0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, ReusedLu,
                         ::testing::Values(LinearSolverKind::kUmfpack, LinearSolverKind::kKlu, LinearSolverKind::kDense,
                                           LinearSolverKind::kBanded, LinearSolverKind::kSchur),
                         [](const auto& info) {
                           return std::string(info.param == LinearSolverKind::kDense    ? "dense"
                                              : info.param == LinearSolverKind::kBanded ? "banded"
                                              : info.param == LinearSolverKind::kSchur  ? "schur"
                                              : info.param == LinearSolverKind::kKlu    ? "klu"
                                                                                        : "umfpack");
                         });

// KLU keeps the pivot order of its last full factorisation while the pivot growth allows.
// A matrix whose diagonal has become tiny (the kept diagonal pivots would grow the factor
// by ~1e12) must be pivoted afresh: the solutions of A and Aᵀ stay exact to round-off, for
// the mild refactorisation before it and for the jump itself.
TEST(Klu, KeptPivotOrderIsAbandonedWhenItWouldGrow) {
  if (!have_klu()) GTEST_SKIP() << "needs KLU";
  const Grid g = make_grid(6);
  std::mt19937 rng(11);
  const auto klu = make_linear_solver(LinearSolverKind::kKlu, &g.pattern);
  const auto direct = make_linear_solver(LinearSolverKind::kEigenLu, &g.pattern);
  const VecX dominant = matrix_values(g, 50.0, 2.0, rng, 0.01);
  const VecX drifted = matrix_values(g, 50.0, 2.0, rng, 0.01);
  // Tiny diagonal: mass −(sum of the Laplacian's diagonal) + 1e-10 leaves ≈ 1e-10 pivots in place.
  VecX tiny = matrix_values(g, 0.0, 2.0, rng, 0.0);
  for (int i = 0; i < g.n; ++i) tiny[g.pattern.diagonal_index(i)] = 1e-10 * (1 + i % 3);
  for (const VecX* values : std::initializer_list<const VecX*>{&dominant, &drifted, &tiny}) {
    ASSERT_TRUE(klu->factorize(*values));
    ASSERT_TRUE(direct->factorize(*values));
    EXPECT_GT(klu->factor_flops(), 0.0);
    EXPECT_GT(klu->solve_flops(), 0.0);
    const VecX b = test::random_rhs(g.n, rng);
    for (bool transpose : {false, true}) {
      VecX x, x_direct;
      klu->solve(b, x, transpose);
      direct->solve(b, x_direct, transpose);
      EXPECT_LT(test::relative_residual(g.pattern, g.n, *values, b, x, transpose), 1e-13) << (transpose ? "transposed" : "");
      EXPECT_LT((x - x_direct).norm(), 1e-9 * x_direct.norm()) << (transpose ? "transposed" : "");
    }
  }
  EXPECT_STREQ(klu->name(), "klu");
}

// After a jump the old LU preconditions badly. With early refactorisation GMRES gives up
// within a few iterations instead of spending its whole budget; the solutions are those of
// the matrices either way.
TEST(ReusedFactorization, EarlyRefactorisationGivesUpOnAStagnatingSolve) {
  if (!have_umfpack()) GTEST_SKIP() << "needs UMFPACK";
  const Grid g = make_grid(9);
  std::mt19937 rng(5);
  const VecX before = matrix_values(g, 0.01, 2.0, rng, 0.001);
  // Every entry re-drawn by up to ±90 % and the nonsymmetric part reversed.
  const VecX after = matrix_values(g, 0.01, -6.0, rng, 0.9);
  const VecX b = test::random_rhs(g.n, rng);
  const auto direct = make_linear_solver(LinearSolverKind::kEigenLu, &g.pattern);
  ASSERT_TRUE(direct->factorize(after));
  ReusedFactorization::Stats stats[2];
  for (bool early : {false, true}) {
    ReusedFactorization reused(&g.pattern, make_linear_solver(LinearSolverKind::kUmfpack, &g.pattern));
    reused.set_early_refactorization(early);
    for (bool transpose : {false, true}) {
      VecX x, x_direct;
      ASSERT_TRUE(reused.solve(before, b, x, transpose));  // the LU of `before` (first solve or after a jump)
      ASSERT_TRUE(reused.solve(after, b, x, transpose));
      direct->solve(b, x_direct, transpose);
      EXPECT_LT(test::relative_residual(g.pattern, g.n, after, b, x, transpose), 4.0 * ReusedFactorization::kRelativeTolerance)
          << (early ? "early" : "plain") << (transpose ? " (transposed)" : "");
      EXPECT_LT((x - x_direct).norm(), 1e-9 * x_direct.norm());
    }
    stats[early] = reused.stats();
  }
  // The plain policy spent its budget on the stagnating solves before refactorising.
  EXPECT_EQ(stats[0].factorizations, 4);
  EXPECT_EQ(stats[1].factorizations, 4);
  EXPECT_LT(stats[1].krylov_iterations, stats[0].krylov_iterations / 2)
      << "plain " << stats[0].krylov_iterations << " vs early " << stats[1].krylov_iterations << " iterations";
}

TEST(ReusedFactorization, RelativeToleranceIsSettable) {
  const Grid g = make_grid(5);
  std::mt19937 rng(13);
  ReusedFactorization reused(&g.pattern, make_linear_solver(LinearSolverKind::kAuto, &g.pattern));
  EXPECT_EQ(reused.relative_tolerance(), ReusedFactorization::kRelativeTolerance);
  reused.set_relative_tolerance(1e-6);
  EXPECT_EQ(reused.relative_tolerance(), 1e-6);
  EXPECT_THROW(reused.set_relative_tolerance(0.0), InternalError);
  EXPECT_THROW(reused.set_relative_tolerance(1.0), InternalError);
  const VecX values = matrix_values(g, 5.0, 1.0, rng, 0.001);
  const VecX drifted = matrix_values(g, 5.0, 1.0, rng, 0.01);
  const VecX b = VecX::Ones(g.n);
  VecX x;
  ASSERT_TRUE(reused.solve(values, b, x));
  ASSERT_TRUE(reused.solve(drifted, b, x));
  EXPECT_LT(test::relative_residual(g.pattern, g.n, drifted, b, x, false), 4.0 * 1e-6);
}

TEST(DenseLu, MatchesSparseLuForAAndItsTranspose) {
  const Grid g = make_grid(5);
  std::mt19937 rng(11);
  const VecX values = matrix_values(g, 5.0, 3.0, rng, 0.2);
  const auto dense = make_linear_solver(LinearSolverKind::kDense, &g.pattern);
  const auto sparse = make_linear_solver(LinearSolverKind::kEigenLu, &g.pattern);
  EXPECT_STREQ(dense->name(), "dense_lu");
  ASSERT_TRUE(dense->factorize(values));
  ASSERT_TRUE(sparse->factorize(values));
  const double n = g.n;
  EXPECT_DOUBLE_EQ(dense->factor_flops(), 2.0 * n * n * n / 3.0);
  EXPECT_DOUBLE_EQ(dense->solve_flops(), 2.0 * n * n);
  const VecX b = test::random_rhs(g.n, rng);
  for (bool transpose : {false, true}) {
    VecX x, x_sparse;
    dense->solve(b, x, transpose);
    sparse->solve(b, x_sparse, transpose);
    EXPECT_LT(test::relative_residual(g.pattern, g.n, values, b, x, transpose), 1e-13) << (transpose ? "transposed" : "");
    EXPECT_LT((x - x_sparse).norm(), 1e-12 * x_sparse.norm()) << (transpose ? "transposed" : "");
  }
  // A refactorisation overwrites every pattern entry: a second matrix is solved exactly too.
  const VecX values2 = matrix_values(g, 50.0, -1.0, rng, 0.2);
  ASSERT_TRUE(dense->factorize(values2));
  VecX x2;
  dense->solve(b, x2, false);
  EXPECT_LT(test::relative_residual(g.pattern, g.n, values2, b, x2, false), 1e-13);
}

TEST(DenseLu, ZeroPivotIsSingular) {
  const Grid g = make_grid(3);
  std::mt19937 rng(5);
  VecX values = matrix_values(g, 5.0, 0.0, rng, 0.0);
  // Zero the first column: no pivot can be found for it.
  for (int k = g.pattern.outer()[0]; k < g.pattern.outer()[1]; ++k) values[k] = 0.0;
  EXPECT_FALSE(make_linear_solver(LinearSolverKind::kDense, &g.pattern)->factorize(values));
}

TEST(ReusedFactorization, DisabledRefactorisesEverySolve) {
  const Grid g = make_grid(5);
  std::mt19937 rng(3);
  ReusedFactorization plain(&g.pattern, make_linear_solver(LinearSolverKind::kAuto, &g.pattern), false);
  for (int system = 0; system < 3; ++system) {
    const VecX values = matrix_values(g, 5.0, 1.0, rng, 0.01);
    const VecX b = VecX::Ones(g.n);
    VecX x;
    ASSERT_TRUE(plain.solve(values, b, x));
    EXPECT_LT(test::relative_residual(g.pattern, g.n, values, b, x, false), 1e-13);
  }
  EXPECT_EQ(plain.stats().factorizations, 3);
  EXPECT_EQ(plain.stats().krylov_iterations, 0);
}

// Factorisation ahead on a worker thread (two-thread forward runs): the LU is adopted only
// after GMRES work worth a factorisation, it is that of the submitted matrix (its own system
// then solves in one GMRES iteration), it is not counted as a foreground factorisation, and
// a foreground factorisation made after the submission (of a later matrix) supersedes it.
TEST(ReusedFactorization, BackgroundFactorisationIsAdoptedOrSuperseded) {
  if (!have_umfpack()) GTEST_SKIP() << "needs UMFPACK";
  const Grid g = make_grid(7);
  std::mt19937 rng(11);
  const VecX first = matrix_values(g, 5.0, 2.0, rng, 0.001);
  const VecX second = matrix_values(g, 5.0, 2.0, rng, 0.01);
  const VecX third = matrix_values(g, 5.0, -2.0, rng, 0.2);
  const VecX b = test::random_rhs(g.n, rng);
  const VecX q = VecX::Zero(g.n);
  WorkerThread worker;
  ReusedFactorization reused(&g.pattern, make_linear_solver(LinearSolverKind::kUmfpack, &g.pattern));
  EXPECT_FALSE(reused.has_background());
  EXPECT_FALSE(reused.factorize_in_background(second, q));  // no worker
  reused.set_background(&worker, make_linear_solver(LinearSolverKind::kUmfpack, &g.pattern));
  ASSERT_TRUE(reused.has_background());
  EXPECT_FALSE(reused.factorize_in_background(second, q));  // nothing to precondition yet: solve first
  VecX x;
  ASSERT_TRUE(reused.solve(first, b, x));
  EXPECT_EQ(reused.stats().factorizations, 1);

  // Adopted: solves of `second` go on with the LU of `first` until GMRES has done
  // iterations worth a factorisation since the submission; only then is it installed.
  ASSERT_TRUE(reused.factorize_in_background(second, q));
  EXPECT_FALSE(reused.factorize_in_background(third, q));  // one at a time
  while (reused.background_running()) std::this_thread::yield();
  EXPECT_FALSE(reused.install_background());  // finished, but no work done since
  long before = reused.stats().krylov_iterations;
  int solves = 0;
  do {
    ASSERT_TRUE(reused.solve(second, b, x));
    EXPECT_GT(reused.stats().krylov_iterations - before, 1);  // the LU of `first`
    before = reused.stats().krylov_iterations;
    ASSERT_LT(++solves, 100);
  } while (!reused.install_background());
  EXPECT_EQ(reused.stats().background_factorizations, 1);
  EXPECT_EQ(reused.stats().factorizations, 1);
  ASSERT_TRUE(reused.solve(second, b, x));
  EXPECT_EQ(reused.stats().krylov_iterations - before, 1);
  EXPECT_LT(test::relative_residual(g.pattern, g.n, second, b, x, false), 4.0 * ReusedFactorization::kRelativeTolerance);
  EXPECT_FALSE(reused.install_background());  // nothing pending: no-op
  EXPECT_EQ(reused.stats().background_factorizations, 1);

  // Superseded: a foreground factorisation of `third` after submitting `second` again.
  ASSERT_TRUE(reused.factorize_in_background(second, q));
  reused.invalidate();
  ASSERT_TRUE(reused.solve(third, b, x));
  EXPECT_EQ(reused.stats().factorizations, 2);
  EXPECT_FALSE(reused.install_background());  // waits, then drops the LU of `second`
  EXPECT_EQ(reused.stats().background_factorizations, 1);
  const long kept = reused.stats().krylov_iterations;
  ASSERT_TRUE(reused.solve(third, b, x));
  EXPECT_EQ(reused.stats().krylov_iterations - kept, 1);  // still the LU of `third`
  EXPECT_LT(test::relative_residual(g.pattern, g.n, third, b, x, false), 4.0 * ReusedFactorization::kRelativeTolerance);
  EXPECT_GT(reused.stats().background_ms, 0.0);
}

TEST(ReusedFactorization, SingularMatrixIsReported) {
  const Grid g = make_grid(3);
  ReusedFactorization reused(&g.pattern, make_linear_solver(LinearSolverKind::kAuto, &g.pattern));
  VecX x;
  EXPECT_FALSE(reused.solve(VecX::Zero(g.pattern.nnz()), VecX::Ones(g.n), x));
}

}  // namespace
}  // namespace addsim
