// The soft ball's whole-trajectory gradient through the block LU (solver.linear_solver =
// "schur", solver/block_schur_lu.h) on the 451-tet gmsh ball of tasks/ball_to_target_*.json
// (tanh contact, C¹ smoothed penalty, a bounce): its elimination ends in one dense root block
// of more than 48 DOFs (LAPACK's dgetrf path), and the forward and adjoint passes (the
// adjoint's own fresh LUs included) give the same Φ and ∇Φ as with KLU to the solvers'
// round-off, the adjoint the same as the direct sensitivities, and both match central
// finite differences of the initial velocity and spin.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/block_schur_lu.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"
#include "centroid_objective.h"

namespace addsim {
namespace {

Scene load_block_lu_ball(const std::string& solver) {
  return load_scene_file(test::scene_path("soft_ball_throw.json"),
                         {"steps=60", "contact.model=\"tanh\"", "contact.smoothing=0.005",
                          "solver.linear_solver=\"" + solver + "\""});
}

TEST(BlockLuGradients, SoftBallThroughTheBlockLuMatchesKluAndFiniteDifferences) {
  if (!gmsh_available()) GTEST_SKIP() << "the soft ball's mesh needs gmsh";
  const Scene schur = load_block_lu_ball("schur");
  const Scene klu = load_block_lu_ball("klu");
  const Model& m = *schur.model;
  // The root block is factorised by dgetrf (≥ 48 DOFs), the nodes' blocks by the loops.
  const BlockSchurLu lu(&m.pattern());
  int largest = 0;
  for (int k = 0; k < lu.blocks(); ++k) largest = std::max(largest, static_cast<int>(lu.dofs(k).size()));
  EXPECT_GE(largest, 48);

  const test::CentroidObjective obj;
  const VecX p = m.params().defaults();
  Simulator sim(m), sim_klu(*klu.model);
  const Trajectory traj = sim.run(p), traj_klu = sim_klu.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  ASSERT_TRUE(traj_klu.completed()) << traj_klu.failure;
  // Some node gets inside the penalty's blend (|gap| < w/2 = 2.5 mm): the bounce is in the run.
  double lowest = 1.0;
  for (const VecX& q : traj.q)
    for (int k = 2; k < q.size(); k += 3) lowest = std::min(lowest, q[k]);
  EXPECT_LT(lowest, 0.0025) << "the ball no longer reaches the floor";

  const GradientResult adj = test::expect_adjoint_matches_direct(m, traj, obj, "schur");
  const GradientResult adj_klu = gradient_adjoint(*klu.model, traj_klu, obj);
  EXPECT_NEAR(adj.phi, adj_klu.phi, 1e-9 * adj_klu.phi);
  EXPECT_LT((adj.dphi_dp - adj_klu.dphi_dp).norm(), 1e-7 * adj_klu.dphi_dp.norm());

  const std::vector<double> steps{1e-4, 1e-5, 1e-6};
  for (const char* name : {"bodies.0.velocity.0.0", "bodies.0.angular_velocity.0.1"}) {
    const int j = m.params().require(name).offset;
    const FdSweep fd = gradient_fd_sweep(sim, obj, p, j, steps);
    EXPECT_GT(std::abs(adj.dphi_dp[j]), 1e-8 * adj.dphi_dp.norm()) << name << ": vacuous derivative";
    EXPECT_LT(std::abs(adj.dphi_dp[j] - fd.derivative), 1e-4 * std::abs(fd.derivative)) << name << "\n"
                                                                                          << fd.report();
  }
}

}  // namespace
}  // namespace addsim
