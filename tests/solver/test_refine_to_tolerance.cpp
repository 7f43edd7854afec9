// Direct solves refined only to the requested tolerance (docs/solver.md, "Direct solves to the
// requested tolerance"; solver.refine_to_tolerance): a direct solve on a fresh LU stops its
// iterative refinement once ‖b − A x‖ meets the tolerance the caller asked for, as GMRES on a
// kept LU does. Checked: the residual meets the tolerance with fewer substitutions and residual
// products; without a tolerance (the adjoint and direct-sensitivity solves) or with one the
// substitutions cannot reach, the solve is the unchanged one bit for bit; the soft-feet
// quadruped keeps its states; the key is validated.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/solver/block_schur_lu.h"
#include "addsim/solver/reused_factorization.h"
#include "addsim/solver/simulator.h"
#include "../support/linear_system.h"
#include "../support/source_dir.h"

namespace addsim {
namespace refine_to_tolerance_test {

// Six bodies of 6 and 12 DOFs in a chain, each dense inside and tied to the next through 3 of
// its DOFs: the block structure BlockSchurLu is for.
struct ChainSystem {
  StencilSet stencils;
  SparsePattern pattern;
  int n = 0;
};

std::unique_ptr<ChainSystem> make_chain() {
  auto s = std::make_unique<ChainSystem>();
  std::vector<int> starts{0};
  for (int k = 0; k < 6; ++k) starts.push_back(starts.back() + (k % 2 == 0 ? 6 : 12));
  s->n = starts.back();
  for (int k = 0; k < 6; ++k) {
    std::vector<DofIndex> dofs;
    for (int d = starts[k]; d < starts[k + 1]; ++d) dofs.push_back(d);
    s->stencils.add(dofs);
    if (k + 1 < 6) s->stencils.add({starts[k + 1] - 3, starts[k + 1] - 2, starts[k + 1] - 1, starts[k + 1],
                                    starts[k + 1] + 1, starts[k + 1] + 2});
  }
  s->pattern = SparsePattern(s->n, s->stencils);
  s->pattern.set_blocks(starts);
  return s;
}

// Random nonsymmetric entries of size 1 with `mass` on the diagonal; `weak` scales the
// first diagonal entry (a nearly singular pivot inside a block, which costs digits).
VecX chain_values(const ChainSystem& s, double mass, double weak, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX values(s.pattern.nnz());
  for (int e = 0; e < s.pattern.nnz(); ++e) values[e] = u(rng);
  for (int i = 0; i < s.n; ++i) values[s.pattern.diagonal_index(i)] += mass;
  values[s.pattern.diagonal_index(0)] *= weak;
  return values;
}

// A step solver that factorises for every solve (no reuse: every solve is direct).
std::unique_ptr<ReusedFactorization> direct_solver(const ChainSystem& s, bool refine_to_tolerance) {
  auto lu = std::make_unique<ReusedFactorization>(&s.pattern, std::make_unique<BlockSchurLu>(&s.pattern), false);
  lu->set_refine_to_tolerance(refine_to_tolerance);
  return lu;
}

double residual_norm(const ChainSystem& s, const VecX& values, const VecX& b, const VecX& x, bool transpose) {
  return test::relative_residual(s.pattern, s.n, values, b, x, transpose) * b.norm();
}

TEST(RefineToTolerance, DirectSolveStopsOnceTheResidualMeetsTheTolerance) {
  std::mt19937 rng(5);
  const auto s = make_chain();
  const VecX values = chain_values(*s, 20.0, 1.0, rng);
  const VecX b = test::random_rhs(s->n, rng);
  for (bool transpose : {false, true}) {
    const double tolerance = 1e-8 * b.norm();
    auto plain = direct_solver(*s, false);
    auto to_tolerance = direct_solver(*s, true);
    VecX x_plain, x_tol;
    ASSERT_TRUE(plain->solve(values, b, x_plain, transpose, tolerance));
    ASSERT_TRUE(to_tolerance->solve(values, b, x_tol, transpose, tolerance));
    EXPECT_EQ(plain->stats().direct_solves, 1);
    EXPECT_EQ(to_tolerance->stats().direct_solves, 1);
    EXPECT_LE(residual_norm(*s, values, b, x_tol, transpose), tolerance);
    const RefinementCounts& p = *plain->refinement_counts();
    const RefinementCounts& t = *to_tolerance->refinement_counts();
    // Both saw the tolerance met by the first substitution; only the plain solve refined on.
    EXPECT_EQ(p.met_after[0], 1);
    EXPECT_EQ(t.met_after[0], 1);
    EXPECT_GE(p.substitutions, 1);
    EXPECT_EQ(t.substitutions, 0);
    EXPECT_EQ(t.products, 1);
    EXPECT_GT(p.products, t.products);
    // The two solutions are the same to the tolerance (both solve A x = b within it).
    EXPECT_LT((x_plain - x_tol).norm(), 1e-8 * x_plain.norm());
  }
}

TEST(RefineToTolerance, WithoutATolerantCallerTheSolveIsUnchanged) {
  std::mt19937 rng(9);
  const auto s = make_chain();
  // A weak pivot (1e-9 of the others) inside the first block: the substitution loses digits,
  // so refinement has work to do.
  const VecX values = chain_values(*s, 20.0, 1e-9, rng);
  const VecX b = test::random_rhs(s->n, rng);
  for (bool transpose : {false, true}) {
    auto plain = direct_solver(*s, false);
    auto to_tolerance = direct_solver(*s, true);
    VecX x_plain, x_tol;
    // No tolerance (the adjoint's and the direct sensitivities' solves): the same bits.
    ASSERT_TRUE(plain->solve(values, b, x_plain, transpose));
    ASSERT_TRUE(to_tolerance->solve(values, b, x_tol, transpose));
    EXPECT_TRUE((x_plain.array() == x_tol.array()).all()) << (transpose ? "transposed" : "");
    EXPECT_EQ(plain->refinement_counts()->substitutions, to_tolerance->refinement_counts()->substitutions);
    EXPECT_EQ(to_tolerance->refinement_counts()->with_tolerance, 0);
    // A tolerance below what the substitutions reach: refinement runs its full course, the
    // same bits as without the key.
    plain->set_relative_tolerance(1e-300);
    to_tolerance->set_relative_tolerance(1e-300);
    ASSERT_TRUE(plain->solve(values, b, x_plain, transpose, 1e-300));
    ASSERT_TRUE(to_tolerance->solve(values, b, x_tol, transpose, 1e-300));
    EXPECT_TRUE((x_plain.array() == x_tol.array()).all()) << (transpose ? "transposed" : "");
    EXPECT_EQ(plain->refinement_counts()->substitutions, to_tolerance->refinement_counts()->substitutions);
    EXPECT_EQ(to_tolerance->refinement_counts()->unmet, 1);
  }
}

// The first `steps` steps of the Table 2 soft-feet quadruped with its tasks' smooth contact
// (tanh friction, k_t = 100 N s/m, a 2 mm normal blend) and extra scene overrides.
Trajectory refine_soft_feet_run(int steps, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"contact.model=\"tanh\"", "contact.kt=100.0", "contact.smoothing=0.002",
                                       "steps=" + std::to_string(steps)});
  const Scene scene = load_scene_file(test::scene_path("quadruped_soft_feet.json"), overrides);
  Simulator sim(*scene.model);
  return sim.run(scene.model->params().defaults());
}

TEST(RefineToTolerance, SoftFeetQuadrupedKeepsItsStates) {
  // 48 steps: the trot's first touch-downs and lift-offs of all four feet.
  const Trajectory plain = refine_soft_feet_run(48, {"solver.refine_to_tolerance=false"});
  const Trajectory to_tolerance = refine_soft_feet_run(48, {"solver.refine_to_tolerance=true"});
  ASSERT_TRUE(plain.completed()) << plain.failure;
  ASSERT_TRUE(to_tolerance.completed()) << to_tolerance.failure;
  ASSERT_EQ(plain.q.size(), to_tolerance.q.size());
  // The directions differ within the inexact-Newton forcing, the converged states within the
  // Newton tolerance (‖r‖ ≲ 1e-7 N against stiffnesses ≥ 1e5 N/m).
  double worst = 0.0;
  for (std::size_t i = 0; i < plain.q.size(); ++i)
    worst = std::max(worst, (plain.q[i] - to_tolerance.q[i]).lpNorm<Eigen::Infinity>());
  EXPECT_LT(worst, 1e-9);
}

TEST(RefineToTolerance, KeyIsValidated) {
  for (const char* bad : {"1", "0.5", "\"yes\"", "null"}) {
    try {
      refine_soft_feet_run(2, {std::string("solver.refine_to_tolerance=") + bad});
      FAIL() << bad << " was accepted as solver.refine_to_tolerance";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("solver.refine_to_tolerance"), std::string::npos) << e.what();
    }
  }
}

}  // namespace refine_to_tolerance_test
}  // namespace addsim
