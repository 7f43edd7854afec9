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
class WorkerThread;

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
  ///
  /// With a worker thread (solver.threads = 2) that is free, the groups are split between the
  /// two threads at a fixed place (about half of the points on each side, set at construction):
  /// each group's correction is computed from q, v, jac and Δq alone and writes only its own
  /// points' rows of dq, so the result is the same bits on one thread or two.
  int correct(const VecX& q, const VecX& v, const VecX& p, double h, const JacobianWeights& w, const VecX& jac,
              double norm, VecX& dq, WorkerThread* worker = nullptr) const;
  /// The first group the worker takes when the groups are split (groups().size() if never).
  int split() const { return split_; }
  int num_groups() const { return static_cast<int>(groups_.size()); }

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
  // Scratch of one thread's groups: the active points, r^pred, J_rest, the local Newton matrix,
  // residual and δ, and the LU (its storage kept between solves).
  struct Scratch {
    std::vector<Active> active;
    VecX r_pred, g, delta;
    MatX j_rest, jg;
    Eigen::PartialPivLU<MatX> lu;
  };
  // The arguments of one correct() call, shared by the two threads' group ranges.
  struct Call {
    const VecX& q;
    const VecX& v;
    const VecX& p;
    double h;
    const JacobianWeights& w;
    const VecX& jac;
    double norm;
    VecX& dq;
  };
  // Corrects groups [begin, end) with `scratch`; returns the points corrected.
  int correct_groups(const Call& call, int begin, int end, Scratch& scratch) const;
  // A group's local index of each global DOF (−1 outside the group). Groups are bodies, so
  // their DOFs are disjoint and the two threads never touch the same entry.
  mutable std::vector<int> local_;
  mutable Scratch scratch_[2];  ///< the calling thread's, the worker's
  int split_ = 0;
};

}  // namespace addsim
