#include "addsim/sensitivity/contact_signature.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "addsim/core/error.h"
#include "addsim/integrators/bdf.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/terms/contact_term.h"

namespace addsim {

namespace {

// Code of a pair from its penalty force and, with hybrid contact, its recorded label.
ContactCode code_of(const ContactForce& f, ContactModel model, bool held, bool sliding) {
  if (f.regime == ContactRegime::kSeparated) return ContactCode::kSeparated;
  if (held) return ContactCode::kHeld;
  if (sliding) return ContactCode::kSliding;
  // tanh friction is smooth across k_t ‖Tẋ‖ = c_f f_n: the regime there is only a report.
  if (model != ContactModel::kTanh && f.regime == ContactRegime::kSlip) return ContactCode::kLimited;
  return ContactCode::kTouching;
}

}  // namespace

const char* to_string(ContactCode code) {
  switch (code) {
    case ContactCode::kSeparated: return "separated";
    case ContactCode::kTouching: return "touching";
    case ContactCode::kLimited: return "limited";
    case ContactCode::kHeld: return "held";
    case ContactCode::kSliding: return "sliding";
  }
  return "?";
}

int ContactSignature::contact_steps() const {
  return static_cast<int>(std::count_if(codes.begin(), codes.end(), [](const std::vector<ContactCode>& step) {
    return std::any_of(step.begin(), step.end(), [](ContactCode c) { return c != ContactCode::kSeparated; });
  }));
}

ContactSignature contact_signature(const Model& model, const Trajectory& traj) {
  ADDSIM_CHECK(model.finalized(), "the model must be finalised");
  const TimeScheme& s = traj.scheme(model.scheme());
  std::vector<const PointContactTerm*> points;
  std::vector<const RigidContactTerm*> rigids;
  ContactSignature out;
  for (const auto& t : model.terms()) {
    if (const auto* pc = dynamic_cast<const PointContactTerm*>(t.get())) {
      points.push_back(pc);
      for (int o = 0; o < pc->num_obstacles(); ++o)
        for (int k = 0; k < pc->num_points(); ++k)
          out.pairs.push_back("point_contact dof " + std::to_string(pc->dofs()[k]) + " / " +
                              pc->obstacles()[o]->name());
    } else if (const auto* rc = dynamic_cast<const RigidContactTerm*>(t.get())) {
      rigids.push_back(rc);
      for (int o = 0; o < rc->num_obstacles(); ++o)
        for (int k = 0; k < rc->num_points(); ++k)
          out.pairs.push_back("rigid_contact dof " + std::to_string(rc->body().dof()) + " point " + std::to_string(k) +
                              " / " + rc->obstacles()[o]->name());
    }
  }
  // Over the internal steps (a sub-stepped run's grid included).
  const int m = traj.internal_steps();
  const StateHistory hist = traj.history();
  VecX q, v, a, v_hist, a_hist;
  for (int i = 1; i <= m; ++i) {
    // Rates at the converged state, as the forward step formed them.
    bdf_history_terms(s, hist, i, v_hist, a_hist);
    q = traj.state(i);
    bdf_rates(s, i, q, v_hist, a_hist, v, a);
    const TermContext ctx{q, v, a, traj.p, s.row(i), s};
    // Hybrid labels of the step: held points (by DOF, or body DOF and proxy point) and sliding ones.
    std::set<std::tuple<DofIndex, int, int>> held;
    std::set<std::tuple<const PointContactTerm*, int, int>> sliding;
    std::set<std::tuple<const RigidContactTerm*, int, int>> rigid_sliding;
    if (traj.substepped() || i <= static_cast<int>(traj.reports.size())) {
      const ContactState& c = traj.internal_report(i).contact;
      for (const StickPoint& sp : c.sticking) held.insert({sp.dof, sp.point, sp.obstacle});
      for (const StickPoint& sp : c.rigid_sticking) held.insert({sp.dof, sp.point, sp.obstacle});
      for (const SlipPoint& sp : c.sliding) sliding.insert({sp.term, sp.k, sp.obstacle});
      for (const RigidSlipPoint& sp : c.rigid_sliding) rigid_sliding.insert({sp.term, sp.k, sp.obstacle});
    }
    std::vector<ContactCode>& codes = out.codes.emplace_back();
    codes.reserve(out.pairs.size());
    for (const PointContactTerm* pc : points) {
      const ContactModel cm = pc->settings().model;
      for (int o = 0; o < pc->num_obstacles(); ++o)
        for (int k = 0; k < pc->num_points(); ++k)
          codes.push_back(code_of(pc->force(ctx, k, o), cm, held.count({pc->dofs()[k], -1, o}) > 0,
                                  sliding.count({pc, k, o}) > 0));
    }
    for (const RigidContactTerm* rc : rigids) {
      const ContactModel cm = rc->settings().model;
      for (int o = 0; o < rc->num_obstacles(); ++o)
        for (int k = 0; k < rc->num_points(); ++k)
          codes.push_back(code_of(rc->force(ctx, k, o), cm, held.count({rc->body().dof(), k, o}) > 0,
                                  rigid_sliding.count({rc, k, o}) > 0));
    }
  }
  return out;
}

SignatureDifference compare(const ContactSignature& a, const ContactSignature& b) {
  ADDSIM_CHECK(a.pairs.size() == b.pairs.size(), "contact signatures of different models");
  SignatureDifference out;
  const size_t common = std::min(a.codes.size(), b.codes.size());
  for (size_t i = 0; i < common; ++i) {
    const auto& ca = a.codes[i];
    const auto& cb = b.codes[i];
    const auto diff = std::mismatch(ca.begin(), ca.end(), cb.begin());
    if (diff.first == ca.end()) continue;
    if (out.steps++ == 0) {
      const size_t k = static_cast<size_t>(diff.first - ca.begin());
      out.first_step = static_cast<int>(i) + 1;
      out.first = "step " + std::to_string(i + 1) + ": " + a.pairs[k] + " " + to_string(*diff.first) + " -> " +
                  to_string(*diff.second);
    }
  }
  const size_t longer = std::max(a.codes.size(), b.codes.size());
  if (longer > common) {
    if (out.steps == 0) {
      out.first_step = static_cast<int>(common) + 1;
      out.first = "step " + std::to_string(common + 1) + ": recorded in one rollout only";
    }
    out.steps += static_cast<int>(longer - common);
  }
  return out;
}

}  // namespace addsim
