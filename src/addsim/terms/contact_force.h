#pragma once
/// Penalty frictional contact at one point against one obstacle (paper §4.2, §5.2):
///   normal   f_n = n k_n max(−g, 0)                                   (eq. linPenN)
///            or, with smoothing width w > 0, f_n = n k_n φ_w(g), the C¹ blend
///            φ_w(g) = −g (g ≤ −w/2), (w/2 − g)²/(2w) (|g| < w/2), 0 (g ≥ w/2)
///   damping  f_d = −k_d s(g) N ẋ                                          (eq. RBdamping, ramped)
///   friction linear: f_t = −t min(k_t ‖Tẋ‖, c_f f_n)                     (eq. linPenT)
///            tanh:   f_t = −t c_f f_n tanh(k_t ‖Tẋ‖ / (c_f f_n))          (eq. tanhPenT)
/// with N = n nᵀ, T = I − N, t = Tẋ/‖Tẋ‖ and f_n = k_n max(−g, 0) the magnitude used in
/// the Coulomb limit (the damping force does not enter the limit). k_t = k_n h unless the
/// scene sets it. s(g) = smoothstep(−g/δ) = t²(3 − 2t), t = min(1, −g/δ), rises C¹ from 0 at
/// g = 0 to 1 at depth δ (contact.damping_ramp), so the residual has no jump of k_d |v_n| when
/// a point crosses g = 0; δ = 0 gives the paper's switch (s = 1 for g < 0).
/// Returns the force on the point and its exact derivatives.

#include "addsim/core/types.h"
#include "addsim/terms/obstacle.h"

namespace addsim {

/// kHybrid: linear penalty forces plus hard stick constraints (paper §4.3, solver/hybrid_contact.h);
/// kSqp: hard normal and stick constraints with Lagrange multipliers (§4.1, forward only).
/// contact_force() evaluates both as the linear penalty model.
enum class ContactModel { kLinear, kTanh, kHybrid, kSqp };
/// "linear", "tanh", "hybrid" or "sqp".
const char* to_string(ContactModel model);

/// Default depth δ (m) over which the contact damping ramps in (contact.damping_ramp).
constexpr double kDefaultDampingRamp = 1e-4;

/// Smoothed penetration depth φ_w(g) (m) of the normal penalty f_n = k_n φ_w(g): the exact
/// max(−g, 0) of eq. linPenN for w = 0, else the quadratic blend over |g| < w/2 (C¹: equal to
/// −g below −w/2, to 0 above w/2, slopes −1 and 0 at the ends). Returns φ and sets
/// dphi_dg = ∂φ/∂g and dphi_dw = ∂φ/∂w = (w²/4 − g²)/(2w²) inside the blend, 0 outside.
double smoothed_depth(double g, double w, double& dphi_dg, double& dphi_dw);

/// Damping ramp s(g) = t²(3 − 2t), t = min(1, max(−g, 0)/δ), and ds/dg (1/m); s = 1 inside if δ = 0.
double damping_ramp(double g, double delta, double& ds_dg);

/// Default regularisation ε (m/s) of the hybrid model's sliding direction
/// t = Tẋ/(‖Tẋ‖ + ε) (paper §4.3 draft, which uses 1e-8). A released point on an incline
/// settles at the speed ε r/(1 − r), r = tan θ/c_f, where the regularised force balances
/// the load; it can be held only if stopping it fits the cone's slack, so ε bounds how close
/// to tan θ the hybrid stops exactly (1e-5 crept at c_f = 1.02 tan θ; docs/contact.md,
/// "Exact stick just inside the friction cone"). 1e-7: 99 % of the Coulomb force at 10 µm/s,
/// 12 % more Newton iterations than 1e-5 on the cylinder drop.
constexpr double kDefaultSlipRegularization = 1e-7;

struct ContactCoefficients {
  ContactModel model = ContactModel::kLinear;
  double kn = 1e3;   ///< normal penalty, N/m
  double kd = 0.0;   ///< normal damping, N s/m
  double damping_ramp = kDefaultDampingRamp;  ///< δ, m: depth at which the damping reaches k_d (model constant)
  double kt = 10.0;  ///< tangential penalty, N s/m
  double cf = 0.5;   ///< Coulomb friction coefficient
  double slip_eps = kDefaultSlipRegularization;  ///< ε, m/s: sliding-direction regularisation (hybrid)
  double smoothing = 0.0;  ///< w, m: width of the C¹ blend of the normal penalty (0: eq. linPenN exactly)
};

/// Regime of one contact point, for reports and tests.
enum class ContactRegime { kSeparated, kStick, kSlip };

struct ContactForce {
  ContactRegime regime = ContactRegime::kSeparated;
  Vec3 f = Vec3::Zero();        ///< force on the point, N
  Mat3 df_dx = Mat3::Zero();    ///< ∂f/∂x, N/m
  Mat3 df_dxdot = Mat3::Zero(); ///< ∂f/∂ẋ, N s/m
  Vec3 df_dkn = Vec3::Zero();   ///< ∂f/∂k_n at fixed k_t
  Vec3 df_dkd = Vec3::Zero();
  Vec3 df_dkt = Vec3::Zero();
  Vec3 df_dcf = Vec3::Zero();
  Vec3 df_dw = Vec3::Zero();    ///< ∂f/∂w (smoothing width), N/m
  double gap = 0.0;             ///< g(x), m
  double normal_force = 0.0;    ///< f_n = k_n φ_w(g), N
  double friction_force = 0.0;  ///< ‖f_t‖, N
  /// Stick predictor only (contact_force's stick_predictor_ratio): f_stick − f_slip, the change
  /// of the force if the slipping point's friction followed the stick branch −k_t Tẋ; else 0. N
  Vec3 predictor_shift = Vec3::Zero();
};

/// Contact force at point x with velocity ẋ against obstacle `o`.
///
/// `stick_predictor_ratio` β ≥ 1 (linear friction only; 0: off) asks for the Newton model of
/// the stick predictor (solver.stick_first_iteration, docs/solver.md): a slipping point with
/// k_t ‖Tẋ‖ ≤ β c_f f_n, near the edge of the friction cone, gets the stick branch's partials
/// (∂/∂ẋ = −k_t T) in df_dx and df_dxdot and the difference f_stick − f_slip in
/// predictor_shift, while f and the parameter derivatives stay the exact slip branch's.
/// The step solver linearises the stick law there, so a foot that comes to rest within the
/// step is not thrown across the kink of eq. linPenT (the slip branch has no stiffness along
/// the sliding direction).
ContactForce contact_force(const Vec3& x, const Vec3& xdot, const Obstacle& o, const ContactCoefficients& c,
                           double stick_predictor_ratio = 0.0);
/// The same for a plane, bit for bit (signed zeros included), without the products with its
/// zero Hessian and the virtual gap(x, n, H).
ContactForce contact_force(const Vec3& x, const Vec3& xdot, const PlaneObstacle& o, const ContactCoefficients& c,
                           double stick_predictor_ratio = 0.0);

/// Friction part alone of the force at x (the normal and damping parts of contact_force()
/// omitted), with its exact derivatives; separated points get zero. Modes:
///  kPenalty: the clamped linear penalty f_t = −t min(k_t ‖Tẋ‖, c_f f_n) (eq. linPenT);
///  kCoulomb: the sliding force f_t = −c_f f_n t with t = Tẋ/(‖Tẋ‖ + ε), ε = c.slip_eps (eq.
///            slip with the regularised direction of the paper's hybrid method, §4.3 draft);
///  kLagged:  f_t = c_f f_n d for a fixed unit direction d (first iteration after a release,
///            when Tẋ = 0: "initialise t to the direction of the previous force").
enum class FrictionMode { kPenalty, kCoulomb, kLagged };
ContactForce friction_force(const Vec3& x, const Vec3& xdot, const Obstacle& o, const ContactCoefficients& c,
                            FrictionMode mode, const Vec3& lagged_direction = Vec3::Zero());


/// tanh(s)/s and (d/ds(tanh(s)/s))/s, with series below s = 1e-2 where the closed forms
/// lose digits to cancellation (truncation error there < 1e-12 relative).
double tanh_over_s(double s);
double tanh_over_s_deriv_over_s(double s);

}  // namespace addsim
