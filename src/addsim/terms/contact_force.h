#pragma once
/// Penalty frictional contact at one point against one obstacle (paper §4.2, §5.2):
///   normal   f_n = n k_n max(−g, 0)                                   (eq. linPenN)
///   damping  f_d = −k_d N ẋ            if g < 0                          (eq. RBdamping)
///   friction linear: f_t = −t min(k_t ‖Tẋ‖, c_f f_n)                     (eq. linPenT)
///            tanh:   f_t = −t c_f f_n tanh(k_t ‖Tẋ‖ / (c_f f_n))          (eq. tanhPenT)
/// with N = n nᵀ, T = I − N, t = Tẋ/‖Tẋ‖ and f_n = k_n max(−g, 0) the magnitude used in
/// the Coulomb limit (the damping force does not enter the limit). k_t = k_n h unless the
/// scene sets it. Returns the force on the point and its exact derivatives.

#include "addsim/core/types.h"
#include "addsim/terms/obstacle.h"

namespace addsim {

enum class ContactModel { kLinear, kTanh };
const char* to_string(ContactModel model);

struct ContactCoefficients {
  ContactModel model = ContactModel::kLinear;
  double kn = 1e3;   ///< normal penalty, N/m
  double kd = 0.0;   ///< normal damping, N s/m
  double kt = 10.0;  ///< tangential penalty, N s/m
  double cf = 0.5;   ///< Coulomb friction coefficient
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
  double gap = 0.0;             ///< g(x), m
  double normal_force = 0.0;    ///< f_n, N
  double friction_force = 0.0;  ///< ‖f_t‖, N
};

/// Contact force at point x with velocity ẋ against obstacle `o`.
ContactForce contact_force(const Vec3& x, const Vec3& xdot, const Obstacle& o, const ContactCoefficients& c);

/// tanh(s)/s and (d/ds(tanh(s)/s))/s, with series below s = 1e-2 where the closed forms
/// lose digits to cancellation (truncation error there < 1e-12 relative).
double tanh_over_s(double s);
double tanh_over_s_deriv_over_s(double s);

}  // namespace addsim
