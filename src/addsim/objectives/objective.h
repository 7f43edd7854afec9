#pragma once
/// Objectives Φ(q̃, p) = Σ_t w_t φ_t(q̃, p) as weighted sums of terms (paper eq. phi). Each
/// term returns its value and adds its partials ∂φ/∂q^i (only for the steps it touches)
/// and ∂φ/∂p; the gradient passes in sensitivity/ turn them into dΦ/dp.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "addsim/sensitivity/direct_jacobian.h"
#include "addsim/sensitivity/reverse_jacobian.h"
#include "addsim/sensitivity/objective_function.h"

namespace addsim {

/// A range of steps [first, last]; negative values count from the end (−1 = step n).
struct StepWindow {
  int first = -1;
  int last = -1;
  /// Only the final step n.
  static StepWindow final_step() { return {-1, -1}; }
  /// Only step i (negative: from the end).
  static StepWindow at(int i) { return {i, i}; }
  /// Steps first … last (negative: from the end).
  static StepWindow range(int first, int last) { return {first, last}; }
  /// The window as absolute steps in [0, n]; throws InputError if empty or out of range.
  std::pair<int, int> resolve(int n, std::string_view who) const;
};

/// A tangent of a recorded trajectory along one direction in parameter space: dq^i (|q| each,
/// one per stored step, e.g. the direct sensitivities s^i_j of sensitivity/direct.h) and dp (|p|).
struct TrajectoryTangent {
  const std::vector<VecX>* dq = nullptr;
  const VecX* dp = nullptr;
};

/// Sensitivities of `traj` for `params` that are zero at every step (no active column): with
/// them ObjectiveTerm::residual_jacobian() gives ∂ρ/∂p alone.
TrajectorySensitivities no_sensitivities(const Model& model, const Trajectory& traj, std::span<const int> params);

/// One objective term φ(q̃, p).
class ObjectiveTerm {
 public:
  virtual ~ObjectiveTerm() = default;
  /// Short name for reports ("com_target", "control_smoothness").
  virtual std::string_view name() const = 0;
  /// Returns φ; if grad is non-null adds scale·∂φ/∂q^i and scale·∂φ/∂p into it.
  virtual double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const = 0;
  /// True if the term is a sum of squares φ = ½ ‖ρ(q̃, p)‖² with residuals() implemented
  /// (Gauss–Newton needs it).
  virtual bool has_residuals() const { return false; }
  /// Least-squares form (only if has_residuals()): writes the residual vector ρ into `rho`
  /// (resized; units of √φ) and, when `tangent` is non-null, its directional derivative
  /// dρ = Σ_i ∂ρ/∂q^i dq^i + ∂ρ/∂p dp into `drho` (same size). Throws InternalError otherwise.
  virtual void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                         VecX* drho) const;
  /// Residual Jacobian for the parameters of `sens` (only if has_residuals()): column c of
  /// `out` (resized to |ρ| × m) = Σ_i ∂ρ/∂q^i s^i_c + ∂ρ/∂p_c, the Gauss–Newton Jacobian's
  /// block of this term. The default calls residuals() with one tangent per column; terms
  /// that read few steps or only p override it with the column loop inside.
  virtual void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                                 MatX& out) const;
  /// Reverse-mode form (only if has_residuals()): appends to `rows` one block per step the
  /// residuals read, ∂ρ/∂q^i of a run of consecutive rows (row numbers of this term's ρ, as in
  /// residuals(); ∂ρ/∂p stays in residual_jacobian()). Returns false if the term does not
  /// provide it (the default; Gauss–Newton then uses direct sensitivities). A term whose ρ
  /// depends on p only appends nothing and returns true.
  virtual bool residual_state_rows(const Model& model, const Trajectory& traj,
                                   std::vector<ResidualStateRows>& rows) const;
};

/// Φ = Σ_t w_t φ_t.
class Objective final : public ObjectiveFunction {
 public:
  /// Appends term φ with weight w (dimensionless scale of φ's units).
  void add(double weight, std::unique_ptr<ObjectiveTerm> term);
  /// Φ; adds ∂Φ/∂q^i and ∂Φ/∂p into grad when non-null.
  double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const override;
  /// Index of the first term that is not a sum of squares, or −1 if all are.
  int first_non_least_squares_term() const;
  /// Stacked residuals ρ = [√w_t ρ_t] with Φ = ½ ‖ρ‖² (requires every term to be a sum of
  /// squares, else InternalError); the tangent's dρ into `drho` when `tangent` is non-null.
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const;
  /// dρ/dp (|ρ| × m) of the stacked residuals for the parameters of `sens` (every term's
  /// residual_jacobian(), scaled by √w_t).
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                         MatX& out) const;
  /// The same with the terms' blocks in `parts` (kept by the caller between evaluations, so
  /// that blocks of repeating sizes reuse their memory: cube drag, a 354 × 360 smoothness block).
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens, MatX& out,
                         std::vector<MatX>& parts) const;
  /// The pieces of dρ/dp for reverse mode (sensitivity/reverse_jacobian.h): `out` (|ρ| × m)
  /// = ∂ρ/∂p for the parameters of `zero`, sensitivities with no active column
  /// (no_sensitivities()), through every term's residual_jacobian() with the blocks in
  /// `parts`; `rows` = every term's residual_state_rows(), rows numbered in the stacked ρ and
  /// scaled by √w_t (none for a term of weight 0: its rows are zero). Returns −1, or the index of the first term that does not provide its
  /// rows (then `rows` is incomplete).
  int residual_partials(const Model& model, const Trajectory& traj, const TrajectorySensitivities& zero, MatX& out,
                         std::vector<MatX>& parts, std::vector<ResidualStateRows>& rows) const;
  /// Unweighted value of every term, in the order added (for reports).
  std::vector<double> term_values(const Model& model, const Trajectory& traj) const;
  int size() const { return static_cast<int>(terms_.size()); }
  const ObjectiveTerm& term(int t) const { return *terms_[t].second; }

 private:
  std::vector<std::pair<double, std::unique_ptr<ObjectiveTerm>>> terms_;
};

}  // namespace addsim
