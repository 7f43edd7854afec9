#include "addsim/solver/hybrid_contact.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include <Eigen/Eigenvalues>

#include "addsim/core/error.h"
#include "addsim/rigid/rigid_slip.h"
#include "addsim/solver/newton_step.h"

namespace addsim {

namespace {
using namespace step;
// Eigenvalues of CᵀC below this fraction of the largest are not enforced (redundant or
// nearly redundant constraint directions of a rigid body, e.g. 4 coplanar corners: rank 3).
constexpr double kRankTolerance = 1e-8;
// Floor of a sticking point's Coulomb limit in the force split (N): a point with no normal
// force then takes (almost) no static friction, and is released by the check.
constexpr double kMinLimit = 1e-12;
using Mat26 = Eigen::Matrix<double, 2, 6>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
using Vec6 = Eigen::Matrix<double, 6, 1>;
}  // namespace

HybridContact::HybridContact(const Model& model) : model_(model) {
  step::ActiveSetPoints c = step::collect_active_set_points(model, ContactModel::kHybrid, "hybrid");
  points_ = std::move(c.points);
  rpoints_ = std::move(c.rigid_points);
  rbodies_ = std::move(c.bodies);
  rstuck_on_.assign(rpoints_.size(), -1);
  rchanges_.assign(rpoints_.size(), 0);
  rreleased_on_.assign(rpoints_.size(), -1);
  rlagged_.assign(rpoints_.size(), Vec3::Zero());
  ron_penalty_.assign(rpoints_.size(), 0);
  if (!points_.empty() || !rpoints_.empty()) rows_ = StickRows(model.pattern());
  stuck_on_.assign(points_.size(), -1);
  released_on_.assign(points_.size(), -1);
  lagged_.assign(points_.size(), Vec3::Zero());
  changes_.assign(points_.size(), 0);
  on_penalty_.assign(points_.size(), 0);
}

void HybridContact::rebuild_sticks() {
  sticks_.clear();
  slips_.clear();
  for (size_t j = 0; j < points_.size(); ++j) {
    if (released_on_[j] >= 0) slips_.push_back({points_[j].term, points_[j].k, released_on_[j]});
    if (stuck_on_[j] < 0) continue;
    const int o = stuck_on_[j];
    sticks_.push_back(make_stick_point(points_[j].dof, o,
                                       static_cast<const PlaneObstacle&>(*points_[j].term->obstacles()[o]).normal()));
  }
}

int HybridContact::update_labels(const TermContext& ctx, const VecX& r, ContactState* record) {
  int changed = 0;
  for (size_t j = 0; j < points_.size(); ++j) {
    const Point& pt = points_[j];
    const int no = pt.term->num_obstacles();
    if (record) {
      for (int o = 0; o < no; ++o)
        if (pt.term->force(ctx, pt.k, o).regime != ContactRegime::kSeparated) {
          record->touching.push_back(pt.dof);
          break;
        }
    }
    if (stuck_on_[j] >= 0) {
      const int o = stuck_on_[j];
      const ContactForce f = pt.term->force(ctx, pt.k, o);
      const Vec3 n = static_cast<const PlaneObstacle&>(*pt.term->obstacles()[o]).normal();
      const Mat3 T = Mat3::Identity() - n * n.transpose();
      // Unconstrained rows of the point carry −f_t of the penalty friction: add it back.
      const Vec3 fc = T * (r.segment<3>(pt.dof) + T * f.f);
      const double cf = coefficients(pt.term->settings(), *pt.term->obstacles()[o], ctx.p, ctx.scheme.h).cf;
      const double limit = cf * f.normal_force;
      if (f.regime == ContactRegime::kSeparated || fc.norm() > limit) {
        stuck_on_[j] = -1;
        // Final paper: the point returns to the clamped penalty friction (it may stick
        // again below). Draft: it gets the sliding force along the constraint force.
        if (f.regime != ContactRegime::kSeparated) {
          if (pt.term->settings().hybrid_release == HybridRelease::kCoulomb) {
            released_on_[j] = o;
            lagged_[j] = fc / fc.norm();
          } else {
            on_penalty_[j] = 1;
          }
        }
        ++changes_[j];
        ++changed;
      } else if (record) {
        record->sticking.push_back(make_stick_point(pt.dof, o, n, fc, limit));
      }
    } else if (released_on_[j] >= 0) {
      // Released: back to the penalty if it separated, sticking again once it stopped.
      const ContactForce f = pt.term->force(ctx, pt.k, released_on_[j]);
      if (f.regime == ContactRegime::kSeparated) {
        released_on_[j] = -1;
        ++changed;
      } else if (f.regime == ContactRegime::kStick && changes_[j] < kMaxLabelChanges) {
        stuck_on_[j] = released_on_[j];
        released_on_[j] = -1;
        ++changes_[j];
        ++changed;
      } else if (record) {
        record->sliding.push_back({pt.term, pt.k, released_on_[j]});
      }
    } else if (changes_[j] < kMaxLabelChanges && !on_penalty_[j]) {
      for (int o = 0; o < no; ++o) {
        if (pt.term->force(ctx, pt.k, o).regime == ContactRegime::kStick) {
          stuck_on_[j] = o;
          ++changes_[j];
          ++changed;
          break;
        }
      }
    }
  }
  if (changed > 0) rebuild_sticks();
  return changed;
}

bool HybridContact::body_projector(const TermContext& ctx, const VecX& r, RigidBodyLabels& b, StickBody& out,
                                   std::vector<Vec3>* forces) {
  std::vector<int> stuck;
  for (int j : b.points)
    if (rstuck_on_[j] >= 0) stuck.push_back(j);
  if (stuck.empty()) return false;
  const int m = static_cast<int>(stuck.size());
  MatX C(2 * m, 6);
  std::array<MatX, 3> dC;
  for (auto& d : dC) d.resize(2 * m, 6);
  std::vector<Vec3> t1(m), t2(m);
  std::vector<double> limit(m, 1.0);  // Coulomb limits L_k of the sticking points
  Vec6 rp = r.segment<6>(b.dof);  // residual with the sticking points' penalty friction added back
  for (int i = 0; i < m; ++i) {
    const RigidPoint& pt = rpoints_[stuck[i]];
    const int o = rstuck_on_[stuck[i]];
    const Vec3 n = static_cast<const PlaneObstacle&>(*pt.term->obstacles()[o]).normal();
    tangent_basis(n, t1[i], t2[i]);
    Mat26 Ci;
    std::array<Mat26, 3> dCi;
    pt.term->stick_jacobian(ctx, pt.k, o, t1[i], t2[i], Ci, dCi);
    C.middleRows<2>(2 * i) = Ci;
    for (int j = 0; j < 3; ++j) dC[j].middleRows<2>(2 * i) = dCi[j];
    if (forces) {
      const ContactForce f = pt.term->force(ctx, pt.k, o);
      rp += Ci.transpose() * Eigen::Vector2d(t1[i].dot(f.f), t2[i].dot(f.f));
      const double cf = coefficients(pt.term->settings(), *pt.term->obstacles()[o], ctx.p, ctx.scheme.h).cf;
      limit[i] = std::max(cf * f.normal_force, kMinLimit);
    }
  }
  const Mat6 G = C.transpose() * C;
  const Eigen::SelfAdjointEigenSolver<Mat6> eig(G);
  const Vec6& lam = eig.eigenvalues();  // ascending
  const Mat6& U = eig.eigenvectors();
  if (b.rank < 0) {
    b.rank = 0;
    for (int i = 0; i < 6; ++i)
      if (lam[i] > kRankTolerance * lam[5]) ++b.rank;
  }
  const int rk = b.rank, lo = 6 - rk;
  out.dof = b.dof;
  out.rank = rk;
  out.P = U.rightCols(rk) * U.rightCols(rk).transpose();
  // ∂P/∂θ_j of the spectral projector: Σ_{i enforced, l not} u_lᵀ Ġ u_i (u_l u_iᵀ + u_i u_lᵀ)/(λ_i − λ_l),
  // Ġ = ∂Cᵀ/∂θ_j C + Cᵀ ∂C/∂θ_j.
  const Vec6 w = ctx.v.segment<6>(b.dof) - r.segment<6>(b.dof);
  for (int j = 0; j < 3; ++j) {
    const Mat6 dG = dC[j].transpose() * C + C.transpose() * dC[j];
    Vec6 col = Vec6::Zero();
    for (int i = lo; i < 6; ++i)
      for (int l = 0; l < lo; ++l) {
        const double c = U.col(l).dot(dG * U.col(i)) / (lam[i] - lam[l]);
        col += c * (U.col(l) * U.col(i).dot(w) + U.col(i) * U.col(l).dot(w));
      }
    out.D.col(j) = col;
  }
  if (forces) {
    // Static friction over several sticking points is statically indeterminate; the label
    // check uses the distribution that loads each point in proportion to its Coulomb limit
    // L_k = c_f f_n,k: the multipliers of least Σ ‖f_k‖²/L_k with Cᵀ f = P r', i.e.
    // f = W⁻¹ C (Cᵀ W⁻¹ C)⁺ P r' with W⁻¹ = diag(L_k). For a translating load f_k = L_k y:
    // every point uses the same fraction ‖y‖ of its cone, which is ‖Σ f_k‖ / Σ L_k, so the
    // points stay inside their cones exactly when the body's friction stays inside the sum
    // of their limits. The plain minimum-norm split (equal shares) overloads the lightly
    // pressed points — on an incline the uphill corners of a box — and so does the weight
    // L_k² (f_k ∝ L_k²): they were released although the body as a whole was inside its
    // cone. Cᵀ W⁻¹ C has the range of G, so the enforced subspace is unchanged.
    VecX winv(2 * m);
    for (int i = 0; i < m; ++i) winv[2 * i] = winv[2 * i + 1] = limit[i];
    const MatX WC = winv.asDiagonal() * C;
    const Mat6 Gw = C.transpose() * WC;
    const Eigen::SelfAdjointEigenSolver<Mat6> eig_w(Gw);
    const Vec6& lw = eig_w.eigenvalues();
    const Mat6& Uw = eig_w.eigenvectors();
    const Vec6 b_proj = out.P * rp;
    Vec6 y = Vec6::Zero();
    for (int i = lo; i < 6; ++i) y += Uw.col(i) * (Uw.col(i).dot(b_proj) / lw[i]);
    const VecX f = WC * y;
    forces->assign(b.points.size(), Vec3::Zero());
    for (int i = 0; i < m; ++i) {
      size_t slot = 0;
      while (b.points[slot] != stuck[i]) ++slot;
      (*forces)[slot] = t1[i] * f[2 * i] + t2[i] * f[2 * i + 1];
    }
  }
  return true;
}

void HybridContact::rebuild_bodies(const TermContext& ctx, const VecX& r) {
  bodies_.clear();
  for (RigidBodyLabels& b : rbodies_) {
    StickBody sb;
    if (body_projector(ctx, r, b, sb, nullptr)) bodies_.push_back(sb);
  }
}

int HybridContact::update_rigid_labels(const TermContext& ctx, const VecX& r, ContactState* record) {
  int changed = 0;
  std::vector<Vec3> forces;
  for (RigidBodyLabels& b : rbodies_) {
    StickBody sb;
    const bool any = body_projector(ctx, r, b, sb, &forces);
    // 1. Release: a sticking point whose share of the body's static friction leaves its cone
    //    (or that separated) gets the sliding force along that share (Coulomb release) or the
    //    penalty friction (penalty release).
    int released = 0;
    for (size_t slot = 0; slot < b.points.size(); ++slot) {
      const int j = b.points[slot];
      if (rstuck_on_[j] < 0) continue;
      const RigidPoint& pt = rpoints_[j];
      const int o = rstuck_on_[j];
      const ContactForce f = pt.term->force(ctx, pt.k, o);
      const double cf = coefficients(pt.term->settings(), *pt.term->obstacles()[o], ctx.p, ctx.scheme.h).cf;
      const double limit = cf * f.normal_force;
      if (f.regime == ContactRegime::kSeparated || forces[slot].norm() > limit) {
        rstuck_on_[j] = -1;
        if (f.regime != ContactRegime::kSeparated) {
          if (pt.term->settings().hybrid_release == HybridRelease::kCoulomb) {
            rreleased_on_[j] = o;
            const double fnorm = forces[slot].norm();
            rlagged_[j] = fnorm > 0.0 ? Vec3(forces[slot] / fnorm) : Vec3::Zero();
          } else {
            ron_penalty_[j] = 1;
          }
        }
        ++rchanges_[j];
        ++released;
      } else if (record) {
        record->rigid_sticking.push_back(make_stick_point(
            b.dof, o, static_cast<const PlaneObstacle&>(*pt.term->obstacles()[o]).normal(), forces[slot], limit, pt.k));
      }
    }
    // Released points that separated return to the penalty.
    for (int j : b.points) {
      if (rreleased_on_[j] < 0) continue;
      const RigidPoint& pt = rpoints_[j];
      if (pt.term->force(ctx, pt.k, rreleased_on_[j]).regime == ContactRegime::kSeparated) {
        rreleased_on_[j] = -1;
        ++released;
      }
    }
    // 2. Proposal (only when nothing was released in this check, so that the two never
    //    alternate between subsets of the corners): the static friction a body needs is shared
    //    by all its touching points — on an incline the lightly pressed uphill corners are
    //    past their own penalty limit while the body as a whole is well inside its cone. So
    //    when any touching point would stick under the penalty law (its friction is under
    //    its limit: the body's required friction may fit the cone), every touching point of
    //    the body is proposed together; step 1 then keeps exactly those whose share of the
    //    stick multiplier stays in their cone.
    int proposed = 0;
    if (released == 0) {
      bool want = false;
      std::vector<std::pair<int, int>> candidates;  // (point, obstacle)
      for (int j : b.points) {
        if (rstuck_on_[j] >= 0 || ron_penalty_[j] || rchanges_[j] >= kMaxLabelChanges) continue;
        const RigidPoint& pt = rpoints_[j];
        for (int o = 0; o < pt.term->num_obstacles(); ++o) {
          const ContactRegime regime = pt.term->force(ctx, pt.k, o).regime;
          if (regime == ContactRegime::kSeparated) continue;
          if (regime == ContactRegime::kStick) want = true;
          candidates.push_back({j, o});
          break;
        }
      }
      if (want)
        for (const auto& [j, o] : candidates) {
          rstuck_on_[j] = o;
          rreleased_on_[j] = -1;
          rlagged_[j] = Vec3::Zero();
          ++rchanges_[j];
          ++proposed;
        }
    }
    const int body_changes = released + proposed;
    if (record && body_changes == 0)
      for (int j : b.points)
        if (rreleased_on_[j] >= 0) record->rigid_sliding.push_back({rpoints_[j].term, rpoints_[j].k, rreleased_on_[j]});
    if (body_changes > 0) b.rank = -1;
    if (record && any && body_changes == 0) record->bodies.push_back(sb);
    changed += body_changes;
  }
  return changed;
}

StepReport HybridContact::solve_step(Simulator& sim, int step, const StateHistory& hist, const VecX& p, VecX& q) {
  const auto t_step = Clock::now();
  const TimeScheme& s = sim.scheme();
  const SolverSettings& opt = model_.solver();
  Assembly& assembly = sim.assembly();
  StepReport rep;
  rep.step = step;
  bdf_history_terms(s, hist, step, v_hist_, a_hist_);
  const JacobianWeights w0 = bdf_weights(s, step, 0);
  // Each step starts from the labels the previous step ended with (a resting body stays
  // stuck, a sliding one slides): most steps then need no label change and converge like
  // a penalty step. The first step of a run starts from all-penalty labels, so a run does
  // not depend on what the simulator ran before.
  if (step == 1) {
    std::fill(stuck_on_.begin(), stuck_on_.end(), -1);
    std::fill(released_on_.begin(), released_on_.end(), -1);
    std::fill(rstuck_on_.begin(), rstuck_on_.end(), -1);
    std::fill(rreleased_on_.begin(), rreleased_on_.end(), -1);
  }
  std::fill(lagged_.begin(), lagged_.end(), Vec3::Zero());
  std::fill(changes_.begin(), changes_.end(), 0);
  std::fill(on_penalty_.begin(), on_penalty_.end(), 0);
  std::fill(rchanges_.begin(), rchanges_.end(), 0);
  std::fill(rlagged_.begin(), rlagged_.end(), Vec3::Zero());
  std::fill(ron_penalty_.begin(), ron_penalty_.end(), 0);
  for (RigidBodyLabels& b : rbodies_) b.rank = -1;
  bodies_.clear();
  rebuild_sticks();
  bool lagged = false;  // some released point still uses its lagged direction

  // Constrained residual r_c at q_eval into r_ (unconstrained one stays in assembly.r);
  // returns ‖r_c‖ or +inf for an inadmissible or non-finite state.
  auto eval = [&](const VecX& q_eval, EvalMode mode, std::string* why) {
    const auto t0 = Clock::now();
    const double norm = sim.evaluate_trial(step, q_eval, v_hist_, a_hist_, p, mode, v_, a_, assembly, why,
                                           [&](const TermContext& ctx) -> const VecX& {
                                             for (size_t j = 0; j < points_.size(); ++j)
                                               if (released_on_[j] >= 0)
                                                 points_[j].term->add_slip_correction(
                                                     ctx, points_[j].k, released_on_[j], assembly, lagged_[j]);
                                             for (size_t j = 0; j < rpoints_.size(); ++j)
                                               if (rreleased_on_[j] >= 0)
                                                 add_rigid_slip_correction(*rpoints_[j].term, ctx, rpoints_[j].k,
                                                                           rreleased_on_[j], assembly, rlagged_[j]);
                                             r_ = assembly.r;
                                             StickRows::constrain_residual(sticks_, v_, r_);
                                             if (!rbodies_.empty()) {
                                               rebuild_bodies(ctx, assembly.r);
                                               StickRows::constrain_body_residual(bodies_, v_, r_);
                                             }
                                             return r_;
                                           });
    rep.assembly_ms += ms_since(t0);
    ++rep.assemblies;
    return norm;
  };

  std::string why;
  double norm = eval(q, EvalMode::kResidualAndStepJacobian, &why);
  if (initial_guess_failed(norm, why, t_step, rep)) return rep;
  // The tolerance scaled to the lightest body (Simulator::scaled_tolerance), or the round-off
  // floor of the summed contributions.
  const double tol_scaled = sim.scaled_tolerance(assembly.r_abs);
  double tol = std::max(tol_scaled, kRoundoffFactor * assembly.r_abs.norm());
  const double switch_tol = std::sqrt(opt.tolerance);
  bool floor_used = false;  // a tiny Newton step raised tol to ‖r_c‖
  // Label changes restart the Newton solve and the regularised sliding force is stiff near
  // Tẋ = 0 (≈ c_f f_n / ε): allow four times the penalty solver's cap.
  const int max_iterations = 4 * opt.max_iterations;
  // Line-search trials: the full step is evaluated with its partials (usually accepted).
  const TrialEval trial_eval = [&](const VecX& q_trial, bool first_trial, std::string* trial_why) {
    return eval(q_trial, first_trial ? EvalMode::kResidualAndStepJacobian : EvalMode::kResidual, trial_why);
  };

  while (true) {
    if (norm < std::max(switch_tol, tol)) {
      // assembly holds the full evaluation at q (with Jacobians): labels may change here.
      bdf_rates(s, step, q, v_hist_, a_hist_, v_, a_);
      const TermContext ctx{q, v_, a_, p, s.row(step), s};
      const int changed = update_labels(ctx, assembly.r, nullptr) + update_rigid_labels(ctx, assembly.r, nullptr);
      const bool unlag = changed == 0 && lagged;
      if (unlag) {
        // Converged with a lagged sliding direction: switch to t = Tẋ/(‖Tẋ‖ + ε) and go on.
        lagged = false;
        std::fill(lagged_.begin(), lagged_.end(), Vec3::Zero());
        std::fill(rlagged_.begin(), rlagged_.end(), Vec3::Zero());
      }
      if (changed > 0 || unlag) {
        rep.contact.label_changes += changed;
        for (size_t j = 0; j < points_.size(); ++j)
          if (released_on_[j] >= 0 && lagged_[j].squaredNorm() > 0.0) lagged = true;
        for (size_t j = 0; j < rpoints_.size(); ++j)
          if (rreleased_on_[j] >= 0 && rlagged_[j].squaredNorm() > 0.0) lagged = true;
        norm = eval(q, EvalMode::kResidualAndStepJacobian, &why);
        rep.residual_history.push_back(norm);
        tol = std::max(tol_scaled, kRoundoffFactor * assembly.r_abs.norm());
        continue;
      }
      if (norm < tol) {
        rep.converged = true;
        break;
      }
    }
    if (rep.iterations >= max_iterations) {
      rep.failure = "iteration cap of " + std::to_string(max_iterations) + " reached (hybrid contact)";
      break;
    }
    jac_ = assembly.jac;  // dr/dq^i, formed by the evaluation at q (kResidualAndStepJacobian)
    rows_.constrain_matrix(sticks_, w0.wv, jac_);
    rows_.constrain_body_matrix(bodies_, w0.wv, true, jac_);
    rhs_ = -r_;
    ++rep.iterations;
    const double linear_tol = sim.newton_forcing(rep.residual_history, norm, tol);
    // The round-off floor of the constrained merit is carried by tol, not passed here.
    const NewtonStepResult it = newton_step(sim, model_.pattern(), jac_, rhs_, q, norm, kNoRoundoffFloor,
                                            linear_tol, opt.max_halvings, trial_eval, newton_, rep);
    if (it.at_floor) {
      // At the round-off floor: re-evaluate at q so the final label check sees it.
      norm = eval(q, EvalMode::kResidualAndStepJacobian, &why);
      tol = std::max(tol, norm * (1.0 + 1e-12));
      floor_used = true;
      rep.note = "converged at the round-off floor of ‖r‖";
      continue;
    }
    if (!it.accepted) {
      rep.failure = it.failure;
      break;
    }
    // A full step was evaluated with its partials and can stand for the evaluation at q.
    bool reuse_trial = it.halvings == 0;
    q = newton_.q_trial;
    if (lagged) {
      // One iteration with the lagged direction gave the released points a velocity:
      // from here on t follows Tẋ, so the merit at q changes and is evaluated anew.
      lagged = false;
      std::fill(lagged_.begin(), lagged_.end(), Vec3::Zero());
      std::fill(rlagged_.begin(), rlagged_.end(), Vec3::Zero());
      reuse_trial = false;
    }
    norm = reuse_trial ? it.trial : eval(q, EvalMode::kResidualAndStepJacobian, &why);
    rep.residual_history.push_back(norm);
    tol = std::max(tol_scaled, kRoundoffFactor * assembly.r_abs.norm());
  }
  if (rep.converged) {
    bdf_rates(s, step, q, v_hist_, a_hist_, v_, a_);
    const TermContext ctx{q, v_, a_, p, s.row(step), s};
    update_labels(ctx, assembly.r, &rep.contact);
    update_rigid_labels(ctx, assembly.r, &rep.contact);
  }
  rep.residual_norm = norm;
  rep.tolerance_used = tol;
  if (rep.converged) record_acceptance(rep, norm, floor_used, tol_scaled, opt.relative_tolerance, assembly.r_abs);
  rep.wall_ms = ms_since(t_step);
  return rep;
}

}  // namespace addsim
