#include "addsim/objectives/tracked_point.h"

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"
#include "addsim/objectives/center_of_mass.h"

namespace addsim {

TrackedPoint TrackedPoint::center_of_mass(int body) {
  TrackedPoint t;
  t.body_ = body;
  return t;
}

TrackedPoint TrackedPoint::node_mean(int body, std::vector<int> nodes, std::vector<double> weights) {
  if (nodes.empty()) throw InputError("tracked point: needs at least one node");
  if (weights.size() != nodes.size())
    throw InputError("tracked point: " + std::to_string(weights.size()) + " weights for " +
                     std::to_string(nodes.size()) + " nodes");
  std::set<int> seen;
  double sum = 0.0;
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (!seen.insert(nodes[k]).second) throw InputError("tracked point: node " + std::to_string(nodes[k]) + " is repeated");
    if (!std::isfinite(weights[k]) || weights[k] < 0.0)
      throw InputError("tracked point: weight " + std::to_string(k) + " must be finite and >= 0");
    sum += weights[k];
  }
  if (!(sum > 0.0)) throw InputError("tracked point: the weights sum to zero");
  for (double& w : weights) w /= sum;
  TrackedPoint t;
  t.body_ = body;
  t.nodes_ = std::move(nodes);
  t.weights_ = std::move(weights);
  return t;
}

std::vector<DofIndex> TrackedPoint::node_dofs(const Model& model, std::string_view who) const {
  const Body& b = *model.bodies()[body_];
  int count = 0;
  if (b.kind() == BodyKind::kFem)
    count = static_cast<const FemBody&>(b).num_nodes();
  else if (b.kind() == BodyKind::kParticles)
    count = static_cast<const ParticleBody&>(b).count();
  else
    throw InputError(std::string(who) + ": body '" + b.name() + "' is rigid; a node mean needs an FEM or particle body");
  std::vector<DofIndex> dofs(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    if (nodes_[k] < 0 || nodes_[k] >= count)
      throw InputError(std::string(who) + ": node " + std::to_string(nodes_[k]) + " is outside body '" + b.name() +
                       "' (" + std::to_string(count) + " nodes)");
    dofs[k] = b.dof_offset() + 3 * nodes_[k];
  }
  return dofs;
}

namespace {
const Body& checked_body(const Model& model, int body, std::string_view who) {
  if (body < 0 || body >= static_cast<int>(model.bodies().size()))
    throw InputError(std::string(who) + ": body " + std::to_string(body) + " does not exist");
  return *model.bodies()[body];
}
}  // namespace

Vec3 TrackedPoint::position(const Model& model, const VecX& q, const VecX& p, std::string_view who) const {
  const Body& b = checked_body(model, body_, who);
  if (is_center_of_mass()) return b.center_of_mass(q, p);
  const std::vector<DofIndex> dofs = node_dofs(model, who);
  Vec3 c = Vec3::Zero();
  for (size_t k = 0; k < dofs.size(); ++k) c += weights_[k] * q.segment<3>(dofs[k]);
  return c;
}

void TrackedPoint::vjp(const Model& model, const VecX& q, const VecX& p, const Vec3& g, VecX& dphi_dq, VecX& dphi_dp,
                       std::string_view who) const {
  const Body& b = checked_body(model, body_, who);
  if (is_center_of_mass()) {
    center_of_mass_vjp(b, q, p, g, dphi_dq, dphi_dp);
    return;
  }
  const std::vector<DofIndex> dofs = node_dofs(model, who);
  for (size_t k = 0; k < dofs.size(); ++k) dphi_dq.segment<3>(dofs[k]) += weights_[k] * g;
}

Vec3 TrackedPoint::jvp(const Model& model, const VecX& q, const VecX& p, const VecX& dq, const VecX& dp,
                       std::string_view who) const {
  const Body& b = checked_body(model, body_, who);
  if (is_center_of_mass()) return center_of_mass_jvp(b, q, p, dq, dp);
  const std::vector<DofIndex> dofs = node_dofs(model, who);
  Vec3 out = Vec3::Zero();
  for (size_t k = 0; k < dofs.size(); ++k) out += weights_[k] * dq.segment<3>(dofs[k]);
  return out;
}

void boundary_area_weights(const FemBody& body, std::vector<int>& nodes, std::vector<double>& weights) {
  std::map<int, double> area;
  const auto& X = body.mesh().nodes;
  for (const auto& f : body.surface_faces()) {
    const double a = 0.5 * (X[f[1]] - X[f[0]]).cross(X[f[2]] - X[f[0]]).norm();
    for (int k : f) area[k] += a / 3.0;
  }
  nodes.clear();
  weights.clear();
  for (const auto& [k, a] : area) {
    nodes.push_back(k);
    weights.push_back(a);
  }
}

void tracked_point_partials(const TrackedPoint& point, const Model& model, const Trajectory& traj, int i,
                            const Mat3& P, MatX& jq, MatX& jp, std::string_view who) {
  const VecX& q = traj.q[i];
  const Eigen::Index nq = q.size();
  jq.resize(3, nq);
  jp.resize(3, traj.p.size());
  VecX gq(nq), gp(traj.p.size());
  for (int k = 0; k < 3; ++k) {
    gq.setZero();
    gp.setZero();
    point.vjp(model, q, traj.p, Vec3::Unit(k), gq, gp, who);
    jq.row(k) = gq.transpose();
    jp.row(k) = gp.transpose();
  }
  jq = (P * jq).eval();
  jp = (P * jp).eval();
}

void tracked_point_jacobian(const TrackedPoint& point, const Model& model, const Trajectory& traj, int i,
                            const Mat3& P, const TrajectorySensitivities& sens, Eigen::Ref<MatX> out,
                            std::string_view who) {
  MatX jq, jp;
  tracked_point_partials(point, model, traj, i, P, jq, jp, who);
  const int m = static_cast<int>(sens.params.size());
  for (int c = 0; c < m; ++c) out.col(c) = jp.col(sens.params[c]);
  add_step_block(jq, sens, i, out);
}

void add_step_block(const MatX& jac, const TrajectorySensitivities& sens, int i, Eigen::Ref<MatX> out) {
  const MatX& s = sens.s[i];
  // No parameter carried at step i yet (every first_step[c] > i): nothing to add, and S^i has no
  // storage, so a row of it would be pointer arithmetic on null (UBSan, test_direct_jacobian).
  if (s.cols() == 0) return;
  std::vector<Eigen::Index> dofs;
  for (Eigen::Index d = 0; d < jac.cols(); ++d)
    if (!jac.col(d).isZero(0.0)) dofs.push_back(d);
  const auto n = static_cast<Eigen::Index>(dofs.size());
  MatX local(jac.rows(), n), gathered(n, s.cols());
  for (Eigen::Index d = 0; d < n; ++d) {
    local.col(d) = jac.col(dofs[d]);
    gathered.row(d) = s.row(dofs[d]);
  }
  const MatX product = local * gathered;
  const int m = static_cast<int>(sens.params.size());
  for (int c = 0; c < m; ++c)
    if (i >= sens.first_step[c]) out.col(c) += product.col(sens.position[c]);
}

}  // namespace addsim
