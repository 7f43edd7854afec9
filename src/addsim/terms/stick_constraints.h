#pragma once
/// Hard static-friction constraints of the hybrid contact model (paper §4.3): a sticking
/// contact point x (three consecutive DOFs, a particle or FEM node) against a planar
/// obstacle obeys T̄ ẋ^i = 0 (eq. stick) with ẋ^i the BDF velocity and T̄ = [t₁ t₂]ᵀ the
/// obstacle's tangent basis; for BDF1 this is T̄ (x^i − x^{i−1}) = 0 (paper), for BDF2
/// T̄ (3x^i − 4x^{i−1} + x^{i−2}) = 0, the exact discrete no-slip condition of the scheme.
/// The constraint is imposed like a Dirichlet condition by row replacement: the point's
/// three residual rows (d, d+1, d+2) become
///   row d   : t₁ · ẋ^i                    (m/s)
///   row d+1 : t₂ · ẋ^i                    (m/s)
///   row d+2 : n · r_point                 (N, the normal equilibrium is kept)
/// an orthogonal change of the node's row basis followed by replacing the two tangential
/// rows. The pattern is unchanged; rows d+2 of the Jacobian are n-combinations of the
/// node's rows, which share one column set (stencils touch whole nodes). The same
/// replacement applied to the step, history and start-up Jacobians gives the constrained
/// linearisation used by the direct and adjoint passes (paper: T̄ s^i = T̄ s^{i−1},
/// T̄ λ^{i−1} = T̄ λ^i).

#include <vector>

#include "addsim/core/types.h"
#include "addsim/math/sparse_assembly.h"

namespace addsim {

/// One sticking contact point of a converged step.
struct StickPoint {
  DofIndex dof = 0;          ///< global DOF of the point's x coordinate
  int obstacle = 0;          ///< index of the obstacle in its contact term
  Vec3 n = Vec3::UnitZ();    ///< obstacle outward unit normal
  Vec3 t1 = Vec3::UnitX();   ///< first unit tangent (t₁ ⊥ n)
  Vec3 t2 = Vec3::UnitY();   ///< second unit tangent (t₂ = n × t₁)
  Vec3 force = Vec3::Zero(); ///< static friction (constraint) force on the point, N (tangential)
  double limit = 0.0;        ///< Coulomb limit c_f f_n at the converged state, N (eq. coulomb)
  int point = -1;            ///< rigid proxy point index (dof is then the body's first DOF), −1 otherwise
};

/// Stick constraints of one rigid body (6 DOFs p_WB, θ at dof): its sticking proxy points
/// give C(θ) ẋ_t = C v = 0 (C: the stacked T̄ₖ [I X_v,k], 2m × 6). The constrained rows are
/// r_c = P v + (I − P) r_body with P the orthogonal projector onto the enforced constraint
/// directions (the top-`rank` eigenvectors of CᵀC), equivalent to the KKT system
/// r + Cᵀλ = 0, C v = 0 with minimum-norm multipliers even for redundant points.
struct StickBody {
  DofIndex dof = 0;                                      ///< global DOF of p_WB.x
  int rank = 0;                                          ///< enforced constraint directions
  Eigen::Matrix<double, 6, 6> P = Eigen::Matrix<double, 6, 6>::Zero();  ///< projector (symmetric)
  Eigen::Matrix<double, 6, 3> D = Eigen::Matrix<double, 6, 3>::Zero();  ///< ∂P/∂θ_j (v − r_body), j = 0..2
};

class PointContactTerm;
class RigidContactTerm;

/// A contact point released from its stick constraint in a step (hybrid model): it feels
/// the sliding force −c_f f_n t, t = Tẋ/(‖Tẋ‖ + ε), instead of the penalty friction.
struct SlipPoint {
  const PointContactTerm* term = nullptr;  ///< its contact term (owned by the model)
  int k = 0;                               ///< point index in the term
  int obstacle = 0;                        ///< obstacle index in the term
};

/// A rigid proxy point released from its stick constraint in a step (hybrid model, Coulomb
/// release): as SlipPoint, with the force mapped to its body (rigid/rigid_slip.h).
struct RigidSlipPoint {
  const RigidContactTerm* term = nullptr;  ///< its contact term (owned by the model)
  int k = 0;                               ///< proxy point index in the term
  int obstacle = 0;                        ///< obstacle index in the term
};

/// Contact state of one converged step, recorded in the Trajectory for the backward pass.
struct ContactState {
  std::vector<DofIndex> touching;   ///< x-DOFs of the points with g < 0 (any obstacle)
  std::vector<StickPoint> sticking; ///< points held by the stick constraint (hybrid model)
  std::vector<SlipPoint> sliding;   ///< released points on the sliding force (hybrid model)
  std::vector<StickPoint> rigid_sticking;  ///< sticking rigid proxy points (force: limit-weighted multiplier)
  std::vector<StickBody> bodies;    ///< constrained rigid bodies (hybrid model)
  std::vector<RigidSlipPoint> rigid_sliding;  ///< released rigid points on the sliding force (hybrid model)
  int label_changes = 0;            ///< stick/slip label changes made in the step
};

/// A unit tangent basis (t₁, t₂) of the plane with unit normal n (deterministic).
void tangent_basis(const Vec3& n, Vec3& t1, Vec3& t2);

/// A StickPoint at `dof` against obstacle `obstacle` with normal n (its tangents from
/// tangent_basis), recorded static friction `force` and Coulomb `limit`; `point` is the
/// rigid proxy point index (−1 for a particle or FEM node).
StickPoint make_stick_point(DofIndex dof, int obstacle, const Vec3& n, const Vec3& force = Vec3::Zero(),
                            double limit = 0.0, int point = -1);

/// Row replacement of stick constraints on value arrays over a fixed sparse pattern.
class StickRows {
 public:
  StickRows() = default;
  /// Indexes the rows of `pattern` (O(nnz) memory).
  explicit StickRows(const SparsePattern& pattern);
  /// True before indexing a pattern.
  bool empty() const { return rows_.empty(); }

  /// Replaces the rows of every stick point in the matrix `values`: row d ← c t₁ᵀ and
  /// row d+1 ← c t₂ᵀ on the point's own columns (zero elsewhere), row d+2 ← nᵀ (rows d..d+2).
  /// c = ∂ẋ^i/∂(the matrix's column state): the wv of the matrix's JacobianWeights.
  void constrain_matrix(const std::vector<StickPoint>& sticks, double c, VecX& values) const;
  /// General form for one point: new row j of rows d..d+2 is, if constrained[j],
  /// coeff[j] · frame.row(j) on the point's own columns (zero elsewhere), otherwise
  /// frame.row(j) · (old rows d..d+2). `frame` must be orthogonal.
  void replace_point_rows(DofIndex dof, const Mat3& frame, const Vec3& coeff, const bool constrained[3],
                          VecX& values) const;
  /// Replaces the residual rows: (t₁·ẋ, t₂·ẋ, n·r_point) with v = ẋ^i (|q|) (m/s, m/s, N).
  static void constrain_residual(const std::vector<StickPoint>& sticks, const VecX& v, VecX& r);
  /// P v: the rows of a right-hand side (e.g. ∂r/∂p) as the constrained system sees
  /// them: (0, 0, n·v_point) per stick point.
  static void project(const std::vector<StickPoint>& sticks, VecX& v);
  /// Pᵀ λ: λ_point ← n λ_{d+2} per stick point (the adjoint of project()).
  static void project_transpose(const std::vector<StickPoint>& sticks, VecX& lambda);

  /// Rigid bodies: rows d..d+5 ← (I − P)(old rows) + c P on the body's columns, plus D on
  /// its θ columns when `geometric` (∂P/∂q^i, step Jacobian only); c = wv of the matrix.
  void constrain_body_matrix(const std::vector<StickBody>& bodies, double c, bool geometric, VecX& values) const;
  /// Rigid bodies: r_body ← P v_body + (I − P) r_body (v = ẋ^i = BDF rates, m/s and rad/s).
  static void constrain_body_residual(const std::vector<StickBody>& bodies, const VecX& v, VecX& r);
  /// Rigid bodies: v_body ← (I − P) v_body (constrained rows carry no ∂r/∂p); P symmetric,
  /// so this is also its own adjoint.
  static void project_bodies(const std::vector<StickBody>& bodies, VecX& v);

 private:
  struct Entry {
    int col;
    int index;
  };
  std::vector<std::vector<Entry>> rows_;
};

}  // namespace addsim
