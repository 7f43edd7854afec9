// BlockSchurLu (solver/block_schur_lu.h): on random block-structured matrices (a tree of
// small "rigid" blocks with large "soft" blocks hanging from its leaves through few DOFs, and
// a ring of blocks whose elimination fills) it solves A x = b and Aᵀ x = b like a dense LU,
// splits bodies into runs of identical columns, counts its flops, reports a singular diagonal
// block; and on the soft-feet quadruped's real step Jacobian (needs gmsh) it finds one block
// per rigid body and FEM node and solves to round-off. Making a solver leaves no OpenBLAS worker
// threads running. The forward substitution's lane groups of independent blocks give the
// block-by-block substitution's bits.

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <limits>
#include <random>
#include <string>

#include <Eigen/LU>

#include "addsim/io/scene.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/solver/block_schur_lu.h"
#include "addsim/solver/linear_solver.h"
#include "addsim/solver/simulator.h"
#include "../support/linear_system.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

struct BlockSystem {
  StencilSet stencils;
  SparsePattern pattern;
  std::vector<int> starts;
  int n = 0;
};

// Blocks of the given sizes, each dense inside; `links` couple `width` DOFs of block a with
// `width` DOFs of block b (random ones, as ball joints tie a few nodes to a body).
BlockSystem make_block_system(const std::vector<int>& sizes, const std::vector<std::pair<int, int>>& links, int width,
                              std::mt19937& rng) {
  BlockSystem s;
  s.starts.push_back(0);
  for (int size : sizes) s.starts.push_back(s.starts.back() + size);
  s.n = s.starts.back();
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<DofIndex> dofs;
    for (int d = s.starts[k]; d < s.starts[k + 1]; ++d) dofs.push_back(d);
    s.stencils.add(dofs);
  }
  for (const auto& [a, b] : links) {
    std::vector<DofIndex> dofs;
    for (int block : {a, b}) {
      std::uniform_int_distribution<int> pick(s.starts[block], s.starts[block + 1] - 1);
      for (int w = 0; w < width; ++w) dofs.push_back(pick(rng));
    }
    std::sort(dofs.begin(), dofs.end());
    dofs.erase(std::unique(dofs.begin(), dofs.end()), dofs.end());
    s.stencils.add(dofs);
  }
  s.pattern = SparsePattern(s.n, s.stencils);
  s.pattern.set_blocks(s.starts);
  return s;
}

// Random nonsymmetric entries of size ~`coupling` on the pattern plus `mass` on the diagonal.
VecX block_values(const BlockSystem& s, double mass, double coupling, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX values(s.pattern.nnz());
  for (int e = 0; e < s.pattern.nnz(); ++e) values[e] = coupling * u(rng);
  for (int i = 0; i < s.n; ++i) values[s.pattern.diagonal_index(i)] += mass * (1.0 + 0.1 * u(rng));
  return values;
}

void expect_solves_like_dense_lu(const SparsePattern& pattern, const VecX& values, LinearSolver& lu, std::mt19937& rng,
                                 double tolerance = 1e-13) {
  const int n = pattern.size();
  const MatX dense = MatX(pattern.make_matrix(values));
  const Eigen::FullPivLU<MatX> reference(dense);
  ASSERT_TRUE(lu.factorize(values));
  const VecX b = test::random_rhs(n, rng);
  for (bool transpose : {false, true}) {
    VecX x;
    lu.solve(b, x, transpose);
    const VecX x_reference = transpose ? VecX(Eigen::FullPivLU<MatX>(dense.transpose()).solve(b)) : VecX(reference.solve(b));
    EXPECT_LT(test::relative_residual(pattern, n, values, b, x, transpose), tolerance) << (transpose ? "transposed" : "");
    EXPECT_LT((x - x_reference).norm(), 1e-10 * x_reference.norm()) << (transpose ? "transposed" : "");
    // Without refinement (preconditioner use) the substitutions alone are accurate too.
    lu.precondition(b, x, transpose);
    EXPECT_LT(test::relative_residual(pattern, n, values, b, x, transpose), 1e-11) << (transpose ? "transposed" : "");
  }
}

// A quadruped-like tree: torso 0, four legs of three 6-DOF links (hip, thigh, shin), a
// 45-DOF soft foot under each shin tied to it through 3 DOFs.
BlockSystem make_robot(std::mt19937& rng) {
  std::vector<int> sizes{6};
  std::vector<std::pair<int, int>> links;
  for (int leg = 0; leg < 4; ++leg) {
    int parent = 0;
    for (int link = 0; link < 3; ++link) {
      sizes.push_back(6);
      links.emplace_back(parent, static_cast<int>(sizes.size()) - 1);
      parent = static_cast<int>(sizes.size()) - 1;
    }
    sizes.push_back(45);
    links.emplace_back(parent, static_cast<int>(sizes.size()) - 1);
  }
  return make_block_system(sizes, links, 3, rng);
}

// The flops of a factorisation and of a substitution from the solver's own block structure
// (the formula of block_schur_lu.h).
std::pair<double, double> expected_flops(const BlockSchurLu& lu) {
  double factor = 0.0, solve = 0.0;
  for (int k : lu.order()) {
    const double s = static_cast<double>(lu.dofs(k).size());
    const double t = static_cast<double>(lu.front(k).size());
    factor += 2.0 * s * s * s / 3.0 + 2.0 * s * s * t + 2.0 * s * t * t;
    solve += 2.0 * s * s + 4.0 * s * t;
  }
  return {factor, solve};
}

TEST(BlockSchurLu, SolvesATreeOfBodies) {
  std::mt19937 rng(21);
  const BlockSystem s = make_robot(rng);
  BlockSchurLu lu(&s.pattern);
  EXPECT_STREQ(lu.name(), "block_schur_lu");
  // Column groups are runs of identical columns inside a body: the links split the bodies
  // at the DOFs they tie. Blocks join nested groups; every DOF is in exactly one block.
  EXPECT_GT(lu.groups(), 17);
  EXPECT_LT(lu.blocks(), lu.groups());
  std::vector<int> seen(s.n, 0);
  for (int k = 0; k < lu.blocks(); ++k)
    for (int d : lu.dofs(k)) ++seen[d];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), s.n);
  expect_solves_like_dense_lu(s.pattern, block_values(s, 20.0, 1.0, rng), lu, rng);
  const auto [factor, solve] = expected_flops(lu);
  EXPECT_NEAR(lu.factor_flops(), factor, 1e-6 * factor);
  EXPECT_NEAR(lu.solve_flops(), solve, 1e-6 * solve);
  const double n = s.n;
  EXPECT_LT(lu.factor_flops(), 0.1 * 2.0 * n * n * n / 3.0);
  // A second matrix overwrites every entry; a weak diagonal pivots inside the blocks.
  expect_solves_like_dense_lu(s.pattern, block_values(s, 0.5, 1.0, rng), lu, rng, 1e-12);
}

TEST(BlockSchurLu, SolvesARingWhoseEliminationFills) {
  std::mt19937 rng(8);
  // Five blocks in a ring plus a chord: eliminating any of them joins its two neighbours.
  const BlockSystem s = make_block_system({12, 9, 15, 6, 10}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}, {1, 3}}, 4, rng);
  BlockSchurLu lu(&s.pattern);
  EXPECT_GT(lu.fill_pairs(), 0);
  expect_solves_like_dense_lu(s.pattern, block_values(s, 10.0, 1.0, rng), lu, rng);
  expect_solves_like_dense_lu(s.pattern, block_values(s, 1.0, 1.0, rng), lu, rng, 1e-12);
}

TEST(BlockSchurLu, WithoutBodiesSplitsByColumnPattern) {
  std::mt19937 rng(4);
  BlockSystem s = make_block_system({10, 10}, {{0, 1}}, 3, rng);
  s.pattern.set_blocks({});
  BlockSchurLu lu(&s.pattern);
  expect_solves_like_dense_lu(s.pattern, block_values(s, 5.0, 1.0, rng), lu, rng);
  const auto [factor, solve] = expected_flops(lu);
  EXPECT_NEAR(lu.factor_flops(), factor, 1e-6 * factor);
}

TEST(BlockSchurLu, SingularDiagonalBlockFails) {
  std::mt19937 rng(9);
  const BlockSystem s = make_robot(rng);
  VecX values = block_values(s, 5.0, 1.0, rng);
  // A zero column inside a foot.
  const int c = s.starts[4] + 7;
  for (int e = s.pattern.outer()[c]; e < s.pattern.outer()[c + 1]; ++e) values[e] = 0.0;
  EXPECT_FALSE(BlockSchurLu(&s.pattern).factorize(values));
}

// The in-place block LU pivots inside blocks of every size: the unrolled 3- and 6-DOF
// kernels, the generic loops for other sizes, and blocks above 16 DOFs; diagonals without
// mass (pivoting needed), plain and transposed solves, with fronts (a second body tied in).
TEST(BlockSchurLu, PivotsInsideBlocksOfEverySize) {
  std::mt19937 rng(17);
  for (int size : {1, 2, 3, 5, 6, 7, 13, 40}) {
    SCOPED_TRACE(size);
    const BlockSystem alone = make_block_system({size}, {}, 0, rng);
    BlockSchurLu single(&alone.pattern);
    EXPECT_EQ(single.blocks(), 1);
    expect_solves_like_dense_lu(alone.pattern, block_values(alone, 0.0, 1.0, rng), single, rng, 1e-12);
    const BlockSystem pair = make_block_system({size, 6, size}, {{0, 1}, {1, 2}}, 1, rng);
    BlockSchurLu lu(&pair.pattern);
    expect_solves_like_dense_lu(pair.pattern, block_values(pair, 0.0, 1.0, rng), lu, rng, 1e-12);
  }
}

// Diagonal blocks of 48 DOFs or more are factorised by LAPACK's dgetrf (the soft ball's root
// block), smaller ones by the loops: both sides of the threshold, alone and with fronts,
// pivoting (no mass on the diagonal); an exactly singular or non-finite large block fails.
TEST(BlockSchurLu, FactorisesLargeBlocksLikeADenseLu) {
  std::mt19937 rng(48);
  for (int size : {47, 48, 64, 141}) {
    SCOPED_TRACE(size);
    const BlockSystem alone = make_block_system({size}, {}, 0, rng);
    BlockSchurLu single(&alone.pattern);
    EXPECT_EQ(single.blocks(), 1);
    expect_solves_like_dense_lu(alone.pattern, block_values(alone, 0.0, 1.0, rng), single, rng, 1e-12);
    const BlockSystem chain = make_block_system({3, size, 6, size}, {{0, 1}, {1, 2}, {2, 3}}, 2, rng);
    BlockSchurLu lu(&chain.pattern);
    expect_solves_like_dense_lu(chain.pattern, block_values(chain, 0.0, 1.0, rng), lu, rng, 1e-12);
    const auto [factor, solve] = expected_flops(lu);
    EXPECT_NEAR(lu.factor_flops(), factor, 1e-6 * factor);
    EXPECT_NEAR(lu.solve_flops(), solve, 1e-6 * solve);
    VecX singular = block_values(alone, 5.0, 1.0, rng);
    const int c = size / 2;
    for (int e = alone.pattern.outer()[c]; e < alone.pattern.outer()[c + 1]; ++e) singular[e] = 0.0;
    EXPECT_FALSE(single.factorize(singular));
    VecX broken = block_values(alone, 5.0, 1.0, rng);
    broken[alone.pattern.diagonal_index(size - 1)] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(single.factorize(broken));
    expect_solves_like_dense_lu(alone.pattern, block_values(alone, 5.0, 1.0, rng), single, rng);
  }
}

TEST(BlockSchurLu, NonFiniteDiagonalBlockFails) {
  std::mt19937 rng(12);
  const BlockSystem s = make_robot(rng);
  VecX values = block_values(s, 5.0, 1.0, rng);
  values[s.pattern.diagonal_index(s.starts[2] + 1)] = std::numeric_limits<double>::quiet_NaN();
  BlockSchurLu lu(&s.pattern);
  EXPECT_FALSE(lu.factorize(values));
  // The same solver factorises a regular matrix afterwards.
  expect_solves_like_dense_lu(s.pattern, block_values(s, 5.0, 1.0, rng), lu, rng);
}

TEST(BlockSchurLu, IsTheSolverOfItsKind) {
  std::mt19937 rng(1);
  const BlockSystem s = make_robot(rng);
  EXPECT_STREQ(make_linear_solver(LinearSolverKind::kSchur, &s.pattern)->name(), "block_schur_lu");
}

// Making a solver limits OpenBLAS to one thread and stops its worker pool, whose idle workers
// would otherwise poll for ≈ 0.1 s of CPU each (linear_solver.cpp, limit_blas_threads). Each
// test runs in its own process (gtest_discover_tests), so the pool is the one started at load.
// Empty when the check applies, else why it is skipped.
std::string openblas_pool_skip_reason() {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return "OPENBLAS_NUM_THREADS is set by the user";
  if (dlsym(RTLD_DEFAULT, "blas_thread_shutdown_") == nullptr) return "this BLAS is not OpenBLAS (pthreads)";
  return {};
}

long threads_of_this_process() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/task"), std::filesystem::directory_iterator{});
}

// A 48-DOF block goes through LAPACK's dgetrf, on the calling thread.
void expect_dgetrf_block_solves_on_one_thread() {
  std::mt19937 rng(48);
  const BlockSystem large = make_block_system({48}, {}, 0, rng);
  BlockSchurLu lu(&large.pattern);
  expect_solves_like_dense_lu(large.pattern, block_values(large, 0.0, 1.0, rng), lu, rng, 1e-12);
  EXPECT_EQ(threads_of_this_process(), 1);
}

TEST(BlockSchurLu, MakingASolverStopsOpenBlasWorkers) {
  if (const std::string why = openblas_pool_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(2);
  const BlockSystem s = make_robot(rng);
  const auto solver = make_linear_solver(LinearSolverKind::kSchur, &s.pattern);
  EXPECT_EQ(threads_of_this_process(), 1);
  expect_dgetrf_block_solves_on_one_thread();
}

// The same for a block LU constructed directly (benchmarks, tests), without make_linear_solver.
TEST(BlockSchurLu, ConstructingOneStopsOpenBlasWorkers) {
  if (const std::string why = openblas_pool_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(3);
  const BlockSystem s = make_robot(rng);
  const BlockSchurLu lu(&s.pattern);
  EXPECT_EQ(threads_of_this_process(), 1);
  expect_dgetrf_block_solves_on_one_thread();
}

// The forward substitution solves groups of independent blocks in vector lanes: each block
// in exactly one group, led by its first block, of one size, at most four, none in the front
// of a block from the leader up to it; the substitutions (both directions, a few right-hand
// sides) give the block-by-block reference's bits. Returns the largest group.
size_t expect_interleaved_substitution_bits(BlockSchurLu& lu, int n, std::mt19937& rng) {
  size_t largest = 0;
  std::vector<int> seen(lu.blocks(), 0);
  for (int k = 0; k < lu.blocks(); ++k) {
    const std::vector<int> group = lu.lane_group(k);
    largest = std::max(largest, group.size());
    EXPECT_LE(group.size(), 4u);
    if (group.empty()) continue;
    EXPECT_EQ(group[0], k);
    for (int member : group) {
      ++seen[member];
      EXPECT_GE(member, k);
      EXPECT_EQ(lu.dofs(member).size(), lu.dofs(k).size());
      for (int j = k; j < member; ++j)
        EXPECT_EQ(std::count(lu.later(j).begin(), lu.later(j).end(), member), 0)
            << "block " << member << " in " << j << "'s front";
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), lu.blocks());
  for (int rhs = 0; rhs < 3; ++rhs) {
    const VecX b = 1e3 * test::random_rhs(n, rng);
    for (bool transpose : {false, true}) {
      VecX x, reference;
      lu.precondition(b, x, transpose);
      lu.precondition_in_order(b, reference, transpose);
      EXPECT_TRUE(x.size() == n && reference.size() == n &&
                  std::memcmp(x.data(), reference.data(), static_cast<size_t>(n) * sizeof(double)) == 0)
          << (transpose ? "transposed" : "");
    }
  }
  return largest;
}

// A root body of 6 DOFs with `leaves` dense blocks of `leaf` DOFs, each coupled to the whole
// root: the leaves are eliminated one after another, independently, until the root goes.
BlockSystem make_star_of_leaves(int leaf, int leaves) {
  BlockSystem s;
  s.starts.push_back(0);
  s.starts.push_back(6);
  for (int l = 0; l < leaves; ++l) s.starts.push_back(s.starts.back() + leaf);
  s.n = s.starts.back();
  for (int l = 0; l < leaves; ++l) {
    std::vector<DofIndex> dofs;
    for (int d = 0; d < 6; ++d) dofs.push_back(d);
    for (int d = s.starts[l + 1]; d < s.starts[l + 2]; ++d) dofs.push_back(d);
    s.stencils.add(dofs);
  }
  s.pattern = SparsePattern(s.n, s.stencils);
  s.pattern.set_blocks(s.starts);
  return s;
}

TEST(BlockSchurLu, IndependentBlocksShareLanesWithTheSameBits) {
  std::mt19937 rng(15);
  for (int leaf : {1, 3, 5, 6, 7, 42}) {
    for (int leaves : {2, 3, 4, 5, 9}) {
      SCOPED_TRACE(testing::Message() << leaves << " leaves of " << leaf);
      const BlockSystem s = make_star_of_leaves(leaf, leaves);
      BlockSchurLu lu(&s.pattern);
      // Diagonals far from one and pivoting inside the blocks (the divisions round).
      const VecX values = block_values(s, 2.3, 1.7, rng);
      ASSERT_TRUE(lu.factorize(values));
      const size_t largest = expect_interleaved_substitution_bits(lu, s.n, rng);
      // Nine leaves: at least four go before the root (its degree falls by `leaf` per leaf).
      if (leaves == 9) {
        EXPECT_EQ(largest, 4u);
      }
    }
  }
  // Random quadruped-like trees (blocks of mixed sizes).
  for (int seed = 0; seed < 4; ++seed) {
    const BlockSystem robot = make_robot(rng);
    BlockSchurLu lu(&robot.pattern);
    ASSERT_TRUE(lu.factorize(block_values(robot, 2.3, 1.0, rng)));
    expect_interleaved_substitution_bits(lu, robot.n, rng);
  }
}

// The soft-feet quadruped's step Jacobian after 30 steps (all feet on the floor): one column
// group per rigid body and per FEM node.
TEST(BlockSchurLu, SolvesTheSoftFeetQuadrupedsJacobian) {
  if (!gmsh_available()) GTEST_SKIP() << "the soft feet need gmsh";
  const auto model = load_scene_file(test::scene_path("quadruped_soft_feet.json"), {"steps=30"}).model;
  const Model& m = *model;
  Simulator sim(m);
  const VecX params = m.params().defaults();
  const Trajectory t = sim.run(params);
  ASSERT_TRUE(t.completed()) << t.failure;
  const int i = m.scheme().steps;
  const TermContext ctx{t.q[i], t.velocity(m.scheme(), i), t.acceleration(m.scheme(), i), params, i, m.scheme()};
  Assembly out(&m.pattern(), &m.stencils());
  out.reset(EvalMode::kResidualAndStepJacobian, bdf_weights(m.scheme(), i, 0));
  sim.evaluate(ctx, out);

  BlockSchurLu lu(&m.pattern());
  // Column groups: 13 rigid bodies of 6 DOFs and 4 × 27 FEM nodes of 3; nested ones joined.
  EXPECT_EQ(lu.groups(), 13 + 4 * 27);
  EXPECT_LT(lu.blocks(), lu.groups());
  std::mt19937 rng(30);
  expect_solves_like_dense_lu(m.pattern(), out.jac, lu, rng);
  // Fewer flops than one dense LU of the whole matrix by far.
  const double n = m.num_dofs();
  EXPECT_LT(lu.factor_flops(), 0.1 * 2.0 * n * n * n / 3.0);
  // The feet's blocks are eliminated independently: their diagonal solves share lanes, and
  // the substitution keeps the bits of the block-by-block one.
  EXPECT_EQ(expect_interleaved_substitution_bits(lu, m.num_dofs(), rng), 4u);
}

// The panel solve W ← D⁻¹ W runs four columns per vector lane group: every lane must do the
// column loop's operations in the same order, so the panel is the column loop's to the bit —
// for the unrolled 3- and 6-DOF kernels, the generic sizes (the soft-feet quadruped's 36 and
// 42), the lanes' row limit (64) and beyond it, for every width (lane groups and remainders),
// with row swaps and U's diagonal far from one (the products with its reciprocals round).
TEST(BlockSchurLu, PanelSolveLanesGiveTheColumnLoopsBits) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> entry(-1.0, 1.0);
  for (int s : {1, 2, 3, 4, 5, 6, 7, 13, 36, 42, 64, 65, 80}) {
    std::vector<double> f(static_cast<size_t>(s) * s);
    for (double& v : f) v = entry(rng);
    for (int j = 0; j < s; ++j) f[j + j * s] = (j % 2 ? 3.0 : -0.7) + entry(rng);
    std::vector<int> swaps(s);
    for (int i = 0; i < s; ++i) swaps[i] = std::uniform_int_distribution<int>(i, s - 1)(rng);
    for (int t : {0, 1, 3, 4, 5, 8, 11, 13, 30}) {
      SCOPED_TRACE(testing::Message() << "s " << s << ", t " << t);
      std::vector<double> w(static_cast<size_t>(s) * t);
      for (double& v : w) v = 1e3 * entry(rng);
      std::vector<double> reference = w;
      block_schur_kernels::solve_panel(f.data(), swaps.data(), w.data(), s, t);
      block_schur_kernels::solve_panel_by_columns(f.data(), swaps.data(), reference.data(), s, t);
      // (t = 0: empty panels, whose data() may be null, which memcmp must not be given.)
      if (t > 0) {
        EXPECT_EQ(0, std::memcmp(w.data(), reference.data(), w.size() * sizeof(double)));
      }
    }
  }
}

}  // namespace
}  // namespace addsim
