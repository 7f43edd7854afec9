#include "addsim/objectives/objective.h"

#include <cmath>
#include <string>

#include "addsim/core/error.h"

namespace addsim {

std::pair<int, int> StepWindow::resolve(int n, std::string_view who) const {
  const int a = first < 0 ? n + 1 + first : first;
  const int b = last < 0 ? n + 1 + last : last;
  if (a < 0 || b > n || a > b)
    throw InputError(std::string(who) + ": step window [" + std::to_string(first) + ", " + std::to_string(last) +
                     "] is empty or outside steps [0, " + std::to_string(n) + "]");
  return {a, b};
}

void Objective::add(double weight, std::unique_ptr<ObjectiveTerm> term) {
  ADDSIM_CHECK(term != nullptr, "objective term must not be null");
  terms_.emplace_back(weight, std::move(term));
}

double Objective::evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const {
  double phi = 0.0;
  for (const auto& [w, t] : terms_) phi += w * t->evaluate(model, traj, w, grad);
  return phi;
}

void ObjectiveTerm::residuals(const Model&, const Trajectory&, VecX&, const TrajectoryTangent*, VecX*) const {
  throw InternalError(std::string(name()) + ": not a sum-of-squares term (no residual form)");
}

void ObjectiveTerm::residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                                      MatX& out) const {
  VecX rho, drho;
  VecX dp = VecX::Zero(traj.p.size());
  std::vector<VecX> dq;
  const int m = static_cast<int>(sens.params.size());
  for (int c = 0; c < m; ++c) {
    sens.tangent(c, dq);
    dp[sens.params[c]] = 1.0;
    const TrajectoryTangent tangent{&dq, &dp};
    residuals(model, traj, rho, &tangent, &drho);
    dp[sens.params[c]] = 0.0;
    if (c == 0) out.resize(drho.size(), m);
    out.col(c) = drho;
  }
  if (m == 0) {
    residuals(model, traj, rho, nullptr, nullptr);
    out.resize(rho.size(), 0);
  }
}

void Objective::residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                                  MatX& out) const {
  std::vector<MatX> parts;
  residual_jacobian(model, traj, sens, out, parts);
}

void Objective::residual_jacobian(const Model& model, const Trajectory& traj, const TrajectorySensitivities& sens,
                                  MatX& out, std::vector<MatX>& parts) const {
  parts.resize(terms_.size());
  Eigen::Index total = 0;
  for (size_t t = 0; t < terms_.size(); ++t) {
    terms_[t].second->residual_jacobian(model, traj, sens, parts[t]);
    total += parts[t].rows();
  }
  out.resize(total, static_cast<Eigen::Index>(sens.params.size()));
  Eigen::Index at = 0;
  for (size_t t = 0; t < terms_.size(); ++t) {
    out.middleRows(at, parts[t].rows()) = std::sqrt(terms_[t].first) * parts[t];
    at += parts[t].rows();
  }
}

bool ObjectiveTerm::residual_state_rows(const Model&, const Trajectory&, std::vector<ResidualStateRows>&) const {
  return false;
}

TrajectorySensitivities no_sensitivities(const Model& model, const Trajectory& traj, std::span<const int> params) {
  TrajectorySensitivities zero;
  const int n = static_cast<int>(traj.q.size()) - 1;
  zero.params.assign(params.begin(), params.end());
  zero.position.assign(params.size(), -1);
  zero.first_step.assign(params.size(), n + 1);
  zero.s.assign(n + 1, MatX(model.num_dofs(), 0));
  return zero;
}

int Objective::residual_partials(const Model& model, const Trajectory& traj, const TrajectorySensitivities& zero,
                                  MatX& out, std::vector<MatX>& parts, std::vector<ResidualStateRows>& rows) const {
  residual_jacobian(model, traj, zero, out, parts);
  rows.clear();
  int at = 0;
  for (size_t t = 0; t < terms_.size(); ++t) {
    const size_t first = rows.size();
    if (!terms_[t].second->residual_state_rows(model, traj, rows)) return static_cast<int>(t);
    const double s = std::sqrt(terms_[t].first);
    // A term of weight 0 (a stage's switched-off term) has zero rows: no seeds for them.
    if (s == 0.0) rows.resize(first);
    for (size_t b = first; b < rows.size(); ++b) {
      rows[b].first_row += at;
      rows[b].dq *= s;
    }
    at += static_cast<int>(parts[t].rows());
  }
  return -1;
}

int Objective::first_non_least_squares_term() const {
  for (size_t t = 0; t < terms_.size(); ++t)
    if (!terms_[t].second->has_residuals()) return static_cast<int>(t);
  return -1;
}

void Objective::residuals(const Model& model, const Trajectory& traj, VecX& rho, const TrajectoryTangent* tangent,
                          VecX* drho) const {
  // Φ = Σ_t w_t ½‖ρ_t‖² = ½ ‖[√w_t ρ_t]‖².
  std::vector<VecX> parts(terms_.size()), dparts(terms_.size());
  Eigen::Index total = 0;
  for (size_t t = 0; t < terms_.size(); ++t) {
    terms_[t].second->residuals(model, traj, parts[t], tangent, tangent ? &dparts[t] : nullptr);
    total += parts[t].size();
  }
  rho.resize(total);
  if (tangent) drho->resize(total);
  Eigen::Index at = 0;
  for (size_t t = 0; t < terms_.size(); ++t) {
    const double s = std::sqrt(terms_[t].first);
    rho.segment(at, parts[t].size()) = s * parts[t];
    if (tangent) drho->segment(at, parts[t].size()) = s * dparts[t];
    at += parts[t].size();
  }
}

std::vector<double> Objective::term_values(const Model& model, const Trajectory& traj) const {
  std::vector<double> values;
  values.reserve(terms_.size());
  for (const auto& [w, t] : terms_) values.push_back(t->evaluate(model, traj, 1.0, nullptr));
  return values;
}

}  // namespace addsim
