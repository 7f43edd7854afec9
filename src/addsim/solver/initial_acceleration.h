#pragma once
/// The initial acceleration a⁰ of the constant-acceleration BDF start-up
/// (integrator_startup = "constant_acceleration", docs/notation.md §Time): the dynamics at
/// t₀ with the initial state (q⁰, v⁰) given, r(q⁰, v⁰, a⁰; p) = M(q⁰) a⁰ + c − f = 0, which is
/// linear in a⁰: a⁰ = −(∂r/∂a)⁻¹ r(q⁰, v⁰, 0). Its derivatives follow from the implicit
/// function theorem, da⁰ = −(∂r/∂a)⁻¹ (∂r/∂q dq⁰ + ∂r/∂v dv⁰ + ∂r/∂p dp), which the direct
/// pass applies (jvp) and the adjoint transposes (vjp). The terms are evaluated at step 0
/// (control row 0); solver-side contact forces (hybrid stick constraints, SQP multipliers)
/// are not part of the terms and do not enter a⁰.

#include <memory>
#include <string>

#include "addsim/model/model.h"
#include "addsim/solver/linear_solver.h"

namespace addsim {

class InitialAcceleration {
 public:
  /// The model must be finalised and outlive this object.
  explicit InitialAcceleration(const Model& model);
  /// a⁰ at (q0, v0; p); false (with `why`) if ∂r/∂a is singular (e.g. kinematic bodies) or
  /// the result is not finite.
  bool solve(const VecX& q0, const VecX& v0, const VecX& p, VecX& a0, std::string* why);
  /// Linearises at a solved state (q0, v0, a0; p): the partials the products below use.
  void linearize(const VecX& q0, const VecX& v0, const VecX& a0, const VecX& p);
  /// Adjoint: with g = dΦ/da⁰ (|q|), adds its chain through a⁰(q⁰, v⁰, p): μ = (∂r/∂a)⁻ᵀ g,
  /// gq0 −= (∂r/∂q)ᵀ μ, gv0 −= (∂r/∂v)ᵀ μ, dphi_dp −= (∂r/∂p)ᵀ μ.
  void vjp(const VecX& g, VecX& gq0, VecX& gv0, VecX& dphi_dp);
  /// Direct: da⁰/dp_j (|q|) for parameter j with initial-state tangents dq0, dv0.
  VecX jvp(int j, const VecX& dq0, const VecX& dv0);

 private:
  const Model& model_;
  Assembly assembly_;
  std::unique_ptr<LinearSolver> lu_;
  VecX q_, v_, a_, p_;
};

}  // namespace addsim
