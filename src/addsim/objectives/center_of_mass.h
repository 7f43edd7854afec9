#pragma once
/// Centre of mass of a body and its vector–Jacobian product, for objectives. For particle
/// bodies c = Σ_k m_k x_k / M with M = Σ_k m_k, so ∂c/∂x_k = (m_k / M) I and
/// ∂c/∂m_k = (x_k − c) / M.

#include "addsim/core/types.h"
#include "addsim/model/body.h"

namespace addsim {

/// Adds gᵀ ∂c/∂q to dphi_dq (|q|) and gᵀ ∂c/∂p to dphi_dp (|p|) for the centre of mass c
/// (m) of `body` at configuration q (|q|) and parameters p (|p|); g is 3 × 1.
/// Throws InputError for body kinds without a centre-of-mass derivative (only particle
/// bodies have one so far).
void center_of_mass_vjp(const Body& body, const VecX& q, const VecX& p, const Vec3& g, VecX& dphi_dq,
                        VecX& dphi_dp);

}  // namespace addsim
