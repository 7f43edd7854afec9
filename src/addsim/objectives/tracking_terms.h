#pragma once
/// Objective terms that track data over time (paper §6): distance of the centre of mass to
/// a line, marker and feature-point trajectories, point clouds against the simulated
/// boundary surface, an upright regulariser for pose targets, and a soft minimum over time
/// of the distance to a target (the loss of paper §6 "learning to throw").

#include <vector>

#include "addsim/objectives/markers.h"
#include "addsim/objectives/objective.h"
#include "addsim/objectives/tracked_point.h"

namespace addsim {

/// φ = ½ Σ_{i∈W} ‖(I − u uᵀ)(c(q^i) − a)‖²: squared distance (m²) of body `body`'s centre of
/// mass c (or another tracked point, tracked_point.h) to the line through a (m) with
/// direction u (normalised; non-zero).
class CenterOfMassLine final : public ObjectiveTerm {
 public:
  CenterOfMassLine(int body, const Vec3& point, const Vec3& direction, StepWindow window);
  CenterOfMassLine(TrackedPoint tracked, const Vec3& point, const Vec3& direction, StepWindow window);
  std::string_view name() const override { return "com_line"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;
  bool has_residuals() const override { return true; }
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const override;
  /// From ∂c/∂q^i and the sensitivity blocks (tracked_point_jacobian), not one tangent per column.
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                         MatX& out) const override;
  /// ∂ρ_i/∂q^i = (I − u uᵀ) ∂c/∂q^i per step of the window.
  bool residual_state_rows(const Model& model, const Trajectory& traj,
                           std::vector<ResidualStateRows>& rows) const override;

 private:
  TrackedPoint tracked_;
  Vec3 point_, direction_;
  StepWindow window_;
};

/// φ = Σ_{i∈W} eᵀ c(q^i): a coordinate (m) of body `body`'s centre of mass along the unit axis e
/// (e.g. "how far does the ball fly": the final x of the centre of mass), or of another
/// tracked point (tracked_point.h).
class CenterOfMassCoordinate final : public ObjectiveTerm {
 public:
  CenterOfMassCoordinate(int body, const Vec3& axis, StepWindow window);
  CenterOfMassCoordinate(TrackedPoint tracked, const Vec3& axis, StepWindow window);
  std::string_view name() const override { return "com_coordinate"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;

 private:
  TrackedPoint tracked_;
  Vec3 axis_;
  StepWindow window_;
};

/// Observed marker positions at one step: positions[m] (m) counts only where visible[m].
struct MarkerFrame {
  int step = 0;                 ///< absolute step in [0, n]
  std::vector<Vec3> positions;  ///< one per marker, m
  std::vector<bool> visible;    ///< one per marker
};

/// φ = ½ Σ_f Σ_{m visible in f} ‖x_m(q^{step_f}) − d_{f,m}‖² (m²): marker or feature-point
/// trajectories against observed data (paper §6.3, "soft material from motion capture").
class MarkerTrajectories final : public ObjectiveTerm {
 public:
  /// Throws InputError if a frame's sizes do not match the number of markers.
  MarkerTrajectories(std::vector<Marker> markers, std::vector<MarkerFrame> frames);
  std::string_view name() const override { return "markers"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;
  bool has_residuals() const override { return true; }
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const override;
  /// dρ/dp from the frames' steps only (marker jvps of the stored sensitivity columns).
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                         MatX& out) const override;
  /// ∂x_m/∂q^{step_f} per frame and visible marker (3 rows each).
  bool residual_state_rows(const Model& model, const Trajectory& traj,
                           std::vector<ResidualStateRows>& rows) const override;
  const std::vector<Marker>& markers() const { return markers_; }

 private:
  // The three rows ∂x_m/∂q (3 × |q|) of marker m at configuration q (from three vjps).
  void marker_rows(const VecX& q, size_t m, MatX& jac) const;

  std::vector<Marker> markers_;
  std::vector<MarkerFrame> frames_;
};

/// A point cloud (m) observed at one step.
struct PointCloudFrame {
  int step = 0;
  std::vector<Vec3> points;
};

/// φ = ½ Σ_f Σ_j min_t dist²(y_j, T_t(q^{step_f})) (m²): every observed point y_j against the
/// nearest point of the boundary triangles T_t of FEM body `body`. With the closest point
/// c = Σ_a β_a x_a (barycentric β on the nearest triangle), ∂φ/∂x_a = β_a (c − y_j).
class PointCloudDistance final : public ObjectiveTerm {
 public:
  PointCloudDistance(int body, std::vector<PointCloudFrame> frames);
  std::string_view name() const override { return "point_cloud"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;
  bool has_residuals() const override { return true; }
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const override;

 private:
  int body_;
  std::vector<PointCloudFrame> frames_;
};

/// Closest point on triangle (a, b, c) to y; returns its barycentric coordinates (3, sum 1).
Vec3 closest_point_on_triangle(const Vec3& y, const Vec3& a, const Vec3& b, const Vec3& c);

/// φ = ½ Σ_{i∈W} ‖d/‖d‖ − u‖², d = x_top(q^i) − x_bottom(q^i): keeps the axis between two
/// markers along the unit direction u ("stay upright" regulariser of pose targets; 1).
class UprightAxis final : public ObjectiveTerm {
 public:
  UprightAxis(Marker bottom, Marker top, const Vec3& up, StepWindow window);
  std::string_view name() const override { return "upright"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;
  bool has_residuals() const override { return true; }
  void residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                 VecX* drho) const override;
  /// From ∂ρ_i/∂q^i (marker vjps) and the sensitivity blocks, not one tangent per column.
  void residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                         MatX& out) const override;
  /// ∂ρ_i/∂q^i per step of the window.
  bool residual_state_rows(const Model& model, const Trajectory& traj,
                           std::vector<ResidualStateRows>& rows) const override;

 private:
  // ∂ρ_i/∂q^i (3 × |q|) at step i.
  void step_rows(const VecX& q, int i, MatX& jac) const;
  // The markers' bottom → top vector d at step i and its length (SimulationError if zero).
  Vec3 axis_at(const VecX& q, int i, double& len) const;

  Marker bottom_, top_;
  Vec3 up_;
  StepWindow window_;
};

/// φ = −(1/α) ln Σ_{i∈W} exp(−α d_i), d_i = ‖x(q^i) − target‖² (m²) for a marker x (or the
/// centre of mass of a body): a smooth minimum over time of the squared distance to a
/// target, ∂φ/∂d_i = softmax(−α d)_i (paper §6 "learning", the loss S). α > 0 in 1/m².
class SoftMinDistance final : public ObjectiveTerm {
 public:
  /// Centre of mass of body `body`.
  SoftMinDistance(int body, const Vec3& target, double alpha, StepWindow window);
  /// A tracked point (tracked_point.h: centre of mass or weighted node mean).
  SoftMinDistance(TrackedPoint tracked, const Vec3& target, double alpha, StepWindow window);
  /// A marker.
  SoftMinDistance(Marker marker, const Vec3& target, double alpha, StepWindow window);
  std::string_view name() const override { return "soft_min_distance"; }
  double evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const override;

 private:
  TrackedPoint tracked_;
  bool use_marker_ = false;
  Marker marker_;
  Vec3 target_;
  double alpha_;
  StepWindow window_;
};

}  // namespace addsim
