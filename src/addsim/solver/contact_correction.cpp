#include "addsim/solver/contact_correction.h"

#include <cmath>

#include "addsim/model/model.h"
#include "addsim/solver/worker_thread.h"
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
  // The two threads' split: the worker takes the groups from split_ on, the first place where
  // the calling thread's groups hold at least half of the points (the soft-feet quadruped:
  // two feet each). A fixed place, so which thread computes a group never depends on timing.
  size_t total = 0, lower = 0;
  for (const auto& g : groups_) total += g.size();
  split_ = static_cast<int>(groups_.size());
  for (size_t k = 0; k < groups_.size(); ++k) {
    lower += groups_[k].size();
    if (2 * lower >= total) {
      split_ = static_cast<int>(k) + 1;
      break;
    }
  }
}

int ContactCorrection::correct(const VecX& q, const VecX& v, const VecX& p, double h, const JacobianWeights& w,
                               const VecX& jac, double norm, VecX& dq, WorkerThread* worker) const {
  const Call call{q, v, p, h, w, jac, norm, dq};
  const int n = static_cast<int>(groups_.size());
  if (!worker || split_ >= n || !worker->available()) return correct_groups(call, 0, n, scratch_[0]);
  int lower = 0, upper = 0;
  const auto worker_side = [&] { upper = correct_groups(call, split_, n, scratch_[1]); };
  // The task captures one pointer, which std::function keeps without a heap allocation.
  worker->run_alongside([task = &worker_side] { (*task)(); },
                        [&] { lower = correct_groups(call, 0, split_, scratch_[0]); });
  return lower + upper;
}

int ContactCorrection::correct_groups(const Call& call, int begin, int end, Scratch& sc) const {
  const VecX& q = call.q;
  const VecX& v = call.v;
  const VecX& p = call.p;
  const double h = call.h;
  const JacobianWeights& w = call.w;
  const VecX& jac = call.jac;
  const double norm = call.norm;
  VecX& dq = call.dq;
  const auto& outer = model_.pattern().outer();
  const auto& inner = model_.pattern().inner();
  int corrected = 0;
  for (int gi = begin; gi < end; ++gi) {
    const std::vector<Point>& group = groups_[gi];
    sc.active.clear();
    const int n_max = 3 * static_cast<int>(group.size());
    sc.r_pred.resize(n_max);
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
      sc.r_pred.segment<3>(3 * static_cast<int>(sc.active.size())) = -(f1.f - f0.f - k0 * dx);
      sc.active.push_back({&pt, c, x1, xd1, f1, k0});
    }
    const int m = static_cast<int>(sc.active.size());
    if (m == 0) continue;
    const auto r_pred = sc.r_pred.head(3 * m);
    // A group whose predicted residual is far below ‖r(q)‖ barely changes the next iterate.
    const double r_pred_norm = r_pred.norm();
    if (!(r_pred_norm > kNegligible * norm)) continue;
    for (int a = 0; a < m; ++a)
      for (int i = 0; i < 3; ++i) local_[sc.active[a].point->dof + i] = 3 * a + i;
    // J restricted to the group, with the contact laws' partials at q taken back out.
    sc.j_rest.setZero(3 * m, 3 * m);
    for (int a = 0; a < m; ++a) {
      for (int i = 0; i < 3; ++i) {
        const int col = sc.active[a].point->dof + i;
        for (int k = outer[col]; k < outer[col + 1]; ++k)
          if (const int row = local_[inner[k]]; row >= 0) sc.j_rest(row, 3 * a + i) = jac[k];
      }
      sc.j_rest.block<3, 3>(3 * a, 3 * a) += sc.active[a].k0;
    }
    for (int a = 0; a < m; ++a)
      for (int i = 0; i < 3; ++i) local_[sc.active[a].point->dof + i] = -1;
    // Newton on g(δ) = r^pred + J_rest δ − [f(q + Δq + δ) − f(q + Δq)] from δ = 0, where
    // g = r^pred and the contact partials are those at q + Δq.
    const double target = kLocalReduction * r_pred_norm;
    sc.delta.setZero(3 * m);
    sc.g = r_pred;
    bool ok = true;
    for (int it = 0;; ++it) {
      sc.jg = sc.j_rest;
      for (int a = 0; a < m; ++a) {
        const Active& ac = sc.active[a];
        ContactForce f;
        if (it > 0) {
          const Vec3 d = sc.delta.segment<3>(3 * a);
          f = contact_force(ac.x1 + d, ac.xd1 + w.wv * d, *ac.point->term->obstacles()[ac.point->obstacle], ac.c);
          sc.g.segment<3>(3 * a) -= f.f - ac.f1.f;
        }
        const ContactForce& fa = it > 0 ? f : ac.f1;
        sc.jg.block<3, 3>(3 * a, 3 * a) -= w.wq * fa.df_dx + w.wv * fa.df_dxdot;
      }
      if (it > 0 && sc.g.norm() <= target) break;
      if (it == kMaxLocalIterations) break;
      sc.lu.compute(sc.jg);
      sc.delta -= sc.lu.solve(sc.g);
      if (!(ok = sc.delta.allFinite())) break;
      sc.g = r_pred + sc.j_rest * sc.delta;
    }
    if (!ok) continue;
    for (int a = 0; a < m; ++a) dq.segment<3>(sc.active[a].point->dof) += sc.delta.segment<3>(3 * a);
    corrected += m;
  }
  return corrected;
}

}  // namespace addsim
