#include "addsim/solver/sqp_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>

#include "addsim/core/error.h"
#include "addsim/solver/newton_step.h"

namespace addsim {

namespace {
using namespace step;
constexpr double kRoundoffStep = 4.0 * std::numeric_limits<double>::epsilon();
// The lagged friction magnitude converges linearly: allow many more iterations than Newton.
constexpr int kMaxSqpIterations = 400;
// Eigenvalues of BᵀB below this fraction of the largest are not enforced: redundant
// constraint directions of a rigid body (4 coplanar corners: 4 normal rows of rank 3), as
// the hybrid model's stick projector.
constexpr double kRankTolerance = 1e-8;
// A rigid body's lagged sliding magnitudes count as settled once they change by less than
// this fraction of the body's total normal force in a check (normal releases wait for it).
constexpr double kLagTolerance = 1e-3;
using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
using Mat36 = Eigen::Matrix<double, 3, 6>;

const PlaneObstacle& plane(const PointContactTerm& term, int o) {
  return static_cast<const PlaneObstacle&>(*term.obstacles()[o]);
}
const PlaneObstacle& plane(const RigidContactTerm& term, int o) {
  return static_cast<const PlaneObstacle&>(*term.obstacles()[o]);
}
}  // namespace

SqpContact::SqpContact(const Model& model) : model_(model) {
  step::ActiveSetPoints c = step::collect_active_set_points(model, ContactModel::kSqp, "sqp");
  points_ = std::move(c.points);
  rpoints_ = std::move(c.rigid_points);
  rbodies_ = std::move(c.bodies);
  if (active()) rows_ = StickRows(model.pattern());
  states_.assign(points_.size(), State{});
  rstates_.assign(rpoints_.size(), State{});
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

namespace sqp_detail {

void body_kkt_rows(const std::vector<BodyConstraint>& cs, const Vec6& r_body, const Vec6& v_body, double wv,
                   int& rank, Vec6& rc, VecX* lambda_out, StickBody* sb) {
  int m = 0;
  for (const BodyConstraint& c : cs) m += c.stick ? 3 : 1;
  ADDSIM_CHECK(m > 0, "SQP body KKT rows need at least one active point");
  // Constraint rows, one per multiplier: B (m × 6) maps the multipliers to generalised forces
  // (Bᵀλ; eq. rbMf), h̃ the constraint values (w_v g_k: normal, m/s; T̄ₖ ẋ_k: stick, m/s).
  // For a plane ∂g/∂q = nᵀPv, so ∂h̃/∂q^i = w_v B + E e_θᵀ with E = T̄ (∂Pv/∂θ_j) v on stick rows.
  MatX B(m, 6), E = MatX::Zero(m, 3);
  std::array<MatX, 3> dB;
  for (MatX& d : dB) d.resize(m, 6);
  VecX h(m);
  Vec6 fslide = Vec6::Zero();  // generalised lagged sliding forces Σ Pvᵀ c_f λ t
  Eigen::Matrix<double, 6, 3> dfslide = Eigen::Matrix<double, 6, 3>::Zero();
  int row = 0;
  for (const BodyConstraint& c : cs) {
    Vec3 dirs[3] = {c.n, Vec3::Zero(), Vec3::Zero()};
    int nd = 1;
    if (c.stick) {
      tangent_basis(c.n, dirs[1], dirs[2]);
      nd = 3;
    } else {
      fslide += c.Pv.transpose() * c.slide_force;
      for (int j = 0; j < 3; ++j) dfslide.col(j) += c.dPv[j].transpose() * c.slide_force;
    }
    for (int d = 0; d < nd; ++d, ++row) {
      B.row(row) = dirs[d].transpose() * c.Pv;
      for (int j = 0; j < 3; ++j) dB[j].row(row) = dirs[d].transpose() * c.dPv[j];
      if (d == 0) {
        h[row] = wv * c.g;
      } else {
        h[row] = B.row(row).dot(v_body);
        for (int j = 0; j < 3; ++j) E(row, j) = dB[j].row(row).dot(v_body);
      }
    }
  }
  // Enforced directions: the top-`rank` eigenvectors U of G = BᵀB; P = U Uᵀ, G⁺ = U Λ⁻¹ Uᵀ,
  // B⁺ = G⁺Bᵀ (minimum-norm pseudo-inverse; redundant rows give zero eigenvalues).
  const Mat6 G = B.transpose() * B;
  const Eigen::SelfAdjointEigenSolver<Mat6> eig(G);
  const Vec6& lam = eig.eigenvalues();  // ascending
  if (rank < 0) {
    rank = 0;
    for (int i = 0; i < 6; ++i)
      if (lam[i] > kRankTolerance * lam[5]) ++rank;
  }
  const int rk = rank;
  const MatX U = eig.eigenvectors().rightCols(rk);
  const Mat6 P = U * U.transpose();
  const Mat6 Q = Mat6::Identity() - P;
  const Mat6 Gp = U * lam.tail(rk).cwiseInverse().asDiagonal() * U.transpose();
  const MatX Bp = Gp * B.transpose();
  const Vec6 F = r_body - fslide;          // = Bᵀλ at a KKT point
  const VecX lambda = Bp.transpose() * F;  // minimum-norm multipliers
  const Vec6 Bph = Bp * h;
  rc = Q * F + Bph;
  if (lambda_out) *lambda_out = lambda;
  if (sb) {
    // ∂r_c/∂θ_j beyond (I − P) ∂r/∂q^i + w_v P, for constant rank (Golub–Pereyra):
    //   ∂B⁺ = −B⁺ ∂B B⁺ + G⁺ ∂Bᵀ (I − B B⁺) + (I − P) ∂Bᵀ B⁺ᵀ B⁺,
    //   ∂P = B⁺ ∂B (I − P) + (I − P) ∂Bᵀ B⁺ᵀ,
    // so D_j = −(I − P) ∂f_slide/∂θ_j − ∂P F + B⁺ E_j + ∂B⁺ h̃. ∂P F carries the multiplier
    // (Lagrangian Hessian) term (I − P) ∂Bᵀ λ; the terms in (I − P)F and h̃ vanish at the solution.
    const Vec6 QF = Q * F;
    const VecX h_off = h - B * Bph;
    const VecX BpTBph = Bp.transpose() * Bph;
    sb->rank = rk;
    sb->P = P;
    for (int j = 0; j < 3; ++j) {
      const Vec6 dPF = Bp * (dB[j] * QF) + Q * (dB[j].transpose() * lambda);
      const Vec6 dBph = -Bp * (dB[j] * Bph) + Gp * (dB[j].transpose() * h_off) + Q * (dB[j].transpose() * BpTBph);
      sb->D.col(j) = -Q * dfslide.col(j) - dPF + Bp * E.col(j) + dBph;
    }
  }
}

}  // namespace sqp_detail

bool SqpContact::body_rows(const TermContext& ctx, const VecX& r, RigidBodyRows& b, Vec6& rc, StickBody* sb,
                           std::vector<Vec3>* forces) const {
  if (forces) forces->assign(b.points.size(), Vec3::Zero());
  rc = r.segment<6>(b.dof);
  // The active points' constraint data at ctx, and each point's first multiplier row.
  std::vector<sqp_detail::BodyConstraint> cs;
  std::vector<int> first_row(b.points.size(), -1);
  int m = 0;
  for (size_t slot = 0; slot < b.points.size(); ++slot) {
    const State& st = rstates_[b.points[slot]];
    if (st.label == Label::kFree) continue;
    const RigidPoint& pt = rpoints_[b.points[slot]];
    sqp_detail::BodyConstraint c;
    c.g = pt.term->point_jacobian(ctx, pt.k, st.obstacle, c.Pv, c.dPv);
    c.n = plane(*pt.term, st.obstacle).normal();
    c.stick = st.label == Label::kStick;
    if (!c.stick) c.slide_force = st.cf * st.fn * st.t;
    first_row[slot] = m;
    m += c.stick ? 3 : 1;
    cs.push_back(c);
  }
  if (m == 0) return false;
  VecX lambda;
  if (sb) sb->dof = b.dof;
  sqp_detail::body_kkt_rows(cs, r.segment<6>(b.dof), ctx.v.segment<6>(b.dof), wv_, b.rank, rc,
                            forces ? &lambda : nullptr, sb);
  // Each point's multiplier force n λ + T̄ᵀμ (world, N).
  if (forces)
    for (size_t slot = 0; slot < b.points.size(); ++slot) {
      if (first_row[slot] < 0) continue;
      const State& st = rstates_[b.points[slot]];
      const int i = first_row[slot];
      const Vec3 n = plane(*rpoints_[b.points[slot]].term, st.obstacle).normal();
      Vec3& f = (*forces)[slot];
      f = lambda[i] * n;
      if (st.label == Label::kStick) {
        Vec3 t1, t2;
        tangent_basis(n, t1, t2);
        f += lambda[i + 1] * t1 + lambda[i + 2] * t2;
      }
    }
  return true;
}

int SqpContact::update_rigid_labels(const TermContext& ctx, const VecX& r, ContactState* record) {
  int changed = 0;
  std::vector<Vec3> forces;
  Vec6 rc;
  for (RigidBodyRows& b : rbodies_) {
    body_rows(ctx, r, b, rc, nullptr, &forces);
    // The normal multipliers of a body are not yet physical while a sticking point's
    // multiplier is outside its Coulomb cone or a lagged sliding magnitude is stale (excess
    // friction at the base tilts the body onto its leading points, so trailing points show
    // λ < 0 and would be released and re-activated until the change limit): such a check
    // only updates the friction (stick → slide, lagged magnitudes) and defers λ < 0 → free.
    std::vector<double> fns(b.points.size(), 0.0);  // normal multipliers λ_k, N
    double fn_scale = 0.0;
    for (size_t slot = 0; slot < b.points.size(); ++slot) {
      const State& st = rstates_[b.points[slot]];
      if (st.label == Label::kFree) continue;
      fns[slot] = plane(*rpoints_[b.points[slot]].term, st.obstacle).normal().dot(forces[slot]);
      fn_scale += std::abs(fns[slot]);
    }
    bool defer_release = false;
    for (size_t slot = 0; slot < b.points.size(); ++slot) {
      const State& st = rstates_[b.points[slot]];
      const double fn = std::max(fns[slot], 0.0);
      if (st.label == Label::kStick) {
        const Vec3 n = plane(*rpoints_[b.points[slot]].term, st.obstacle).normal();
        if ((forces[slot] - n * fns[slot]).norm() > st.cf * fn) defer_release = true;
      } else if (st.label == Label::kSlip && std::abs(fn - st.fn) > kLagTolerance * fn_scale) {
        defer_release = true;
      }
    }
    int body_changes = 0, pending = 0;
    for (size_t slot = 0; slot < b.points.size(); ++slot) {
      const int j = b.points[slot];
      State& st = rstates_[j];
      const RigidPoint& pt = rpoints_[j];
      Mat36 Pv;
      std::array<Mat36, 3> dPv;
      if (st.label == Label::kFree) {
        if (st.changes >= kMaxLabelChanges) continue;
        for (int o = 0; o < pt.term->num_obstacles(); ++o) {
          if (pt.term->point_jacobian(ctx, pt.k, o, Pv, dPv) < 0.0) {
            st.label = Label::kStick;
            st.obstacle = o;
            st.cf = coefficients(pt.term->settings(), *pt.term->obstacles()[o], ctx.p, ctx.scheme.h).cf;
            ++st.changes;
            ++body_changes;
            break;
          }
        }
        continue;
      }
      const Vec3 n = plane(*pt.term, st.obstacle).normal();
      const double fn = n.dot(forces[slot]);
      if (fn < 0.0) {
        if (!defer_release) {
          st.label = Label::kFree;
          ++body_changes;
          continue;
        }
        ++pending;  // a deferred release: the step cannot end before it is decided
      }
      if (st.label == Label::kStick) {
        const Vec3 ft = forces[slot] - n * fn;
        if (ft.norm() > st.cf * std::max(fn, 0.0)) {
          st.label = Label::kSlip;
          st.t = ft / ft.norm();
          st.fn = std::max(fn, 0.0);
          ++body_changes;
        } else if (record) {
          record->rigid_sticking.push_back(make_stick_point(b.dof, st.obstacle, n, ft, st.cf * fn, pt.k));
        }
        continue;
      }
      pt.term->point_jacobian(ctx, pt.k, st.obstacle, Pv, dPv);
      if (st.t.dot(Pv * ctx.v.segment<6>(b.dof)) > 0.0 && st.changes < kMaxLabelChanges) {
        st.label = Label::kStick;
        ++st.changes;
        ++body_changes;
      } else {
        st.fn = std::max(fn, 0.0);  // lagged magnitude: Coulomb limit of the current normal force
      }
    }
    if (body_changes > 0) b.rank = -1;  // the constraint set changed: determine the rank anew
    changed += body_changes + pending;
  }
  return changed;
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
        record->sticking.push_back(make_stick_point(pt.dof, st.obstacle, n, ft, st.cf * fn));
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
  const TimeScheme& s = sim.scheme();
  const SolverSettings& opt = model_.solver();
  Assembly& assembly = sim.assembly();
  StepReport rep;
  rep.step = step;
  bdf_history_terms(s, hist, step, v_hist_, a_hist_);
  const JacobianWeights w0 = bdf_weights(s, step, 0);
  wv_ = w0.wv;
  for (State& st : states_) st = State{};
  for (State& st : rstates_) st = State{};
  for (RigidBodyRows& b : rbodies_) b.rank = -1;

  auto eval = [&](const VecX& q_eval, EvalMode mode, std::string* why) {
    const auto t0 = Clock::now();
    const bool jac = mode == EvalMode::kResidualAndJacobians;
    const double norm = sim.evaluate_trial(step, q_eval, v_hist_, a_hist_, p, mode, v_, a_, assembly, why,
                                           [&](const TermContext& ctx) -> const VecX& {
                                             r_ = assembly.r;
                                             constrain(q_eval, v_, r_);
                                             if (jac) bodies_.clear();
                                             for (RigidBodyRows& b : rbodies_) {
                                               Vec6 rc;
                                               StickBody sb;
                                               if (!body_rows(ctx, assembly.r, b, rc, jac ? &sb : nullptr, nullptr))
                                                 continue;
                                               r_.segment<6>(b.dof) = rc;
                                               if (jac) bodies_.push_back(sb);
                                             }
                                             return r_;
                                           });
    rep.assembly_ms += ms_since(t0);
    ++rep.assemblies;
    return norm;
  };

  std::string why;
  double norm = eval(q, EvalMode::kResidualAndJacobians, &why);
  if (initial_guess_failed(norm, why, t_step, rep)) return rep;
  const double tol_scaled = sim.scaled_tolerance(assembly.r_abs);
  double tol = std::max(tol_scaled, kRoundoffFactor * assembly.r_abs.norm());
  const double switch_tol = std::sqrt(opt.tolerance);
  bool floor_reached = false;
  // Line-search trials: the partials are evaluated once a trial is taken.
  const TrialEval trial_eval = [&](const VecX& q_trial, bool, std::string* trial_why) {
    return eval(q_trial, EvalMode::kResidual, trial_why);
  };
  double floor_tol = 0.0;  // ‖r_c‖ at the round-off floor (×2 margin for the lagged update)

  while (true) {
    if (norm < std::max(switch_tol, tol) || floor_reached) {
      floor_reached = false;
      bdf_rates(s, step, q, v_hist_, a_hist_, v_, a_);
      const TermContext ctx{q, v_, a_, p, s.row(step), s};
      const int changed =
          update_labels(q, v_, assembly.r, p, s.h, nullptr) + update_rigid_labels(ctx, assembly.r, nullptr);
      rep.contact.label_changes += changed;
      norm = eval(q, EvalMode::kResidualAndJacobians, &why);
      rep.residual_history.push_back(norm);
      tol = std::max({tol_scaled, kRoundoffFactor * assembly.r_abs.norm(), floor_tol});
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
    rows_.constrain_body_matrix(bodies_, w0.wv, true, jac_);
    rhs_ = -r_;
    ++rep.iterations;
    if (!sim.solve_linear(q, jac_, rhs_, dq_, rep)) {
      rep.failure = "KKT step Jacobian is singular";
      break;
    }
    if (!dq_.allFinite()) {
      rep.failure = "KKT step is not finite";
      break;
    }
    // A Newton step at the round-off level of q cannot reduce ‖r_c‖ further (a rigid body's
    // inertia rows resolve q only to ≈ ε |q| m w_a, above a tight tolerance, and each check's
    // lagged-magnitude update moves r_c at that level): accept the round-off floor.
    if (norm < switch_tol && dq_.lpNorm<Eigen::Infinity>() <= kRoundoffStep * (1.0 + q.lpNorm<Eigen::Infinity>())) {
      floor_reached = true;
      floor_tol = 2.0 * norm;
      rep.note = "converged at the round-off floor of ‖r‖";
      continue;
    }
    // Plain backtracking on ‖r_c‖ (the paper notes SQP is hard to stabilise this way; the
    // full step is taken if no decrease is found, so the active set can still move).
    const LineSearchResult ls = backtrack(q, dq_, norm, opt.max_halvings, trial_eval, q_trial_, &why, rep);
    if (!ls.decreased) {
      if (below_step_floor(dq_, q)) {
        floor_reached = true;
        floor_tol = 2.0 * norm;
        rep.note = "converged at the round-off floor of ‖r‖";
        continue;
      }
      q_trial_ = q + dq_;
    }
    q = q_trial_;
    norm = eval(q, EvalMode::kResidualAndJacobians, &why);
    if (!std::isfinite(norm)) {
      rep.failure = "inadmissible state: " + why;
      break;
    }
    rep.residual_history.push_back(norm);
    tol = std::max({tol_scaled, kRoundoffFactor * assembly.r_abs.norm(), floor_tol});
  }
  if (rep.converged) {
    bdf_rates(s, step, q, v_hist_, a_hist_, v_, a_);
    update_labels(q, v_, assembly.r, p, s.h, &rep.contact);
    update_rigid_labels(TermContext{q, v_, a_, p, s.row(step), s}, assembly.r, &rep.contact);
  }
  rep.residual_norm = norm;
  rep.tolerance_used = tol;
  if (rep.converged) record_acceptance(rep, norm, floor_tol > 0.0, tol_scaled, opt.relative_tolerance, assembly.r_abs);
  rep.wall_ms = ms_since(t_step);
  return rep;
}

}  // namespace addsim
