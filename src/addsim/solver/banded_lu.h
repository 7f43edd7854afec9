#pragma once
/// Banded LU with (threshold) partial pivoting for small step Jacobians whose pattern has a narrow band
/// after reordering (the mass-spring sheet: a 5 × 5 grid of particles, 75 DOF, each particle
/// coupled to its 8 grid neighbours, so row-major order keeps every entry within 20 DOFs of
/// the diagonal). The pattern's rows and columns are permuted symmetrically by the order of
/// smaller band (the pattern's own or reverse Cuthill–McKee), and the permuted matrix B is
/// factorised as B = P L U in LAPACK's band layout (dgbtf2's algorithm): the pivot of column
/// j is the largest of its at most `lower` entries below the diagonal — the same choice as a
/// dense partial-pivoting LU of B — and U's band widens by at most `lower` columns. The work
/// is that of the band, ≈ 2 n lower (lower + upper) flops instead of 2n³/3 (sheet: ≈ 5×
/// fewer), counted exactly per factorisation for the reuse rule of
/// solver/reused_factorization.h. With a pivot threshold tau < 1 (solver.pivot_threshold) the
/// pivot is the diagonal entry unless it is below tau times the largest entry under it
/// (threshold partial pivoting, as UMFPACK's and SuperLU's diagonal preference): |l_ij| ≤ 1/tau,
/// and on the near-SPD sheet step Jacobians almost no row exchange, so U keeps the band `upper`
/// instead of widening towards lower + upper.

#include <vector>

#include "addsim/math/sparse_assembly.h"
#include "addsim/solver/linear_solver.h"

namespace addsim {

/// A symmetric permutation of a pattern and the band it leaves: entry (i, j) of the pattern
/// sits at (position[i], position[j]) of the permuted matrix, within `lower` rows below and
/// `upper` columns right of the diagonal.
struct BandOrdering {
  std::vector<int> order;     ///< order[k]: the pattern row/column at position k
  std::vector<int> position;  ///< inverse of order
  int lower = 0, upper = 0;
};

/// The band of `pattern` in its own order.
BandOrdering natural_band(const SparsePattern& pattern);
/// Reverse Cuthill–McKee on the graph of A + Aᵀ (each component from a pseudo-peripheral
/// vertex of least degree; neighbours by increasing degree).
BandOrdering reverse_cuthill_mckee(const SparsePattern& pattern);
/// Flops of a banded LU without row exchanges on a band ordering (the cost estimate that
/// picks the ordering: Σ_j 2 min(lower, n−1−j) min(upper, n−1−j)).
double band_flops(const BandOrdering& ordering);

/// With FactorizationPrecision::kSingle the factors are stored and computed in float (the
/// values rounded to float, sgbtf2's arithmetic with eight-lane vectors) and each solve
/// substitutes in float, the right-hand side rounded to float and the solution returned in
/// double: half the bytes and twice the lanes per operation, at a relative error of the solution
/// of ≈ 6e-8 × cond(B). For the forward Newton only (solver.factorization_precision), whose
/// iteration corrects the direction's error (docs/solver.md).
class BandedLu final : public LinearSolver {
 public:
  /// Orders `pattern` (the smaller-band of natural_band and reverse_cuthill_mckee).
  /// options.pivot_threshold in (0, 1] (1: partial pivoting; InputError otherwise).
  explicit BandedLu(const SparsePattern* pattern, const FactorizationOptions& options = {});
  bool factorize(const VecX& values) override;
  void solve(const VecX& b, VecX& x, bool transpose) override;
  double factor_flops() const override { return factor_flops_; }
  double solve_flops() const override { return solve_flops_; }
  bool counts_flops() const override { return true; }
  const char* name() const override {
    return precision_ == FactorizationPrecision::kSingle ? "banded_lu_single" : "banded_lu";
  }
  const BandOrdering& ordering() const { return ordering_; }
  FactorizationPrecision precision() const { return precision_; }
  double pivot_threshold() const { return pivot_threshold_; }
  /// U's band above the diagonal in the last factorisation (upper + the widest row exchange).
  int u_band() const { return u_band_; }
  /// Row exchanges of the last factorisation.
  int row_exchanges() const;

  /// Pattern entries src … src + len − 1 go to band slots dst … dst + len − 1 (slot_ in runs).
  struct SlotRun {
    int dst, src, len;
  };

 private:
  template <class T>
  bool factorize_in(const VecX& values, std::vector<T>& ab);
  template <class T>
  void solve_in(const std::vector<T>& ab, std::vector<T>& work, const VecX& b, VecX& x, bool transpose);

  /// Single precision: zero rows below each column's band — one float vector's lanes minus one
  /// (the kernels' padded vectors).
  static constexpr int kSinglePad = 7;
  /// Single precision: slack entries on both sides of the work vector, which the substitutions'
  /// windows of y in registers (band_solve_window: up to seven vectors of eight) read and write
  /// past its ends. Both constants are checked against the kernels' at compile time (solve_in).
  static constexpr int kSingleSlack = 56;

  const SparsePattern* pattern_;
  FactorizationPrecision precision_;
  double pivot_threshold_;
  BandOrdering ordering_;
  int n_ = 0, kv_ = 0, ldab_ = 0;  ///< kv = lower + upper: U's widest band; ldab = lower + kv + 1 (+ kSinglePad)
  int u_band_ = 0;                 ///< U's actual band in the last factorisation (≤ kv)
  std::vector<double> ab_;         ///< band storage, column-major ldab × n (LAPACK's AB); double factors
  std::vector<float> ab_single_;   ///< the same for single-precision factors
  std::vector<int> slot_;          ///< per pattern entry: its index in the band storage
  std::vector<SlotRun> runs_;
  std::vector<int> pivot_;         ///< row exchanged with row j at step j
  std::vector<double> work_;       ///< the permuted right-hand side (double factors)
  std::vector<float> work_single_; ///< the same in float (single-precision factors)
  double factor_flops_ = 0.0, solve_flops_ = 0.0;
};

}  // namespace addsim
