#pragma once
/// The full direct-sensitivity Jacobian dq^i/dp of a recorded trajectory for many parameters
/// in one sweep over the steps (paper §3.2, the Gauss–Newton Jacobian of §6.4): per step the
/// sensitivity matrix S^i = dq^i/dp (|q| × m) solves
///   (dr^i/dq^i) S^i = −(∂r^i/∂p + Σ_{k=1..min(K,i)} dr^i/dq^{i-k} S^{i-k} + dr^i/dv⁰ ∂v⁰/∂p),
/// S^0 = ∂q⁰/∂p, with one factorisation of dr^i/dq^i and one multi-right-hand-side solve for
/// all m columns, where sensitivity/direct.h solves column by column (one pass per
/// parameter in the Gauss–Newton Jacobian before). All ∂r^i/∂p columns of a step come from
/// one ParamSink::columns pass over the terms.
///
/// Columns start at their step: a parameter whose ∂r^j/∂p, ∂q⁰/∂p and ∂v⁰/∂p vanish for all
/// j < i has S^j = 0 for j < i (the recursion above is homogeneous), so a column is carried
/// only from the first step at which its right-hand side is non-zero. For per-step controls
/// (poses, motor targets, handle positions) the work and memory are about half of all
/// m columns at every step. The stored blocks hold the active columns in the order in which
/// they became non-zero. Steps before the first one any listed parameter can enter
/// (first_parameter_step() in reverse_jacobian.h; a continuation stage over the second half
/// of a per-step control) are not linearised or factorised at all.
///
/// Memory: Σ_i |q| · active_i doubles (at most (n + 1) · |q| · m); callers with large
/// problems split the parameters into blocks (optim/problem.cpp).

#include <memory>
#include <span>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// S^0 … S^n for a list of parameters, stored by step with each step's active columns only.
struct TrajectorySensitivities {
  /// The listed parameters (indices into p), m of them.
  std::vector<int> params;
  /// Per listed parameter c: its column in the stored blocks (the same at every step from
  /// first_step[c] on), −1 if its sensitivity is zero throughout.
  std::vector<int> position;
  /// Per listed parameter c: the first step whose S^i column is carried (n + 1 if none).
  std::vector<int> first_step;
  /// Per step i = 0 … n: |q| × active_i; column position[c] is s^i_c = dq^i/dp_c (units of
  /// q per unit of p_c) for every c with first_step[c] ≤ i; the other parameters' s^i are 0.
  std::vector<MatX> s;
  double wall_seconds = 0.0;
  long factorizations = 0;  ///< LU factorisations of step Jacobians (one per step)

  int num_steps() const { return static_cast<int>(s.size()) - 1; }
  /// s^i_c (|q|) for listed parameter c (a zero vector before its first step).
  VecX column(int i, int c) const;
  /// Fills dq[i] = s^i_c for i = 0 … n (the trajectory tangent of objectives/objective.h).
  void tangent(int c, std::vector<VecX>& dq) const;
};

/// Systems up to this many DOFs are solved as dense LUs with all right-hand sides at once
/// (blocked triangular solves); larger ones through the model's sparse solver
/// (solver/linear_solver.h), one back-substitution per column. The dense path mirrors the
/// automatic choice of make_linear_solver (dense below 300 DOF).
inline constexpr int kDenseSensitivityDofs = 300;

/// The sweep with its workspace kept between calls: the two step linearisations, the LU and
/// sparse solver (its symbolic analysis), the right-hand-side and product buffers, and the
/// stored blocks of the last result, whose memory the next run() reuses when its active
/// column counts repeat (the Gauss–Newton iterations of one problem). A run allocates nothing
/// per step; at 12 DOF (cube drag) fresh blocks and buffers per step cost as much as the
/// arithmetic (docs/validation/trajectory-optimization.md §Jacobian cost). Not thread-safe:
/// one object per thread.
class DirectSensitivitySweep {
 public:
  /// The model must be finalised and outlive this object. `dense_dofs` as below.
  explicit DirectSensitivitySweep(const Model& model, int dense_dofs = kDenseSensitivityDofs);
  ~DirectSensitivitySweep();
  DirectSensitivitySweep(const DirectSensitivitySweep&) = delete;
  DirectSensitivitySweep& operator=(const DirectSensitivitySweep&) = delete;

  /// S^i of `traj` for `params` (as direct_sensitivity_matrices()); the result stays valid
  /// until the next run(). Same errors.
  const TrajectorySensitivities& run(const Trajectory& traj, std::span<const int> params);
  /// The last result, moved out (the next run() allocates its blocks anew).
  TrajectorySensitivities take() { return std::move(out_); }

 private:
  struct Workspace;
  const Model& model_;
  std::unique_ptr<Workspace> w_;
  TrajectorySensitivities out_;
};

/// Direct sensitivities S^i = dq^i/dp of `traj` for the parameters `params` (indices into p)
/// in one sweep (a DirectSensitivitySweep used once). Equal to gradient_direct()'s per-parameter sensitivities up to the
/// tolerance of its GMRES solves (1e-12 relative per step). With solver.threads = 2 a helper
/// thread linearises step i + 1 while step i is solved. Throws SimulationError (naming the
/// step) if `traj` did not complete or a step Jacobian is singular; InputError for a
/// parameter index out of range or listed twice. `dense_dofs` moves the switch between the
/// dense and the sparse path (tests run both on one scene).
TrajectorySensitivities direct_sensitivity_matrices(const Model& model, const Trajectory& traj,
                                                    std::span<const int> params,
                                                    int dense_dofs = kDenseSensitivityDofs);

}  // namespace addsim
