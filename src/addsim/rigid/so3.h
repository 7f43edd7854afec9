#pragma once
/// Exponential-coordinate rotations (paper §5.2, [Gallego and Yezzi 2015]): R = exp([θ]×),
/// the world-frame angular-velocity Jacobian J(θ) with ω_W = J(θ) θ̇ (the "left" Jacobian)
/// and its first and second derivatives ∂J/∂θ_k, ∂²J/∂θ_k∂θ_j, all in closed form:
///   R = I + c S + a S²,  J = I + a S + b S²,  S = [θ]×, t = |θ|,
///   c = sin t / t,  a = (1 − cos t)/t²,  b = (t − sin t)/t³.
/// The body-frame Jacobian is Jᵀ (ω_B = Jᵀ θ̇ = Rᵀ ω_W). Below t = 1 every coefficient
/// is evaluated by its power series in t² (see exp_coefficients()).

#include <array>

#include <Eigen/Geometry>

#include "addsim/core/types.h"

namespace addsim {

/// Cross-product matrix [w]× (3 × 3) with [w]× u = w × u.
Mat3 skew(const Vec3& w);

/// Scalar coefficients of R and J and their derivatives, as functions of s = t² = |θ|²:
/// c, a, b as in the file comment; A1 = a'(t)/t, A2 = A1'(t)/t, B1 = b'(t)/t, B2 = B1'(t)/t.
struct ExpCoefficients {
  double c = 1.0, a = 0.5, b = 1.0 / 6.0;
  double A1 = 0.0, A2 = 0.0, B1 = 0.0, B2 = 0.0;
};

/// Coefficients at s = |θ|² (rad²). For s < 1 a 14-term power series in s is used: the
/// closed forms lose up to ε/t⁶ to cancellation (A2, B2) near 0, while the series'
/// truncation error there is below 1e-20 relative; for s ≥ 1 the closed forms lose at
/// most ~100 ε.
ExpCoefficients exp_coefficients(double s);

/// Rotation matrix R = exp([θ]×) (3 × 3) for a rotation vector θ (rad).
Mat3 rotation_from_vector(const Vec3& theta);

/// J(θ) (3 × 3) and, on request, its derivatives. J maps θ̇ (rad/s) to ω_W (rad/s).
struct ExpJacobian {
  Mat3 J = Mat3::Identity();
  std::array<Mat3, 3> dJ;                  ///< dJ[k] = ∂J/∂θ_k (3 × 3, 1/rad)
  std::array<std::array<Mat3, 3>, 3> ddJ;  ///< ddJ[k][j] = ∂²J/∂θ_k∂θ_j (symmetric in k, j)
};

/// Evaluates J(θ) and its derivatives up to `order` (0, 1 or 2; unused ones are left unset).
void exp_jacobian(const Vec3& theta, int order, ExpJacobian& out);

/// J(θ) and ∂J/∂θ (`out`, order 1; ddJ left unset) and the contraction of ∂²J/∂θ² with v
/// on both sides, K.col(j) = Σ_k v_k (∂²J/∂θ_k∂θ_j)ᵀ v (3 × 3), in closed form without the
/// nine matrices ∂²J/∂θ_k∂θ_j (the rigid inertia's ∂(J̇ᵀ)/∂θ needs only this contraction).
void exp_jacobian_and_contraction(const Vec3& theta, const Vec3& v, ExpJacobian& out, Mat3& K);

/// R = exp([θ]×) and J(θ) with its derivatives up to `order`, from one evaluation of the
/// coefficients: equal to rotation_from_vector() and exp_jacobian() (same operations), for
/// callers that need both, e.g. once per body and evaluation.
void exp_rotation_and_jacobian(const Vec3& theta, int order, Mat3& R, ExpJacobian& out);

/// Everything the rigid terms read of one body's rotation at θ (rad), from one evaluation of
/// the coefficients: R = exp([θ]×), J(θ) and, for order 1, ∂J/∂θ, JᵀJ and every coefficient
/// up to A2, B2 (those of exp_contraction()). The same numbers as rotation_from_vector(),
/// exp_jacobian() and exp_rotation_and_jacobian() (same operations; each coefficient's series
/// or closed form does not depend on which others are evaluated). rigid/body_frame_cache.h
/// keeps one per body and thread.
struct RotationFrame {
  Vec3 theta = Vec3::Zero();  ///< the θ it was built at
  int order = -1;             ///< −1: empty; 0: R, J; 1: also dJ, JtJ and e.A2, e.B2
  ExpCoefficients e;
  Mat3 R = Mat3::Identity();
  Mat3 J = Mat3::Identity();
  std::array<Mat3, 3> dJ;  ///< ∂J/∂θ_k (order 1)
  Mat3 JtJ;                ///< JᵀJ (order 1)
};

/// Fills `out` at θ up to `order` (0 or 1).
void rotation_frame(const Vec3& theta, int order, RotationFrame& out);

/// K.col(j) = Σ_k v_k (∂²J/∂θ_k∂θ_j)ᵀ v (3 × 3) from the coefficients e at θ (with A2, B2),
/// the contraction of exp_jacobian_and_contraction() (same operations).
void exp_contraction(const Vec3& theta, const ExpCoefficients& e, const Vec3& v, Mat3& K);

/// The equivalent rotation vector on the other side of the |θ| = π sphere:
/// θ' = θ (1 − 2π/|θ|), with exp([θ']×) = exp([θ]×). Precondition: |θ| > 0.
/// Used to keep |θ| ≤ π during long spins, far from the singularity of J at |θ| = 2π.
Vec3 reparametrize_rotation(const Vec3& theta);

/// ∂θ'/∂θ (3 × 3) of reparametrize_rotation(): (1 − 2π/t) I + (2π/t³) θ θᵀ. Needed by the
/// adjoint and direct sensitivities to carry derivatives across a chart switch.
Mat3 reparametrize_rotation_jacobian(const Vec3& theta);

/// Threshold above which the simulator should switch θ to its equivalent representation
/// (rad): slightly above π, so that a body spinning about a fixed axis does not switch
/// back and forth.
inline constexpr double kReparametrizeAngle = 1.25 * 3.14159265358979323846;

}  // namespace addsim
