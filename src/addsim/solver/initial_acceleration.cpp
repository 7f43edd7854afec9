#include "addsim/solver/initial_acceleration.h"

#include "addsim/core/error.h"
#include "addsim/model/term.h"

namespace addsim {

InitialAcceleration::InitialAcceleration(const Model& model)
    : model_(model), assembly_(&model.pattern(), &model.stencils()) {
  ADDSIM_CHECK(model.finalized(), "the model must be finalised");
  // ∂r/∂a is the (generalised) mass matrix: a direct factorisation, never an iterative one.
  lu_ = make_linear_solver(have_umfpack() ? LinearSolverKind::kUmfpack : LinearSolverKind::kEigenLu, &model.pattern());
}

bool InitialAcceleration::solve(const VecX& q0, const VecX& v0, const VecX& p, VecX& a0, std::string* why) {
  const VecX zero = VecX::Zero(model_.num_dofs());
  const TermContext ctx{q0, v0, zero, p, 0, model_.scheme()};
  assembly_.reset(EvalMode::kResidualAndJacobians);
  for (const auto& t : model_.terms()) t->evaluate(ctx, assembly_);
  if (!lu_->factorize(assembly_.ka)) {
    if (why) *why = "∂r/∂a is singular at t = 0 (kinematic bodies have no initial acceleration of their own)";
    return false;
  }
  lu_->solve(-assembly_.r, a0);
  if (!a0.allFinite()) {
    if (why) *why = "the initial acceleration is not finite";
    return false;
  }
  return true;
}

void InitialAcceleration::linearize(const VecX& q0, const VecX& v0, const VecX& a0, const VecX& p) {
  q_ = q0;
  v_ = v0;
  a_ = a0;
  p_ = p;
  const TermContext ctx{q_, v_, a_, p_, 0, model_.scheme()};
  assembly_.reset(EvalMode::kResidualAndJacobians);
  for (const auto& t : model_.terms()) t->evaluate(ctx, assembly_);
  if (!lu_->factorize(assembly_.ka)) throw SimulationError("initial acceleration: ∂r/∂a is singular at t = 0", 0);
}

void InitialAcceleration::vjp(const VecX& g, VecX& gq0, VecX& gv0, VecX& dphi_dp) {
  VecX mu(g.size());
  lu_->solve(g, mu, /*transpose=*/true);
  const SparsePattern& pat = model_.pattern();
  VecX t = VecX::Zero(g.size());
  pat.transpose_multiply_add(assembly_.kq, mu, t);
  gq0 -= t;
  t.setZero();
  pat.transpose_multiply_add(assembly_.kv, mu, t);
  gv0 -= t;
  const VecX neg = -mu;
  ParamSink sink = ParamSink::vjp(&model_.stencils(), &neg, &dphi_dp);
  const TermContext ctx{q_, v_, a_, p_, 0, model_.scheme()};
  for (const auto& term : model_.terms()) term->param_derivatives(ctx, sink);
}

VecX InitialAcceleration::jvp(int j, const VecX& dq0, const VecX& dv0) {
  VecX rhs = VecX::Zero(dq0.size());
  ParamSink sink = ParamSink::column(&model_.stencils(), j, &rhs);
  const TermContext ctx{q_, v_, a_, p_, 0, model_.scheme()};
  for (const auto& term : model_.terms()) term->param_derivatives(ctx, sink);
  const SparsePattern& pat = model_.pattern();
  pat.multiply_add(assembly_.kq, dq0, rhs);
  pat.multiply_add(assembly_.kv, dv0, rhs);
  VecX da0(dq0.size());
  lu_->solve(-rhs, da0);
  return da0;
}

}  // namespace addsim
