// BandedLu (solver/banded_lu.h): on the pattern of a mass-spring sheet (a grid of 3-DOF
// particles, each coupled to its 8 grid neighbours) it solves A x = b and Aᵀ x = b to
// round-off like a sparse LU, in the sheet's own order or in a scrambled one (reverse
// Cuthill–McKee restores a narrow band), with row exchanges where the diagonal is small,
// counts the band's flops, and reports a singular matrix. In single precision
// (solver.factorization_precision = "single") it matches a scalar float LU to the bit, solves to
// float accuracy and refines to double's, is refused by the other solvers, and the sheet flip's
// forward run reaches the same roots with gradients that stay double.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <type_traits>

#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/solver/banded_lu.h"
#include "addsim/solver/linear_solver.h"
#include "addsim/solver/simulator.h"
#include "../sensitivity/centroid_objective.h"
#include "../support/linear_system.h"
#include "../support/particle_fixture.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

struct Sheet {
  StencilSet stencils;
  SparsePattern pattern;
  int n = 0;
};

// An m × m grid of particles; `slot[i]` is the particle index of grid point i (DOFs
// 3 slot[i] .. 3 slot[i] + 2): one 6-DOF stencil per structural and shear spring.
Sheet make_sheet(int m, const std::vector<int>& slot) {
  Sheet s;
  s.n = 3 * m * m;
  auto connect = [&](int i, int j) {
    const int a = 3 * slot[i], b = 3 * slot[j];
    s.stencils.add({a, a + 1, a + 2, b, b + 1, b + 2});
  };
  for (int y = 0; y < m; ++y)
    for (int x = 0; x < m; ++x) {
      const int i = x + m * y;
      if (x + 1 < m) connect(i, i + 1);
      if (y + 1 < m) connect(i, i + m);
      if (x + 1 < m && y + 1 < m) {
        connect(i, i + m + 1);
        connect(i + 1, i + m);
      }
    }
  s.pattern = SparsePattern(s.n, s.stencils);
  return s;
}

// A chain of `count` particles, each coupled to the next `reach` ones (3 reach + 2 rows below the
// diagonal in its own order).
Sheet make_chain(int count, int reach) {
  Sheet s;
  s.n = 3 * count;
  for (int i = 0; i < count; ++i)
    for (int d = 1; d <= reach && i + d < count; ++d)
      s.stencils.add({3 * i, 3 * i + 1, 3 * i + 2, 3 * (i + d), 3 * (i + d) + 1, 3 * (i + d) + 2});
  s.pattern = SparsePattern(s.n, s.stencils);
  return s;
}

std::vector<int> identity(int count) {
  std::vector<int> v(count);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Diagonal `mass` plus random nonsymmetric 6 × 6 blocks of size ~`coupling` per stencil.
VecX sheet_values(const Sheet& s, double mass, double coupling, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX values = VecX::Zero(s.pattern.nnz());
  for (int i = 0; i < s.n; ++i) values[s.pattern.diagonal_index(i)] += mass * (1.0 + 0.1 * u(rng));
  for (int k = 0; k < s.stencils.count(); ++k) {
    const int* map = s.pattern.map(k);
    for (int e = 0; e < 36; ++e) values[map[e]] += coupling * u(rng);
  }
  return values;
}

void expect_solves_like_sparse_lu(const Sheet& s, const VecX& values, LinearSolver& banded, std::mt19937& rng) {
  const auto sparse = make_linear_solver(LinearSolverKind::kEigenLu, &s.pattern);
  ASSERT_TRUE(banded.factorize(values));
  ASSERT_TRUE(sparse->factorize(values));
  const VecX b = test::random_rhs(s.n, rng);
  for (bool transpose : {false, true}) {
    VecX x, x_sparse;
    banded.solve(b, x, transpose);
    sparse->solve(b, x_sparse, transpose);
    EXPECT_LT(test::relative_residual(s.pattern, s.n, values, b, x, transpose), 1e-13) << (transpose ? "transposed" : "");
    EXPECT_LT((x - x_sparse).norm(), 1e-11 * x_sparse.norm()) << (transpose ? "transposed" : "");
  }
}

TEST(BandedLu, SolvesTheSheetInItsOwnOrder) {
  const Sheet s = make_sheet(5, identity(25));
  std::mt19937 rng(3);
  BandedLu lu(&s.pattern);
  EXPECT_STREQ(lu.name(), "banded_lu");
  // Row-major particles: neighbours at most 6 particles apart, so 6 · 3 + 2 DOFs.
  EXPECT_EQ(lu.ordering().lower, 20);
  EXPECT_EQ(lu.ordering().upper, 20);
  // A diagonally dominant matrix keeps its diagonal pivots: the band's flops exactly.
  expect_solves_like_sparse_lu(s, sheet_values(s, 200.0, 1.0, rng), lu, rng);
  EXPECT_DOUBLE_EQ(lu.factor_flops(), band_flops(lu.ordering()));
  const double n = s.n;
  EXPECT_LT(lu.factor_flops(), 0.2 * (2.0 * n * n * n / 3.0));
  EXPECT_GT(lu.solve_flops(), 0.0);
  EXPECT_LT(lu.solve_flops(), 2.0 * n * n);
  // A second matrix overwrites every entry.
  expect_solves_like_sparse_lu(s, sheet_values(s, 20.0, 3.0, rng), lu, rng);
}

TEST(BandedLu, ReverseCuthillMcKeeNarrowsAScrambledOrder) {
  std::vector<int> slot = identity(36);
  std::mt19937 rng(17);
  std::shuffle(slot.begin(), slot.end(), rng);
  const Sheet s = make_sheet(6, slot);
  const BandOrdering natural = natural_band(s.pattern);
  const BandOrdering rcm = reverse_cuthill_mckee(s.pattern);
  EXPECT_GT(natural.lower, 60);
  // A 6 × 6 grid of particles with diagonal couplings: RCM's level sets are anti-diagonals
  // of at most 6 particles, so neighbours are at most ≈ 2 levels apart.
  EXPECT_LE(rcm.lower, 3 * 13);
  EXPECT_EQ(rcm.lower, rcm.upper);  // a structurally symmetric pattern
  std::vector<int> sorted = rcm.order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity(s.n));
  BandedLu lu(&s.pattern);
  EXPECT_EQ(lu.ordering().lower, rcm.lower);
  expect_solves_like_sparse_lu(s, sheet_values(s, 50.0, 2.0, rng), lu, rng);
}

TEST(BandedLu, ExchangesRowsWhereTheDiagonalIsSmall) {
  const Sheet s = make_sheet(4, identity(16));
  std::mt19937 rng(5);
  // Tiny diagonal against O(1) couplings: most pivots come from below the diagonal, U's
  // band widens, and the flops exceed the band's without exchanges.
  const VecX values = sheet_values(s, 1e-6, 1.0, rng);
  BandedLu lu(&s.pattern);
  expect_solves_like_sparse_lu(s, values, lu, rng);
  EXPECT_GT(lu.factor_flops(), band_flops(lu.ordering()));
}

// Partial-pivoting LU of the dense n × n matrix B (column-major), right-looking and scalar,
// then B x = c or Bᵀ x = c column by column: the operations of LAPACK's dgbtf2/dgbtrs, with
// the band's zeros included (they change nothing: a − 0 · b = a).
// T = float: sgbtf2/sgbtrs, the right-hand side rounded to float.
// tau < 1: threshold partial pivoting — the diagonal stays while |a_jj| ≥ tau max_{i>j} |a_ij|,
// otherwise the first entry of largest magnitude below it; `largest_multiplier` returns max |l_ij|.
template <class T>
VecX dense_lu_reference_solve(std::vector<T> a, int n, const VecX& rhs, bool transpose, T tau = T(1),
                              T* largest_multiplier = nullptr) {
  auto at = [&](int i, int j) -> T& { return a[static_cast<size_t>(j) * n + i]; };
  std::vector<T> y(rhs.data(), rhs.data() + n);
  std::vector<int> piv(n);
  T largest = T(0);
  for (int j = 0; j < n; ++j) {
    int p = j + 1 < n ? j + 1 : j;
    for (int i = j + 2; i < n; ++i)
      if (std::abs(at(i, j)) > std::abs(at(p, j))) p = i;
    if (!(tau * std::abs(at(p, j)) > std::abs(at(j, j)))) p = j;
    piv[j] = p;
    if (p != j)
      for (int c = j; c < n; ++c) std::swap(at(j, c), at(p, c));
    for (int i = j + 1; i < n; ++i) {
      at(i, j) /= at(j, j);
      largest = std::max(largest, std::abs(at(i, j)));
    }
    for (int c = j + 1; c < n; ++c)
      for (int i = j + 1; i < n; ++i) at(i, c) -= at(i, j) * at(j, c);
  }
  if (!transpose) {
    for (int j = 0; j + 1 < n; ++j) {
      std::swap(y[j], y[piv[j]]);
      for (int i = j + 1; i < n; ++i) y[i] -= at(i, j) * y[j];
    }
    for (int j = n - 1; j >= 0; --j) {
      y[j] /= at(j, j);
      for (int i = 0; i < j; ++i) y[i] -= at(i, j) * y[j];
    }
  } else {
    for (int j = 0; j < n; ++j) {
      T s = y[j];
      for (int i = 0; i < j; ++i) s -= at(i, j) * y[i];
      y[j] = s / at(j, j);
    }
    for (int j = n - 2; j >= 0; --j) {
      T s = y[j];
      for (int i = j + 1; i < n; ++i) s -= at(i, j) * y[i];
      y[j] = s;
      std::swap(y[j], y[piv[j]]);
    }
  }
  if (largest_multiplier) *largest_multiplier = largest;
  VecX out(n);
  for (int k = 0; k < n; ++k) out[k] = y[k];
  return out;
}

// BandedLu's vectorised kernels (rank-one updates with the multipliers in registers, cloned
// for AVX2) do element by element what the scalar dense LU does: the same solutions to the bit
// (T = float: the single-precision factors against the scalar LU in float).
// tau < 1: against the scalar LU with the same threshold rule, whose multipliers are checked to
// stay within 1 / tau. zero_stride > 0: the right-hand side is zero except every zero_stride-th
// entry (columns the substitutions skip).
template <class T = double>
void expect_bitwise_like_scalar_lu(const Sheet& s, const VecX& values, std::mt19937& rng, double tau = 1.0,
                                   int zero_stride = 0) {
  BandedLu lu(&s.pattern,
              {std::is_same_v<T, float> ? FactorizationPrecision::kSingle : FactorizationPrecision::kDouble, tau});
  ASSERT_TRUE(lu.factorize(values));
  const std::vector<int>& order = lu.ordering().order;
  const std::vector<int>& position = lu.ordering().position;
  std::vector<T> dense(static_cast<size_t>(s.n) * s.n, T(0));
  const auto& outer = s.pattern.outer();
  const auto& inner = s.pattern.inner();
  for (int c = 0; c < s.n; ++c)
    for (int k = outer[c]; k < outer[c + 1]; ++k)
      dense[static_cast<size_t>(position[c]) * s.n + position[inner[k]]] = static_cast<T>(values[k]);
  VecX b = test::random_rhs(s.n, rng);
  if (zero_stride > 0)
    for (int k = 0; k < s.n; ++k)
      if (k % zero_stride != 0) b[k] = 0.0;
  VecX b_permuted(s.n);
  for (int k = 0; k < s.n; ++k) b_permuted[k] = static_cast<T>(b[order[k]]);
  for (bool transpose : {false, true}) {
    VecX x;
    lu.solve(b, x, transpose);
    T largest = T(0);
    const VecX y = dense_lu_reference_solve<T>(dense, s.n, b_permuted, transpose, static_cast<T>(tau), &largest);
    EXPECT_LE(largest, T(1) / static_cast<T>(tau));
    for (int k = 0; k < s.n; ++k)
      ASSERT_EQ(x[order[k]], y[k]) << "entry " << k << (transpose ? " (transposed)" : "") << ", tau " << tau;
  }
}

TEST(BandedLu, VectorisedKernelsMatchTheScalarLuToTheBit) {
  std::mt19937 rng(23);
  const Sheet sheet = make_sheet(5, identity(25));  // km = kl = 20: five registers of multipliers
  expect_bitwise_like_scalar_lu(sheet, sheet_values(sheet, 200.0, 1.0, rng), rng);
  expect_bitwise_like_scalar_lu(sheet, sheet_values(sheet, 1e-6, 1.0, rng), rng);  // row exchanges
  expect_bitwise_like_scalar_lu(sheet, sheet_values(sheet, 20.0, 3.0, rng), rng);
  // Integer entries: pivot candidates of equal magnitude, where the first one is chosen.
  const VecX ties = sheet_values(sheet, 1.0, 4.0, rng).array().round().matrix();
  expect_bitwise_like_scalar_lu(sheet, ties, rng);
  const Sheet small = make_sheet(3, identity(9));  // kl = 14: a scalar tail of two rows
  expect_bitwise_like_scalar_lu(small, sheet_values(small, 1e-3, 1.0, rng), rng);
  std::vector<int> slot = identity(49);
  std::shuffle(slot.begin(), slot.end(), rng);
  const Sheet wide = make_sheet(7, slot);  // reverse Cuthill–McKee, wider than 28 rows: the memory path
  EXPECT_GT(BandedLu(&wide.pattern).ordering().lower, 28);
  EXPECT_EQ(BandedLu(&small.pattern).ordering().lower, 14);
  expect_bitwise_like_scalar_lu(wide, sheet_values(wide, 1e-2, 1.0, rng), rng);
}

TEST(BandedLu, ZeroColumnIsSingular) {
  const Sheet s = make_sheet(3, identity(9));
  std::mt19937 rng(9);
  VecX values = sheet_values(s, 5.0, 1.0, rng);
  for (int k = s.pattern.outer()[4]; k < s.pattern.outer()[5]; ++k) values[k] = 0.0;
  EXPECT_FALSE(BandedLu(&s.pattern).factorize(values));
}

TEST(BandedLu, IsTheSolverOfItsKind) {
  const Sheet s = make_sheet(3, identity(9));
  EXPECT_STREQ(make_linear_solver(LinearSolverKind::kBanded, &s.pattern)->name(), "banded_lu");
}

// Simulator::set_phase_timing (docs/solver.md, "Sheet flip, seventh round"): off by default,
// the per-evaluation and per-factorisation clocks are not read (assembly_ms, factor_ms and
// solve_ms stay 0); on, they are summed; the states are the same bits either way. Three
// particles on springs dropping onto a plane, through the banded LU.
TEST(BandedLu, PhaseTimingIsOffByDefaultAndChangesNoState) {
  testing::ParticleFixture f(Integrator::kBdf2, 1.0 / 60.0, 12);
  f.particles({Vec3(0, 0, 0.01), Vec3(0.1, 0, 0.02), Vec3(0.2, 0, 0.005)}, {Vec3::Zero(), Vec3::Zero(), Vec3::Zero()},
              {0.01, 0.01, 0.01});
  f.contact_params(ContactModel::kLinear, 1e3, 0.0);
  f.plane(Vec3::Zero(), Vec3(0, 0, 1), 0.5);
  f.standard_terms(Vec3(0, 0, -9.81));
  f.model->add_term(std::make_unique<SpringTerm>(
      f.model.get(), std::vector<Spring>{f.spring(SpringKind::kDistance, f.point(0), f.point(1), 100.0, 0.1, 0.1),
                                         f.spring(SpringKind::kDistance, f.point(1), f.point(2), 100.0, 0.1, 0.1)}));
  f.model->solver_mut().linear_solver = LinearSolverKind::kBanded;
  f.model->finalize();
  const VecX p = f.model->params().defaults();
  Simulator plain(*f.model), timed(*f.model);
  EXPECT_FALSE(plain.phase_timing());
  timed.set_phase_timing(true);
  const Trajectory a = plain.run(p), b = timed.run(p);
  ASSERT_TRUE(a.completed() && b.completed()) << a.failure << b.failure;
  ASSERT_EQ(a.q.size(), b.q.size());
  double untimed_ms = 0.0, timed_ms = 0.0;
  int factorizations = 0;
  for (std::size_t k = 0; k < a.q.size(); ++k)
    EXPECT_EQ(std::memcmp(a.q[k].data(), b.q[k].data(), sizeof(double) * a.q[k].size()), 0) << "step " << k;
  for (const StepReport& r : a.reports) untimed_ms += r.assembly_ms + r.factor_ms + r.solve_ms;
  for (const StepReport& r : b.reports) {
    timed_ms += r.assembly_ms + r.factor_ms;
    factorizations += r.factorizations;
  }
  EXPECT_EQ(untimed_ms, 0.0);
  EXPECT_GT(factorizations, 0);
  EXPECT_GT(timed_ms, 0.0);
}

TEST(BandedLuSingle, KernelsMatchTheScalarFloatLuToTheBit) {
  std::mt19937 rng(29);
  const Sheet sheet = make_sheet(5, identity(25));  // km = kl = 20: three registers of eight over the padded band
  expect_bitwise_like_scalar_lu<float>(sheet, sheet_values(sheet, 200.0, 1.0, rng), rng);
  expect_bitwise_like_scalar_lu<float>(sheet, sheet_values(sheet, 1e-6, 1.0, rng), rng);  // row exchanges
  const VecX ties = sheet_values(sheet, 1.0, 4.0, rng).array().round().matrix();
  expect_bitwise_like_scalar_lu<float>(sheet, ties, rng);
  const Sheet small = make_sheet(3, identity(9));  // kl = 14: two registers of eight over the padded band
  expect_bitwise_like_scalar_lu<float>(small, sheet_values(small, 1e-3, 1.0, rng), rng);
  std::vector<int> slot = identity(121);
  std::shuffle(slot.begin(), slot.end(), rng);
  const Sheet wide = make_sheet(11, slot);  // wider than 56 rows: the multipliers from memory
  EXPECT_GT(BandedLu(&wide.pattern).ordering().lower, 56);
  expect_bitwise_like_scalar_lu<float>(wide, sheet_values(wide, 1e-2, 1.0, rng), rng);
}

// U's band in the last factorisation (u_band, ≥ lower), read back from solve_flops():
// Σ_j 2 (min(lower, n − 1 − j) + min(u_band, j)) + 1.
int u_band_of(const BandedLu& lu, int n) {
  const int kl = lu.ordering().lower;
  for (int u = 0; u <= 2 * n; ++u) {
    double flops = 0.0;
    for (int j = 0; j < n; ++j) flops += 2.0 * (std::min(kl, n - 1 - j) + std::min(u, j)) + 1.0;
    if (flops == lu.solve_flops()) return u;
  }
  return -1;
}

// band_solve's substitutions with y's rows in registers (a window of ⌈kl/8⌉ + 1 vectors forwards,
// ⌈u_band/8⌉ + 1 backwards, for kl ≤ 32 and u_band ≤ 48; the column loops through memory
// otherwise) give the scalar float LU's solutions to the bit, transposed solves unchanged: chains
// whose bands give every window size, n below the window and not a multiple of eight, many row
// exchanges (a tiny diagonal), right-hand sides with zeros, and bands past the windows.
TEST(BandedLuSingle, SubstitutionsInRegistersMatchTheScalarFloatLu) {
  std::mt19937 rng(37);
  std::vector<int> forward_windows, backward_windows;
  int memory_path = 0;
  const std::pair<int, int> chains[] = {{2, 1}, {3, 2}, {4, 2}, {5, 3}, {9, 5}, {12, 7}, {14, 8}, {25, 10}, {30, 11}};
  for (const auto& [count, reach] : chains) {
    const Sheet chain = make_chain(count, reach);
    for (const double mass : {200.0, 1e-6}) {
      const VecX values = sheet_values(chain, mass, 1.0, rng);
      SCOPED_TRACE("chain of " + std::to_string(count) + ", reach " + std::to_string(reach) + ", diagonal " +
                   std::to_string(mass));
      expect_bitwise_like_scalar_lu<float>(chain, values, rng);
      expect_bitwise_like_scalar_lu<float>(chain, values, rng, 1.0, 3);
      BandedLu lu(&chain.pattern, {FactorizationPrecision::kSingle});
      ASSERT_TRUE(lu.factorize(values));
      const int kl = lu.ordering().lower, u_band = u_band_of(lu, chain.n);
      ASSERT_GE(u_band, kl);
      if (kl <= 32 && u_band <= 48) {
        forward_windows.push_back((kl + 7) / 8 + 1);
        backward_windows.push_back((u_band + 7) / 8 + 1);
      } else {
        ++memory_path;
      }
    }
  }
  for (int vectors = 2; vectors <= 5; ++vectors)
    EXPECT_NE(std::count(forward_windows.begin(), forward_windows.end(), vectors), 0) << vectors << " vectors forwards";
  for (int vectors = 2; vectors <= 7; ++vectors)
    EXPECT_NE(std::count(backward_windows.begin(), backward_windows.end(), vectors), 0)
        << vectors << " vectors backwards";
  EXPECT_GT(memory_path, 0);
}

// Float factors solve the sheet to float accuracy (≈ 6e-8 × the condition number), and
// iterative refinement with the residual in double, x += B⁻¹ (b − B x), brings the solution to
// double accuracy — what the mixed-precision Newton does with its directions.
TEST(BandedLuSingle, SolvesTheSheetToFloatAccuracyAndRefines) {
  const Sheet s = make_sheet(5, identity(25));
  std::mt19937 rng(31);
  BandedLu lu(&s.pattern, {FactorizationPrecision::kSingle});
  EXPECT_STREQ(lu.name(), "banded_lu_single");
  EXPECT_EQ(lu.precision(), FactorizationPrecision::kSingle);
  for (const double mass : {200.0, 20.0, 1e-6}) {
    const VecX values = sheet_values(s, mass, mass > 1.0 ? 1.0 : 3.0, rng);
    ASSERT_TRUE(lu.factorize(values));
    BandedLu exact(&s.pattern);
    ASSERT_TRUE(exact.factorize(values));
    EXPECT_DOUBLE_EQ(lu.factor_flops(), exact.factor_flops()) << mass;
    const VecX b = test::random_rhs(s.n, rng);
    for (bool transpose : {false, true}) {
      VecX x, x_exact;
      lu.solve(b, x, transpose);
      exact.solve(b, x_exact, transpose);
      const double error = (x - x_exact).norm() / x_exact.norm();
      EXPECT_LT(error, 1e-5) << mass << (transpose ? " transposed" : "");
      EXPECT_GT(error, 1e-12) << mass << ": not float arithmetic";
      VecX product(s.n), correction;
      for (int step = 0; step < 4; ++step) {
        product.setZero();
        if (transpose)
          s.pattern.transpose_multiply_add(values, x, product);
        else
          s.pattern.multiply_add(values, x, product);
        lu.solve(b - product, correction, transpose);
        x += correction;
      }
      EXPECT_LT(test::relative_residual(s.pattern, s.n, values, b, x, transpose), 1e-13)
          << mass << (transpose ? " transposed" : "");
    }
  }
}

TEST(BandedLuSingle, OnlyTheSolversWithSingleFactorsAcceptIt) {
  const Sheet s = make_sheet(3, identity(9));
  EXPECT_STREQ(make_linear_solver(LinearSolverKind::kBanded, &s.pattern, {FactorizationPrecision::kSingle})->name(),
               "banded_lu_single");
  EXPECT_TRUE(supports_factorization_options(LinearSolverKind::kBanded));
  for (LinearSolverKind kind : {LinearSolverKind::kAuto, LinearSolverKind::kDense, LinearSolverKind::kEigenLu}) {
    EXPECT_FALSE(supports_factorization_options(kind));
    EXPECT_THROW(make_linear_solver(kind, &s.pattern, {FactorizationPrecision::kSingle}), InputError);
  }
}

// The first `steps` steps of the Table 2 sheet flip (banded LU, clamped first iteration, chord
// steps) with double factors and partial pivoting — the library's defaults, against which these
// tests compare the keys (the shipped scene sets "single" and 0.1) — then the test's overrides.
Scene sheet_flip(int steps, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"steps=" + std::to_string(steps), "solver.factorization_precision=\"double\"",
                                       "solver.pivot_threshold=1"});
  return load_scene_file(test::scene_path("sheet_flip.json"), overrides);
}

// Loading the sheet flip with `overrides` fails with a one-line error naming `key` and
// containing `needle`.
void expect_scene_error(const std::vector<std::string>& overrides, const char* key, const char* needle) {
  try {
    sheet_flip(2, overrides);
    FAIL() << overrides.back() << " was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(key), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(BandedLuSingle, KeyIsValidated) {
  const Scene plain = sheet_flip(2, {});
  EXPECT_EQ(plain.model->solver().factorization.precision, FactorizationPrecision::kDouble);
  const Scene single = sheet_flip(2, {"solver.factorization_precision=\"single\""});
  EXPECT_EQ(single.model->solver().factorization.precision, FactorizationPrecision::kSingle);
  auto expect_error = [](const std::vector<std::string>& overrides, const char* needle) {
    expect_scene_error(overrides, "solver.factorization_precision", needle);
  };
  expect_error({"solver.factorization_precision=\"half\""}, "\"double\", \"single\"");
  expect_error({"solver.factorization_precision=32"}, "");
  expect_error({"solver.linear_solver=\"dense\"", "solver.factorization_precision=\"single\""}, "\"banded\"");
  expect_error({"solver.linear_solver=\"auto\"", "solver.factorization_precision=\"single\""}, "got \"auto\"");
}

// 40 steps of the sheet flip (the first flip's lift, the sheet off the floor and back onto it)
// with float factors: the Newton iteration corrects the directions' float error, so the steps
// converge to the same roots within the Newton tolerance (1e-10 N against springs of 1e3 N/m),
// with about as many iterations and LUs.
TEST(BandedLuSingle, SheetFlipReachesTheSameRoots) {
  const Scene plain = sheet_flip(40, {});
  const Scene single = sheet_flip(40, {"solver.factorization_precision=\"single\""});
  Simulator sim_plain(*plain.model), sim_single(*single.model);
  const VecX p = plain.model->params().defaults();
  const Trajectory a = sim_plain.run(p), b = sim_single.run(p);
  ASSERT_TRUE(a.completed()) << a.failure;
  ASSERT_TRUE(b.completed()) << b.failure;
  ASSERT_EQ(a.q.size(), b.q.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < a.q.size(); ++i) worst = std::max(worst, (a.q[i] - b.q[i]).lpNorm<Eigen::Infinity>());
  EXPECT_LT(worst, 1e-9);
  EXPECT_GT(worst, 0.0) << "the float factors changed nothing";
  int its_a = 0, its_b = 0, lus_a = 0, lus_b = 0;
  for (const StepReport& r : a.reports) its_a += r.iterations, lus_a += r.factorizations;
  for (const StepReport& r : b.reports) its_b += r.iterations, lus_b += r.factorizations;
  EXPECT_LE(its_b, its_a + its_a / 20);
  EXPECT_LE(lus_b, lus_a + lus_a / 20);
}

// The adjoint gradients of one trajectory through two models that differ only in forward-solver
// keys are the same bits (the sensitivities build their own solvers with the defaults).
void expect_same_adjoint_gradient(const Model& plain, const Model& keyed, const Trajectory& t) {
  const test::CentroidObjective objective;
  const GradientResult g_plain = gradient_adjoint(plain, t, objective);
  const GradientResult g_keyed = gradient_adjoint(keyed, t, objective);
  EXPECT_EQ(g_plain.phi, g_keyed.phi);
  ASSERT_EQ(g_plain.dphi_dp.size(), g_keyed.dphi_dp.size());
  EXPECT_TRUE((g_plain.dphi_dp.array() == g_keyed.dphi_dp.array()).all());
}

// The sensitivities factorise in double whatever the key says: on one trajectory the gradient
// with the key on is the key-off gradient bit for bit, and on each setting's own trajectory
// (the same roots within the tolerance) the gradients agree to the trajectories' difference.
TEST(BandedLuSingle, GradientsStayDouble) {
  const Scene plain = sheet_flip(16, {});
  const Scene single = sheet_flip(16, {"solver.factorization_precision=\"single\""});
  const VecX p = plain.model->params().defaults();
  Simulator sim_plain(*plain.model), sim_single(*single.model);
  const Trajectory a = sim_plain.run(p), b = sim_single.run(p);
  ASSERT_TRUE(a.completed()) << a.failure;
  ASSERT_TRUE(b.completed()) << b.failure;
  expect_same_adjoint_gradient(*plain.model, *single.model, a);
  const test::CentroidObjective objective;
  const GradientResult g_plain = gradient_adjoint(*plain.model, a, objective);
  const GradientResult g_single = gradient_adjoint(*single.model, b, objective);
  EXPECT_NEAR(g_single.phi, g_plain.phi, 1e-9 * std::abs(g_plain.phi));
  EXPECT_LT((g_single.dphi_dp - g_plain.dphi_dp).norm(), 1e-6 * g_plain.dphi_dp.norm());
}

// Spring-like step Jacobians of the sheet: mass / h² on the diagonal plus, per stencil, a
// stiff symmetric spring block k [P −P; −P P] (P = d dᵀ along a random direction) and a small
// nonsymmetric part (damping, friction) — near symmetric positive definite, like the Table 2
// sheet's M/h² + K + D/h, whose partial-pivoting LU still exchanges rows where an eliminated
// column's coupling outgrows its diagonal.
VecX spring_sheet_values(const Sheet& s, double mass, double k, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX values = VecX::Zero(s.pattern.nnz());
  for (int i = 0; i < s.n; ++i) values[s.pattern.diagonal_index(i)] += mass;
  for (int c = 0; c < s.stencils.count(); ++c) {
    const int* map = s.pattern.map(c);
    Vec3 d(u(rng), u(rng), u(rng));
    d.normalize();
    const Mat3 block = k * d * d.transpose();
    for (int a = 0; a < 6; ++a)
      for (int b = 0; b < 6; ++b)
        values[map[a + 6 * b]] += ((a < 3) == (b < 3) ? 1.0 : -1.0) * block(a % 3, b % 3) + 1e-3 * k * u(rng);
  }
  return values;
}

// solver.pivot_threshold = 1 is partial pivoting: the same factors and solutions, to the bit,
// as the default constructor.
TEST(BandedLuThreshold, OneIsPartialPivotingToTheBit) {
  const Sheet s = make_sheet(5, identity(25));
  std::mt19937 rng(37);
  for (const FactorizationPrecision precision : {FactorizationPrecision::kDouble, FactorizationPrecision::kSingle}) {
    const VecX values = spring_sheet_values(s, 14.4, 1000.0, rng);
    BandedLu plain(&s.pattern, {precision}), one(&s.pattern, {precision, 1.0});
    ASSERT_TRUE(plain.factorize(values));
    ASSERT_TRUE(one.factorize(values));
    EXPECT_GT(plain.row_exchanges(), 0);
    EXPECT_EQ(plain.row_exchanges(), one.row_exchanges());
    EXPECT_EQ(plain.u_band(), one.u_band());
    EXPECT_EQ(plain.factor_flops(), one.factor_flops());
    const VecX b = test::random_rhs(s.n, rng);
    for (bool transpose : {false, true}) {
      VecX x, y;
      plain.solve(b, x, transpose);
      one.solve(b, y, transpose);
      EXPECT_EQ(std::memcmp(x.data(), y.data(), sizeof(double) * s.n), 0);
    }
  }
}

// The kernels' threshold choice is the scalar rule's (same bits, both precisions, ties to the
// topmost entry), and the multipliers stay within 1 / tau.
TEST(BandedLuThreshold, KernelsMatchTheScalarThresholdLuToTheBit) {
  std::mt19937 rng(41);
  const Sheet sheet = make_sheet(5, identity(25));
  const Sheet small = make_sheet(3, identity(9));
  for (const double tau : {0.5, 0.1, 0.01}) {
    expect_bitwise_like_scalar_lu(sheet, spring_sheet_values(sheet, 14.4, 1000.0, rng), rng, tau);
    expect_bitwise_like_scalar_lu(sheet, sheet_values(sheet, 1e-6, 1.0, rng), rng, tau);
    expect_bitwise_like_scalar_lu(sheet, sheet_values(sheet, 1.0, 4.0, rng).array().round().matrix(), rng, tau);
    expect_bitwise_like_scalar_lu(small, sheet_values(small, 1e-3, 1.0, rng), rng, tau);
    expect_bitwise_like_scalar_lu<float>(sheet, spring_sheet_values(sheet, 14.4, 1000.0, rng), rng, tau);
    expect_bitwise_like_scalar_lu<float>(sheet, sheet_values(sheet, 1e-6, 1.0, rng), rng, tau);
  }
}

// On the spring sheet a threshold below 1 keeps (almost) every pivot on the diagonal: U's band
// stays `upper` and the factorisation does fewer flops; the solutions are those of a sparse LU to
// round-off (double) and to float accuracy (single).
TEST(BandedLuThreshold, KeepsTheDiagonalAndSolvesTheSpringSheet) {
  const Sheet s = make_sheet(5, identity(25));
  std::mt19937 rng(43);
  for (int trial = 0; trial < 4; ++trial) {
    const VecX values = spring_sheet_values(s, 14.4, 1000.0, rng);
    BandedLu partial(&s.pattern), threshold(&s.pattern, {FactorizationPrecision::kDouble, 0.1});
    ASSERT_TRUE(partial.factorize(values));
    expect_solves_like_sparse_lu(s, values, threshold, rng);
    EXPECT_GT(partial.u_band(), threshold.u_band()) << trial;
    EXPECT_EQ(threshold.u_band(), threshold.ordering().upper) << trial;
    EXPECT_LT(threshold.row_exchanges(), partial.row_exchanges()) << trial;
    EXPECT_LT(threshold.factor_flops(), partial.factor_flops()) << trial;
    EXPECT_DOUBLE_EQ(threshold.factor_flops(), band_flops(threshold.ordering())) << trial;
    EXPECT_LT(threshold.solve_flops(), partial.solve_flops()) << trial;
    BandedLu single(&s.pattern, {FactorizationPrecision::kSingle, 0.1});
    ASSERT_TRUE(single.factorize(values));
    EXPECT_EQ(single.u_band(), single.ordering().upper) << trial;
    const VecX b = test::random_rhs(s.n, rng);
    for (bool transpose : {false, true}) {
      VecX x, x_exact;
      single.solve(b, x, transpose);
      partial.solve(b, x_exact, transpose);
      EXPECT_LT((x - x_exact).norm(), 1e-4 * x_exact.norm()) << trial << (transpose ? " transposed" : "");
    }
  }
}

// A diagonal far below tau times its column still gives way to a row exchange, and the solution
// stays accurate; a zero diagonal is exchanged for any nonzero entry below it.
TEST(BandedLuThreshold, SmallDiagonalsStillExchangeRows) {
  const Sheet s = make_sheet(4, identity(16));
  std::mt19937 rng(47);
  VecX values = sheet_values(s, 1e-6, 1.0, rng);
  BandedLu lu(&s.pattern, {FactorizationPrecision::kDouble, 0.1});
  expect_solves_like_sparse_lu(s, values, lu, rng);
  EXPECT_GT(lu.row_exchanges(), 0);
  EXPECT_GT(lu.u_band(), lu.ordering().upper);
  values[s.pattern.diagonal_index(0)] = 0.0;
  expect_solves_like_sparse_lu(s, values, lu, rng);
  EXPECT_GT(lu.row_exchanges(), 0);
}

TEST(BandedLuThreshold, ThresholdOutsideItsRangeIsRefused) {
  const Sheet s = make_sheet(3, identity(9));
  for (const double tau : {0.0, -0.5, 1.5, std::nan("")})
    EXPECT_THROW(BandedLu(&s.pattern, {FactorizationPrecision::kDouble, tau}), InputError) << tau;
  EXPECT_EQ(make_linear_solver(LinearSolverKind::kBanded, &s.pattern, {FactorizationPrecision::kDouble, 0.25})->name(),
            std::string("banded_lu"));
  EXPECT_TRUE(supports_factorization_options(LinearSolverKind::kBanded));
  for (LinearSolverKind kind : {LinearSolverKind::kAuto, LinearSolverKind::kDense, LinearSolverKind::kEigenLu}) {
    EXPECT_FALSE(supports_factorization_options(kind));
    EXPECT_THROW(make_linear_solver(kind, &s.pattern, {FactorizationPrecision::kDouble, 0.25}), InputError);
    EXPECT_NO_THROW(make_linear_solver(kind, &s.pattern, {FactorizationPrecision::kDouble, 1.0}));
  }
}

TEST(BandedLuThreshold, KeyIsValidated) {
  EXPECT_EQ(sheet_flip(2, {}).model->solver().factorization.pivot_threshold, 1.0);
  EXPECT_EQ(sheet_flip(2, {"solver.pivot_threshold=0.1"}).model->solver().factorization.pivot_threshold, 0.1);
  auto expect_error = [](const std::vector<std::string>& overrides, const char* needle) {
    expect_scene_error(overrides, "solver.pivot_threshold", needle);
  };
  expect_error({"solver.pivot_threshold=0"}, "");
  expect_error({"solver.pivot_threshold=-0.5"}, "");
  expect_error({"solver.pivot_threshold=1.5"}, "(0, 1]");
  expect_error({"solver.pivot_threshold=\"tight\""}, "");
  expect_error({"solver.linear_solver=\"dense\"", "solver.pivot_threshold=0.5"}, "\"banded\"");
  expect_error({"solver.linear_solver=\"auto\"", "solver.pivot_threshold=0.5"}, "got \"auto\"");
  EXPECT_NO_THROW(sheet_flip(2, {"solver.linear_solver=\"dense\"", "solver.pivot_threshold=1"}));
}

// 40 steps of the sheet flip with tau = 0.1, in double and with single-precision factors: the
// same roots within the Newton tolerance, about as many iterations and LUs; tau = 1 written
// out is the default's run to the bit.
TEST(BandedLuThreshold, SheetFlipReachesTheSameRoots) {
  auto counts = [](const Trajectory& t) {
    int its = 0, lus = 0;
    for (const StepReport& r : t.reports) its += r.iterations, lus += r.factorizations;
    return std::pair<int, int>(its, lus);
  };
  for (const std::string precision : {"\"double\"", "\"single\""}) {
    const Scene plain = sheet_flip(40, {"solver.factorization_precision=" + precision});
    const Scene one = sheet_flip(40, {"solver.factorization_precision=" + precision, "solver.pivot_threshold=1"});
    const Scene tau = sheet_flip(40, {"solver.factorization_precision=" + precision, "solver.pivot_threshold=0.1"});
    Simulator sim_plain(*plain.model), sim_one(*one.model), sim_tau(*tau.model);
    const VecX p = plain.model->params().defaults();
    const Trajectory a = sim_plain.run(p), b = sim_one.run(p), c = sim_tau.run(p);
    ASSERT_TRUE(a.completed() && b.completed() && c.completed()) << a.failure << b.failure << c.failure;
    ASSERT_EQ(a.q.size(), c.q.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < a.q.size(); ++i) {
      EXPECT_EQ(std::memcmp(a.q[i].data(), b.q[i].data(), sizeof(double) * a.q[i].size()), 0) << precision << i;
      worst = std::max(worst, (a.q[i] - c.q[i]).lpNorm<Eigen::Infinity>());
    }
    EXPECT_LT(worst, 1e-9) << precision;
    EXPECT_GT(worst, 0.0) << precision << ": the threshold changed nothing";
    const auto [its_a, lus_a] = counts(a);
    const auto [its_c, lus_c] = counts(c);
    EXPECT_LE(its_c, its_a + its_a / 50) << precision;
    EXPECT_LE(lus_c, lus_a + lus_a / 50) << precision;
  }
}

// The sensitivities factorise with partial pivoting whatever the key says: on one trajectory
// the adjoint gradient with the key on is the key-off gradient bit for bit.
TEST(BandedLuThreshold, GradientsKeepPartialPivoting) {
  const Scene plain = sheet_flip(16, {});
  const Scene keyed = sheet_flip(16, {"solver.pivot_threshold=0.1"});
  const VecX p = plain.model->params().defaults();
  Simulator sim(*plain.model);
  const Trajectory a = sim.run(p);
  ASSERT_TRUE(a.completed()) << a.failure;
  expect_same_adjoint_gradient(*plain.model, *keyed.model, a);
}

}  // namespace
}  // namespace addsim
