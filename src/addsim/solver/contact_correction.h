#pragma once
/// Contact correction of a Newton direction (solver.contact_correction; docs/solver.md,
/// "Soft-feet quadruped: a contact correction of the Newton direction").
///
/// A Newton direction Δq solves J Δq = −r, i.e. the step's residual linearised at q. Near the
/// root of a soft-feet step the residual left after a full Newton step sits in the feet's
/// contact nodes: the penalty and friction laws (eqs. linPenN/tanhPenT with a 2 mm blend) curve
/// on the scale of a Newton step, the other terms barely. If every term but contact were linear,
/// the residual at q + Δq would be, at each contact point p,
///
///     r_p^pred = −[f_p(q + Δq) − f_p(q) − K_p Δq_p],    K_p = w_q ∂f_p/∂x + w_v ∂f_p/∂ẋ at q
///
/// (f_p: contact force on the point, w_q = 1, w_v = cv₀/h the step Jacobian's weights). The
/// correction solves, for the contact points G of each body together (the other coordinates
/// held), the nonlinear equations
///
///     r_G^pred + (J_GG + K_G) δ − [f_G(q + Δq + δ) − f_G(q + Δq)] = 0
///
/// by Newton on the 3|G| unknowns δ (J_GG: the rows and columns of J at those points, K_G
/// block-diagonal: the contact laws' own partials, which J_GG contains, taken back out), and
/// returns Δq + δ. The line search then tries q + α(Δq + δ) on the exact merit ‖r‖, so the
/// roots, the convergence test and the sensitivity passes are unchanged: only the path moves.
/// Point contact (particles, FEM nodes) with tanh friction (contact.model "tanh") only; rigid-body
/// proxy points and the other contact models are left as they are.

#include <Eigen/LU>
#include <vector>

#include "addsim/core/types.h"
#include "addsim/integrators/bdf.h"
#include "addsim/terms/contact_force.h"

namespace addsim {

class Model;
class PointContactTerm;
class SparsePattern;

class ContactCorrection {
 public:
  /// Collects the model's point-contact points with tanh friction, grouped by the body whose
  /// coordinates they are.
  explicit ContactCorrection(const Model& model);
  /// True if the model has such points.
  bool active() const { return !groups_.empty(); }

  /// Adds the correction δ to the Newton direction dq (|q|) taken at q with velocities v = v(q)
  /// (|q| each), parameters p, the step Jacobian `jac` (values on the model's pattern) and its
  /// weights w (BDF step weights; h for the friction coefficients), norm = ‖r(q)‖. Points
  /// separated both at q and at q + dq are left out, and so is a body whose ‖r_G^pred‖ is below
  /// 1e-3 ‖r(q)‖ (the end phase) or whose local solve gives no finite δ. The local Newton
  /// solve stops at ‖g‖ ≤ 1e-2 ‖r_G^pred‖ or after three LU solves. Returns the number of
  /// points corrected.
  int correct(const VecX& q, const VecX& v, const VecX& p, double h, const JacobianWeights& w, const VecX& jac,
              double norm, VecX& dq) const;

 private:
  struct Point {
    const PointContactTerm* term;
    int obstacle;
    int dof;  ///< global DOF of x
  };
  const Model& model_;
  std::vector<std::vector<Point>> groups_;  ///< points by body
  struct Active {
    const Point* point;
    ContactCoefficients c;
    Vec3 x1, xd1;     ///< position and velocity at q + Δq
    ContactForce f1;  ///< force there
    Mat3 k0;          ///< w_q ∂f/∂x + w_v ∂f/∂ẋ at q
  };
  // Scratch of correct(): a group's local index of each global DOF (−1 outside the group), its
  // active points, r^pred, J_rest, the local Newton matrix, residual and δ.
  mutable std::vector<int> local_;
  mutable std::vector<Active> active_;
  mutable VecX r_pred_, g_, delta_;
  mutable MatX j_rest_, jg_;
  mutable Eigen::PartialPivLU<MatX> local_lu_;  ///< LU of jg_ (its storage kept between solves)
};

}  // namespace addsim
