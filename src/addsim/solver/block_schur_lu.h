#pragma once
/// Sparse block LU with dense blocks (`solver.linear_solver = "schur"`): for step Jacobians
/// whose columns come in groups of identical pattern — an FEM node's 3 DOFs, a rigid body's
/// 6 — such as the soft-feet quadruped's (13 rigid links, four 27-node FEM feet each tied to
/// its shin through ball joints; 121 blocks for 402 DOFs).
///
/// Blocks are the runs of consecutive columns with identical row lists, never crossing the
/// pattern's DOF blocks (SparsePattern::blocks(): the model's bodies). The symbolic analysis
/// orders the blocks by minimum weighted degree on the block graph (the DOFs of a block's not
/// yet eliminated neighbours; ties by block size, then index) and records the fill:
/// eliminating block k joins its later neighbours N(k) into a clique. On the quadruped it
/// eliminates each foot node by node down to the nodes tied to the shin, then the shins, the
/// thighs, the hips and the torso.
///
/// The numeric factorisation is a right-looking block LU, A = L U with L_kk = D_k (block k's
/// diagonal after the updates of the blocks before it), L_ik = A_ik (i ∈ N(k)), U_kk = I and
/// U_kj = W_kj = D_k⁻¹ A_kj: per block, a dense LU of D_k with partial pivoting (Eigen), one
/// solve for the whole row panel A_k,N(k), one product C W for the Schur update of all of
/// N(k) × N(k), scattered into the blocks it updates by a precomputed map. No pivoting
/// crosses blocks, so the diagonal blocks must stay non-singular (true for the step
/// Jacobians of bodies with mass: inertia on the diagonal); solve() refines iteratively, as
/// KLU's does, while the residual halves. Flops are counted exactly per factorisation
/// (2s³/3 per diagonal block of size s, 2 s² t for its panel of width t, 2 s t² for its
/// update) for the reuse rule of solver/reused_factorization.h.

#include <vector>

#include <Eigen/LU>

#include "addsim/math/sparse_assembly.h"
#include "addsim/solver/linear_solver.h"

namespace addsim {

class BlockSchurLu final : public LinearSolver {
 public:
  explicit BlockSchurLu(const SparsePattern* pattern);
  bool factorize(const VecX& values) override;
  void solve(const VecX& b, VecX& x, bool transpose) override;
  void precondition(const VecX& b, VecX& x, bool transpose) override { substitute(b, x, transpose); }
  double factor_flops() const override { return factor_flops_; }
  double solve_flops() const override { return solve_flops_; }
  bool counts_flops() const override { return true; }
  const char* name() const override { return "block_schur_lu"; }

  /// Block k's first DOF (start(blocks()) = n).
  int start(int k) const { return start_[k]; }
  int blocks() const { return static_cast<int>(start_.size()) - 1; }
  /// Blocks in elimination order.
  const std::vector<int>& order() const { return order_; }
  /// Later neighbours N(k) of block k (after fill), in elimination order.
  const std::vector<int>& later(int k) const { return later_[k]; }
  /// Number of block pairs (i, j), i ≠ j, that fill created (not in the pattern).
  int fill_pairs() const { return fill_pairs_; }

 private:
  static constexpr int kMaxRefinements = 2;

  const SparsePattern* pattern_;
  std::vector<int> start_;                 ///< block k: DOFs start_[k] … start_[k + 1] − 1
  std::vector<int> order_;                 ///< elimination order
  std::vector<std::vector<int>> later_;    ///< N(k), in elimination order
  std::vector<std::vector<int>> later_dofs_;  ///< the DOFs of N(k), concatenated (t_k of them)
  std::vector<int> diag_base_, row_base_, col_base_;  ///< D_k (s × s), W_k (s × t), C_k (t × s) in data_
  std::vector<int> update_base_;           ///< per k: offset of its t × t update map in update_map_
  std::vector<int> update_map_;            ///< entry (a, b) of C_k W_k → its index in data_
  std::vector<double> data_;               ///< all blocks, column-major each
  std::vector<int> slot_;                  ///< per pattern entry: its index in data_
  std::vector<Eigen::PartialPivLU<MatX>> lu_;
  VecX column_;  ///< work column of a panel solve or an update
  VecX values_, product_, residual_, correction_, gathered_, pushed_;
  double factor_flops_ = 0.0, solve_flops_ = 0.0;
  int fill_pairs_ = 0;

  int size(int k) const { return start_[k + 1] - start_[k]; }
  int width(int k) const { return static_cast<int>(later_dofs_[k].size()); }
  void substitute(const VecX& b, VecX& x, bool transpose);
  void solve_panel(const Eigen::PartialPivLU<MatX>& lu, double* w, int s, int t);
  void solve_transposed(const Eigen::PartialPivLU<MatX>& lu, double* x, int s);
};

}  // namespace addsim
