#pragma once
/// Penalty contact between a set of points with 3 DOFs each (particles now, FEM nodes
/// later) and the model's obstacles (paper §4.2: contact handled per point). Each point is
/// tested against every obstacle; forces come from contact_force().

#include <memory>
#include <vector>

#include "addsim/model/term.h"
#include "addsim/terms/contact_force.h"
#include "addsim/terms/obstacle.h"

namespace addsim {

/// Where the contact coefficients live in p.
struct ContactSettings {
  ContactModel model = ContactModel::kLinear;
  int kn_param = -1;
  int kd_param = -1;
  int kt_param = -1;  ///< −1: k_t = k_n h (paper: "we always choose k_t = k_n Δt")
};

/// Contact coefficients for obstacle `o` at parameters p.
ContactCoefficients coefficients(const ContactSettings& s, const Obstacle& o, const VecX& p, double h);

class PointContactTerm final : public Term {
 public:
  /// dofs: global DOF of the x coordinate of each contact point.
  PointContactTerm(std::vector<DofIndex> dofs, std::vector<std::shared_ptr<const Obstacle>> obstacles,
                   ContactSettings settings);
  std::string_view name() const override { return "point_contact"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;

  /// Force of obstacle o on point k at ctx (for reports and tests).
  ContactForce force(const TermContext& ctx, int k, int o) const;
  int num_points() const { return static_cast<int>(dofs_.size()); }
  int num_obstacles() const { return static_cast<int>(obstacles_.size()); }

 private:
  std::vector<DofIndex> dofs_;
  std::vector<std::shared_ptr<const Obstacle>> obstacles_;
  ContactSettings settings_;
  std::vector<int> stencil_;
};

}  // namespace addsim
