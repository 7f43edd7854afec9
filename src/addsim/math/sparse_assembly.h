#pragma once
/// Fixed-pattern sparse assembly. Terms declare stencils (lists of global DOFs) once;
/// the pattern of the step Jacobian is the union of the dense stencil blocks, built once
/// per model. Each evaluation scatters local residuals and local Jacobian blocks into
/// value arrays through precomputed index maps: no triplets, no allocation per step.

#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include "addsim/core/error.h"
#include "addsim/core/types.h"

namespace addsim {

using SparseMat = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

/// The global DOF lists of all stencils of a model (immutable after building).
class StencilSet {
 public:
  /// Adds a stencil touching the given global DOFs (each in [0, n)); returns its id. A DOF
  /// list equal to an earlier one (same DOFs, same order) returns the earlier id: terms on
  /// the same elements (an FEM body's inertia, gravity, elasticity, viscosity) then share
  /// one index map, so an evaluation reads a quarter of the map memory.
  int add(std::vector<DofIndex> dofs);
  int count() const { return static_cast<int>(offsets_.size()) - 1; }
  std::span<const DofIndex> dofs(int id) const {
    return {dofs_.data() + offsets_[id], static_cast<size_t>(offsets_[id + 1] - offsets_[id])};
  }

 private:
  std::vector<DofIndex> dofs_;
  std::vector<int> offsets_{0};
  std::unordered_multimap<std::size_t, int> by_hash_;  ///< hash of a DOF list → stencil ids
};

/// CSC pattern of the union of all stencil blocks plus the diagonal, with per-stencil
/// maps from local (row, col) to an index in the value array.
class SparsePattern {
 public:
  SparsePattern() = default;
  SparsePattern(int n, const StencilSet& stencils);

  int size() const { return n_; }
  int nnz() const { return static_cast<int>(inner_.size()); }
  /// Value-array indices of stencil `id`, local column-major: map[r + c * ns].
  const int* map(int id) const { return map_.data() + map_offsets_[id]; }
  /// For a stencil of whole 3-DOF points (size 3M, each point's DOFs consecutive, as an FEM
  /// node's): the value index of local row 3k of local column c at [k + c M], the rows
  /// 3k + 1, 3k + 2 following it — a third of map()'s entries. Null for other stencils.
  const int* point_map(int id) const {
    return point_map_offsets_[id] < 0 ? nullptr : point_map_.data() + point_map_offsets_[id];
  }
  /// A matrix with this pattern and the given values (size nnz()).
  SparseMat make_matrix(const VecX& values) const;
  /// y += A x for A with this pattern and `values`.
  void multiply_add(const VecX& values, const VecX& x, VecX& y) const;
  /// y += Aᵀ x for A with this pattern and `values`.
  void transpose_multiply_add(const VecX& values, const VecX& x, VecX& y) const;
  /// y += |A| |x| (entry-wise absolute values), each y[r] summing its columns in increasing
  /// order with no term skipped: the bits of the plain column-by-column loop
  /// `y[row] += |a| |x_c|`, with one load and store of y[row] per column triple.
  void abs_multiply_add(const VecX& values, const VecX& x, VecX& y) const;
  /// Value-array index of the diagonal entry (i, i) (the pattern always holds it).
  int diagonal_index(int i) const { return diag_[i]; }
  const std::vector<int>& outer() const { return outer_; }
  const std::vector<int>& inner() const { return inner_; }
  /// DOF blocks for solvers that follow the model's structure (solver/block_schur_lu.h):
  /// block k holds DOFs starts[k] … starts[k + 1] − 1 (the model's bodies); empty if unset.
  void set_blocks(std::vector<int> starts) { blocks_ = std::move(starts); }
  const std::vector<int>& blocks() const { return blocks_; }

 private:
  int n_ = 0;
  std::vector<int> outer_;  // column starts (n + 1)
  std::vector<int> inner_;  // row indices, sorted per column
  std::vector<int> map_;
  std::vector<int> map_offsets_;
  std::vector<int> point_map_;
  std::vector<int> point_map_offsets_;  ///< −1: not a stencil of whole points
  std::vector<int> diag_;
  std::vector<int> blocks_;
  /// First columns of the column groups, in order, plus n: a group is one column or three
  /// consecutive columns with identical row lists (an FEM node's x, y, z), which the
  /// products traverse together — one row index and one update of y per row instead of three.
  std::vector<int> groups_;

  // Calls triple(c, len, rows, v) for each column triple starting at c and single(c, len,
  // rows, v) for each other column, in column order: rows / v point at column c's row
  // indices and values (len each); a triple's columns c + 1, c + 2 follow at v + len, v + 2 len.
  template <class Triple, class Single>
  void for_each_group(const VecX& values, Triple&& triple, Single&& single) const {
    for (size_t g = 0; g + 1 < groups_.size(); ++g) {
      const int c = groups_[g];
      const int len = outer_[c + 1] - outer_[c];
      const int* rows = inner_.data() + outer_[c];
      const double* v = values.data() + outer_[c];
      if (groups_[g + 1] - c == 3)
        triple(c, len, rows, v);
      else
        single(c, len, rows, v);
    }
  }
};

/// Weights (wq, wv, wa) of ∂r/∂q, ∂r/∂v, ∂r/∂a in a total derivative of r^i (e.g. the
/// step Jacobian dr^i/dq^i = ∂r/∂q + (c_v/h) ∂r/∂v + (c_a/h²) ∂r/∂a, integrators/bdf.h).
struct JacobianWeights {
  double wq, wv, wa;
};

/// What an evaluation should produce: the residual only; the residual and the three local
/// partials ∂r/∂q, ∂r/∂v, ∂r/∂a (kq, kv, ka: what the backward pass needs to form history
/// Jacobians); or the residual and one weighted sum of them (jac: the step Jacobian a Newton
/// iteration needs). Terms see the same calls in both Jacobian modes.
enum class EvalMode { kResidual, kResidualAndJacobians, kResidualAndStepJacobian };

/// Per-evaluation scratch: residual r (|q|), the absolute-value sum of contributions
/// (used to estimate the round-off floor of ‖r‖), and, per EvalMode, the three local-partial
/// matrices ∂r/∂q, ∂r/∂v, ∂r/∂a or their weighted sum as value arrays over the shared pattern.
class Assembly {
 public:
  Assembly() = default;
  Assembly(const SparsePattern* pattern, const StencilSet* stencils);

  /// Clears the outputs of `mode`; `weights` are those of jac in kResidualAndStepJacobian.
  void reset(EvalMode mode, const JacobianWeights& weights = {1.0, 0.0, 0.0});
  /// Completes a residual-only evaluation with its step Jacobian: the caller evaluates the
  /// terms again at the same state, now in kResidualAndStepJacobian, and then calls
  /// finish_step_partials(). r and r_abs of the residual pass are set aside meanwhile and
  /// the residual scatters of this class (add, add_residual_pair, add_point_pair*, …) add
  /// nothing, so the pass costs the partials only; a term that writes r itself writes into a
  /// scratch vector that finish_step_partials() drops. Evaluations are functions of the state,
  /// so r, r_abs and jac are those of a full kResidualAndStepJacobian evaluation bit for bit.
  /// Requires the last reset() to have been kResidual.
  void reset_step_partials(const JacobianWeights& weights);
  /// Ends reset_step_partials(): r and r_abs are the residual pass's again.
  void finish_step_partials();
  /// True between reset_step_partials() and finish_step_partials(): the residual is already
  /// assembled, terms may skip the work that only feeds it.
  bool completing() const { return completing_; }
  /// True when terms should add their local partials (either Jacobian mode).
  bool wants_jacobians() const { return mode_ != EvalMode::kResidual; }
  EvalMode mode() const { return mode_; }
  /// Newton-matrix fallback (kResidualAndStepJacobian only; reset() keeps it): springs under
  /// compression leave out their negative transverse stiffness k (‖d‖ − l₀)/‖d‖ (I − uuᵀ), so
  /// every spring's block is positive semi-definite. r and the sensitivity modes stay exact
  /// (docs/solver.md, "Compressed springs").
  bool clamp_compressed_springs = false;
  /// The step Jacobian is wanted at float accuracy only (kResidualAndStepJacobian only; reset()
  /// keeps it): set by the Simulator for the forward Newton when its matrix is factorised in
  /// float (solver.factorization_precision "single"). Terms may then form their blocks by a
  /// cheaper route that agrees with the exact one to round-off (SpringTerm's particle pairs);
  /// r and the sensitivity modes stay exact.
  bool float_step_blocks = false;
  /// Stick predictor (kResidualAndStepJacobian only; reset() keeps it; 0: off): the ratio β
  /// handed to the contact terms' contact_force() — slipping points near the edge of the
  /// friction cone add the stick branch's partials to jac and the residual change of the
  /// stick law to r_predictor, while r stays exact (docs/solver.md, "Stick predictor").
  double stick_predictor_ratio = 0.0;
  /// When has_predictor(): the predictor's residual minus r (|q|); its storage is kept
  /// across resets, so the first iteration of every step does not allocate.
  VecX r_predictor;
  /// True when the last reset() predicted stick (r_predictor then holds this evaluation's sum).
  bool has_predictor() const { return predictor_active_; }
  /// Adds a local residual change (N entries, stencil order) to r_predictor.
  template <int N>
  void add_predictor(int id, const Eigen::Matrix<double, N, 1>& dr_local) {
    const std::span<const DofIndex> dofs = stencils_->dofs(id);
    for (int k = 0; k < N; ++k) r_predictor[dofs[k]] += dr_local[k];
  }
  /// True when the contact terms should evaluate the stick predictor.
  bool predicts_stick() const { return stick_predictor_ratio > 0.0 && mode_ == EvalMode::kResidualAndStepJacobian; }
  const JacobianWeights& weights() const { return weights_; }
  const SparsePattern& pattern() const { return *pattern_; }
  /// Adds the outputs of `other` (same pattern, reset to the same mode): the share of an
  /// evaluation that another thread assembled.
  void add_from(const Assembly& other);

  /// Adds a local residual (N entries, stencil order) and, when wanted, local partial
  /// Jacobians (N × N, null = zero) for stencil `id`.
  template <int N>
  void add(int id, const Eigen::Matrix<double, N, 1>& r_local, const Eigen::Matrix<double, N, N>* dr_dq,
           const Eigen::Matrix<double, N, N>* dr_dv, const Eigen::Matrix<double, N, N>* dr_da) {
    add_residual<N>(id, r_local);
    if (!wants_jacobians()) return;
    if (mode_ == EvalMode::kResidualAndStepJacobian) {
      // One scatter of the weighted local sum instead of one per partial.
      Eigen::Matrix<double, N, N> local;
      int terms = 0;
      for (const auto& [part, w] : {std::pair{dr_dq, weights_.wq}, {dr_dv, weights_.wv}, {dr_da, weights_.wa}}) {
        if (!part || w == 0.0) continue;
        if (terms++ == 0)
          local.noalias() = w * *part;
        else
          local.noalias() += w * *part;
      }
      if (terms > 0) scatter<N>(id, local, jac);
      return;
    }
    if (dr_dq) scatter<N>(id, *dr_dq, kq);
    if (dr_dv) scatter<N>(id, *dr_dv, kv);
    if (dr_da) scatter<N>(id, *dr_da, ka);
  }

  /// Adds a local residual of M nodes × 3 components (stencil order) and, when wanted, the
  /// partial Jacobian ∂r/∂a = S ⊗ I₃ (block (k, l) = S(k, l) I₃, e.g. an element mass
  /// matrix): 3M² scattered values instead of 9M².
  template <int M>
  void add_isotropic_a(int id, const Eigen::Matrix<double, 3 * M, 1>& r_local, const Eigen::Matrix<double, M, M>& S) {
    constexpr int N = 3 * M;
    add_residual<N>(id, r_local);
    if (!wants_jacobians()) return;
    const bool step = mode_ == EvalMode::kResidualAndStepJacobian;
    if (step && weights_.wa == 0.0) return;
    VecX& values = step ? jac : ka;
    const double w = step ? weights_.wa : 1.0;
    if (const int* pm = pattern_->point_map(id)) {
      // Entry (3k + i, 3l + i) sits i places after row 3k of column 3l + i.
      for (int l = 0; l < M; ++l)
        for (int i = 0; i < 3; ++i)
          for (int k = 0; k < M; ++k) values[pm[k + (3 * l + i) * M] + i] += w * S(k, l);
      return;
    }
    const int* m = pattern_->map(id);
    for (int l = 0; l < M; ++l)
      for (int k = 0; k < M; ++k)
        for (int i = 0; i < 3; ++i) values[m[(3 * k + i) + (3 * l + i) * N]] += w * S(k, l);
  }

  /// Adds a local residual of M nodes × 3 components (stencil order) and, in
  /// kResidualAndStepJacobian, the step Jacobian of a force that reads its nodes only through
  /// d = Σ_m w_m x_m (a spring between points): block (m, l) = w_m w_l (wq Kq + wv Kv). The
  /// 3 × 3 sum is formed once instead of two N × N locals; with every |w_m| = 1 the values are
  /// add()'s bit for bit (w_m w_l = ±1 only flips signs; the sum keeps add()'s order and its
  /// skipping of zero weights). Not for kResidualAndJacobians (use add()).
  template <int M>
  void add_node_outer(int id, const Eigen::Matrix<double, 3 * M, 1>& r_local, const double* w, const Mat3& kq,
                      const Mat3& kv) {
    constexpr int N = 3 * M;
    add_residual<N>(id, r_local);
    if (!wants_jacobians()) return;
    ADDSIM_CHECK(mode_ == EvalMode::kResidualAndStepJacobian, "add_node_outer: step-Jacobian mode only");
    Mat3 s;
    if (!step_block_sum(kq, kv, s)) return;
    if (const int* pm = pattern_->point_map(id)) {
      // As scatter(): column 3l + j of point m starts at pm[m + (3l + j) M], three rows on.
      for (int l = 0; l < M; ++l)
        for (int j = 0; j < 3; ++j)
          for (int m = 0; m < M; ++m) {
            const double sign = w[m] * w[l];
            double* v = jac.data() + pm[m + (3 * l + j) * M];
            v[0] += sign * s(0, j);
            v[1] += sign * s(1, j);
            v[2] += sign * s(2, j);
          }
      return;
    }
    const int* map = pattern_->map(id);
    for (int c = 0; c < N; ++c)
      for (int r = 0; r < N; ++r) jac[map[r + c * N]] += (w[r / 3] * w[c / 3]) * s(r % 3, c % 3);
  }

  /// add_node_outer<2>() for w = (1, −1), the same numbers: a force between two whole points
  /// read through d = x_a − x_b (a spring between two particles), r += (r_a, −r_a) and the
  /// blocks ±(wq Kq + wv Kv), written without the local 6-vector or the sign products. For
  /// kResidual and for kResidualAndStepJacobian on a stencil with a point map (use
  /// add_node_outer() or add() otherwise).
  void add_point_pair(int id, const Vec3& ra, const Mat3& kq, const Mat3& kv) {
    Mat3 s;
    const bool block = wants_jacobians() && step_block_sum(kq, kv, s);
    add_point_pair_step(id, ra, block ? &s : nullptr);
  }

  /// add_point_pair() with its step block s = wq Kq + wv Kv already summed as step_block_sum()
  /// sums it (null: kResidual, or both weights zero): r += (r_a, −r_a), jac += ±s.
  void add_point_pair_step(int id, const Vec3& ra, const Mat3* s) {
    const std::span<const DofIndex> dofs = stencils_->dofs(id);
    for (int c = 0; c < 3 && !completing_; ++c) {
      const double rb = -ra[c];
      r[dofs[c]] += ra[c];
      r_abs[dofs[c]] += std::abs(ra[c]);
      r[dofs[3 + c]] += rb;
      r_abs[dofs[3 + c]] += std::abs(rb);
    }
    if (!wants_jacobians()) return;
    const int* pm = pattern_->point_map(id);
    ADDSIM_CHECK(mode_ == EvalMode::kResidualAndStepJacobian && pm, "add_point_pair: step Jacobian on whole points only");
    if (!s) return;
    add_pair_step_block(pm, [s](int i, int j) { return (*s)(i, j); });
  }

  /// add_point_pair_step() with r_a and the step block read from structure-of-arrays lanes
  /// (terms/spring_pair_forces.h: r_a[c] at ra[c * stride], s(i, j) at s[(i + 3 j) * stride];
  /// s null: kResidual, or both weights zero) and the stencil's first DOFs of a and b given by
  /// the caller (`da`, `db`, as declared): the same sums in the same order, without the local
  /// copies and the stencil's DOF lookup. Returns false, adding nothing, in
  /// kResidualAndJacobians or when the stencil has no point map (use add_point_pair() or add()).
  bool add_point_pair_lane(int id, int da, int db, const double* ra, const double* s, int stride) {
    const int* pm = nullptr;
    if (wants_jacobians()) {
      pm = pattern_->point_map(id);
      if (mode_ != EvalMode::kResidualAndStepJacobian || !pm) return false;
    }
    if (!completing_) add_point_pair_residual(da, db, ra, stride);
    if (!pm || !s) return true;
    add_pair_step_block(pm, [s, stride](int i, int j) { return s[(i + 3 * j) * stride]; });
    return true;
  }

  /// add_point_pair_lane()'s residual: r += (r_a, −r_a), r_abs += (|r_a|, |r_a|) at the pair's
  /// first DOFs da, db.
  void add_point_pair_residual(int da, int db, const double* ra, int stride) {
    // Components 0 and 1 as one two-double vector, component 2 scalar: each entry gets the
    // same single addition (|−a| is |a| bit for bit), in half the instructions.
    const Pair2 a = {ra[0], ra[stride]};
    const Pair2 abs_a = pair_abs(a);
    add_pair(r.data() + da, a);
    add_pair(r_abs.data() + da, abs_a);
    add_pair(r.data() + db, -a);
    add_pair(r_abs.data() + db, abs_a);
    const double a2 = ra[2 * stride];
    r[da + 2] += a2;
    r_abs[da + 2] += std::abs(a2);
    r[db + 2] += -a2;
    r_abs[db + 2] += std::abs(-a2);
  }

  /// The pair step block's scatter of add_point_pair() / add_point_pair_lane(): ±s(i, j) into
  /// the four 3 × 3 blocks (a, a), (b, a), (a, b), (b, b) through the stencil's point map `pm`,
  /// column by column.
  /// Rows 0 and 1 of a column as one two-double vector, row 2 scalar (the same additions).
  template <class Block>
  void add_pair_step_block(const int* pm, const Block& s) {
    for (int j = 0; j < 3; ++j) {
      double* aa = jac.data() + pm[j * 2];
      double* ba = jac.data() + pm[1 + j * 2];
      double* ab = jac.data() + pm[(3 + j) * 2];
      double* bb = jac.data() + pm[1 + (3 + j) * 2];
      const Pair2 v = {s(0, j), s(1, j)};
      add_pair(aa, v);
      add_pair(ba, -v);
      add_pair(ab, -v);
      add_pair(bb, v);
      const double v2 = s(2, j);
      aa[2] += v2;
      ba[2] += -v2;
      ab[2] += -v2;
      bb[2] += v2;
    }
  }

  /// Column-wise scatter for a stencil of M whole 3-DOF points (an FEM element's 4 nodes): a
  /// term that forms its local 3M × 3M block one column at a time (fem/fem_kernels.h,
  /// StressBlockColumns) adds each column straight into a value array — no N × N local, no
  /// weighted copy. The caller picks the array (jac with the weights already applied, or
  /// kq / kv / ka) and has checked wants_jacobians(). Same values and order per entry as
  /// scatter() of the assembled block.
  template <int M>
  class PointColumns {
   public:
    PointColumns(const int* point_map, double* values) : pm_(point_map), values_(values) {}
    /// False when the stencil is not made of whole points (use add() with a local block).
    bool valid() const { return pm_ != nullptr; }
    /// Column 3l + j += col, where col[i][k] is row 3k + i (i < 3, k < M).
    template <class Column>
    void add(int l, int j, const Column& col) const {
      const int* p = pm_ + M * (3 * l + j);
      for (int k = 0; k < M; ++k) {
        double* v = values_ + p[k];
        v[0] += col[0][k];
        v[1] += col[1][k];
        v[2] += col[2][k];
      }
    }

   private:
    const int* pm_;
    double* values_;
  };
  /// PointColumns for stencil `id` into `values` (one of jac, kq, kv, ka).
  template <int M>
  PointColumns<M> point_columns(int id, VecX& values) const {
    return PointColumns<M>(pattern_->point_map(id), values.data());
  }

  /// Adds two local residuals of one stencil, as add() twice with residual only: r gets
  /// (r + a) + b and r_abs (r_abs + |a|) + |b| per entry (the same bits), in one pass over
  /// the stencil's DOFs. For a term whose residual is a sum of two parts that r_abs should
  /// count separately (FEM elastic and viscous stress).
  template <int N>
  void add_residual_pair(int id, const Eigen::Matrix<double, N, 1>& a, const Eigen::Matrix<double, N, 1>& b) {
    if (completing_) return;
    const std::span<const DofIndex> dofs = stencils_->dofs(id);
    for (int k = 0; k < N; ++k) {
      const DofIndex d = dofs[k];
      r[d] = (r[d] + a[k]) + b[k];
      r_abs[d] = (r_abs[d] + std::abs(a[k])) + std::abs(b[k]);
    }
  }

  /// Dynamic-size variant for stencils whose size is only known at run time.
  void add_dynamic(int id, const VecX& r_local, const MatX* dr_dq, const MatX* dr_dv, const MatX* dr_da);

  VecX r;
  VecX r_abs;
  VecX kq, kv, ka;  ///< kResidualAndJacobians: ∂r/∂q, ∂r/∂v, ∂r/∂a (value arrays)
  VecX jac;         ///< kResidualAndStepJacobian: wq ∂r/∂q + wv ∂r/∂v + wa ∂r/∂a

 private:
  // Two doubles as one GCC vector (unaligned loads and stores through memcpy): element-wise
  // operations, the scalar ones' results; one SSE2 instruction each.
  typedef double Pair2 __attribute__((vector_size(16)));
  static Pair2 pair_abs(const Pair2& a) {
    typedef long long Bits2 __attribute__((vector_size(16)));
    const Bits2 magnitude = {0x7fffffffffffffffLL, 0x7fffffffffffffffLL};
    return reinterpret_cast<Pair2>(reinterpret_cast<Bits2>(a) & magnitude);
  }
  // p[0], p[1] += a[0], a[1].
  static void add_pair(double* p, const Pair2& a) {
    Pair2 x;
    __builtin_memcpy(&x, p, sizeof x);
    x += a;
    __builtin_memcpy(p, &x, sizeof x);
  }

  // s = wq Kq + wv Kv of a step block, skipping zero weights (add()'s order); false if both are 0.
  bool step_block_sum(const Mat3& kq, const Mat3& kv, Mat3& s) const {
    if (weights_.wq == 0.0 && weights_.wv == 0.0) return false;
    if (weights_.wq != 0.0) {
      s.noalias() = weights_.wq * kq;
      if (weights_.wv != 0.0) s.noalias() += weights_.wv * kv;
    } else {
      s.noalias() = weights_.wv * kv;
    }
    return true;
  }

  // r and r_abs += the local residual of stencil `id`.
  template <int N>
  void add_residual(int id, const Eigen::Matrix<double, N, 1>& r_local) {
    if (completing_) return;
    const std::span<const DofIndex> dofs = stencils_->dofs(id);
    for (int k = 0; k < N; ++k) {
      r[dofs[k]] += r_local[k];
      r_abs[dofs[k]] += std::abs(r_local[k]);
    }
  }

  template <int N>
  void scatter(int id, const Eigen::Matrix<double, N, N>& local, VecX& values) const {
    if constexpr (N % 3 == 0) {
      // Whole 3-DOF points: one index per point and column, three consecutive values.
      if (const int* pm = pattern_->point_map(id)) {
        constexpr int M = N / 3;
        for (int c = 0; c < N; ++c)
          for (int k = 0; k < M; ++k) {
            double* v = values.data() + pm[k + c * M];
            v[0] += local(3 * k, c);
            v[1] += local(3 * k + 1, c);
            v[2] += local(3 * k + 2, c);
          }
        return;
      }
    }
    const int* m = pattern_->map(id);
    for (int c = 0; c < N; ++c)
      for (int rr = 0; rr < N; ++rr) values[m[rr + c * N]] += local(rr, c);
  }

  const SparsePattern* pattern_ = nullptr;
  const StencilSet* stencils_ = nullptr;
  EvalMode mode_ = EvalMode::kResidual;
  JacobianWeights weights_{1.0, 0.0, 0.0};
  bool predictor_active_ = false;  ///< see has_predictor()
  bool completing_ = false;        ///< see completing()
  VecX kept_r_, kept_r_abs_;       ///< the residual pass's r and r_abs while completing()
};

/// Receives local parameter derivatives ∂r_local/∂p (N × m, columns = the listed global
/// parameter indices) and contracts them, either with an adjoint vector (vjp mode:
/// grad[p] += (∂r/∂p)ᵀ λ), into one column ∂r/∂p_j (column mode), or into the columns of
/// many listed parameters at once (columns mode, the multi-parameter direct pass).
class ParamSink {
 public:
  /// vjp mode: grad (|p|) += (∂r/∂p)ᵀ lambda (|q|).
  static ParamSink vjp(const StencilSet* stencils, const VecX* lambda, VecX* grad);
  /// column mode: col (|q|) += ∂r/∂p_j.
  static ParamSink column(const StencilSet* stencils, int j, VecX* col);
  /// columns mode: cols (|q| × m) column column_of[j] += ∂r/∂p_j for every parameter j with
  /// column_of[j] ≥ 0 (column_of has |p| entries; −1 = not wanted). If `touched` is given,
  /// every column written is appended to it (repeats included), so that callers need not
  /// scan all m columns for the few a step touches (per-step controls).
  static ParamSink columns(const StencilSet* stencils, const std::vector<int>* column_of, MatX* cols,
                           std::vector<int>* touched = nullptr);

  /// Adds a local block: rows follow the stencil's DOFs, columns the global parameter
  /// indices `pidx` (size m).
  void add(int stencil_id, std::span<const int> pidx, const Eigen::Ref<const MatX>& dr_dp);
  /// Adds ∂r/∂p for residual rows given directly by global DOFs (used for terms
  /// whose parameters act on DOF blocks without a stencil).
  void add_rows(std::span<const DofIndex> dofs, std::span<const int> pidx, const Eigen::Ref<const MatX>& dr_dp);
  /// True when parameter `pidx` matters to this sink (column mode: only j; columns mode:
  /// the listed ones).
  bool wants(int pidx) const {
    if (column_of_) return pidx >= 0 && (*column_of_)[pidx] >= 0;
    return lambda_ != nullptr || pidx == column_;
  }
  /// vjp mode: the adjoint vector λ (|q|); null in column mode. Terms may contract their
  /// local ∂r/∂p with λ themselves (cheaper in closed form) and add the result by
  /// add_contracted().
  const VecX* adjoint() const { return lambda_; }
  /// vjp mode: grad[pidx] += value, a term's own λᵀ ∂r/∂p_pidx (pidx < 0: ignored, as in add()).
  void add_contracted(int pidx, double value) {
    ADDSIM_CHECK(lambda_ != nullptr, "add_contracted needs a vjp sink");
    if (pidx >= 0) (*grad_)[pidx] += value;
  }

 private:
  const StencilSet* stencils_ = nullptr;
  const VecX* lambda_ = nullptr;
  VecX* grad_ = nullptr;
  int column_ = -1;
  VecX* col_ = nullptr;
  const std::vector<int>* column_of_ = nullptr;
  MatX* cols_ = nullptr;
  std::vector<int>* touched_ = nullptr;
};

}  // namespace addsim
