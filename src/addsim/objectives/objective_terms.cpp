#include "addsim/objectives/objective_terms.h"

#include <cmath>
#include <string>

#include "addsim/core/error.h"
#include "addsim/objectives/center_of_mass.h"

namespace addsim {

namespace {
// Steps [a, b] of the window, checked against the stored states of the trajectory.
std::pair<int, int> stored_steps(const StepWindow& w, const Model& model, const Trajectory& traj,
                                 std::string_view who) {
  const auto range = w.resolve(model.scheme().steps, who);
  if (range.second >= static_cast<int>(traj.q.size()))
    throw InputError(std::string(who) + ": needs step " + std::to_string(range.second) + " but the trajectory holds " +
                     std::to_string(traj.q.size()) + " states");
  return range;
}
}  // namespace

CenterOfMassTarget::CenterOfMassTarget(int body, const Vec3& target, StepWindow window)
    : CenterOfMassTarget(TrackedPoint::center_of_mass(body), target, window) {}

CenterOfMassTarget::CenterOfMassTarget(TrackedPoint point, const Vec3& target, StepWindow window)
    : point_(std::move(point)), target_(target), window_(window) {}

double CenterOfMassTarget::evaluate(const Model& model, const Trajectory& traj, double scale,
                                    ObjectiveGradient* grad) const {
  const auto [a, b] = stored_steps(window_, model, traj, "com_target");
  double phi = 0.0;
  for (int i = a; i <= b; ++i) {
    const Vec3 e = point_.position(model, traj.q[i], traj.p, name()) - target_;
    phi += 0.5 * e.squaredNorm();
    if (grad) point_.vjp(model, traj.q[i], traj.p, scale * e, grad->dphi_dq(i), grad->dphi_dp(), name());
  }
  return phi;
}

void CenterOfMassTarget::residuals(const Model& model, const Trajectory& traj, VecX& rho,
                                   const TrajectoryTangent* tangent, VecX* drho) const {
  const auto [a, b] = stored_steps(window_, model, traj, "com_target");
  // ρ = [c(q^i) − target]_{i∈W}.
  rho.resize(3 * (b - a + 1));
  if (tangent) drho->resize(rho.size());
  for (int i = a; i <= b; ++i) {
    rho.segment<3>(3 * (i - a)) = point_.position(model, traj.q[i], traj.p, name()) - target_;
    if (tangent)
      drho->segment<3>(3 * (i - a)) = point_.jvp(model, traj.q[i], traj.p, (*tangent->dq)[i], *tangent->dp, name());
  }
}

void CenterOfMassTarget::residual_jacobian(const Model& model, const Trajectory& traj,
                                           const TrajectorySensitivities& sens, MatX& out) const {
  const auto [a, b] = stored_steps(window_, model, traj, "com_target");
  out.resize(3 * (b - a + 1), static_cast<Eigen::Index>(sens.params.size()));
  for (int i = a; i <= b; ++i)
    tracked_point_jacobian(point_, model, traj, i, Mat3::Identity(), sens, out.middleRows(3 * (i - a), 3), name());
}

bool CenterOfMassTarget::residual_state_rows(const Model& model, const Trajectory& traj,
                                             std::vector<ResidualStateRows>& rows) const {
  const auto [a, b] = stored_steps(window_, model, traj, "com_target");
  MatX jp;
  for (int i = a; i <= b; ++i) {
    ResidualStateRows& block = rows.emplace_back();
    block.step = i;
    block.first_row = 3 * (i - a);
    tracked_point_partials(point_, model, traj, i, Mat3::Identity(), block.dq, jp, name());
  }
  return true;
}

PointTargets::PointTargets(std::vector<DofIndex> dofs, std::vector<Vec3> targets, StepWindow window)
    : dofs_(std::move(dofs)), targets_(std::move(targets)), window_(window) {
  if (dofs_.size() != targets_.size())
    throw InputError("point_targets: " + std::to_string(dofs_.size()) + " points but " +
                     std::to_string(targets_.size()) + " targets");
}

void PointTargets::check_dofs(const Model& model) const {
  for (DofIndex d : dofs_)
    if (d < 0 || d + 3 > model.num_dofs())
      throw InputError("point_targets: DOF " + std::to_string(d) + " is outside the model's " +
                       std::to_string(model.num_dofs()) + " DOFs");
}

double PointTargets::evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const {
  check_dofs(model);
  const auto [a, b] = stored_steps(window_, model, traj, "point_targets");
  double phi = 0.0;
  for (int i = a; i <= b; ++i) {
    VecX* g = grad ? &grad->dphi_dq(i) : nullptr;
    for (size_t k = 0; k < dofs_.size(); ++k) {
      const Vec3 e = traj.q[i].segment<3>(dofs_[k]) - targets_[k];
      phi += 0.5 * e.squaredNorm();
      if (g) g->segment<3>(dofs_[k]) += scale * e;
    }
  }
  return phi;
}

void PointTargets::residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                             VecX* drho) const {
  check_dofs(model);
  const auto [a, b] = stored_steps(window_, model, traj, "point_targets");
  // ρ = [x_k(q^i) − target_k]_{i∈W, k}.
  const int np = static_cast<int>(dofs_.size());
  rho.resize(3 * np * (b - a + 1));
  if (tangent) drho->resize(rho.size());
  for (int i = a; i <= b; ++i)
    for (int k = 0; k < np; ++k) {
      const int at = 3 * (np * (i - a) + k);
      rho.segment<3>(at) = traj.q[i].segment<3>(dofs_[k]) - targets_[k];
      if (tangent) drho->segment<3>(at) = (*tangent->dq)[i].segment<3>(dofs_[k]);
    }
}

bool PointTargets::residual_state_rows(const Model& model, const Trajectory& traj,
                                       std::vector<ResidualStateRows>& rows) const {
  check_dofs(model);
  const auto [a, b] = stored_steps(window_, model, traj, "point_targets");
  // Rows as in residuals(): row 3 (np (i − a) + k) + d reads q^i[dofs_k + d].
  const int np = static_cast<int>(dofs_.size());
  for (int i = a; i <= b; ++i) {
    ResidualStateRows& block = rows.emplace_back();
    block.step = i;
    block.first_row = 3 * np * (i - a);
    block.dq.setZero(3 * np, model.num_dofs());
    for (int k = 0; k < np; ++k)
      for (int d = 0; d < 3; ++d) block.dq(3 * k + d, dofs_[k] + d) = 1.0;
  }
  return true;
}

void PointTargets::residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                                     MatX& out) const {
  std::vector<ResidualStateRows> rows;
  residual_state_rows(model, traj, rows);
  Eigen::Index size = 0;
  for (const ResidualStateRows& b : rows) size += b.dq.rows();
  out.setZero(size, static_cast<Eigen::Index>(sens.params.size()));
  for (const ResidualStateRows& b : rows) add_step_block(b.dq, sens, b.step, out.middleRows(b.first_row, b.dq.rows()));
}

ControlSmoothness::ControlSmoothness(int handle, StepWindow rows) : handle_(handle), rows_(rows) {}

ControlSmoothness::ControlSmoothness(std::vector<ControlRows> controls, StepWindow rows)
    : controls_(std::move(controls)), rows_(rows) {
  if (controls_.empty()) throw InputError("control_smoothness: needs at least one control");
  for (const ControlRows& c : controls_)
    if (c.rows < 2 || c.cols < 1 || c.offset < 0)
      throw InputError("control_smoothness: " + c.label + " is not a per-step control (" + std::to_string(c.rows) +
                       " × " + std::to_string(c.cols) + ")");
}

namespace {

// The controls a ControlSmoothness term covers: its list, or handle `handle`'s positions.
std::vector<ControlRows> smoothness_controls(const Model& model, const std::vector<ControlRows>& controls, int handle,
                                             const Trajectory& traj) {
  std::vector<ControlRows> out = controls;
  if (out.empty()) {
    if (handle < 0 || handle >= static_cast<int>(model.handles().size()))
      throw InputError("control_smoothness: handle " + std::to_string(handle) + " does not exist");
    out.push_back({model.handles()[handle].positions_param, model.scheme().steps + 1, 3,
                   "handles." + std::to_string(handle) + ".positions"});
  }
  for (const ControlRows& c : out)
    if (c.offset + c.rows * c.cols > traj.p.size())
      throw InputError("control_smoothness: " + c.label + " lies outside the parameter vector");
  return out;
}

}  // namespace

double ControlSmoothness::evaluate(const Model& model, const Trajectory& traj, double scale,
                                   ObjectiveGradient* grad) const {
  double phi = 0.0;
  for (const ControlRows& c : smoothness_controls(model, controls_, handle_, traj)) {
    const auto [a, b] = rows_.resolve(c.rows - 1, "control_smoothness");
    for (int r = a; r < b; ++r) {
      const int i0 = c.offset + c.cols * r, i1 = i0 + c.cols;
      const VecX d = traj.p.segment(i1, c.cols) - traj.p.segment(i0, c.cols);
      phi += d.squaredNorm();
      if (grad) {
        grad->dphi_dp().segment(i1, c.cols) += 2.0 * scale * d;
        grad->dphi_dp().segment(i0, c.cols) -= 2.0 * scale * d;
      }
    }
  }
  return phi;
}

void ControlSmoothness::residuals(const Model& model, const Trajectory& traj, VecX& rho,
                                  const TrajectoryTangent* tangent, VecX* drho) const {
  const std::vector<ControlRows> controls = smoothness_controls(model, controls_, handle_, traj);
  // φ = Σ_c Σ_r ‖Δc‖² = ½ Σ ‖√2 Δc‖²: ρ = [√2 (c^{r+1} − c^r)]_{c, r}.
  const double s = std::sqrt(2.0);
  Eigen::Index size = 0;
  for (const ControlRows& c : controls) {
    const auto [a, b] = rows_.resolve(c.rows - 1, "control_smoothness");
    size += static_cast<Eigen::Index>(c.cols) * (b - a);
  }
  rho.resize(size);
  if (tangent) drho->resize(size);
  Eigen::Index at = 0;
  for (const ControlRows& c : controls) {
    const auto [a, b] = rows_.resolve(c.rows - 1, "control_smoothness");
    for (int r = a; r < b; ++r, at += c.cols) {
      const int i0 = c.offset + c.cols * r, i1 = i0 + c.cols;
      rho.segment(at, c.cols) = s * (traj.p.segment(i1, c.cols) - traj.p.segment(i0, c.cols));
      if (tangent) drho->segment(at, c.cols) = s * (tangent->dp->segment(i1, c.cols) - tangent->dp->segment(i0, c.cols));
    }
  }
}

void ControlSmoothness::residual_jacobian(const Model& model, const Trajectory& traj,
                                          const TrajectorySensitivities& sens, MatX& out) const {
  const std::vector<ControlRows> controls = smoothness_controls(model, controls_, handle_, traj);
  // Listed column of each parameter (−1: not listed); rows as in residuals().
  std::vector<int> column(traj.p.size(), -1);
  for (size_t c = 0; c < sens.params.size(); ++c) column[sens.params[c]] = static_cast<int>(c);
  const double s = std::sqrt(2.0);
  Eigen::Index size = 0;
  for (const ControlRows& c : controls) {
    const auto [a, b] = rows_.resolve(c.rows - 1, "control_smoothness");
    size += static_cast<Eigen::Index>(c.cols) * (b - a);
  }
  out.setZero(size, static_cast<Eigen::Index>(sens.params.size()));
  Eigen::Index at = 0;
  for (const ControlRows& c : controls) {
    const auto [a, b] = rows_.resolve(c.rows - 1, "control_smoothness");
    for (int r = a; r < b; ++r, at += c.cols) {
      const int i0 = c.offset + c.cols * r, i1 = i0 + c.cols;
      for (int k = 0; k < c.cols; ++k) {
        if (column[i1 + k] >= 0) out(at + k, column[i1 + k]) += s;
        if (column[i0 + k] >= 0) out(at + k, column[i0 + k]) -= s;
      }
    }
  }
}

LinearState::LinearState(VecX weights, int step) : weights_(std::move(weights)), step_(step) {}

double LinearState::evaluate(const Model& model, const Trajectory& traj, double scale, ObjectiveGradient* grad) const {
  if (weights_.size() != model.num_dofs())
    throw InputError("linear_state: " + std::to_string(weights_.size()) + " weights for " +
                     std::to_string(model.num_dofs()) + " DOFs");
  const int i = stored_steps(StepWindow::at(step_), model, traj, "linear_state").first;
  if (grad) grad->dphi_dq(i) += scale * weights_;
  return weights_.dot(traj.q[i]);
}

}  // namespace addsim
