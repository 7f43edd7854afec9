// Two threads (solver.threads = 2): the WorkerThread's spinning hand-over (many fork–joins in
// a row, after it has gone to sleep, exceptions, available()), BlockSchurLu's factorisation
// of closed subtrees on the worker and the calling thread — the same bits as one thread
// (memcmp of solves, on quadruped-like trees and on the soft-feet quadruped's Jacobian) — and
// a two-thread simulation that repeats itself bit for bit. No timing is asserted: the
// machines running the tests may have a single free core.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/solver/block_schur_lu.h"
#include "addsim/solver/simulator.h"
#include "addsim/solver/worker_thread.h"
#include "../support/linear_system.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

struct ParTreeSystem {
  StencilSet stencils;
  SparsePattern pattern;
  int n = 0;
};

// A torso of 6 DOFs, four legs of three 6-DOF links, and under each shin a soft foot of
// `foot_nodes` 3-DOF nodes in a chain (each coupled to the next), its first three nodes tied
// to the shin: the shape of the soft-feet quadruped's elimination tree.
ParTreeSystem par_quadruped_tree(int foot_nodes) {
  ParTreeSystem s;
  std::vector<int> starts{0};
  const auto add_block = [&](int size) {
    starts.push_back(starts.back() + size);
    std::vector<DofIndex> dofs;
    for (int d = starts[starts.size() - 2]; d < starts.back(); ++d) dofs.push_back(d);
    s.stencils.add(dofs);
    return static_cast<int>(starts.size()) - 2;
  };
  const auto couple = [&](int a0, int a1, int b0, int b1) {
    std::vector<DofIndex> dofs;
    for (int d = a0; d < a1; ++d) dofs.push_back(d);
    for (int d = b0; d < b1; ++d) dofs.push_back(d);
    s.stencils.add(dofs);
  };
  const int torso = add_block(6);
  for (int leg = 0; leg < 4; ++leg) {
    int parent = torso;
    for (int link = 0; link < 3; ++link) {
      const int b = add_block(6);
      couple(starts[parent], starts[parent + 1], starts[b], starts[b + 1]);
      parent = b;
    }
    const int foot = add_block(3 * foot_nodes);
    const int f0 = starts[foot];
    for (int node = 0; node + 1 < foot_nodes; ++node) couple(f0 + 3 * node, f0 + 3 * node + 3, f0 + 3 * node + 3, f0 + 3 * node + 6);
    couple(starts[parent], starts[parent + 1], f0, f0 + 9);
  }
  s.n = starts.back();
  s.pattern = SparsePattern(s.n, s.stencils);
  s.pattern.set_blocks(starts);
  return s;
}

VecX par_tree_values(const SparsePattern& pattern, int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX values(pattern.nnz());
  for (int e = 0; e < pattern.nnz(); ++e) values[e] = u(rng);
  for (int i = 0; i < n; ++i) values[pattern.diagonal_index(i)] += 20.0 * (1.0 + 0.1 * u(rng));
  return values;
}

bool par_same_bits(const VecX& a, const VecX& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

// Factorises `values` with one thread and with two, and compares their solves and
// preconditioner applications (both transposes) to the bit; returns the two-thread solver's
// parallel block count.
int par_expect_same_bits(const SparsePattern& pattern, int n, const VecX& values, WorkerThread& worker,
                         std::mt19937& rng) {
  BlockSchurLu one(&pattern), two(&pattern);
  two.set_worker(&worker);
  EXPECT_TRUE(one.factorize(values));
  EXPECT_TRUE(two.factorize(values));
  EXPECT_EQ(one.factor_flops(), two.factor_flops());
  EXPECT_EQ(one.solve_flops(), two.solve_flops());
  for (bool transpose : {false, true}) {
    const VecX b = test::random_rhs(n, rng);
    VecX x1, x2;
    one.solve(b, x1, transpose);
    two.solve(b, x2, transpose);
    EXPECT_TRUE(par_same_bits(x1, x2)) << (transpose ? "transposed solve" : "solve");
    one.precondition(b, x1, transpose);
    two.precondition(b, x2, transpose);
    EXPECT_TRUE(par_same_bits(x1, x2)) << (transpose ? "transposed substitution" : "substitution");
    EXPECT_LT(test::relative_residual(pattern, n, values, b, x2, transpose), 1e-10);
  }
  return two.parallel_blocks();
}

TEST(WorkerThread, ManyForkJoinsInARow) {
  WorkerThread worker;
  std::vector<long> a(64, 0), b(64, 0);
  for (int round = 0; round < 20000; ++round) {
    worker.run_alongside([&] { ++a[round % 64]; }, [&] { ++b[round % 64]; });
  }
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(a[i], 20000 / 64 + (i < 20000 % 64 ? 1 : 0));
    EXPECT_EQ(a[i], b[i]);
  }
}

TEST(WorkerThread, WakesAfterBlocking) {
  WorkerThread worker;
  int done = 0;
  for (int round = 0; round < 3; ++round) {
    // Longer than the spin bound: the worker has blocked on its condition variable.
    std::this_thread::sleep_for(std::chrono::microseconds(20 * WorkerThread::kSpinMicroseconds));
    worker.start([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(5 * WorkerThread::kSpinMicroseconds));
      ++done;
    });
    EXPECT_FALSE(worker.available());
    worker.wait();  // past the spin bound: the caller blocks too
    EXPECT_TRUE(worker.finished());
    EXPECT_TRUE(worker.available());
  }
  EXPECT_EQ(done, 3);
}

TEST(WorkerThread, RethrowsAndIsNotAvailableToItself) {
  WorkerThread worker;
  worker.start([] { throw std::runtime_error("task failed"); });
  EXPECT_THROW(worker.wait(), std::runtime_error);
  bool inside = true;
  worker.run_alongside([&] { inside = worker.available(); }, [] {});
  EXPECT_FALSE(inside);
  EXPECT_THROW(worker.run_alongside([] {}, [] { throw std::logic_error("own failed"); }), std::logic_error);
  EXPECT_TRUE(worker.available());
}

TEST(ParallelBlockLu, SubtreesOnTwoThreadsGiveOneThreadsBits) {
  WorkerThread worker;
  std::mt19937 rng(15);
  for (int foot_nodes : {4, 9, 27}) {
    const ParTreeSystem s = par_quadruped_tree(foot_nodes);
    for (int trial = 0; trial < 3; ++trial) {
      const VecX values = par_tree_values(s.pattern, s.n, rng);
      EXPECT_GT(par_expect_same_bits(s.pattern, s.n, values, worker, rng), 0) << foot_nodes << " nodes per foot";
    }
  }
  // Most of the flops run concurrently (all but the blocks above the subtrees).
  const ParTreeSystem big = par_quadruped_tree(27);
  BlockSchurLu lu(&big.pattern);
  lu.set_worker(&worker);
  EXPECT_GT(lu.parallel_flop_share(), 0.7);
  // The outside updates before the first serial block run on both threads, split about evenly.
  EXPECT_GT(lu.shared_outside_updates(), 0);
  EXPECT_GT(lu.outside_caller_share(), 0.3);
  EXPECT_LT(lu.outside_caller_share(), 0.7);
}

TEST(ParallelBlockLu, FallsBackToOneThreadWhileTheWorkerIsBusy) {
  WorkerThread worker;
  std::mt19937 rng(16);
  const ParTreeSystem s = par_quadruped_tree(6);
  const VecX values = par_tree_values(s.pattern, s.n, rng);
  BlockSchurLu one(&s.pattern), two(&s.pattern);
  two.set_worker(&worker);
  ASSERT_TRUE(one.factorize(values));
  std::atomic<bool> release{false};
  worker.start([&] {
    while (!release.load()) std::this_thread::yield();
  });
  ASSERT_TRUE(two.factorize(values));  // the worker is taken: one thread
  release = true;
  worker.wait();
  const VecX b = test::random_rhs(s.n, rng);
  VecX x1, x2;
  one.solve(b, x1, false);
  two.solve(b, x2, false);
  EXPECT_TRUE(par_same_bits(x1, x2));
  // On the worker itself (the background factorisation of ReusedFactorization) likewise.
  bool ok = false;
  worker.run_alongside([&] { ok = two.factorize(values); }, [] {});
  EXPECT_TRUE(ok);
  two.solve(b, x2, false);
  EXPECT_TRUE(par_same_bits(x1, x2));
}

TEST(ParallelBlockLu, SingularBlockFailsOnEitherThread) {
  WorkerThread worker;
  std::mt19937 rng(17);
  const ParTreeSystem s = par_quadruped_tree(5);
  BlockSchurLu lu(&s.pattern);
  lu.set_worker(&worker);
  ASSERT_GT(lu.parallel_blocks(), 0);
  for (int dof : {0, s.n / 8, s.n / 3, s.n - 1}) {
    VecX values = par_tree_values(s.pattern, s.n, rng);
    // Zero the DOF's row: its diagonal block is singular.
    const auto& outer = s.pattern.outer();
    const auto& inner = s.pattern.inner();
    for (int c = 0; c < s.n; ++c)
      for (int e = outer[c]; e < outer[c + 1]; ++e)
        if (inner[e] == dof) values[e] = 0.0;
    EXPECT_FALSE(lu.factorize(values)) << "DOF " << dof;
    EXPECT_TRUE(lu.factorize(par_tree_values(s.pattern, s.n, rng)));
  }
}

// The soft-feet quadruped's step Jacobian (needs gmsh): the legs with their feet run
// concurrently, with one thread's bits.
TEST(ParallelBlockLu, SoftFeetQuadrupedsJacobian) {
  if (!gmsh_available()) GTEST_SKIP() << "the soft feet need gmsh";
  const auto model = load_scene_file(test::scene_path("quadruped_soft_feet.json"), {"steps=10"}).model;
  const Model& m = *model;
  Simulator sim(m, 1);
  const VecX params = m.params().defaults();
  const Trajectory t = sim.run(params);
  ASSERT_TRUE(t.completed()) << t.failure;
  const int i = m.scheme().steps;
  const TermContext ctx{t.q[i], t.velocity(m.scheme(), i), t.acceleration(m.scheme(), i), params, i, m.scheme()};
  Assembly out(&m.pattern(), &m.stencils());
  out.reset(EvalMode::kResidualAndStepJacobian, bdf_weights(m.scheme(), i, 0));
  sim.evaluate(ctx, out);
  WorkerThread worker;
  std::mt19937 rng(18);
  EXPECT_GT(par_expect_same_bits(m.pattern(), m.num_dofs(), out.jac, worker, rng), 0);
  BlockSchurLu lu(&m.pattern());
  lu.set_worker(&worker);
  EXPECT_GT(lu.parallel_flop_share(), 0.5);
  EXPECT_GT(lu.shared_outside_updates(), 0);
  EXPECT_GT(lu.outside_caller_share(), 0.3);
  EXPECT_LT(lu.outside_caller_share(), 0.7);
}

// The helper's share of the FEM items (Simulator::helper_share): fixed by the cost model, so
// that the caller's unsplittable terms (13 bodies' inertia and gravity, 4 contacts, the
// joints) are balanced by giving the helper about 70 % of the feet's items.
TEST(ParallelBlockLu, HelperShareFollowsTheCostModel) {
  if (!gmsh_available()) GTEST_SKIP() << "the soft feet need gmsh";
  const auto model = load_scene_file(test::scene_path("quadruped_soft_feet.json"), {"steps=2"}).model;
  Simulator two(*model, 2);
  double items = 0.0, unsplit = 0.0;
  for (const auto& t : model->terms()) (t->item_count() > 1 ? items += t->item_count() : unsplit += 1.0);
  EXPECT_DOUBLE_EQ(two.helper_share(), 0.5 * (1.0 + Simulator::kUnsplitTermItems * unsplit / items));
  EXPECT_GT(two.helper_share(), 0.65);
  EXPECT_LT(two.helper_share(), 0.75);
}

// Two threads: a run repeats itself bit for bit (the split of the evaluations and the
// LU's schedule are fixed; which LU preconditions which solve depends on counted work only).
TEST(ParallelBlockLu, TwoThreadRunsRepeatBitForBit) {
  if (!gmsh_available()) GTEST_SKIP() << "the soft feet need gmsh";
  const auto model = load_scene_file(test::scene_path("quadruped_soft_feet.json"),
                                     {"steps=12", "contact.model=\"tanh\"", "contact.kt=100.0",
                                      "contact.smoothing=0.002"})
                         .model;
  const VecX params = model->params().defaults();
  Simulator sim(*model, 2);
  const Trajectory a = sim.run(params);
  const Trajectory b = sim.run(params);
  ASSERT_TRUE(a.completed()) << a.failure;
  ASSERT_TRUE(b.completed()) << b.failure;
  ASSERT_EQ(a.q.size(), b.q.size());
  for (size_t j = 0; j < a.q.size(); ++j) EXPECT_TRUE(par_same_bits(a.q[j], b.q[j])) << "state " << j;
}

}  // namespace
}  // namespace addsim
