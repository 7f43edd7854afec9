#include "addsim/objectives/markers.h"

#include <cmath>
#include <limits>
#include <string>

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"
#include "addsim/rigid/so3.h"

namespace addsim {

// Rigid bodies are read through Body only (q = (p_WB, θ) from dof_offset()).
namespace {
const Body& body_at(const Model& model, int body, const char* who) {
  if (body < 0 || body >= static_cast<int>(model.bodies().size()))
    throw InputError(std::string(who) + ": body " + std::to_string(body) + " does not exist");
  return *model.bodies()[body];
}

// Barycentric coordinates of x in the tet with vertices xs (columns).
Eigen::Vector4d barycentric(const Eigen::Matrix<double, 3, 4>& xs, const Vec3& x) {
  Mat3 d;
  d << xs.col(1) - xs.col(0), xs.col(2) - xs.col(0), xs.col(3) - xs.col(0);
  const Vec3 l = d.lu().solve(x - xs.col(0));
  return Eigen::Vector4d(1.0 - l.sum(), l[0], l[1], l[2]);
}
}  // namespace

Vec3 Marker::position(const VecX& q) const {
  if (count == 0) {
    const Mat3 R = rotation_from_vector(q.segment<3>(rigid_dof + 3));
    return q.segment<3>(rigid_dof) + R * local;
  }
  Vec3 x = Vec3::Zero();
  for (int a = 0; a < count; ++a) x += weights[a] * q.segment<3>(dofs[a]);
  return x;
}

void Marker::vjp(const VecX& q, const Vec3& g, VecX& dphi_dq) const {
  if (count == 0) {
    const Vec3 theta = q.segment<3>(rigid_dof + 3);
    ExpJacobian jac;
    exp_jacobian(theta, 0, jac);
    const Vec3 r = rotation_from_vector(theta) * local;
    dphi_dq.segment<3>(rigid_dof) += g;
    // δx = δω × r = −[r]× J δθ.
    dphi_dq.segment<3>(rigid_dof + 3) += -(skew(r) * jac.J).transpose() * g;
    return;
  }
  for (int a = 0; a < count; ++a) dphi_dq.segment<3>(dofs[a]) += weights[a] * g;
}

Marker node_marker(const Model& model, int body, int k) {
  const Body& b = body_at(model, body, "marker");
  if (b.kind() == BodyKind::kRigid)
    throw InputError("marker: body '" + b.name() + "' is rigid; give a body-frame point instead of a node");
  const int n = b.dof_count() / 3;
  if (k < 0 || k >= n)
    throw InputError("marker: node " + std::to_string(k) + " of body '" + b.name() + "' is outside [0, " +
                     std::to_string(n - 1) + "]");
  Marker m;
  m.body = body;
  m.count = 1;
  m.dofs[0] = b.dof_offset() + 3 * k;
  m.weights[0] = 1.0;
  return m;
}

Marker tet_marker(const Model& model, int body, int tet, const std::array<double, 4>& w) {
  const Body& b = body_at(model, body, "marker");
  if (b.kind() != BodyKind::kFem) throw InputError("marker: body '" + b.name() + "' has no tets");
  const auto& fb = static_cast<const FemBody&>(b);
  if (tet < 0 || tet >= fb.num_tets())
    throw InputError("marker: tet " + std::to_string(tet) + " of body '" + b.name() + "' does not exist");
  if (std::abs(w[0] + w[1] + w[2] + w[3] - 1.0) > 1e-9)
    throw InputError("marker: barycentric weights must sum to 1");
  Marker m;
  m.body = body;
  m.count = 4;
  for (int a = 0; a < 4; ++a) {
    m.dofs[a] = fb.dof(fb.mesh().tets[tet][a]);
    m.weights[a] = w[a];
  }
  return m;
}

Marker rigid_marker(const Model& model, int body, const Vec3& local) {
  const Body& b = body_at(model, body, "marker");
  if (b.kind() != BodyKind::kRigid) throw InputError("marker: body '" + b.name() + "' is not rigid");
  Marker m;
  m.body = body;
  m.rigid_dof = b.dof_offset();
  m.local = local;
  return m;
}

Marker embed_marker(const Model& model, int body, const VecX& q, const Vec3& x) {
  const Body& b = body_at(model, body, "marker");
  switch (b.kind()) {
    case BodyKind::kRigid: {
      const int dof = b.dof_offset();
      const Mat3 R = rotation_from_vector(q.segment<3>(dof + 3));
      return rigid_marker(model, body, R.transpose() * (x - q.segment<3>(dof)));
    }
    case BodyKind::kFem: {
      // The containing tet has all barycentric coordinates ≥ 0: take the tet whose smallest one is largest.
      const auto& fb = static_cast<const FemBody&>(b);
      int best = -1;
      double best_min = -std::numeric_limits<double>::infinity();
      Eigen::Vector4d best_w;
      for (int e = 0; e < fb.num_tets(); ++e) {
        const Eigen::Vector4d w = barycentric(fb.element_positions(q, e), x);
        if (w.minCoeff() > best_min) {
          best_min = w.minCoeff();
          best = e;
          best_w = w;
        }
      }
      return tet_marker(model, body, best, {best_w[0], best_w[1], best_w[2], best_w[3]});
    }
    case BodyKind::kParticles: {
      int best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (int k = 0; k < b.dof_count() / 3; ++k) {
        const double d = (q.segment<3>(b.dof_offset() + 3 * k) - x).squaredNorm();
        if (d < best_d) {
          best_d = d;
          best = k;
        }
      }
      return node_marker(model, body, best);
    }
  }
  throw InternalError("marker: unknown body kind");
}

}  // namespace addsim

namespace addsim {

Vec3 Marker::jvp(const VecX& q, const VecX& dq) const {
  // Embedded markers are linear in their points; rigid ones go through the vjp rows.
  Vec3 out = Vec3::Zero();
  if (count > 0) {
    for (int a = 0; a < count; ++a) out += weights[a] * dq.segment<3>(dofs[a]);
    return out;
  }
  VecX g(q.size());
  for (int k = 0; k < 3; ++k) {
    g.setZero();
    vjp(q, Vec3::Unit(k), g);
    out[k] = g.dot(dq);
  }
  return out;
}

}  // namespace addsim
