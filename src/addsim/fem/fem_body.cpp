#include "addsim/fem/fem_body.h"

#include <cmath>
#include <sstream>

#include <Eigen/Dense>

#include "addsim/core/error.h"
#include "addsim/fem/rotation_vector.h"

namespace addsim {

namespace {
// A rest tet is degenerate when 6V < kDegenerate · (longest edge)³: a regular tet has
// 6V ≈ 0.71 edge³, so this only flags elements flat to round-off.
constexpr double kDegenerate = 1e-12;
}  // namespace

FemBody::FemBody(std::string name, std::string label, int dof_offset, const TetMesh& mesh,
                 const FemParamIndices& params, MassMatrixKind mass)
    : Body(BodyKind::kFem, std::move(name), dof_offset, 3 * mesh.num_nodes()),
      label_(std::move(label)),
      mesh_(mesh),
      params_(params),
      mass_kind_(mass) {
  validate(mesh_, label_);
  const int m = mesh_.num_tets();
  volume_.resize(m);
  dm_inv_.resize(m);
  grad_.resize(m);
  gram_.resize(m);
  // Rest quantities per tet: D_m, V = det(D_m)/6, D_m⁻¹ and g_k.
  for (int e = 0; e < m; ++e) {
    const auto& t = mesh_.tets[e];
    Mat3 Dm;
    for (int c = 0; c < 3; ++c) Dm.col(c) = mesh_.nodes[t[c + 1]] - mesh_.nodes[t[0]];
    double longest = 0.0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < i; ++j) longest = std::max(longest, (mesh_.nodes[t[i]] - mesh_.nodes[t[j]]).norm());
    const double det = Dm.determinant();
    if (std::abs(det) <= kDegenerate * longest * longest * longest || !std::isfinite(det)) {
      std::ostringstream msg;
      msg << label_ << ": rest element " << e << " (nodes " << t[0] << " " << t[1] << " " << t[2] << " " << t[3]
          << ") is degenerate (volume " << det / 6.0 << " m³)";
      throw InputError(msg.str());
    }
    if (det < 0.0) {
      std::ostringstream msg;
      msg << label_ << ": rest element " << e << " (nodes " << t[0] << " " << t[1] << " " << t[2] << " " << t[3]
          << ") is inverted (volume " << det / 6.0 << " m³); orient tets positively";
      throw InputError(msg.str());
    }
    volume_[e] = det / 6.0;
    dm_inv_[e] = Dm.inverse();
    grad_[e].bottomRows<3>() = dm_inv_[e];
    grad_[e].row(0) = -dm_inv_[e].colwise().sum();
    gram_[e] = grad_[e] * grad_[e].transpose();
    total_volume_ += volume_[e];
  }
  rest_center_ = mesh_centroid(mesh_);
  surface_faces_ = boundary_faces(mesh_);
  surface_nodes_ = boundary_nodes(mesh_);
}

std::vector<DofIndex> FemBody::element_dofs(int e) const {
  std::vector<DofIndex> d(12);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 3; ++i) d[3 * k + i] = dof(mesh_.tets[e][k]) + i;
  return d;
}

Eigen::Matrix<double, 3, 4> FemBody::element_positions(const VecX& q, int e) const {
  Eigen::Matrix<double, 3, 4> x;
  for (int k = 0; k < 4; ++k) x.col(k) = q.segment<3>(dof(mesh_.tets[e][k]));
  return x;
}

Mat3 FemBody::deformation_gradient(const VecX& q, int e) const { return element_positions(q, e) * grad_[e]; }

void FemBody::initial_state(const VecX& p, VecX& q0, VecX& v0) const {
  const Vec3 c = p.segment<3>(params_.position);
  const Vec3 v = p.segment<3>(params_.velocity);
  const Vec3 w = p.segment<3>(params_.angular_velocity);
  Mat3 R, Jl;
  rotation_and_jacobian(p.segment<3>(params_.orientation), R, Jl);
  for (int k = 0; k < num_nodes(); ++k) {
    const Vec3 y = R * (mesh_.nodes[k] - rest_center_);
    q0.segment<3>(dof(k)) = c + y;
    v0.segment<3>(dof(k)) = v + w.cross(y);
  }
}

void FemBody::initial_state_vjp(const VecX& p, const VecX& gq0, const VecX& gv0, VecX& grad) const {
  const Vec3 w = p.segment<3>(params_.angular_velocity);
  Mat3 R, Jl;
  rotation_and_jacobian(p.segment<3>(params_.orientation), R, Jl);
  Vec3 gc = Vec3::Zero(), gv = Vec3::Zero(), gw = Vec3::Zero(), gy_theta = Vec3::Zero();
  for (int k = 0; k < num_nodes(); ++k) {
    const Vec3 y = R * (mesh_.nodes[k] - rest_center_);
    const Vec3 gq = gq0.segment<3>(dof(k));
    const Vec3 gvk = gv0.segment<3>(dof(k));
    gc += gq;
    gv += gvk;
    // v⁰ = v + ω × y: (∂v⁰/∂ω)ᵀ g = y × g.
    gw += y.cross(gvk);
    // dy = −[y]× J_l dθ feeds q⁰ and v⁰ (through ω × dy): (∂/∂θ)ᵀ = J_lᵀ (y × (g_q − ω × g_v)).
    gy_theta += y.cross(gq - w.cross(gvk));
  }
  grad.segment<3>(params_.position) += gc;
  grad.segment<3>(params_.velocity) += gv;
  grad.segment<3>(params_.angular_velocity) += gw;
  grad.segment<3>(params_.orientation) += Jl.transpose() * gy_theta;
}

void FemBody::initial_state_jvp(const VecX& p, int j, VecX& dq0, VecX& dv0) const {
  auto component = [j](int offset) { return j >= offset && j < offset + 3 ? j - offset : -1; };
  const int ic = component(params_.position), iv = component(params_.velocity),
            iw = component(params_.angular_velocity), it = component(params_.orientation);
  if (ic < 0 && iv < 0 && iw < 0 && it < 0) return;
  const Vec3 w = p.segment<3>(params_.angular_velocity);
  Mat3 R, Jl;
  rotation_and_jacobian(p.segment<3>(params_.orientation), R, Jl);
  for (int k = 0; k < num_nodes(); ++k) {
    const Vec3 y = R * (mesh_.nodes[k] - rest_center_);
    if (ic >= 0) dq0[dof(k) + ic] += 1.0;
    if (iv >= 0) dv0[dof(k) + iv] += 1.0;
    if (iw >= 0) dv0.segment<3>(dof(k)) += Vec3::Unit(iw).cross(y);
    if (it >= 0) {
      const Vec3 dy = Jl.col(it).cross(y);
      dq0.segment<3>(dof(k)) += dy;
      dv0.segment<3>(dof(k)) += w.cross(dy);
    }
  }
}

Vec3 FemBody::center_of_mass(const VecX& q, const VecX& p) const {
  // Both mass matrices give every node m_e/4 of each of its tets' mass for the centroid.
  Vec3 c = Vec3::Zero();
  for (int e = 0; e < num_tets(); ++e) c += volume_[e] * 0.25 * element_positions(q, e).rowwise().sum();
  return c / total_volume_;
}

double FemBody::total_mass(const VecX& p) const { return p[params_.density] * total_volume_; }

double FemBody::kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const {
  const double rho = p[params_.density];
  double e2 = 0.0;
  for (int e = 0; e < num_tets(); ++e) {
    const Eigen::Matrix<double, 3, 4> ve = element_positions(v, e);
    const double me = rho * volume_[e];
    if (mass_kind_ == MassMatrixKind::kLumped)
      e2 += 0.25 * me * ve.squaredNorm();
    else
      e2 += me / 20.0 * (ve.squaredNorm() + ve.rowwise().sum().squaredNorm());
  }
  return 0.5 * e2;
}

Vec3 FemBody::linear_momentum(const VecX& v, const VecX& p) const {
  const double rho = p[params_.density];
  Vec3 P = Vec3::Zero();
  for (int e = 0; e < num_tets(); ++e) P += 0.25 * rho * volume_[e] * element_positions(v, e).rowwise().sum();
  return P;
}

Vec3 FemBody::angular_momentum(const VecX& q, const VecX& v, const VecX& p) const {
  const double rho = p[params_.density];
  Vec3 L = Vec3::Zero();
  for (int e = 0; e < num_tets(); ++e) {
    const Eigen::Matrix<double, 3, 4> xe = element_positions(q, e);
    const Eigen::Matrix<double, 3, 4> ve = element_positions(v, e);
    const double me = rho * volume_[e];
    Vec3 own = Vec3::Zero();
    for (int k = 0; k < 4; ++k) own += Vec3(xe.col(k)).cross(Vec3(ve.col(k)));
    if (mass_kind_ == MassMatrixKind::kLumped)
      L += 0.25 * me * own;
    else
      L += me / 20.0 * (own + Vec3(xe.rowwise().sum()).cross(Vec3(ve.rowwise().sum())));
  }
  return L;
}

std::vector<std::string> FemBody::dof_labels() const {
  std::vector<std::string> labels;
  labels.reserve(dof_count());
  for (int k = 0; k < num_nodes(); ++k)
    for (const char* axis : {".x", ".y", ".z"}) {
      // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "n" + std::to_string(k).
      std::string label(1, 'n');
      label += std::to_string(k);
      label += axis;
      labels.push_back(std::move(label));
    }
  return labels;
}

}  // namespace addsim
