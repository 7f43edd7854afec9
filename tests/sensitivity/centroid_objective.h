#pragma once
// A test objective shared by the gradient tests of sensitivity/ (time grids, smoothed contact),
// and their common first check: the adjoint equals the direct pass over all of p.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "addsim/core/types.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/objective_function.h"

namespace addsim::test {

// Φ = ½ ‖mean(q^n) − c‖² + ½ ‖mean(q^{n/2})‖² over each coordinate axis: the final and
// mid-run centroid of all DOFs grouped by axis (m²); rotations and bounces matter.
class CentroidObjective final : public ObjectiveFunction {
 public:
  double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const override {
    const int n = static_cast<int>(traj.q.size()) - 1, mid = n / 2;
    const int dofs = model.num_dofs();
    const Vec3 target(1.2, 0.0, 0.1);
    auto centroid = [&](const VecX& q) {
      Vec3 c = Vec3::Zero();
      for (int k = 0; k < dofs; ++k) c[k % 3] += q[k];
      return Vec3(c / (dofs / 3));
    };
    const Vec3 e = centroid(traj.q[n]) - target, m = centroid(traj.q[mid]);
    if (grad) {
      VecX gn(dofs), gm(dofs);
      for (int k = 0; k < dofs; ++k) {
        gn[k] = e[k % 3] / (dofs / 3);
        gm[k] = m[k % 3] / (dofs / 3);
      }
      grad->dphi_dq(n) += gn;
      grad->dphi_dq(mid) += gm;
    }
    return 0.5 * e.squaredNorm() + 0.5 * m.squaredNorm();
  }
};

/// Adjoint vs direct over every parameter of `m` (≤ 1e-9 relative); returns the adjoint.
inline GradientResult expect_adjoint_matches_direct(const Model& m, const Trajectory& traj,
                                                    const ObjectiveFunction& obj, const std::string& label) {
  const GradientResult adj = gradient_adjoint(m, traj, obj);
  std::vector<int> all(m.params().size());
  for (int j = 0; j < m.params().size(); ++j) all[j] = j;
  const DirectResult dir = gradient_direct(m, traj, obj, all);
  const double e_dir = (adj.dphi_dp - dir.dphi_dp).norm() / dir.dphi_dp.norm();
  EXPECT_LT(e_dir, 1e-9) << label;
  std::printf("[ %s ] adjoint vs direct: %.3e\n", label.c_str(), e_dir);
  return adj;
}

}  // namespace addsim::test
