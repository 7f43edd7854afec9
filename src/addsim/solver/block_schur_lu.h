#pragma once
/// Sparse block LU with dense blocks (`solver.linear_solver = "schur"`): for step Jacobians
/// whose columns come in groups of identical pattern — an FEM node's 3 DOFs, a rigid body's
/// 6 — such as the soft-feet quadruped's (13 rigid links, four 27-node FEM feet each tied to
/// its shin through ball joints: 121 column groups for 402 DOFs).
///
/// Symbolic analysis (once per pattern): column groups are the runs of consecutive columns
/// with identical row lists, never crossing the pattern's DOF blocks (SparsePattern::blocks():
/// the model's bodies). They are ordered by minimum weighted degree on the group graph (the
/// DOFs of a group's not yet eliminated neighbours; ties by size, then index) with the fill
/// recorded: eliminating group g joins its later neighbours N(g) into a clique. Groups whose
/// fronts nest — N(g) = {g'} ∪ N(g') for the group g' eliminated next — form one block
/// (fundamental supernodes, as in supernodal Cholesky), whose front N(k) is that of its last
/// group. On the quadruped each foot is eliminated from its free nodes up to the nodes tied
/// to the shin, which join the shin's block; then the thighs, the hips and the torso.
///
/// The numeric factorisation is a right-looking block LU in that order, A = L U with L_kk =
/// D_k (block k's diagonal after the updates of the blocks before it), L_N(k),k = C_k =
/// A_N(k),k, U_kk = I and U_k,N(k) = W_k = D_k⁻¹ A_k,N(k): per block a dense LU of D_k with
/// partial pivoting in place (plain loops, the operations of LAPACK's unblocked dgetf2: one
/// division per pivot, its reciprocal, which scales the multipliers; blocks of 48 DOFs or more
/// — the soft ball's root block — by LAPACK's blocked dgetrf when the build has LAPACK), its
/// substitutions on the row panel (column-oriented loops), and the Schur
/// update A_N(k),N(k) −= C_k W_k column by column: each column of C_k W_k into a contiguous
/// work column (vectorised), then subtracted where a precomputed map puts each entry (a
/// diagonal block or another block's panel). No pivoting crosses blocks, so the diagonal blocks must stay non-singular
/// (true for the step Jacobians of bodies with mass: inertia on the diagonal); solve() refines
/// iteratively, as KLU's does, while the residual halves. Flops are counted exactly per
/// factorisation (2s³/3 per diagonal block of size s, 2 s² t for its panel of width t, 2 s t²
/// for its update) for the reuse rule of solver/reused_factorization.h.
///
/// The reciprocals of U_k's diagonal are stored in data_ right after D_k (s² + s doubles per
/// diagonal block), so that every substitution — the row panel's, the forward and backward
/// ones, the transposed one — multiplies by 1/u_jj instead of dividing by u_jj: on the chain
/// of dependent unknowns a division's latency is that of 3–4 multiplications.
///
/// The substitutions work on a permuted copy of the right-hand side in which each block's
/// DOFs are contiguous (blocks in elimination order), so that only the fronts are gathered
/// and scattered. The forward substitution solves up to four blocks of one size together in
/// vector lanes (their chains of dependent unknowns overlap) when no block between them pushes
/// into their entries — on the quadruped the four feet's nodes, eliminated independently
/// until their shins — with the pushes kept in elimination order: the same bits as block by
/// block (precondition_in_order, the tests' reference).
///
/// Two threads (set_worker): in the elimination tree (block k's parent: the first block of
/// its front; fronts hold only ancestors) a block's Schur update writes entries of its
/// ancestors. Subtrees of at most a fraction of the flops (on the quadruped: three feet up
/// to their 36-DOF blocks, one of them with the torso, hips and thighs below a shin, and the
/// pieces of the fourth foot) are split into two sets of about equal flops; the worker factorises one, the
/// calling thread the other, each block by block in elimination order with only the part
/// of its update that lands in its own subtree (the front's first DOFs). After a barrier
/// (both sets done) the deferred rest of those updates that precede the first remaining
/// block in elimination order — they write only entries of blocks outside the subtrees,
/// which nothing else touches until then — run on both threads, split by the destination
/// entry's column (each entry on one thread, its updates in elimination order). Then the
/// calling thread factorises the remaining blocks (two shins and the 42-DOF root) and
/// applies the other deferred updates, all in elimination order. Every entry so gets the same
/// operations in the same order as in one thread's factorisation: the same bits (tests:
/// memcmp of the solves).

#include <atomic>
#include <vector>

#include "addsim/math/sparse_assembly.h"
#include "addsim/solver/linear_solver.h"

namespace addsim {

class WorkerThread;

class BlockSchurLu final : public LinearSolver {
 public:
  explicit BlockSchurLu(const SparsePattern* pattern);
  bool factorize(const VecX& values) override;
  void solve(const VecX& b, VecX& x, bool transpose) override;
  void solve_within(const VecX& b, VecX& x, bool transpose, double tolerance, bool stop_at_tolerance) override;
  const RefinementCounts* refinement_counts() const override { return &refinement_.counts; }
  void precondition(const VecX& b, VecX& x, bool transpose) override { substitute(b, x, transpose, true); }
  /// precondition() with the forward substitution one block after another (no lanes): the
  /// reference whose bits the interleaved one must give (tests).
  void precondition_in_order(const VecX& b, VecX& x, bool transpose) { substitute(b, x, transpose, false); }
  double factor_flops() const override { return factor_flops_; }
  double solve_flops() const override { return solve_flops_; }
  bool counts_flops() const override { return true; }
  const char* name() const override { return "block_schur_lu"; }
  /// Factorises the subtrees on `worker` and the calling thread together (header comment;
  /// null: one thread). The worker must outlive this solver's factorisations. A
  /// factorisation whose caller cannot fork now (WorkerThread::available: it is the worker,
  /// or a task of it is pending) runs on one thread, with the same bits.
  void set_worker(WorkerThread* worker) override { worker_ = worker; }
  /// Blocks factorised in the two concurrent sets (0 without a worker or if the tree has no
  /// two subtrees to split), and their share of the factorisation's flops.
  int parallel_blocks() const { return worker_ ? static_cast<int>(bin_[0].size() + bin_[1].size()) : 0; }
  double parallel_flop_share() const { return worker_ ? parallel_share_ : 0.0; }
  /// Deferred outside updates done on both threads after the barrier (0 without a worker),
  /// and the calling thread's share of their flops.
  int shared_outside_updates() const { return worker_ ? outside_lead_ : 0; }
  double outside_caller_share() const { return outside_caller_share_; }

  /// Block k's DOFs (in the order of its dense LU).
  const std::vector<int>& dofs(int k) const { return dofs_[k]; }
  int blocks() const { return static_cast<int>(dofs_.size()); }
  /// Column groups (runs of identical columns) before they were joined into blocks.
  int groups() const { return groups_; }
  /// Blocks in elimination order.
  const std::vector<int>& order() const { return order_; }
  /// The blocks that hold DOFs of block k's front (after fill), in elimination order.
  const std::vector<int>& later(int k) const { return later_[k]; }
  /// Block k's front: the DOFs of its later neighbours N(k), in the order of its panels.
  const std::vector<int>& front(int k) const { return later_dofs_[k]; }
  /// Number of column-group pairs (i, j), i ≠ j, that fill created (not in the pattern).
  int fill_pairs() const { return fill_pairs_; }
  /// The blocks whose diagonal solves the forward substitution does together (vector lanes)
  /// when it reaches block k: k and up to three later blocks of its size that no block from k
  /// up to them has in its front; empty if k was solved with an earlier block.
  std::vector<int> lane_group(int k) const {
    return {lane_blocks_.begin() + lane_base_[k], lane_blocks_.begin() + lane_base_[k + 1]};
  }

 private:
  static constexpr int kMaxRefinements = 2;

  const SparsePattern* pattern_;
  std::vector<std::vector<int>> dofs_;     ///< block k's DOFs
  std::vector<int> local_;                 ///< per DOF: its index within its block
  int groups_ = 0;
  std::vector<int> order_;                 ///< elimination order
  std::vector<std::vector<int>> later_;    ///< N(k), in elimination order
  std::vector<std::vector<int>> later_dofs_;  ///< the DOFs of N(k), concatenated (t_k of them)
  std::vector<int> diag_base_, row_base_, col_base_;  ///< D_k (s × s), W_k (s × t), C_k (t × s) in data_
  std::vector<int> update_base_;           ///< per k: offset of its t × t update map in update_map_
  std::vector<int> update_map_;            ///< entry (a, b) of C_k W_k → its index in data_
  std::vector<int> position_;              ///< per DOF: its place in the permuted vector
  std::vector<int> offset_;                ///< per block: its first place there (m + 1 entries)
  std::vector<int> front_base_;            ///< per k: its first entry in front_position_
  std::vector<int> front_position_;        ///< the DOFs of each front: their places in the permuted vector
  std::vector<double> data_;               ///< all blocks, column-major each
  std::vector<int> slot_;                  ///< per pattern entry: its index in data_
  std::vector<int> swaps_;  ///< per block (at offset_): the row swaps of its LU, in data_ at diag_base_
  std::vector<int> lane_base_, lane_blocks_;  ///< per block k (m + 1): its lane group in lane_blocks_
  VecX values_, permuted_;
  VecX pushed_;  ///< work column (widest front): the panels' products before they are scattered
  RefinementWork refinement_;
  double factor_flops_ = 0.0, solve_flops_ = 0.0;
  double total_factor_flops_ = 0.0, total_solve_flops_ = 0.0;  ///< of every (successful) factorisation
  // Two threads (set_worker): the two sets of subtrees' blocks (elimination order each;
  // bin_[1] the worker's), and the serial phase: per entry a block, eliminated with its whole
  // update (≥ 0), or only the deferred outside part of a subtree block's update (−1 − k).
  WorkerThread* worker_ = nullptr;
  std::vector<int> bin_[2];
  std::vector<int> inside_;  ///< per block of a subtree: its front's DOFs inside the subtree (a prefix)
  std::vector<int> serial_;
  // The deferred outside updates that open the serial phase (before its first block) run
  // inside the fork–join after a barrier, split by the destination's column: block k's
  // columns in ≤ b < outside_split_[k] on the calling thread, the rest on the worker.
  int outside_lead_ = 0;              ///< leading entries of serial_ done so
  std::vector<int> outside_split_;    ///< per block: its split column (see above)
  double outside_caller_share_ = 0.0; ///< the calling thread's share of their flops
  std::atomic<int> bins_done_{0};     ///< the barrier: sides that have finished their bin
  std::vector<int> block_of_dof_;  ///< per DOF: its block
  double parallel_share_ = 0.0;
  VecX worker_pushed_;  ///< the worker's work column of the Schur updates
  int fill_pairs_ = 0;

  int size(int k) const { return static_cast<int>(dofs_[k].size()); }
  int width(int k) const { return static_cast<int>(later_dofs_[k].size()); }
  void substitute(const VecX& b, VecX& x, bool transpose, bool interleave);
  // The subtree schedule of the two-thread factorisation (constructor).
  void plan_parallel();
  // Block k's diagonal LU and row panel W_k (false on a singular block); its Schur update
  // A_N(k),N(k) −= C_k W_k with `work` as the work column.
  bool eliminate_block(int k);
  // The blocks of subtree bin `bin` in elimination order, each with its updates inside the
  // subtrees (work: a column of the widest front); false on a singular block.
  bool eliminate_bin(int bin, double* work);
  // One side of the two-thread factorisation: its bin, the barrier, then its columns of the
  // leading outside updates (side 0 the calling thread's, 1 the worker's); false on a
  // singular block of its bin (the barrier is passed either way).
  bool eliminate_side(int side, double* work);
  enum UpdatePart { kWholeUpdate, kInsideUpdate, kOutsideUpdate };
  void schur(int k, int part, double* work);
};

/// The block LU's panel solve, exposed for tests: W ← D⁻¹ W for the s × t column-major panel
/// W, with D = P⁻¹ L U packed in `f` (L unit lower below the diagonal, U on and above, s × s
/// column-major; the reciprocals of U's diagonal that the factorisation stores after it are
/// computed here) and `swaps` its row swaps (row i exchanged with swaps[i], in order) — as the
/// factorisation runs it (four columns per vector lane group where it can), and column by
/// column (the reference: solve_panel must give its bits).
namespace block_schur_kernels {
void solve_panel(const double* f, const int* swaps, double* w, int s, int t);
void solve_panel_by_columns(const double* f, const int* swaps, double* w, int s, int t);
}  // namespace block_schur_kernels

}  // namespace addsim
