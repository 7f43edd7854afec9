#include "addsim/objectives/tracking_terms.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"
#include "addsim/objectives/center_of_mass.h"

namespace addsim {

namespace {
const Body& body_at(const Model& model, int body, std::string_view who) {
  if (body < 0 || body >= static_cast<int>(model.bodies().size()))
    throw InputError(std::string(who) + ": body " + std::to_string(body) + " does not exist");
  return *model.bodies()[body];
}

// Steps [a, b] of the window, checked against the stored states of the trajectory.
std::pair<int, int> stored_steps(const StepWindow& w, const Model& model, const Trajectory& traj,
                                 std::string_view who) {
  const auto range = w.resolve(model.scheme().steps, who);
  if (range.second >= static_cast<int>(traj.q.size()))
    throw InputError(std::string(who) + ": needs step " + std::to_string(range.second) + " but the trajectory holds " +
                     std::to_string(traj.q.size()) + " states");
  return range;
}

void check_step(int step, const Model& model, const Trajectory& traj, std::string_view who) {
  if (step < 0 || step > model.scheme().steps || step >= static_cast<int>(traj.q.size()))
    throw InputError(std::string(who) + ": step " + std::to_string(step) + " is outside the trajectory's steps [0, " +
                     std::to_string(static_cast<int>(traj.q.size()) - 1) + "]");
}

void check_marker(const Marker& m, const Model& model, std::string_view who) {
  body_at(model, m.body, who);
  const int n = model.num_dofs();
  if (m.count == 0 && (m.rigid_dof < 0 || m.rigid_dof + 6 > n))
    throw InputError(std::string(who) + ": marker DOFs outside the model");
  for (int a = 0; a < m.count; ++a)
    if (m.dofs[a] < 0 || m.dofs[a] + 3 > n) throw InputError(std::string(who) + ": marker DOFs outside the model");
}
}  // namespace

CenterOfMassLine::CenterOfMassLine(int body, const Vec3& point, const Vec3& direction, StepWindow window)
    : CenterOfMassLine(TrackedPoint::center_of_mass(body), point, direction, window) {}

CenterOfMassLine::CenterOfMassLine(TrackedPoint tracked, const Vec3& point, const Vec3& direction, StepWindow window)
    : tracked_(std::move(tracked)), point_(point), window_(window) {
  if (!(direction.norm() > 0.0)) throw InputError("com_line: direction must be non-zero");
  direction_ = direction.normalized();
}

double CenterOfMassLine::evaluate(const Model& model, const Trajectory& traj, double scale,
                                  ObjectiveGradient* grad) const {
  const auto [a, b] = stored_steps(window_, model, traj, name());
  const Mat3 P = Mat3::Identity() - direction_ * direction_.transpose();
  double phi = 0.0;
  for (int i = a; i <= b; ++i) {
    const Vec3 e = P * (tracked_.position(model, traj.q[i], traj.p, name()) - point_);
    phi += 0.5 * e.squaredNorm();
    if (grad) tracked_.vjp(model, traj.q[i], traj.p, scale * e, grad->dphi_dq(i), grad->dphi_dp(), name());
  }
  return phi;
}

void CenterOfMassLine::residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                                 VecX* drho) const {
  const auto [a, b] = stored_steps(window_, model, traj, name());
  const Mat3 P = Mat3::Identity() - direction_ * direction_.transpose();
  // ρ = [(I − uuᵀ)(c(q^i) − a)]_{i∈W}.
  rho.resize(3 * (b - a + 1));
  if (tangent) drho->resize(rho.size());
  for (int i = a; i <= b; ++i) {
    rho.segment<3>(3 * (i - a)) = P * (tracked_.position(model, traj.q[i], traj.p, name()) - point_);
    if (tangent)
      drho->segment<3>(3 * (i - a)) =
          P * tracked_.jvp(model, traj.q[i], traj.p, (*tangent->dq)[i], *tangent->dp, name());
  }
}

void CenterOfMassLine::residual_jacobian(const Model& model, const Trajectory& traj,
                                         const TrajectorySensitivities& sens, MatX& out) const {
  const auto [a, b] = stored_steps(window_, model, traj, name());
  const Mat3 P = Mat3::Identity() - direction_ * direction_.transpose();
  out.resize(3 * (b - a + 1), static_cast<Eigen::Index>(sens.params.size()));
  for (int i = a; i <= b; ++i) tracked_point_jacobian(tracked_, model, traj, i, P, sens, out.middleRows(3 * (i - a), 3), name());
}

bool CenterOfMassLine::residual_state_rows(const Model& model, const Trajectory& traj,
                                           std::vector<ResidualStateRows>& rows) const {
  const auto [a, b] = stored_steps(window_, model, traj, name());
  const Mat3 P = Mat3::Identity() - direction_ * direction_.transpose();
  MatX jp;
  for (int i = a; i <= b; ++i) {
    ResidualStateRows& block = rows.emplace_back();
    block.step = i;
    block.first_row = 3 * (i - a);
    tracked_point_partials(tracked_, model, traj, i, P, block.dq, jp, name());
  }
  return true;
}

CenterOfMassCoordinate::CenterOfMassCoordinate(int body, const Vec3& axis, StepWindow window)
    : CenterOfMassCoordinate(TrackedPoint::center_of_mass(body), axis, window) {}

CenterOfMassCoordinate::CenterOfMassCoordinate(TrackedPoint tracked, const Vec3& axis, StepWindow window)
    : tracked_(std::move(tracked)), window_(window) {
  if (!(axis.norm() > 0.0)) throw InputError("com_coordinate: axis must be non-zero");
  axis_ = axis.normalized();
}

double CenterOfMassCoordinate::evaluate(const Model& model, const Trajectory& traj, double scale,
                                        ObjectiveGradient* grad) const {
  const auto [a, b] = stored_steps(window_, model, traj, name());
  double phi = 0.0;
  for (int i = a; i <= b; ++i) {
    phi += axis_.dot(tracked_.position(model, traj.q[i], traj.p, name()));
    if (grad) tracked_.vjp(model, traj.q[i], traj.p, scale * axis_, grad->dphi_dq(i), grad->dphi_dp(), name());
  }
  return phi;
}


MarkerTrajectories::MarkerTrajectories(std::vector<Marker> markers, std::vector<MarkerFrame> frames)
    : markers_(std::move(markers)), frames_(std::move(frames)) {
  for (const MarkerFrame& f : frames_)
    if (f.positions.size() != markers_.size() || f.visible.size() != markers_.size())
      throw InputError("markers: frame at step " + std::to_string(f.step) + " has " +
                       std::to_string(f.positions.size()) + " positions for " + std::to_string(markers_.size()) +
                       " markers");
}

double MarkerTrajectories::evaluate(const Model& model, const Trajectory& traj, double scale,
                                    ObjectiveGradient* grad) const {
  for (const Marker& m : markers_) check_marker(m, model, name());
  double phi = 0.0;
  for (const MarkerFrame& f : frames_) {
    check_step(f.step, model, traj, name());
    const VecX& q = traj.q[f.step];
    for (size_t m = 0; m < markers_.size(); ++m) {
      if (!f.visible[m]) continue;
      const Vec3 e = markers_[m].position(q) - f.positions[m];
      phi += 0.5 * e.squaredNorm();
      if (grad) markers_[m].vjp(q, scale * e, grad->dphi_dq(f.step));
    }
  }
  return phi;
}

void MarkerTrajectories::residuals(const Model& model, const Trajectory& traj, VecX& rho,
                                   const TrajectoryTangent* tangent, VecX* drho) const {
  for (const Marker& m : markers_) check_marker(m, model, name());
  // ρ = [x_m(q^{step_f}) − d_{f,m}] over the visible (frame, marker) pairs, in order.
  Eigen::Index count = 0;
  for (const MarkerFrame& f : frames_) {
    check_step(f.step, model, traj, name());
    count += std::count(f.visible.begin(), f.visible.end(), true);
  }
  rho.resize(3 * count);
  if (tangent) drho->resize(rho.size());
  Eigen::Index at = 0;
  for (const MarkerFrame& f : frames_) {
    const VecX& q = traj.q[f.step];
    for (size_t m = 0; m < markers_.size(); ++m) {
      if (!f.visible[m]) continue;
      rho.segment<3>(at) = markers_[m].position(q) - f.positions[m];
      if (tangent) drho->segment<3>(at) = markers_[m].jvp(q, (*tangent->dq)[f.step]);
      at += 3;
    }
  }
}

void MarkerTrajectories::residual_jacobian(const Model& model, const Trajectory& traj,
                                           const TrajectorySensitivities& sens, MatX& out) const {
  for (const Marker& m : markers_) check_marker(m, model, name());
  Eigen::Index count = 0;
  for (const MarkerFrame& f : frames_) {
    check_step(f.step, model, traj, name());
    count += std::count(f.visible.begin(), f.visible.end(), true);
  }
  // Rows as in residuals(); the markers do not depend on p, so column c is (∂x/∂q) s^{step_f}_c
  // with ∂x/∂q (3 × |q|) from three vjps (add_step_block; cube drag: 4 markers × 360 columns).
  out.setZero(3 * count, static_cast<Eigen::Index>(sens.params.size()));
  Eigen::Index at = 0;
  MatX jac;
  for (const MarkerFrame& f : frames_) {
    const VecX& q = traj.q[f.step];
    for (size_t m = 0; m < markers_.size(); ++m) {
      if (!f.visible[m]) continue;
      marker_rows(q, m, jac);
      add_step_block(jac, sens, f.step, out.middleRows(at, 3));
      at += 3;
    }
  }
}

void MarkerTrajectories::marker_rows(const VecX& q, size_t m, MatX& jac) const {
  VecX row(q.size());
  jac.resize(3, q.size());
  for (int k = 0; k < 3; ++k) {
    row.setZero();
    markers_[m].vjp(q, Vec3::Unit(k), row);
    jac.row(k) = row.transpose();
  }
}

bool MarkerTrajectories::residual_state_rows(const Model& model, const Trajectory& traj,
                                             std::vector<ResidualStateRows>& rows) const {
  for (const Marker& m : markers_) check_marker(m, model, name());
  for (const MarkerFrame& f : frames_) check_step(f.step, model, traj, name());
  // Rows as in residuals(): 3 per visible marker of each frame, frames in order.
  int at = 0;
  for (const MarkerFrame& f : frames_)
    for (size_t m = 0; m < markers_.size(); ++m) {
      if (!f.visible[m]) continue;
      ResidualStateRows& block = rows.emplace_back();
      block.step = f.step;
      block.first_row = at;
      marker_rows(traj.q[f.step], m, block.dq);
      at += 3;
    }
  return true;
}

Vec3 closest_point_on_triangle(const Vec3& y, const Vec3& a, const Vec3& b, const Vec3& c) {
  // Voronoi regions of the vertices, edges and face, tested in turn.
  const Vec3 ab = b - a, ac = c - a, ay = y - a;
  const double d1 = ab.dot(ay), d2 = ac.dot(ay);
  if (d1 <= 0.0 && d2 <= 0.0) return Vec3(1.0, 0.0, 0.0);
  const Vec3 by = y - b;
  const double d3 = ab.dot(by), d4 = ac.dot(by);
  if (d3 >= 0.0 && d4 <= d3) return Vec3(0.0, 1.0, 0.0);
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
    const double t = d1 / (d1 - d3);
    return Vec3(1.0 - t, t, 0.0);
  }
  const Vec3 cy = y - c;
  const double d5 = ab.dot(cy), d6 = ac.dot(cy);
  if (d6 >= 0.0 && d5 <= d6) return Vec3(0.0, 0.0, 1.0);
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
    const double t = d2 / (d2 - d6);
    return Vec3(1.0 - t, 0.0, t);
  }
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
    const double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    return Vec3(0.0, 1.0 - t, t);
  }
  const double denom = 1.0 / (va + vb + vc);
  const double v = vb * denom, w = vc * denom;
  return Vec3(1.0 - v - w, v, w);
}

namespace {

// The point of `fb`'s boundary nearest to y at configuration q (brute force over all boundary
// triangles: O(faces)): squared distance, barycentric weights and the triangle. Throws
// InputError if the body has no boundary triangles.
struct SurfacePoint {
  double distance_sq = std::numeric_limits<double>::infinity();
  Vec3 beta = Vec3::Zero();
  const std::array<int, 3>* face = nullptr;
};
SurfacePoint nearest_surface_point(const FemBody& fb, const VecX& q, const Vec3& y) {
  SurfacePoint best;
  for (const auto& face : fb.surface_faces()) {
    const Vec3 xa = q.segment<3>(fb.dof(face[0])), xb = q.segment<3>(fb.dof(face[1])),
               xc = q.segment<3>(fb.dof(face[2]));
    const Vec3 beta = closest_point_on_triangle(y, xa, xb, xc);
    const double d = (beta[0] * xa + beta[1] * xb + beta[2] * xc - y).squaredNorm();
    if (d < best.distance_sq) best = {d, beta, &face};
  }
  if (!best.face) throw InputError("point_cloud: body '" + fb.name() + "' has no boundary triangles");
  return best;
}

}  // namespace

PointCloudDistance::PointCloudDistance(int body, std::vector<PointCloudFrame> frames)
    : body_(body), frames_(std::move(frames)) {}

double PointCloudDistance::evaluate(const Model& model, const Trajectory& traj, double scale,
                                    ObjectiveGradient* grad) const {
  const Body& b = body_at(model, body_, name());
  if (b.kind() != BodyKind::kFem) throw InputError("point_cloud: body '" + b.name() + "' is not an FEM body");
  const auto& fb = static_cast<const FemBody&>(b);
  double phi = 0.0;
  for (const PointCloudFrame& f : frames_) {
    check_step(f.step, model, traj, name());
    const VecX& q = traj.q[f.step];
    for (const Vec3& y : f.points) {
      const SurfacePoint nearest = nearest_surface_point(fb, q, y);
      const double best = nearest.distance_sq;
      const Vec3& best_beta = nearest.beta;
      const std::array<int, 3>* best_face = nearest.face;
      phi += 0.5 * best;
      if (grad) {
        Vec3 c = Vec3::Zero();
        for (int a = 0; a < 3; ++a) c += best_beta[a] * q.segment<3>(fb.dof((*best_face)[a]));
        VecX& g = grad->dphi_dq(f.step);
        for (int a = 0; a < 3; ++a) g.segment<3>(fb.dof((*best_face)[a])) += scale * best_beta[a] * (c - y);
      }
    }
  }
  return phi;
}

void PointCloudDistance::residuals(const Model& model, const Trajectory& traj, VecX& rho,
                                   const TrajectoryTangent* tangent, VecX* drho) const {
  const Body& b = body_at(model, body_, name());
  if (b.kind() != BodyKind::kFem) throw InputError("point_cloud: body '" + b.name() + "' is not an FEM body");
  const auto& fb = static_cast<const FemBody&>(b);
  // One residual per point: ρ_j = dist(y_j, surface) = ‖c_j − y_j‖. By the envelope theorem
  // (the closest point minimises the distance) dρ_j = nᵀ Σ_a β_a dx_a with n = (c − y)/‖c − y‖;
  // at ρ_j = 0 the distance has no derivative and dρ_j = 0 is used.
  Eigen::Index count = 0;
  for (const PointCloudFrame& f : frames_) {
    check_step(f.step, model, traj, name());
    count += static_cast<Eigen::Index>(f.points.size());
  }
  rho.resize(count);
  if (tangent) drho->resize(count);
  Eigen::Index at = 0;
  for (const PointCloudFrame& f : frames_) {
    const VecX& q = traj.q[f.step];
    for (const Vec3& y : f.points) {
      const SurfacePoint nearest = nearest_surface_point(fb, q, y);
      const double best = nearest.distance_sq;
      const Vec3& best_beta = nearest.beta;
      const std::array<int, 3>* best_face = nearest.face;
      const double dist = std::sqrt(best);
      rho[at] = dist;
      if (tangent) {
        double d_rho = 0.0;
        if (dist > 0.0) {
          Vec3 c = Vec3::Zero(), dc = Vec3::Zero();
          for (int a = 0; a < 3; ++a) {
            const DofIndex k = fb.dof((*best_face)[a]);
            c += best_beta[a] * q.segment<3>(k);
            dc += best_beta[a] * (*tangent->dq)[f.step].segment<3>(k);
          }
          d_rho = (c - y).dot(dc) / dist;
        }
        (*drho)[at] = d_rho;
      }
      ++at;
    }
  }
}

UprightAxis::UprightAxis(Marker bottom, Marker top, const Vec3& up, StepWindow window)
    : bottom_(bottom), top_(top), window_(window) {
  if (!(up.norm() > 0.0)) throw InputError("upright: direction must be non-zero");
  up_ = up.normalized();
}

Vec3 UprightAxis::axis_at(const VecX& q, int i, double& len) const {
  const Vec3 d = top_.position(q) - bottom_.position(q);
  len = d.norm();
  if (!(len > 0.0)) throw SimulationError("upright: the two markers coincide at step " + std::to_string(i), i);
  return d;
}

double UprightAxis::evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const {
  check_marker(bottom_, model, name());
  check_marker(top_, model, name());
  const auto [a, b] = stored_steps(window_, model, traj, name());
  double phi = 0.0;
  for (int i = a; i <= b; ++i) {
    const VecX& q = traj.q[i];
    double len = 0.0;
    const Vec3 d = axis_at(q, i, len);
    const Vec3 n = d / len;
    const Vec3 e = n - up_;
    phi += 0.5 * e.squaredNorm();
    if (grad) {
      // ∂n/∂d = (I − n nᵀ)/‖d‖.
      const Vec3 gd = scale * (e - n * n.dot(e)) / len;
      top_.vjp(q, gd, grad->dphi_dq(i));
      bottom_.vjp(q, -gd, grad->dphi_dq(i));
    }
  }
  return phi;
}

void UprightAxis::residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                            VecX* drho) const {
  check_marker(bottom_, model, name());
  check_marker(top_, model, name());
  const auto [a, b] = stored_steps(window_, model, traj, name());
  // ρ = [d/‖d‖ − u]_{i∈W}, dρ = (I − n nᵀ) dd / ‖d‖.
  rho.resize(3 * (b - a + 1));
  if (tangent) drho->resize(rho.size());
  for (int i = a; i <= b; ++i) {
    const VecX& q = traj.q[i];
    double len = 0.0;
    const Vec3 d = axis_at(q, i, len);
    const Vec3 n = d / len;
    rho.segment<3>(3 * (i - a)) = n - up_;
    if (tangent) {
      const Vec3 dd = top_.jvp(q, (*tangent->dq)[i]) - bottom_.jvp(q, (*tangent->dq)[i]);
      drho->segment<3>(3 * (i - a)) = (dd - n * n.dot(dd)) / len;
    }
  }
}

void UprightAxis::residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                                    MatX& out) const {
  check_marker(bottom_, model, name());
  check_marker(top_, model, name());
  const auto [a, b] = stored_steps(window_, model, traj, name());
  // Rows as in residuals(): ∂ρ_i/∂q^i = (I − n nᵀ)(∂x_top/∂q − ∂x_bottom/∂q)/‖d‖ from vjps,
  // times S^i (add_step_block); no p dependence.
  out.setZero(3 * (b - a + 1), static_cast<Eigen::Index>(sens.params.size()));
  MatX jac;
  for (int i = a; i <= b; ++i) {
    step_rows(traj.q[i], i, jac);
    add_step_block(jac, sens, i, out.middleRows(3 * (i - a), 3));
  }
}

void UprightAxis::step_rows(const VecX& q, int i, MatX& jac) const {
  double len = 0.0;
  const Vec3 d = axis_at(q, i, len);
  const Vec3 n = d / len;
  VecX row(q.size());
  jac.resize(3, q.size());
  for (int k = 0; k < 3; ++k) {
    row.setZero();
    top_.vjp(q, Vec3::Unit(k), row);
    bottom_.vjp(q, -Vec3::Unit(k), row);
    jac.row(k) = row.transpose();
  }
  jac = (((Mat3::Identity() - n * n.transpose()) / len) * jac).eval();
}

bool UprightAxis::residual_state_rows(const Model& model, const Trajectory& traj,
                                      std::vector<ResidualStateRows>& rows) const {
  check_marker(bottom_, model, name());
  check_marker(top_, model, name());
  const auto [a, b] = stored_steps(window_, model, traj, name());
  for (int i = a; i <= b; ++i) {
    ResidualStateRows& block = rows.emplace_back();
    block.step = i;
    block.first_row = 3 * (i - a);
    step_rows(traj.q[i], i, block.dq);
  }
  return true;
}

SoftMinDistance::SoftMinDistance(int body, const Vec3& target, double alpha, StepWindow window)
    : SoftMinDistance(TrackedPoint::center_of_mass(body), target, alpha, window) {}

SoftMinDistance::SoftMinDistance(TrackedPoint tracked, const Vec3& target, double alpha, StepWindow window)
    : tracked_(std::move(tracked)), target_(target), alpha_(alpha), window_(window) {
  if (!(alpha > 0.0)) throw InputError("soft_min_distance: alpha must be > 0");
}

SoftMinDistance::SoftMinDistance(Marker marker, const Vec3& target, double alpha, StepWindow window)
    : tracked_(TrackedPoint::center_of_mass(marker.body)), use_marker_(true), marker_(marker), target_(target), alpha_(alpha), window_(window) {
  if (!(alpha > 0.0)) throw InputError("soft_min_distance: alpha must be > 0");
}

double SoftMinDistance::evaluate(const Model& model, const Trajectory& traj, double scale,
                                 ObjectiveGradient* grad) const {
  body_at(model, tracked_.body(), name());
  if (use_marker_) check_marker(marker_, model, name());
  const auto [a, b] = stored_steps(window_, model, traj, name());
  std::vector<Vec3> e(b - a + 1);
  std::vector<double> d(b - a + 1);
  for (int i = a; i <= b; ++i) {
    const Vec3 x = use_marker_ ? marker_.position(traj.q[i]) : tracked_.position(model, traj.q[i], traj.p, name());
    e[i - a] = x - target_;
    d[i - a] = e[i - a].squaredNorm();
  }
  // Stable log-sum-exp: shift by the smallest distance.
  const double dmin = *std::min_element(d.begin(), d.end());
  double sum = 0.0;
  for (double di : d) sum += std::exp(-alpha_ * (di - dmin));
  const double phi = dmin - std::log(sum) / alpha_;
  if (grad) {
    for (int i = a; i <= b; ++i) {
      const double w = std::exp(-alpha_ * (d[i - a] - dmin)) / sum;
      const Vec3 g = scale * w * 2.0 * e[i - a];
      if (use_marker_)
        marker_.vjp(traj.q[i], g, grad->dphi_dq(i));
      else
        tracked_.vjp(model, traj.q[i], traj.p, g, grad->dphi_dq(i), grad->dphi_dp(), name());
    }
  }
  return phi;
}

}  // namespace addsim
