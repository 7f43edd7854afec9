#pragma once
/// Rotation vectors (exponential coordinates) θ ∈ R³ for the rigid initial motion of FEM
/// bodies: R(θ) = exp([θ]×) (Rodrigues) and the left Jacobian J_l(θ), defined by
/// R(θ + δ) = exp([J_l(θ) δ]×) R(θ) + O(|δ|²), so that ∂(R(θ) d)/∂θ = −[R(θ) d]× J_l(θ).

#include "addsim/core/types.h"

namespace addsim {

/// R(θ) (3 × 3) and J_l(θ) (3 × 3) for a rotation vector θ (rad). Below |θ| = 0.2 the
/// coefficients sin t/t, (1 − cos t)/t², (t − sin t)/t³ use Taylor series to t⁸
/// (truncation < 3e-15); above, the closed forms lose < 2e-14 to cancellation.
void rotation_and_jacobian(const Vec3& theta, Mat3& R, Mat3& J_left);

}  // namespace addsim
