#pragma once
/// The point a target term follows (com_target, com_line, com_coordinate, soft_min_distance):
/// the centre of mass of a body, or a fixed weighted mean of a node set,
/// c = Σ_k w_k x_k / Σ_k w_k, e.g. all boundary nodes of an FEM body weighted by their share
/// of the rest surface area (the tracked point of the paper's throwing objectives, §6.2).
/// The weights are constants (rest mesh or the task's numbers), so c is linear in q:
/// ∂c/∂x_k = (w_k / Σ w) I and ∂c/∂p = 0.

#include <vector>

#include "addsim/core/types.h"
#include "addsim/model/model.h"
#include "addsim/sensitivity/direct_jacobian.h"

namespace addsim {

class FemBody;

class TrackedPoint {
 public:
  /// The centre of mass of body `body` (center_of_mass.h).
  static TrackedPoint center_of_mass(int body);
  /// The weighted mean of nodes `nodes` (FEM nodes or particles) of body `body`; one weight
  /// ≥ 0 per node with a positive sum (normalised here). Throws InputError for an empty node
  /// list, a size mismatch, a negative or non-finite weight, a repeated node or a zero sum.
  static TrackedPoint node_mean(int body, std::vector<int> nodes, std::vector<double> weights);

  int body() const { return body_; }
  bool is_center_of_mass() const { return nodes_.empty(); }
  const std::vector<int>& nodes() const { return nodes_; }
  /// Normalised weights (sum 1), one per node; empty for the centre of mass.
  const std::vector<double>& weights() const { return weights_; }

  /// c (m) at configuration q (|q|) and parameters p (|p|). Throws InputError (prefixed by
  /// `who`) if the body does not exist, is rigid (node means need nodes) or a node is out of range.
  Vec3 position(const Model& model, const VecX& q, const VecX& p, std::string_view who) const;
  /// Adds gᵀ ∂c/∂q to dphi_dq and gᵀ ∂c/∂p to dphi_dp; g is 3 × 1.
  void vjp(const Model& model, const VecX& q, const VecX& p, const Vec3& g, VecX& dphi_dq, VecX& dphi_dp,
           std::string_view who) const;
  /// ∂c/∂q dq + ∂c/∂p dp (3 × 1).
  Vec3 jvp(const Model& model, const VecX& q, const VecX& p, const VecX& dq, const VecX& dp, std::string_view who) const;

 private:
  // Global DOF of the x coordinate of each node, checked against the model.
  std::vector<DofIndex> node_dofs(const Model& model, std::string_view who) const;

  int body_ = -1;
  std::vector<int> nodes_;
  std::vector<double> weights_;
};

/// The boundary nodes of FEM body `body` (sorted) and their area weights: a third of the rest
/// area of every boundary triangle they belong to (m²), so Σ w = the rest surface area.
void boundary_area_weights(const FemBody& body, std::vector<int>& nodes, std::vector<double>& weights);

/// out (rows × m) += jac s^i_c for the m columns of `sens` from each column's first step on
/// (s^i_c = 0 before it): jac (rows × |q|) is ∂ρ/∂q^i of a few residuals at step i, non-zero
/// on a few DOFs (a body's), so one small product with those rows of S^i replaces a jvp per
/// column (feature points on the cube drag: 4 markers × 360 columns).
void add_step_block(const MatX& jac, const TrajectorySensitivities& sens, int i, Eigen::Ref<MatX> out);

/// ∂(P c)/∂q^i (3 × |q|) into jq and ∂(P c)/∂p (3 × |p|) into jp for the tracked point at
/// step i, from three vjps.
void tracked_point_partials(const TrackedPoint& point, const Model& model, const Trajectory& traj, int i,
                            const Mat3& P, MatX& jq, MatX& jp, std::string_view who);

/// Three rows of a Gauss–Newton residual Jacobian for P c(q^i, p) at step i: out (3 × m) =
/// P (∂c/∂q^i s^i_c + ∂c/∂p_c) for the m parameters of `sens` (s^i_c = 0 before the column's
/// first step). ∂c/∂q^i and ∂c/∂p come from three vjps and ∂c/∂q^i is non-zero on the body's
/// DOFs only, so the block is one small product with those rows of S^i instead of one jvp per
/// column (com_target, com_line: quadruped, 2316 columns × 193 steps).
void tracked_point_jacobian(const TrackedPoint& point, const Model& model, const Trajectory& traj, int i,
                            const Mat3& P, const TrajectorySensitivities& sens, Eigen::Ref<MatX> out,
                            std::string_view who);

}  // namespace addsim
