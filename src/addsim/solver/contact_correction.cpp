#include "addsim/solver/contact_correction.h"

#include <cmath>

#include "addsim/model/model.h"
#include "addsim/terms/contact_term.h"

namespace addsim {

namespace {
// The local Newton solve stops once its residual is this fraction of r^pred's (the direction
// only has to land near the root: the line search and the next iteration do the rest), or
// after kMaxLocalIterations.
constexpr double kLocalReduction = 1e-2;
constexpr int kMaxLocalIterations = 3;
// A body's contact points are left as they are when their predicted residual is below this
// fraction of ‖r(q)‖ (the quadratic end phase: the step lands within the round-off floor).
constexpr double kNegligible = 1e-3;
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
                               const VecX& jac, double norm, VecX& dq) const {
  const auto& outer = model_.pattern().outer();
  const auto& inner = model_.pattern().inner();
  int corrected = 0;
  for (const auto& group : groups_) {
    active_.clear();
    const int n_max = 3 * static_cast<int>(group.size());
    r_pred_.resize(n_max);
    for (const Point& pt : group) {
      const Obstacle& ob = *pt.term->obstacles()[pt.obstacle];
      const ContactCoefficients c = coefficients(pt.term->settings(), ob, p, h);
      const Vec3 x = q.segment<3>(pt.dof), xd = v.segment<3>(pt.dof), dx = dq.segment<3>(pt.dof);
      const Vec3 x1 = x + dx, xd1 = xd + w.wv * dx;
      const ContactForce f0 = contact_force(x, xd, ob, c);
      const ContactForce f1 = contact_force(x1, xd1, ob, c);
      if (f0.regime == ContactRegime::kSeparated && f1.regime == ContactRegime::kSeparated) continue;
      const Mat3 k0 = w.wq * f0.df_dx + w.wv * f0.df_dxdot;
      // r^pred (the residual carries −f).
      r_pred_.segment<3>(3 * static_cast<int>(active_.size())) = -(f1.f - f0.f - k0 * dx);
      active_.push_back({&pt, c, x1, xd1, f1, k0});
    }
    const int m = static_cast<int>(active_.size());
    if (m == 0) continue;
    const auto r_pred = r_pred_.head(3 * m);
    // A group whose predicted residual is far below ‖r(q)‖ barely changes the next iterate.
    const double r_pred_norm = r_pred.norm();
    if (!(r_pred_norm > kNegligible * norm)) continue;
    for (int a = 0; a < m; ++a)
      for (int i = 0; i < 3; ++i) local_[active_[a].point->dof + i] = 3 * a + i;
    // J restricted to the group, with the contact laws' partials at q taken back out.
    j_rest_.setZero(3 * m, 3 * m);
    for (int a = 0; a < m; ++a) {
      for (int i = 0; i < 3; ++i) {
        const int col = active_[a].point->dof + i;
        for (int k = outer[col]; k < outer[col + 1]; ++k)
          if (const int row = local_[inner[k]]; row >= 0) j_rest_(row, 3 * a + i) = jac[k];
      }
      j_rest_.block<3, 3>(3 * a, 3 * a) += active_[a].k0;
    }
    for (int a = 0; a < m; ++a)
      for (int i = 0; i < 3; ++i) local_[active_[a].point->dof + i] = -1;
    // Newton on g(δ) = r^pred + J_rest δ − [f(q + Δq + δ) − f(q + Δq)] from δ = 0, where
    // g = r^pred and the contact partials are those at q + Δq.
    const double target = kLocalReduction * r_pred_norm;
    delta_.setZero(3 * m);
    g_ = r_pred;
    bool ok = true;
    for (int it = 0;; ++it) {
      jg_ = j_rest_;
      for (int a = 0; a < m; ++a) {
        const Active& ac = active_[a];
        ContactForce f;
        if (it > 0) {
          const Vec3 d = delta_.segment<3>(3 * a);
          f = contact_force(ac.x1 + d, ac.xd1 + w.wv * d, *ac.point->term->obstacles()[ac.point->obstacle], ac.c);
          g_.segment<3>(3 * a) -= f.f - ac.f1.f;
        }
        const ContactForce& fa = it > 0 ? f : ac.f1;
        jg_.block<3, 3>(3 * a, 3 * a) -= w.wq * fa.df_dx + w.wv * fa.df_dxdot;
      }
      if (it > 0 && g_.norm() <= target) break;
      if (it == kMaxLocalIterations) break;
      local_lu_.compute(jg_);
      delta_ -= local_lu_.solve(g_);
      if (!(ok = delta_.allFinite())) break;
      g_ = r_pred + j_rest_ * delta_;
    }
    if (!ok) continue;
    for (int a = 0; a < m; ++a) dq.segment<3>(active_[a].point->dof) += delta_.segment<3>(3 * a);
    corrected += m;
  }
  return corrected;
}

}  // namespace addsim
