#pragma once
/// Centre of mass of a body and its vector–Jacobian product, for objectives.
/// Particle bodies: c = Σ_k m_k x_k / M, so ∂c/∂x_k = (m_k / M) I and ∂c/∂m_k = (x_k − c) / M.
/// FEM bodies (homogeneous density, either mass matrix): c = Σ_e (V_e/4) Σ_{k∈e} x_k / V, so
/// ∂c/∂x_k = (Σ_{e∋k} V_e / 4V) I and ∂c/∂ρ = 0. Rigid bodies: c = p_WB (the first 3 DOFs).

#include "addsim/core/types.h"
#include "addsim/model/body.h"

namespace addsim {

/// Adds gᵀ ∂c/∂q to dphi_dq (|q|) and gᵀ ∂c/∂p to dphi_dp (|p|) for the centre of mass c
/// (m) of `body` at configuration q (|q|) and parameters p (|p|); g is 3 × 1 (units of
/// ∂Φ/∂c). Works for particle, FEM and rigid bodies.
void center_of_mass_vjp(const Body& body, const VecX& q, const VecX& p, const Vec3& g, VecX& dphi_dq,
                        VecX& dphi_dp);

/// The directional derivative ∂c/∂q dq + ∂c/∂p dp (3 × 1, m per unit of the direction) of
/// the centre of mass of `body` at (q, p), for dq (|q|) and dp (|p|).
Vec3 center_of_mass_jvp(const Body& body, const VecX& q, const VecX& p, const VecX& dq, const VecX& dp);

}  // namespace addsim
