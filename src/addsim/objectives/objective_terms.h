#pragma once
/// Objective terms: centre-of-mass and point targets (the "throwing" and "target pose"
/// tasks of paper §6), control smoothness for per-step controls, and a linear functional of one state.

#include <string>
#include <vector>

#include "addsim/objectives/objective.h"
#include "addsim/objectives/tracked_point.h"

namespace addsim {

/// φ = ½ Σ_{i∈W} ‖c(q^i) − target‖² for the centre of mass c (m) of body `body`, or another
/// tracked point c (a weighted node mean, tracked_point.h); φ in m².
class CenterOfMassTarget final : public ObjectiveTerm {
 public:
  /// target: 3 × 1, m; window W defaults to the final step.
  CenterOfMassTarget(int body, const Vec3& target, StepWindow window = StepWindow::final_step());
  CenterOfMassTarget(TrackedPoint point, const Vec3& target, StepWindow window = StepWindow::final_step());
  std::string_view name() const override { return "com_target"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;
  bool has_residuals() const override { return true; }
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const override;
  /// From ∂c/∂q^i and the sensitivity blocks (tracked_point_jacobian), not one tangent per column.
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                         MatX& out) const override;
  /// ∂ρ_i/∂q^i = ∂c/∂q^i per step of the window.
  bool residual_state_rows(const Model& model, const Trajectory& traj,
                           std::vector<ResidualStateRows>& rows) const override;

 private:
  TrackedPoint point_;
  Vec3 target_;
  StepWindow window_;
};

/// φ = ½ Σ_{i∈W} Σ_k ‖x_k(q^i) − target_k‖² for points with 3 DOFs each (particles, FEM
/// nodes), x_k = q^i[dofs_k … dofs_k + 2]; φ in m² (paper §6.4 sheet "target pose").
class PointTargets final : public ObjectiveTerm {
 public:
  /// dofs: global DOF of each point's x coordinate; targets: one 3 × 1 position (m) per point.
  PointTargets(std::vector<DofIndex> dofs, std::vector<Vec3> targets, StepWindow window = StepWindow::final_step());
  std::string_view name() const override { return "point_targets"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;
  bool has_residuals() const override { return true; }
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const override;
  /// Selected rows of S^i per step of the window (no p dependence).
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                         MatX& out) const override;
  /// ∂ρ_i/∂q^i: a unit entry per row (the point's coordinate).
  bool residual_state_rows(const Model& model, const Trajectory& traj,
                           std::vector<ResidualStateRows>& rows) const override;

 private:
  // The DOFs checked against the model (InputError otherwise).
  void check_dofs(const Model& model) const;

  std::vector<DofIndex> dofs_;
  std::vector<Vec3> targets_;
  StepWindow window_;
};

/// A per-step control block of p: `rows` rows of `cols` values, row r = control of step r,
/// row-major from `offset` (handle positions: 3 m; motor target angles: 1 rad; kinematic
/// body poses: 6, m and rad).
struct ControlRows {
  int offset = 0;
  int rows = 0;
  int cols = 0;
  std::string label;  ///< parameter path, for errors
};

/// The paper's smoothness regulariser (§6.4) φ = Σ_c Σ_{r=a}^{b−1} ‖c^{r+1} − c^r‖² over the
/// rows c^r of one or more per-step controls (handle positions, motor targets, kinematic
/// poses), rows [a, b] = `rows` resolved on 0 … rows − 1; a pure ∂φ/∂p term (units of the
/// control squared). Weight it with β.
class ControlSmoothness final : public ObjectiveTerm {
 public:
  /// The positions of handle `handle` (m).
  ControlSmoothness(int handle, StepWindow rows = StepWindow::range(0, -1));
  /// Any per-step controls (each with ≥ 2 rows); throws InputError for an empty list or an
  /// entry with fewer than 2 rows or no columns.
  ControlSmoothness(std::vector<ControlRows> controls, StepWindow rows = StepWindow::range(0, -1));
  std::string_view name() const override { return "control_smoothness"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;
  bool has_residuals() const override { return true; }
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const override;
  /// dρ/dp = ∂ρ/∂p (±√2 entries; the controls' states do not enter ρ).
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                         MatX& out) const override;
  /// None: ρ depends on p only.
  bool residual_state_rows(const Model&, const Trajectory&, std::vector<ResidualStateRows>&) const override {
    return true;
  }

 private:
  int handle_ = -1;
  std::vector<ControlRows> controls_;
  StepWindow rows_;
};

/// φ = wᵀ q^i for one step i (negative: from the end) and weights w (|q|); mainly for tests.
class LinearState final : public ObjectiveTerm {
 public:
  LinearState(VecX weights, int step);
  std::string_view name() const override { return "linear_state"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;

 private:
  VecX weights_;
  int step_;
};

}  // namespace addsim
