#include "addsim/solver/sqp_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include <Eigen/Geometry>

#include "addsim/core/error.h"

namespace addsim {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
constexpr double kRoundoffFactor = 64.0 * std::numeric_limits<double>::epsilon();
constexpr double kArmijo = 1e-4;
constexpr double kStepFloor = 1e-12;
// The lagged friction magnitude converges linearly: allow many more iterations than Newton.
constexpr int kMaxSqpIterations = 400;

const PlaneObstacle& plane(const PointContactTerm& term, int o) {
  return static_cast<const PlaneObstacle&>(*term.obstacles()[o]);
}
}  // namespace

SqpContact::SqpContact(const Model& model) : model_(model) {
  for (const auto& t : model.terms()) {
    const auto* term = dynamic_cast<const PointContactTerm*>(t.get());
    if (!term || term->settings().model != ContactModel::kSqp) continue;
    for (const auto& o : term->obstacles())
      if (!dynamic_cast<const PlaneObstacle*>(o.get()))
        throw InputError("sqp contact supports planar obstacles only (obstacle '" + o->name() + "')");
    for (int k = 0; k < term->num_points(); ++k) points_.push_back({term, k, term->dofs()[k]});
  }
  if (!points_.empty()) rows_ = StickRows(model.pattern());
  states_.assign(points_.size(), State{});
}

Mat3 SqpContact::frame(const Point& pt, const State& st) const {
  const Vec3 n = plane(*pt.term, st.obstacle).normal();
  Vec3 t1, t2;
  if (st.label == Label::kSlip) {
    t1 = st.t;
    t2 = n.cross(t1);
  } else {
    tangent_basis(n, t1, t2);
  }
  Mat3 f;
  f.row(0) = t1.transpose();
  f.row(1) = t2.transpose();
  f.row(2) = n.transpose();
  return f;
}

void SqpContact::constrain(const VecX& q, const VecX& v, VecX& r) const {
  for (size_t j = 0; j < points_.size(); ++j) {
    const State& st = states_[j];
    if (st.label == Label::kFree) continue;
    const Point& pt = points_[j];
    const Mat3 f = frame(pt, st);
    Vec3 n;
    Mat3 H;
    const double g = pt.term->obstacles()[st.obstacle]->gap(q.segment<3>(pt.dof), n, H);
    const Vec3 rk = r.segment<3>(pt.dof);
    if (st.label == Label::kStick) {
      r[pt.dof] = f.row(0).dot(v.segment<3>(pt.dof));
      r[pt.dof + 1] = f.row(1).dot(v.segment<3>(pt.dof));
    } else {
      r[pt.dof] = f.row(0).dot(rk) - st.cf * st.fn;
      r[pt.dof + 1] = f.row(1).dot(rk);
    }
    r[pt.dof + 2] = g;
  }
}

int SqpContact::update_labels(const VecX& q, const VecX& v, const VecX& r, const VecX& p, double h,
                              ContactState* record) {
  int changed = 0;
  for (size_t j = 0; j < points_.size(); ++j) {
    State& st = states_[j];
    const Point& pt = points_[j];
    const Vec3 rk = r.segment<3>(pt.dof);
    if (st.label == Label::kFree) {
      if (st.changes >= kMaxLabelChanges) continue;
      for (int o = 0; o < pt.term->num_obstacles(); ++o) {
        Vec3 n;
        Mat3 H;
        if (pt.term->obstacles()[o]->gap(q.segment<3>(pt.dof), n, H) < 0.0) {
          st.label = Label::kStick;
          st.obstacle = o;
          st.cf = coefficients(pt.term->settings(), *pt.term->obstacles()[o], p, h).cf;
          ++st.changes;
          ++changed;
          break;
        }
      }
      continue;
    }
    const Vec3 n = plane(*pt.term, st.obstacle).normal();
    const double fn = n.dot(rk);
    if (fn < 0.0) {
      st.label = Label::kFree;
      ++changed;
      continue;
    }
    if (st.label == Label::kStick) {
      const Vec3 ft = rk - n * fn;
      if (ft.norm() > st.cf * fn) {
        st.label = Label::kSlip;
        st.t = ft / ft.norm();
        st.fn = fn;
        ++changed;
      } else if (record) {
        StickPoint s;
        s.dof = pt.dof;
        s.obstacle = st.obstacle;
        s.n = n;
        tangent_basis(n, s.t1, s.t2);
        s.force = ft;
        s.limit = st.cf * fn;
        record->sticking.push_back(s);
      }
    } else if (st.t.dot(v.segment<3>(pt.dof)) > 0.0 && st.changes < kMaxLabelChanges) {
      st.label = Label::kStick;
      ++st.changes;
      ++changed;
    } else {
      st.fn = fn;  // lagged magnitude: Coulomb limit of the current normal force
    }
    if (record && st.label != Label::kFree) record->touching.push_back(pt.dof);
  }
  return changed;
}

StepReport SqpContact::solve_step(Simulator& sim, int step, const StateHistory& hist, const VecX& p, VecX& q) {
  const auto t_step = Clock::now();
  const TimeScheme& s = model_.scheme();
  const SolverSettings& opt = model_.solver();
  Assembly& assembly = sim.assembly();
  StepReport rep;
  rep.step = step;
  bdf_history_terms(s, hist, step, v_hist_, a_hist_);
  const JacobianWeights w0 = bdf_weights(s, step, 0);
  for (State& st : states_) st = State{};

  auto eval = [&](const VecX& q_eval, EvalMode mode, std::string* why) {
    const auto t0 = Clock::now();
    const double norm = sim.evaluate_trial(step, q_eval, v_hist_, a_hist_, p, mode, v_, a_, assembly, why,
                                           [&](const TermContext&) -> const VecX& {
                                             r_ = assembly.r;
                                             constrain(q_eval, v_, r_);
                                             return r_;
                                           });
    rep.assembly_ms += ms_since(t0);
    ++rep.assemblies;
    return norm;
  };

  std::string why;
  double norm = eval(q, EvalMode::kResidualAndJacobians, &why);
  if (!std::isfinite(norm)) {
    rep.failure = "initial guess is inadmissible: " + why;
    rep.residual_norm = norm;
    rep.wall_ms = ms_since(t_step);
    return rep;
  }
  rep.residual_history.push_back(norm);
  double tol = std::max(opt.tolerance, kRoundoffFactor * assembly.r_abs.norm());
  const double switch_tol = std::sqrt(opt.tolerance);
  bool floor_reached = false;
  double floor_tol = 0.0;  // ‖r_c‖ at the round-off floor (×2 margin for the lagged update)

  while (true) {
    if (norm < std::max(switch_tol, tol) || floor_reached) {
      floor_reached = false;
      bdf_rates(s, step, q, v_hist_, a_hist_, v_, a_);
      const int changed = update_labels(q, v_, assembly.r, p, s.h, nullptr);
      rep.contact.label_changes += changed;
      norm = eval(q, EvalMode::kResidualAndJacobians, &why);
      rep.residual_history.push_back(norm);
      tol = std::max({opt.tolerance, kRoundoffFactor * assembly.r_abs.norm(), floor_tol});
      if (changed == 0 && norm < tol) {
        rep.converged = true;
        break;
      }
    }
    if (rep.iterations >= kMaxSqpIterations) {
      rep.failure = "iteration cap of " + std::to_string(kMaxSqpIterations) + " reached (sqp contact)";
      break;
    }
    combine_partials(w0, assembly.kq, assembly.kv, assembly.ka, jac_);
    for (size_t j = 0; j < points_.size(); ++j) {
      const State& st = states_[j];
      if (st.label == Label::kFree) continue;
      const bool stick = st.label == Label::kStick;
      const bool constrained[3] = {stick, stick, true};
      rows_.replace_point_rows(points_[j].dof, frame(points_[j], st), Vec3(w0.wv, w0.wv, 1.0), constrained, jac_);
    }
    rhs_ = -r_;
    ++rep.iterations;
    if (!sim.solve_linear(jac_, rhs_, dq_, rep)) {
      rep.failure = "KKT step Jacobian is singular";
      break;
    }
    if (!dq_.allFinite()) {
      rep.failure = "KKT step is not finite";
      break;
    }
    // Plain backtracking on ‖r_c‖ (the paper notes SQP is hard to stabilise this way; the
    // full step is taken if no decrease is found, so the active set can still move).
    double alpha = 1.0, trial = std::numeric_limits<double>::infinity();
    int halvings = 0;
    while (true) {
      q_trial_ = q + alpha * dq_;
      trial = eval(q_trial_, EvalMode::kResidual, &why);
      if (trial <= (1.0 - kArmijo * alpha) * norm || halvings >= opt.max_halvings) break;
      alpha *= 0.5;
      ++halvings;
    }
    rep.line_search_halvings += halvings;
    if (!(trial <= (1.0 - kArmijo * alpha) * norm)) {
      if (dq_.lpNorm<Eigen::Infinity>() <= kStepFloor * (1.0 + q.lpNorm<Eigen::Infinity>())) {
        floor_reached = true;
        floor_tol = 2.0 * norm;
        rep.note = "converged at the round-off floor of ‖r‖";
        continue;
      }
      alpha = 1.0;
      q_trial_ = q + dq_;
    }
    q = q_trial_;
    norm = eval(q, EvalMode::kResidualAndJacobians, &why);
    if (!std::isfinite(norm)) {
      rep.failure = "inadmissible state: " + why;
      break;
    }
    rep.residual_history.push_back(norm);
    tol = std::max({opt.tolerance, kRoundoffFactor * assembly.r_abs.norm(), floor_tol});
  }
  if (rep.converged) {
    bdf_rates(s, step, q, v_hist_, a_hist_, v_, a_);
    update_labels(q, v_, assembly.r, p, s.h, &rep.contact);
  }
  rep.residual_norm = norm;
  rep.tolerance_used = tol;
  rep.wall_ms = ms_since(t_step);
  return rep;
}

}  // namespace addsim
