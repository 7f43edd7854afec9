#pragma once
/// One step of a recorded trajectory linearised at its converged state (DESIGN.md §1, §6):
/// q^i, v^i, a^i from the BDF scheme, the terms' local partials, the step Jacobian
/// dr^i/dq^i, the history Jacobians dr^i/dq^{i-k} (k = 1 … K, zero for i − k < 0) and the
/// start-up Jacobian dr^i/dv⁰, all as value arrays over the model's fixed pattern. Shared by the adjoint and the direct pass; all buffers are
/// allocated once, so evaluating a step does not allocate.

#include <Eigen/SparseCore>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/integrators/bdf.h"
#include "addsim/math/sparse_assembly.h"
#include "addsim/model/model.h"
#include "addsim/rigid/rigid_slip.h"
#include "addsim/solver/simulator.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/stick_constraints.h"

namespace addsim {

/// Relative residual ‖b − A x‖ / ‖b‖ to which the adjoint and direct passes solve each step
/// system (GMRES on the reused LU, solver/reused_factorization.h). The gradient's relative
/// error grows about 4–90× this per-solve tolerance over whole rollouts (soft ball, cylinder
/// drop, sheet, the gradcheck matrix; docs/validation/gradients.md §3): 1e-12 keeps adjoint
/// and direct within ≈ 1e-11 of each other, under the 1e-9 the tests require by ≥ 10×, while
/// 1e-11 reaches 3.7e-10 and 1e-10 exceeds 1e-9 (soft ball, BDF2). Finite-difference checks
/// (1e-6 / 1e-4) alone would allow 1e-8; 1e-11 would save only ≈ 11 % of the GMRES
/// iterations (cylinder drop).
inline constexpr double kSensitivitySolveTolerance = 1e-12;

/// A step matrix given by its `values` on the model's `pattern` (the layout StepLinearization
/// returns: step, history, v⁰ and a⁰ Jacobians) as a sparse view, no copy. The direct and the
/// reverse Jacobian sweeps multiply with it.
using PatternMatrixView = Eigen::Map<const Eigen::SparseMatrix<double, Eigen::ColMajor, int>>;

inline PatternMatrixView pattern_matrix_view(const SparsePattern& pattern, const VecX& values) {
  return PatternMatrixView(pattern.size(), pattern.size(), pattern.nnz(), pattern.outer().data(),
                           pattern.inner().data(), values.data());
}

/// The same matrix written densely into `out` (|q| × |q|, sized by the caller): the sweeps'
/// dense path for small systems.
inline void pattern_matrix_to_dense(const SparsePattern& pattern, const VecX& values, MatX& out) {
  out.setZero();
  const int* outer = pattern.outer().data();
  const int* inner = pattern.inner().data();
  for (int c = 0; c < pattern.size(); ++c)
    for (int e = outer[c]; e < outer[c + 1]; ++e) out(inner[e], c) = values[e];
}

/// Initial guess for the next solve of a sequence of step systems whose solutions change
/// smoothly from step to step (adjoint states, direct sensitivities): the cubic through the
/// last four solutions, lower orders while fewer are `known`; last(k) is the k-th last
/// (k = 1 … min(known, 4), known ≥ 1). The adjoint and direct passes start GMRES there
/// (docs/validation/gradients.md §3).
template <class Last>
void extrapolate_solution(const Last& last, int known, VecX& out) {
  if (known >= 4)
    out = 4.0 * last(1) - 6.0 * last(2) + 4.0 * last(3) - last(4);
  else if (known == 3)
    out = 3.0 * last(1) - 3.0 * last(2) + last(3);
  else if (known == 2)
    out = 2.0 * last(1) - last(2);
  else
    out = last(1);
}

class StepLinearization {
 public:
  /// How the history blocks dr^i/dq^{i-k}, dr^i/dv⁰ are provided: as value arrays (the direct
  /// pass multiplies them with one tangent per parameter) or only as transposed products
  /// with one adjoint vector (history_vjp(); the adjoint pass), which skips forming them.
  enum class History { kMatrices, kProducts };

  /// The model must be finalised and outlive this object.
  explicit StepLinearization(const Model& model, History history = History::kMatrices);

  /// Evaluates step i ∈ [1, n] of `traj` (which must hold q⁰ … q^i, q0, v0 and p, and
  /// outlive the use of this step's results).
  void evaluate(const Trajectory& traj, int i);

  /// dr^i/dq^i = ∂r/∂q + (cv_i[0]/h) ∂r/∂v + (ca_i[0]/h²) ∂r/∂a (nnz values). Steps are the
  /// trajectory's internal steps (Trajectory::internal_steps(); its own grid if sub-stepped).
  const VecX& step_jacobian() const { return jac_; }
  /// dr^i/dq^{i-k} = (cv_i[k]/h) ∂r/∂v + (ca_i[k]/h²) ∂r/∂a for k ∈ [1, K] (nnz values;
  /// zero when i − k < 0). History::kMatrices only.
  const VecX& history_jacobian(int k) const {
    ADDSIM_CHECK(history_ == History::kMatrices, "history matrices are not formed in History::kProducts");
    return hist_jac_[k - 1];
  }
  /// dr^i/dv⁰ = v0_v,i ∂r/∂v + (v0_a,i/h) ∂r/∂a (nnz values); only meaningful if
  /// depends_on_v0(). History::kMatrices only.
  const VecX& v0_jacobian() const {
    ADDSIM_CHECK(history_ == History::kMatrices, "history matrices are not formed in History::kProducts");
    return v0_jac_;
  }
  /// The transposed history products of an adjoint vector λ (|q|) at the evaluated step:
  /// afterwards history_product(k) = (dr^i/dq^{i-k})ᵀ λ for k ∈ [1, K] and, if
  /// depends_on_v0(), v0_product() = (dr^i/dv⁰)ᵀ λ (|q| each). Equal to the products with
  /// history_jacobian() and v0_jacobian() up to round-off. In History::kProducts they are
  /// formed from (∂r/∂v)ᵀλ and (∂r/∂a)ᵀλ (one pass over the partials), combined with the BDF
  /// weights, with each chart switch's Jacobian applied to its body's block,
  /// (A G)ᵀλ = Gᵀ (Aᵀλ); a step with stick constraints (rows replaced) forms its history
  /// matrices instead (paper eq. adjoint, the history sum).
  void history_vjp(const VecX& lambda);
  const VecX& history_product(int k) const { return hist_prod_[k - 1]; }
  const VecX& v0_product() const { return v0_prod_; }
  /// True in the start-up steps whose rates read the initial velocity v⁰ directly.
  bool depends_on_v0() const { return depends_on_v0_; }
  /// dr^i/da⁰ = a0_v,i h ∂r/∂v + a0_a,i ∂r/∂a (constant-acceleration start-up; meaningful if
  /// depends_on_a0(); History::kMatrices only) and its transposed product with the λ of
  /// history_vjp().
  const VecX& a0_jacobian() const {
    ADDSIM_CHECK(history_ == History::kMatrices, "history matrices are not formed in History::kProducts");
    return a0_jac_;
  }
  const VecX& a0_product() const { return a0_prod_; }
  bool depends_on_a0() const { return depends_on_a0_; }
  /// Residual r^i at the stored state (|q|), for checks: ‖r‖ is the forward tolerance.
  const VecX& residual() const { return assembly_.r; }
  /// Adds ∂r^i/∂p through `sink` (every term's param_derivatives at the stored state).
  void param_derivatives(ParamSink& sink) const;
  int step() const { return step_; }
  /// P v: a right-hand side (e.g. ∂r^i/∂p) with the rows of stick-constrained points
  /// replaced as in the constrained step system (hybrid contact; no-op otherwise).
  void project_rows(VecX& v) const {
    StickRows::project(sticks_, v);
    StickRows::project_bodies(bodies_, v);
  }
  /// True if this step has stick-constrained rows (project_rows() is not the identity).
  bool has_constrained_rows() const { return !sticks_.empty() || !bodies_.empty(); }
  /// Pᵀ λ, the adjoint of project_rows().
  void project_rows_transpose(VecX& lambda) const {
    StickRows::project_transpose(sticks_, lambda);
    StickRows::project_bodies(bodies_, lambda);
  }

 private:
  // values (nnz) ← values with the body's block columns multiplied by G (chart switch).
  void apply_chart_jacobian(const Body& body, const MatX& G, VecX& values) const;
  // hist_jac_ and v0_jac_ from the partials (stick rows and chart switches applied).
  void form_history_matrices(const StateHistory& hist);

  const Model& model_;
  Assembly assembly_;
  StickRows stick_rows_;
  std::vector<StickPoint> sticks_;
  std::vector<StickBody> bodies_;  ///< rigid bodies with stick constraints in this step
  std::vector<SlipPoint> slips_;
  std::vector<RigidSlipPoint> rigid_slips_;
  History history_;
  // The step's history blocks are stored in hist_jac_, v0_jac_ (always in kMatrices; in
  // kProducts only for steps with stick constraints, whose rows they replace).
  bool have_history_matrices_ = false;
  VecX q_, v_, a_, v_hist_, a_hist_, jac_, v0_jac_, a0_jac_, a0_prod_;
  std::vector<VecX> hist_jac_;
  VecX uv_, ua_, v0_prod_;  ///< (∂r/∂v)ᵀλ, (∂r/∂a)ᵀλ, (dr^i/dv⁰)ᵀλ
  std::vector<VecX> hist_prod_;
  const Trajectory* traj_ = nullptr;
  const VecX* p_ = nullptr;
  int step_ = 0;
  bool depends_on_v0_ = false;
  bool depends_on_a0_ = false;
  const TimeScheme* scheme_ = nullptr;  ///< the evaluated trajectory's scheme of internal steps
};

}  // namespace addsim
