#include "addsim/solver/contact_correction.h"

#include <Eigen/LU>
#include <cmath>

#include "addsim/model/model.h"
#include "addsim/terms/contact_term.h"

namespace addsim {

namespace {
// The local Newton solve stops once its residual is this fraction of r^pred's (the direction
// only has to land near the root: the line search and the next iteration do the rest), or
// after kMaxLocalIterations.
constexpr double kLocalReduction = 1e-3;
constexpr int kMaxLocalIterations = 10;
}  // namespace

ContactCorrection::ContactCorrection(const Model& model) : model_(model) {
  std::vector<Point> points;
  for (const auto& t : model.terms())
    // tanh friction only: the linear law's kink at the cone's edge (and the hybrid and SQP
    // models' constraints) are no smooth local problem; on the soft-feet scene's linear contact
    // the corrected directions stalled a step at the iteration cap (docs/solver.md).
    if (const auto* pc = dynamic_cast<const PointContactTerm*>(t.get()); pc && pc->settings().model == ContactModel::kTanh)
      for (int o = 0; o < pc->num_obstacles(); ++o)
        for (int k = 0; k < pc->num_points(); ++k) points.push_back({pc, o, pc->dofs()[k]});
  for (const auto& b : model.bodies()) {
    std::vector<Point> g;
    for (const Point& pt : points)
      if (pt.dof >= b->dof_offset() && pt.dof < b->dof_offset() + b->dof_count()) g.push_back(pt);
    if (!g.empty()) groups_.push_back(std::move(g));
  }
  local_.assign(model.num_dofs(), -1);
}

int ContactCorrection::correct(const VecX& q, const VecX& v, const VecX& p, double h, const JacobianWeights& w,
                               const VecX& jac, VecX& dq) const {
  const auto& outer = model_.pattern().outer();
  const auto& inner = model_.pattern().inner();
  int corrected = 0;
  struct Active {
    const Point* point;
    ContactCoefficients c;
    Vec3 x1, xd1;       ///< position and velocity at q + Δq
    ContactForce f1;    ///< force there
  };
  std::vector<Active> active;
  for (const auto& group : groups_) {
    active.clear();
    MatX j_rest;
    VecX r_pred;
    std::vector<Mat3> k0s;
    for (const Point& pt : group) {
      const Obstacle& ob = *pt.term->obstacles()[pt.obstacle];
      const ContactCoefficients c = coefficients(pt.term->settings(), ob, p, h);
      const Vec3 x = q.segment<3>(pt.dof), xd = v.segment<3>(pt.dof), dx = dq.segment<3>(pt.dof);
      const Vec3 x1 = x + dx, xd1 = xd + w.wv * dx;
      const ContactForce f0 = contact_force(x, xd, ob, c);
      ContactForce f1 = contact_force(x1, xd1, ob, c);
      if (f0.regime == ContactRegime::kSeparated && f1.regime == ContactRegime::kSeparated) continue;
      const Mat3 k0 = w.wq * f0.df_dx + w.wv * f0.df_dxdot;
      k0s.push_back(k0);
      active.push_back({&pt, c, x1, xd1, f1});
      // r^pred: the residual carries −f.
      r_pred.conservativeResize(3 * static_cast<int>(active.size()));
      r_pred.tail<3>() = -(f1.f - f0.f - k0 * dx);
    }
    const int m = static_cast<int>(active.size());
    if (m == 0) continue;
    for (int a = 0; a < m; ++a)
      for (int i = 0; i < 3; ++i) local_[active[a].point->dof + i] = 3 * a + i;
    // J restricted to the group, with the contact laws' partials at q taken back out.
    j_rest.setZero(3 * m, 3 * m);
    for (int a = 0; a < m; ++a) {
      for (int i = 0; i < 3; ++i) {
        const int col = active[a].point->dof + i;
        for (int k = outer[col]; k < outer[col + 1]; ++k)
          if (const int row = local_[inner[k]]; row >= 0) j_rest(row, 3 * a + i) = jac[k];
      }
      j_rest.block<3, 3>(3 * a, 3 * a) += k0s[a];
    }
    for (int a = 0; a < m; ++a)
      for (int i = 0; i < 3; ++i) local_[active[a].point->dof + i] = -1;
    // Newton on g(δ) = r^pred + J_rest δ − [f(q + Δq + δ) − f(q + Δq)].
    const double target = kLocalReduction * r_pred.norm();
    VecX delta = VecX::Zero(3 * m);
    bool ok = target > 0.0;
    for (int it = 0; ok && it < kMaxLocalIterations; ++it) {
      VecX g = r_pred + j_rest * delta;
      MatX G = j_rest;
      for (int a = 0; a < m; ++a) {
        const Active& ac = active[a];
        const Vec3 d = delta.segment<3>(3 * a);
        const ContactForce f =
            contact_force(ac.x1 + d, ac.xd1 + w.wv * d, *ac.point->term->obstacles()[ac.point->obstacle], ac.c);
        g.segment<3>(3 * a) -= f.f - ac.f1.f;
        G.block<3, 3>(3 * a, 3 * a) -= w.wq * f.df_dx + w.wv * f.df_dxdot;
      }
      if (g.norm() <= target) break;
      delta -= G.partialPivLu().solve(g);
      ok = delta.allFinite();
    }
    if (!ok) continue;
    for (int a = 0; a < m; ++a) dq.segment<3>(active[a].point->dof) += delta.segment<3>(3 * a);
    corrected += m;
  }
  return corrected;
}

}  // namespace addsim
