#include "addsim/terms/spring_term.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "addsim/core/error.h"
#include "addsim/terms/spring_pair_forces.h"

namespace addsim {

const char* to_string(SpringKind kind) {
  switch (kind) {
    case SpringKind::kDistance: return "distance";
    case SpringKind::kZeroLength: return "zero_length";
    case SpringKind::kUnilateral: return "unilateral";
  }
  return "unknown";
}

namespace {
// Lengths below this fraction of the rest length leave the spring direction undefined.
constexpr double kMinRelativeLength = 1e-9;

struct AnchorState {
  Vec3 x = Vec3::Zero();
  Vec3 v = Vec3::Zero();
  HandleSample handle;  // valid for handle anchors
};

AnchorState anchor_state(const Model& model, const Anchor& an, const TermContext& ctx) {
  AnchorState s;
  switch (an.kind) {
    case Anchor::Kind::kParticle:
      s.x = ctx.q.segment<3>(an.dof);
      s.v = ctx.v.segment<3>(an.dof);
      break;
    case Anchor::Kind::kHandle:
      s.handle = sample_handle(model.handles()[an.handle], ctx.p, ctx.step, ctx.scheme);
      s.x = s.handle.x;
      s.v = s.handle.v;
      break;
    case Anchor::Kind::kWorld:
      s.x = an.world;
      break;
    case Anchor::Kind::kEmbedded:
      // x = Σ_k b_k x_k: linear in the tet's node positions, so ẋ = Σ_k b_k ẋ_k.
      for (int m = 0; m < 4; ++m) {
        s.x += an.weights[m] * ctx.q.segment<3>(an.nodes[m]);
        s.v += an.weights[m] * ctx.v.segment<3>(an.nodes[m]);
      }
      break;
  }
  return s;
}

// The residual w_m r_a of every stencil node m (M of them, 3 DOFs each):
// d = x_a − x_b = Σ_m w_m x_m + const.
template <int M>
Eigen::Matrix<double, 3 * M, 1> weighted_residual(const std::array<double, 8>& w, const Vec3& ra) {
  Eigen::Matrix<double, 3 * M, 1> r;
  for (int m = 0; m < M; ++m) r.template segment<3>(3 * m) = w[m] * ra;
  return r;
}

// Adds that residual and the blocks w_m w_l kx, w_m w_l kv of every node pair.
template <int M>
void add_weighted(Assembly& out, int stencil, const std::array<double, 8>& w, const Vec3& ra, const Mat3& kx,
                  const Mat3& kv) {
  constexpr int N = 3 * M;
  Eigen::Matrix<double, N, N> jx, jv;
  for (int m = 0; m < M; ++m)
    for (int l = 0; l < M; ++l) {
      jx.template block<3, 3>(3 * m, 3 * l) = (w[m] * w[l]) * kx;
      jv.template block<3, 3>(3 * m, 3 * l) = (w[m] * w[l]) * kv;
    }
  out.add<N>(stencil, weighted_residual<M>(w, ra), &jx, &jv, nullptr);
}

// Calls f.template operator()<M>() for a stencil of M = count nodes (1, 2, 4, 5 or 8: a
// particle, handle or world end has 0 or 1 node, an embedded end 4).
template <class F>
void with_node_count(int count, F&& f) {
  switch (count) {
    case 1: f.template operator()<1>(); break;
    case 2: f.template operator()<2>(); break;
    case 4: f.template operator()<4>(); break;
    case 5: f.template operator()<5>(); break;
    case 8: f.template operator()<8>(); break;
    default: ADDSIM_CHECK(false, "spring stencil of 1, 2, 4, 5 or 8 nodes");
  }
}

// A spring's force on its end a and the partials (SpringTerm::Local adds the ends' states).
struct SpringForce {
  bool active = false;
  Vec3 r = Vec3::Zero();       // residual on a (= −force on a); residual on b is −r
  Mat3 kx = Mat3::Zero();      // ∂r_a/∂x_a (= −∂r_a/∂x_b)
  Mat3 kv = Mat3::Zero();      // ∂r_a/∂ẋ_a (= −∂r_a/∂ẋ_b)
  Vec3 dr_dk = Vec3::Zero();   // ∂r_a/∂k
  Vec3 dr_dkd = Vec3::Zero();  // ∂r_a/∂k_d
  double energy = 0.0;
};

// Force on end a of spring s at separation d = x_a − x_b and relative velocity w (and its
// partials when `partials`).
void spring_force(const Spring& s, const Vec3& d, const Vec3& w, const TermContext& ctx, bool clamp, bool partials,
                  SpringForce& F) {
  const double stiffness = ctx.p[s.stiffness_param];
  const double damping = s.damping_param >= 0 ? ctx.p[s.damping_param] : 0.0;
  const Mat3 I = Mat3::Identity();

  if (s.kind == SpringKind::kZeroLength) {
    // E = (k/2)‖d‖²: r_a = k d + k_d w.
    F.active = true;
    F.r = stiffness * d + damping * w;
    F.energy = 0.5 * stiffness * d.squaredNorm();
    if (!partials) return;
    F.kx = stiffness * I;
    F.kv = damping * I;
    F.dr_dk = d;
    F.dr_dkd = w;
    return;
  }

  const double len = d.norm();
  if (s.kind == SpringKind::kUnilateral && len <= s.rest_length) return;  // slack
  if (len <= kMinRelativeLength * std::max(s.rest_length, 1.0)) return;   // rejected by admissible()
  F.active = true;
  const Vec3 u = d / len;
  const double stretch = len - s.rest_length;
  const double uw = u.dot(w);
  // E = (k/2)(‖d‖ − l₀)²: r_a = k (‖d‖ − l₀) u; damping r_a += k_d (u·w) u.
  F.r = stiffness * stretch * u + damping * uw * u;
  F.energy = 0.5 * stiffness * stretch * stretch;
  if (!partials) return;
  // uuᵀ and ∂u/∂d = (I − uuᵀ)/‖d‖ are symmetric entry for entry (u_i u_j = u_j u_i exactly), so
  // the upper triangle is computed and mirrored: 6 divisions instead of 9, the same numbers
  // as the full expressions.
  Mat3 uu, du_dd;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i <= j; ++i) {
      uu(i, j) = uu(j, i) = u[i] * u[j];
      du_dd(i, j) = du_dd(j, i) = ((i == j ? 1.0 : 0.0) - uu(i, j)) / len;
    }
  // ∂r_a/∂x_a = k (uuᵀ + (‖d‖ − l₀) ∂u/∂d) + damping terms. Under compression the transverse
  // part k (‖d‖ − l₀)/‖d‖ (I − uuᵀ) is negative (buckling); the clamped Newton matrix drops it.
  const double transverse = clamp ? std::max(stretch, 0.0) : stretch;
  F.kx = stiffness * (uu + transverse * du_dd) + damping * (uw * I + u * w.transpose()) * du_dd;
  F.kv = damping * uu;
  F.dr_dk = stretch * u;
  F.dr_dkd = uw * u;
}

// Position and velocity of an anchor for an evaluation: a particle's are read directly,
// without the handle sample anchor_state carries along for the parameter derivatives.
void anchor_motion(const Model& model, const Anchor& an, const TermContext& ctx, Vec3& x, Vec3& v) {
  if (an.kind == Anchor::Kind::kParticle) {
    x = ctx.q.segment<3>(an.dof);
    v = ctx.v.segment<3>(an.dof);
    return;
  }
  const AnchorState st = anchor_state(model, an, ctx);
  x = st.x;
  v = st.v;
}
}  // namespace

struct SpringTerm::Local : SpringForce {
  AnchorState sa, sb;
};

SpringTerm::SpringTerm(const Model* model, std::vector<Spring> springs) : model_(model), springs_(std::move(springs)) {}

void SpringTerm::declare(StencilSet& stencils) {
  stencil_.clear();
  node_weights_.clear();
  particle_pair_.clear();
  pairs_.clear();
  pair_index_.clear();
  other_springs_.clear();
  for (const Spring& s : springs_) {
    // The nodes of a (weights +w_m), then those of b (−w_m); a node shared by both ends
    // appears twice, which the assembly sums.
    std::vector<DofIndex> dofs;
    NodeWeights nw;
    for (const Anchor* an : {&s.a, &s.b}) {
      const double sign = an == &s.a ? 1.0 : -1.0;
      for (int m = 0; m < an->num_nodes(); ++m) {
        for (int c = 0; c < 3; ++c) dofs.push_back(an->node_dof(m) + c);
        nw.w[nw.count] = sign * an->node_weight(m);
        nw.unit = nw.unit && std::abs(nw.w[nw.count]) == 1.0;
        ++nw.count;
      }
    }
    stencil_.push_back(dofs.empty() ? -1 : stencils.add(dofs));
    node_weights_.push_back(nw);
    particle_pair_.push_back(s.a.kind == Anchor::Kind::kParticle && s.b.kind == Anchor::Kind::kParticle &&
                             s.a.dof != s.b.dof);
    pair_index_.push_back(-1);
    if (particle_pair_.back() && s.kind != SpringKind::kZeroLength) {
      pair_index_.back() = static_cast<int>(pairs_.size());
      const double min_len = kMinRelativeLength * std::max(s.rest_length, 1.0);
      pairs_.push_back({static_cast<int>(particle_pair_.size()) - 1, s.a.dof, s.b.dof, min_len,
                        s.kind == SpringKind::kUnilateral ? std::max(s.rest_length, min_len) : min_len,
                        s.stiffness_param, s.damping_param, s.rest_length, min_len * min_len,
                        s.kind == SpringKind::kUnilateral ? s.rest_length * s.rest_length
                                                          : -std::numeric_limits<double>::infinity()});
      pairs_.back().stencil = stencil_.back();
    } else if (s.kind != SpringKind::kZeroLength) {
      other_springs_.push_back(static_cast<int>(particle_pair_.size()) - 1);
    }
  }
  for (int i = static_cast<int>(pairs_.size()) - 1; i >= 0; --i) {
    const bool next_in_run = i + 1 < static_cast<int>(pairs_.size()) && pairs_[i + 1].spring == pairs_[i].spring + 1;
    pairs_[i].run_end = next_in_run ? pairs_[i + 1].run_end : i + 1;
  }
}

void SpringTerm::load_pair_lanes(const TermContext& ctx, int begin, int end, spring_pairs::Input& in) const {
  const double* q = ctx.q.data();
  const double* v = ctx.v.data();
  const double* p = ctx.p.data();
  const int used = end - begin;
  for (int j = 0; j < used; ++j) {
    const PairSpring& ps = pairs_[begin + j];
    const double* qa = q + ps.da;
    const double* qb = q + ps.db;
    const double* va = v + ps.da;
    const double* vb = v + ps.db;
    for (int c = 0; c < 3; ++c) {
      in.d[c][j] = qa[c] - qb[c];
      in.w[c][j] = va[c] - vb[c];
    }
    in.k[j] = p[ps.stiffness_param];
    in.kd[j] = ps.damping_param >= 0 ? p[ps.damping_param] : 0.0;
    in.rest[j] = ps.rest_length;
  }
  for (int j = used; j < spring_pairs::kLanes; ++j) {
    // Padding: a unit spring at rest, never scattered.
    for (int c = 0; c < 3; ++c) in.d[c][j] = in.w[c][j] = 0.0;
    in.d[0][j] = 1.0;
    in.k[j] = in.kd[j] = in.rest[j] = 0.0;
  }
}

SpringTerm::Local SpringTerm::local(const TermContext& ctx, int k, bool clamp, bool partials) const {
  const Spring& s = springs_[k];
  Local L;
  L.sa = anchor_state(*model_, s.a, ctx);
  L.sb = anchor_state(*model_, s.b, ctx);
  spring_force(s, L.sa.x - L.sb.x, L.sa.v - L.sb.v, ctx, clamp, partials, L);
  return L;
}

SpringRegime SpringTerm::regime(const TermContext& ctx, int k) const {
  return local(ctx, k, false, false).active ? SpringRegime::kActive : SpringRegime::kSlack;
}

void SpringTerm::evaluate(const TermContext& ctx, Assembly& out) const {
  const bool step = out.mode() == EvalMode::kResidualAndStepJacobian;
  const bool clamp = out.clamp_compressed_springs && step;
  const bool partials = out.wants_jacobians();
  spring_pairs::Input lanes_in;
  spring_pairs::Output lanes;
  // Step evaluations sum each pair's block in the kernel (Assembly::add_point_pair_step); both
  // weights zero leaves jac alone, as Assembly::step_block_sum does.
  const JacobianWeights& jw = out.weights();
  const bool step_blocks = step && (jw.wq != 0.0 || jw.wv != 0.0);
  const spring_pairs::StepWeights lane_weights{step_blocks, jw.wq, jw.wv};
  // The forward Newton's matrix at float accuracy (Assembly::float_step_blocks): the pairs'
  // step blocks by the kernel's closed form. Never the sensitivities' partials
  // (kResidualAndJacobians) nor r, which are the same bits with or without it.
  const bool float_blocks = step_blocks && out.float_step_blocks;
  int batch_begin = 0, batch_end = 0;  // pairs_[batch_begin, batch_end) are in `lanes`
  // One force record for the loop (not zeroed per spring): every path that marks it active
  // writes r, and kx and kv when partials are wanted.
  SpringForce L;
  // Adds spring k's force record: particle pairs by add_point_pair, other ends by node weights.
  auto scatter = [&](int k) {
    if (particle_pair_[k] && (!partials || (step && out.pattern().point_map(stencil_[k])))) {
      out.add_point_pair(stencil_[k], L.r, L.kx, L.kv);
      return;
    }
    const NodeWeights& nw = node_weights_[k];
    // The line search's trials want r only; a Newton step of a spring whose node weights are
    // all ±1 (particle, handle and world ends) forms its weighted block once
    // (Assembly::add_node_outer, the same numbers); other ends go the general way.
    with_node_count(nw.count, [&]<int M>() {
      if (!partials)
        out.add<3 * M>(stencil_[k], weighted_residual<M>(nw.w, L.r), nullptr, nullptr, nullptr);
      else if (step && nw.unit)
        out.add_node_outer<M>(stencil_[k], weighted_residual<M>(nw.w, L.r), nw.w.data(), L.kx, L.kv);
      else
        add_weighted<M>(out, stencil_[k], nw.w, L.r, L.kx, L.kv);
    });
  };
  for (int k = 0; k < static_cast<int>(springs_.size()); ++k) {
    if (stencil_[k] < 0) continue;
    if (const int first = batched_pairs_ ? pair_index_[k] : -1; first >= 0) {
      // A run of consecutive particle-pair springs, in spring order, straight over pairs_.
      const int run_end = pairs_[first].run_end;
      for (int pi = first; pi < run_end; ++pi) {
        if (pi >= batch_end) {
          batch_begin = pi;
          batch_end = std::min(pi + spring_pairs::kLanes, static_cast<int>(pairs_.size()));
          load_pair_lanes(ctx, batch_begin, batch_end, lanes_in);
          spring_pairs::forces(lanes_in, lanes, clamp, partials, lane_weights, float_blocks);
        }
        // spring_force()'s slack and collapse tests on the lane's length (one bound, see PairSpring).
        const int j = pi - batch_begin;
        const PairSpring& ps = pairs_[pi];
        if (lanes.len[j] <= ps.skip_len) continue;
        // Residual-only and step evaluations: r_a and the step block straight from the lanes.
        if (out.add_point_pair_lane(ps.stencil, ps.da, ps.db, &lanes.r[0][j], step_blocks ? &lanes.step[0][j] : nullptr,
                                    spring_pairs::kLanes))
          continue;
        // The partials themselves (kResidualAndJacobians): the general scatter. Step evaluations
        // never get here — a pair's DOFs are two whole particles, so its stencil has a point map
        // (SparsePattern) — and so neither do the float blocks, which leave kx and kv unset.
        L.r = Vec3(lanes.r[0][j], lanes.r[1][j], lanes.r[2][j]);
        for (int b = 0; b < 3; ++b)
          for (int a = 0; a < 3; ++a) {
            L.kx(a, b) = lanes.kx[a + 3 * b][j];
            L.kv(a, b) = lanes.kv[spring_pairs::upper_index(a, b)][j];
          }
        scatter(ps.spring);
      }
      k = pairs_[run_end - 1].spring;
      continue;
    }
    L.active = false;
    if (particle_pair_[k]) {
      // Two particle ends: d and ḋ straight from q and v, without the anchor dispatch.
      const Spring& s = springs_[k];
      const int da = s.a.dof, db = s.b.dof;
      spring_force(s, ctx.q.segment<3>(da) - ctx.q.segment<3>(db), ctx.v.segment<3>(da) - ctx.v.segment<3>(db),
                   ctx, clamp, partials, L);
    } else {
      const Spring& s = springs_[k];
      Vec3 xa, va, xb, vb;
      anchor_motion(*model_, s.a, ctx, xa, va);
      anchor_motion(*model_, s.b, ctx, xb, vb);
      spring_force(s, xa - xb, va - vb, ctx, clamp, partials, L);
    }
    if (!L.active) continue;
    scatter(k);
  }
}

void SpringTerm::param_derivatives(const TermContext& ctx, ParamSink& sink) const {
  for (int k = 0; k < static_cast<int>(springs_.size()); ++k) {
    if (stencil_[k] < 0) continue;
    const Spring& s = springs_[k];
    const bool handle_a = s.a.kind == Anchor::Kind::kHandle;
    const bool handle_b = s.b.kind == Anchor::Kind::kHandle;
    const bool want_k = sink.wants(s.stiffness_param);
    const bool want_kd = s.damping_param >= 0 && sink.wants(s.damping_param);
    if (!want_k && !want_kd && !handle_a && !handle_b) continue;
    const Local L = local(ctx, k);
    if (!L.active) continue;
    const NodeWeights& nw = node_weights_[k];
    const int rows = 3 * nw.count;
    // Rows of the stencil: w_m times a block of r_a for each node, in stencil order.
    auto rows_of = [&](const Vec3& block_a) {
      VecX col(rows);
      for (int m = 0; m < nw.count; ++m) col.segment<3>(3 * m) = nw.w[m] * block_a;
      return col;
    };
    if (want_k) {
      const int idx = s.stiffness_param;
      sink.add(stencil_[k], std::span<const int>(&idx, 1), rows_of(L.dr_dk));
    }
    if (want_kd) {
      const int idx = s.damping_param;
      sink.add(stencil_[k], std::span<const int>(&idx, 1), rows_of(L.dr_dkd));
    }
    // Handle controls: ∂r/∂c_row = wx ∂r/∂x_end + wv ∂r/∂ẋ_end, with ∂r_a/∂x_b = −kx.
    for (int end = 0; end < 2; ++end) {
      if (!(end == 0 ? handle_a : handle_b)) continue;
      const HandleSample& hs = end == 0 ? L.sa.handle : L.sb.handle;
      const double sign = end == 0 ? 1.0 : -1.0;
      for (int c = 0; c < hs.count; ++c) {
        const Mat3 dra = sign * (hs.wx[c] * L.kx + hs.wv[c] * L.kv);
        MatX block(rows, 3);
        for (int m = 0; m < nw.count; ++m) block.middleRows<3>(3 * m) = nw.w[m] * dra;
        const int idx[3] = {hs.param[c], hs.param[c] + 1, hs.param[c] + 2};
        sink.add(stencil_[k], std::span<const int>(idx, 3), block);
      }
    }
  }
}

double SpringTerm::energy(const TermContext& ctx) const {
  double e = 0.0;
  for (int k = 0; k < static_cast<int>(springs_.size()); ++k) e += local(ctx, k, false, false).energy;
  return e;
}

bool SpringTerm::spring_admissible(const TermContext& ctx, int k) const {
  if (const int pi = pair_index_[k]; pi >= 0) {
    // A particle pair: the tests below with its squared bounds kept per pair.
    const PairSpring& ps = pairs_[pi];
    const double len2 = (ctx.q.segment<3>(ps.da) - ctx.q.segment<3>(ps.db)).squaredNorm();
    return !(len2 <= ps.min_len2 && !(len2 <= ps.slack_len2));
  }
  const Spring& s = springs_[k];
  if (s.kind == SpringKind::kZeroLength) return true;
  // Squared lengths: no square root per spring and evaluation (both bounds are ≥ 0).
  double len2;
  if (particle_pair_[k]) {
    len2 = (ctx.q.segment<3>(s.a.dof) - ctx.q.segment<3>(s.b.dof)).squaredNorm();
  } else {
    Vec3 xa, va, xb, vb;
    anchor_motion(*model_, s.a, ctx, xa, va);
    anchor_motion(*model_, s.b, ctx, xb, vb);
    len2 = (xa - xb).squaredNorm();
  }
  if (s.kind == SpringKind::kUnilateral && len2 <= s.rest_length * s.rest_length) return true;
  const double min_len = kMinRelativeLength * std::max(s.rest_length, 1.0);
  return !(len2 <= min_len * min_len);
}

bool SpringTerm::admissible(const TermContext& ctx, std::string* why) const {
  // The particle pairs straight over pairs_ (contiguous, no per-spring dispatch), then the other
  // springs; the same tests as spring_admissible(). Only on a failure is the ordered loop run, to
  // name the first collapsed spring in spring order, as before.
  bool ok = true;
  for (const PairSpring& ps : pairs_) {
    const double len2 = (ctx.q.segment<3>(ps.da) - ctx.q.segment<3>(ps.db)).squaredNorm();
    if (len2 <= ps.min_len2 && !(len2 <= ps.slack_len2)) {
      ok = false;
      break;
    }
  }
  if (ok)
    for (const int k : other_springs_)
      if (!spring_admissible(ctx, k)) {
        ok = false;
        break;
      }
  if (ok) return true;
  for (int k = 0; k < static_cast<int>(springs_.size()); ++k)
    if (!spring_admissible(ctx, k)) {
      if (why) *why = "spring " + springs_[k].label + " has collapsed to zero length (direction undefined)";
      return false;
    }
  return true;
}

}  // namespace addsim
