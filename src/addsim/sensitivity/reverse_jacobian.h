#pragma once
/// The Gauss–Newton Jacobian of residuals ρ(q̃, p) by reverse mode: one backward sweep with a
/// block of adjoint seeds, one per residual row that reads the trajectory (paper §3.3, eqs.
/// adjoint and adjGrad with k right-hand sides). Per step i = n … 1 the adjoint block
/// Λ^i (|q| × k) solves
///   (dr^i/dq^i)ᵀ Λ^i = (∂ρ/∂q^i)ᵀ − Σ_{k=1..K} (dr^{i+k}/dq^i)ᵀ Λ^{i+k},
/// with ONE factorisation of dr^i/dq^i for all k seeds, and the state part of dρ/dp is
///   Σ_i ∂ρ/∂q^i dq^i/dp = −Σ_{i≥1} Λ^iᵀ P^i ∂r^i/∂p + (q⁰, v⁰, a⁰ chained through p),
/// P^i the hybrid model's stick-row projection of step i. The direct sweep
/// (direct_jacobian.h) costs one solve per step and parameter column, this one one solve per
/// step and residual row: trajectory optimisation with per-step controls has |p| in the
/// hundreds to thousands and a dozen rows that read the state (cube drag: 12 rows against 360
/// columns; docs/gradients.md §Reverse mode).
///
/// Rows end at their step: a row whose ∂ρ/∂q^j vanishes for all j > i has Λ^j = 0 for j > i
/// (the recursion is homogeneous), so a seed is carried only from the last step it reads
/// down to step 1, the mirror of the direct sweep's columns that start at their step. And
/// the sweep ends at the first step any listed parameter enters (first_parameter_step()):
/// below it ∂r^i/∂p = 0 for every listed column and the start does not depend on them, so
/// those steps add nothing (a continuation stage over the second half of a per-step control,
/// the sheet flip's "flip 2": half the steps).
///
/// Same contract as the adjoint (adjoint.h) and the direct sweep: step Jacobians re-evaluated
/// at the converged states, BDF1/BDF2 history blocks, the start-up's dependence on v⁰ and a⁰,
/// hybrid stick rows applied as in the forward step; an exact LU per step (no Krylov
/// tolerance), so the result equals the direct sweep's to round-off.

#include <memory>
#include <span>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/sensitivity/direct_jacobian.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// ∂ρ/∂q^i of a run of consecutive residual rows at one output step i.
struct ResidualStateRows {
  int step = 0;       ///< output step i ∈ [0, n]
  int first_row = 0;  ///< first row of the run in ρ
  MatX dq;            ///< rows × |q|: ∂ρ_{first_row + r}/∂q^i (units of ρ per unit of q)
};

/// Work of the two ways to form the state part of dρ/dp, in step solves with one right-hand
/// side each (both factorise every step once and form ∂r^i/∂p once per step; what differs is
/// the number of right-hand sides carried through the steps).
struct JacobianModeCost {
  double direct = 0.0;   ///< Σ_c (steps from column c's first step to n): the direct sweep's columns
  double reverse = 0.0;  ///< Σ_rows (the row's last step): the reverse sweep's seeds
  bool reverse_is_cheaper() const { return reverse < direct; }
};

/// The first output step whose residual r^i may depend on parameter j, 0 if p_j may set the
/// initial state (q⁰, v⁰, a⁰). Row r of a per-step control with n + 1 rows (handle positions,
/// motor targets, kinematic poses; ParamKind::kControl) is read by step r and, through the
/// handles' velocity stencils, by the K steps after it, never by an earlier step; rows 0 and
/// 1 also set the start (a kinematic body's q⁰ and v⁰, the handles' start-up extrapolation)
/// and count from step 0. Every other parameter counts from step 0. Both sweeps rely on it:
/// with every listed parameter from step s on, dq^i/dp = 0 for i < s (the recursion of
/// direct_jacobian.h is homogeneous there), so the direct sweep starts at s and the reverse
/// sweep stops there (uniform runs; a sub-stepped run is swept over all its steps).
int first_parameter_step(const Model& model, int j);

/// The smallest first_parameter_step() over `params`; `none` if the list is empty.
int first_parameter_step(const Model& model, std::span<const int> params, int none);

/// The cost model of the mode choice (optim/problem.h, JacobianMode::kAuto). A column's first
/// step is estimated from its parameter entry: row r of a per-step control with n + 1 rows
/// (handle positions, motor targets, kinematic poses) first enters step r (its value at r
/// drives r^r; rows 0 and 1 also set q⁰ and v⁰, counted from step 0 here), every other
/// parameter enters at step 0. A row's last step is the largest output step of its blocks.
/// Output steps are used for sub-stepped runs too (an estimate; both sides scale alike).
JacobianModeCost jacobian_mode_cost(const Model& model, std::span<const int> params,
                                    std::span<const ResidualStateRows> rows);

/// The reverse sweep with its workspace kept between calls (step linearisations, LU and
/// sparse solver, the adjoint blocks and their history window, all sized once for the
/// largest k and m seen), in the style of DirectSensitivitySweep: a run allocates nothing per
/// step. Not thread-safe: one object per thread.
class ReverseJacobianSweep {
 public:
  /// The model must be finalised and outlive this object. Systems up to `dense_dofs` DOFs are
  /// solved with dense LUs (all seeds at once with blocked triangular solves), larger ones
  /// with the model's sparse solver (one transposed back-substitution per seed).
  explicit ReverseJacobianSweep(const Model& model, int dense_dofs = kDenseSensitivityDofs);
  ~ReverseJacobianSweep();
  ReverseJacobianSweep(const ReverseJacobianSweep&) = delete;
  ReverseJacobianSweep& operator=(const ReverseJacobianSweep&) = delete;

  /// out (|ρ| × m, rows as in `rows`, columns = `params`) += Σ_i (∂ρ/∂q^i) dq^i/dp_c, the
  /// trajectory's part of dρ/dp (the caller adds ∂ρ/∂p). A row may appear in several blocks
  /// (residuals that read several steps). Throws SimulationError (naming the step) if `traj`
  /// did not complete or a step Jacobian is singular; InputError for a parameter index out of
  /// range or listed twice; InternalError for a block outside `out` or of the wrong width.
  void run(const Trajectory& traj, std::span<const int> params, std::span<const ResidualStateRows> rows,
           Eigen::Ref<MatX> out);

  double wall_seconds() const { return wall_seconds_; }  ///< of the last run
  long factorizations() const { return factorizations_; }  ///< LU factorisations of the last run
  int seeds() const { return seeds_; }  ///< residual rows that read the state, last run

 private:
  struct Workspace;
  const Model& model_;
  std::unique_ptr<Workspace> w_;
  double wall_seconds_ = 0.0;
  long factorizations_ = 0;
  int seeds_ = 0;
};

}  // namespace addsim
