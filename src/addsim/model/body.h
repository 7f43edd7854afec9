#pragma once
/// Bodies own a contiguous block of generalised coordinates and know how their initial
/// state (q⁰, v⁰) follows from the parameter vector (so that initial conditions are
/// ordinary differentiable inputs, paper §6.2), plus diagnostics (centre of mass, energy).

#include <string>
#include <vector>

#include "addsim/core/types.h"

namespace addsim {

enum class BodyKind { kParticles, kFem, kRigid };

class Body {
 public:
  virtual ~Body() = default;

  BodyKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  int dof_offset() const { return dof_offset_; }
  int dof_count() const { return dof_count_; }

  /// Writes this body's block of q⁰ and v⁰ (both |q|) from p.
  virtual void initial_state(const VecX& p, VecX& q0, VecX& v0) const = 0;
  /// grad (|p|) += (∂q⁰/∂p)ᵀ gq0 + (∂v⁰/∂p)ᵀ gv0 for this body's block.
  virtual void initial_state_vjp(const VecX& p, const VecX& gq0, const VecX& gv0, VecX& grad) const = 0;
  /// dq0, dv0 (|q|) += ∂q⁰/∂p_j, ∂v⁰/∂p_j for this body's block.
  virtual void initial_state_jvp(const VecX& p, int j, VecX& dq0, VecX& dv0) const = 0;

  /// Centre of mass (m) at configuration q.
  virtual Vec3 center_of_mass(const VecX& q, const VecX& p) const = 0;
  /// Total mass (kg).
  virtual double total_mass(const VecX& p) const = 0;
  /// Kinetic energy (J) at (q, v).
  virtual double kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const = 0;
  /// One label per DOF of this body ("p3.x", "theta.z"), for meta.json.
  virtual std::vector<std::string> dof_labels() const = 0;

  /// True if this body's coordinates in q (|q|) should switch to another chart before the
  /// next step (rigid bodies: |θ| beyond kReparametrizeAngle, docs/rigid.md). Default: never.
  virtual bool wants_rechart(const VecX& q) const { return false; }
  /// Re-expresses this body's block of q (|q|) in the other chart, in place (same
  /// configuration). Default: identity.
  virtual void rechart(VecX& q) const {}
  /// ∂q'/∂q of rechart() for this body's block (dof_count() × dof_count()) at q (|q|).
  virtual MatX rechart_jacobian(const VecX& q) const { return MatX::Identity(dof_count_, dof_count_); }

 protected:
  Body(BodyKind kind, std::string name, int dof_offset, int dof_count)
      : kind_(kind), name_(std::move(name)), dof_offset_(dof_offset), dof_count_(dof_count) {}

 private:
  BodyKind kind_;
  std::string name_;
  int dof_offset_;
  int dof_count_;
};

/// A set of point masses: 3 DOFs (world position, m) per particle. Parameters:
/// positions (n × 3, m), velocities (n × 3, m/s), mass (n × 1, kg).
class ParticleBody final : public Body {
 public:
  ParticleBody(std::string name, int dof_offset, int count, int positions_param, int velocities_param,
               int mass_param);

  int count() const { return count_; }
  int mass_param() const { return mass_param_; }
  /// Global DOF index of the x coordinate of particle k.
  int dof(int k) const { return dof_offset() + 3 * k; }

  void initial_state(const VecX& p, VecX& q0, VecX& v0) const override;
  void initial_state_vjp(const VecX& p, const VecX& gq0, const VecX& gv0, VecX& grad) const override;
  void initial_state_jvp(const VecX& p, int j, VecX& dq0, VecX& dv0) const override;
  Vec3 center_of_mass(const VecX& q, const VecX& p) const override;
  double total_mass(const VecX& p) const override;
  double kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const override;
  std::vector<std::string> dof_labels() const override;

 private:
  int count_;
  int positions_param_;
  int velocities_param_;
  int mass_param_;
};

}  // namespace addsim
