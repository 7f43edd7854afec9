#include "addsim/rigid/rigid_body.h"

#include <cmath>
#include <numbers>
#include <sstream>

#include <Eigen/Eigenvalues>
#include <Eigen/LU>

#include "addsim/core/error.h"
#include "addsim/rigid/so3.h"

namespace addsim {

namespace {
void require_positive(double value, const char* what) {
  if (!(value > 0.0) || !std::isfinite(value)) {
    std::ostringstream msg;
    msg << "rigid shape: " << what << " must be positive and finite, got " << value;
    throw InputError(msg.str());
  }
}
}  // namespace

RigidShape RigidShape::sphere(double radius) {
  RigidShape s;
  s.kind = Kind::kSphere;
  s.radius = radius;
  return s;
}

RigidShape RigidShape::box(const Vec3& size) {
  RigidShape s;
  s.kind = Kind::kBox;
  s.size = size;
  return s;
}

RigidShape RigidShape::cylinder(double radius, double length) {
  RigidShape s;
  s.kind = Kind::kCylinder;
  s.radius = radius;
  s.length = length;
  return s;
}

RigidShape RigidShape::capsule(double radius, double length) {
  RigidShape s;
  s.kind = Kind::kCapsule;
  s.radius = radius;
  s.length = length;
  return s;
}

RigidShape RigidShape::custom(const Mat3& inertia_per_mass, double volume) {
  RigidShape s;
  s.kind = Kind::kCustom;
  s.inertia_per_mass = inertia_per_mass;
  s.custom_volume = volume;
  return s;
}

double RigidShape::volume() const {
  const double pi = std::numbers::pi;
  switch (kind) {
    case Kind::kSphere:
      require_positive(radius, "sphere radius");
      return 4.0 / 3.0 * pi * radius * radius * radius;
    case Kind::kBox:
      for (int k = 0; k < 3; ++k) require_positive(size[k], "box size");
      return size.prod();
    case Kind::kCylinder:
      require_positive(radius, "cylinder radius");
      require_positive(length, "cylinder length");
      return pi * radius * radius * length;
    case Kind::kCapsule:
      require_positive(radius, "capsule radius");
      if (!(length >= 0.0)) throw InputError("rigid shape: capsule length must be ≥ 0");
      return pi * radius * radius * length + 4.0 / 3.0 * pi * radius * radius * radius;
    case Kind::kCustom:
      require_positive(custom_volume, "custom volume");
      return custom_volume;
  }
  return 0.0;
}

Mat3 RigidShape::unit_inertia() const {
  const double r2 = radius * radius;
  Mat3 I = Mat3::Zero();
  switch (kind) {
    case Kind::kSphere:
      require_positive(radius, "sphere radius");
      return 0.4 * r2 * Mat3::Identity();
    case Kind::kBox: {
      for (int k = 0; k < 3; ++k) require_positive(size[k], "box size");
      const Vec3 s2 = size.cwiseProduct(size);
      I.diagonal() << (s2.y() + s2.z()) / 12.0, (s2.x() + s2.z()) / 12.0, (s2.x() + s2.y()) / 12.0;
      return I;
    }
    case Kind::kCylinder:
      require_positive(radius, "cylinder radius");
      require_positive(length, "cylinder length");
      I.diagonal() << (3.0 * r2 + length * length) / 12.0, (3.0 * r2 + length * length) / 12.0, 0.5 * r2;
      return I;
    case Kind::kCapsule: {
      volume();  // validates the dimensions
      // Mass fractions of the cylinder and of the two hemispheres (uniform density); each
      // hemisphere's centroid sits 3r/8 from its flat face (parallel-axis theorem).
      const double vc = length * r2, vs = 4.0 / 3.0 * r2 * radius;
      const double mc = vc / (vc + vs), ms = vs / (vc + vs);
      const double L = length;
      const double ixx = mc * (3.0 * r2 + L * L) / 12.0 + ms * (0.4 * r2 + L * L / 4.0 + 3.0 * L * radius / 8.0);
      I.diagonal() << ixx, ixx, mc * 0.5 * r2 + ms * 0.4 * r2;
      return I;
    }
    case Kind::kCustom: {
      const Eigen::SelfAdjointEigenSolver<Mat3> eig(0.5 * (inertia_per_mass + inertia_per_mass.transpose()));
      if (!inertia_per_mass.allFinite() || eig.eigenvalues().minCoeff() <= 0.0 ||
          (inertia_per_mass - inertia_per_mass.transpose()).norm() > 1e-12 * inertia_per_mass.norm())
        throw InputError("rigid shape: custom inertia per mass must be symmetric positive definite");
      return inertia_per_mass;
    }
  }
  return I;
}

double RigidMassSpec::resolve(const RigidShape& shape) const {
  if (mass > 0.0 && std::isfinite(mass)) return mass;
  if (density > 0.0 && std::isfinite(density)) return density * shape.volume();
  std::ostringstream msg;
  msg << "rigid body: needs a positive mass or density, got mass = " << mass << ", density = " << density;
  throw InputError(msg.str());
}

RigidBody::RigidBody(std::string name, int dof_offset, const Mat3& unit_inertia, int position_param,
                     int orientation_param, int velocity_param, int angular_velocity_param, int mass_param)
    : Body(BodyKind::kRigid, std::move(name), dof_offset, 6),
      unit_inertia_(unit_inertia),
      position_param_(position_param),
      orientation_param_(orientation_param),
      velocity_param_(velocity_param),
      angular_velocity_param_(angular_velocity_param),
      mass_param_(mass_param) {}

Mat3 RigidBody::rotation(const VecX& q) const { return rotation_from_vector(q.segment<3>(dof() + 3)); }

Vec3 RigidBody::angular_velocity_W(const VecX& q, const VecX& v) const {
  ExpJacobian jac;
  exp_jacobian(q.segment<3>(dof() + 3), 0, jac);
  return jac.J * v.segment<3>(dof() + 3);
}

Vec3 RigidBody::angular_momentum_W(const VecX& q, const VecX& v, const VecX& p) const {
  const Mat3 R = rotation(q);
  const Vec3 w = angular_velocity_W(q, v);
  const Vec3 spin = R * inertia_B(p) * R.transpose() * w;
  return mass(p) * q.segment<3>(dof()).cross(v.segment<3>(dof())) + spin;
}

void RigidBody::initial_state(const VecX& p, VecX& q0, VecX& v0) const {
  if (kinematic()) {
    q0.segment<6>(dof()) = p.segment<6>(poses_param_);
    v0.segment<6>(dof()) = (p.segment<6>(poses_param_ + 6) - p.segment<6>(poses_param_)) / h_;
    return;
  }
  const Vec3 theta = p.segment<3>(orientation_param_);
  ExpJacobian jac;
  exp_jacobian(theta, 0, jac);
  q0.segment<3>(dof()) = p.segment<3>(position_param_);
  q0.segment<3>(dof() + 3) = theta;
  v0.segment<3>(dof()) = p.segment<3>(velocity_param_);
  // θ̇⁰ = J(θ⁰)⁻¹ ω_W⁰ (J is invertible for |θ| < 2π).
  v0.segment<3>(dof() + 3) = jac.J.lu().solve(Vec3(p.segment<3>(angular_velocity_param_)));
}

void RigidBody::initial_state_vjp(const VecX& p, const VecX& gq0, const VecX& gv0, VecX& grad) const {
  if (kinematic()) {
    grad.segment<6>(poses_param_) += gq0.segment<6>(dof()) - gv0.segment<6>(dof()) / h_;
    grad.segment<6>(poses_param_ + 6) += gv0.segment<6>(dof()) / h_;
    return;
  }
  const Vec3 theta = p.segment<3>(orientation_param_);
  ExpJacobian jac;
  exp_jacobian(theta, 1, jac);
  const Eigen::PartialPivLU<Mat3> lu(jac.J);
  const Vec3 thetadot = lu.solve(Vec3(p.segment<3>(angular_velocity_param_)));
  grad.segment<3>(position_param_) += gq0.segment<3>(dof());
  grad.segment<3>(orientation_param_) += gq0.segment<3>(dof() + 3);
  grad.segment<3>(velocity_param_) += gv0.segment<3>(dof());
  // ∂θ̇/∂ω = J⁻¹ and ∂θ̇/∂θ_k = −J⁻¹ (∂J/∂θ_k) θ̇, contracted with g = gv0_θ.
  const Vec3 y = lu.transpose().solve(Vec3(gv0.segment<3>(dof() + 3)));
  grad.segment<3>(angular_velocity_param_) += y;
  for (int k = 0; k < 3; ++k) grad[orientation_param_ + k] -= y.dot(jac.dJ[k] * thetadot);
}

void RigidBody::initial_state_jvp(const VecX& p, int j, VecX& dq0, VecX& dv0) const {
  if (kinematic()) {
    if (j >= poses_param_ && j < poses_param_ + 6) {
      dq0[dof() + j - poses_param_] += 1.0;
      dv0[dof() + j - poses_param_] -= 1.0 / h_;
    } else if (j >= poses_param_ + 6 && j < poses_param_ + 12) {
      dv0[dof() + j - poses_param_ - 6] += 1.0 / h_;
    }
    return;
  }
  auto in = [j](int offset) { return j >= offset && j < offset + 3; };
  if (in(position_param_)) dq0[dof() + (j - position_param_)] += 1.0;
  if (in(velocity_param_)) dv0[dof() + (j - velocity_param_)] += 1.0;
  if (!in(orientation_param_) && !in(angular_velocity_param_)) return;
  const Vec3 theta = p.segment<3>(orientation_param_);
  ExpJacobian jac;
  exp_jacobian(theta, 1, jac);
  const Eigen::PartialPivLU<Mat3> lu(jac.J);
  if (in(angular_velocity_param_)) {
    dv0.segment<3>(dof() + 3) += lu.solve(Vec3::Unit(j - angular_velocity_param_));
  } else {
    const int k = j - orientation_param_;
    const Vec3 thetadot = lu.solve(Vec3(p.segment<3>(angular_velocity_param_)));
    dq0[dof() + 3 + k] += 1.0;
    dv0.segment<3>(dof() + 3) -= lu.solve(Vec3(jac.dJ[k] * thetadot));
  }
}

Vec3 RigidBody::center_of_mass(const VecX& q, const VecX& p) const { return q.segment<3>(dof()); }

double RigidBody::total_mass(const VecX& p) const { return mass(p); }

double RigidBody::kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const {
  ExpJacobian jac;
  exp_jacobian(q.segment<3>(dof() + 3), 0, jac);
  const Vec3 w_B = jac.J.transpose() * v.segment<3>(dof() + 3);
  return 0.5 * mass(p) * v.segment<3>(dof()).squaredNorm() + 0.5 * w_B.dot(inertia_B(p) * w_B);
}

std::vector<std::string> RigidBody::dof_labels() const {
  return {"x", "y", "z", "theta.x", "theta.y", "theta.z"};
}

bool RigidBody::wants_rechart(const VecX& q) const {
  // A kinematic body's θ is prescribed by its controls: it never switches chart.
  return !kinematic() && q.segment<3>(dof() + 3).norm() > kReparametrizeAngle;
}

void RigidBody::rechart(VecX& q) const {
  const Vec3 theta = q.segment<3>(dof() + 3);
  q.segment<3>(dof() + 3) = reparametrize_rotation(theta);
}

MatX RigidBody::rechart_jacobian(const VecX& q) const {
  MatX G = MatX::Identity(6, 6);
  G.bottomRightCorner<3, 3>() = reparametrize_rotation_jacobian(q.segment<3>(dof() + 3));
  return G;
}

}  // namespace addsim
