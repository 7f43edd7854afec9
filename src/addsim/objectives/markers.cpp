#include "addsim/objectives/markers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"
#include "addsim/rigid/so3.h"

namespace addsim {

// Rigid bodies are read through Body only (q = (p_WB, θ) from dof_offset()).
namespace {
const Body& body_at(const Model& model, int body, const char* who) {
  if (body < 0 || body >= static_cast<int>(model.bodies().size()))
    throw InputError(std::string(who) + ": body " + std::to_string(body) + " does not exist");
  return *model.bodies()[body];
}

// Barycentric coordinates of x in the tet with vertices xs (columns).
Eigen::Vector4d barycentric(const Eigen::Matrix<double, 3, 4>& xs, const Vec3& x) {
  Mat3 d;
  d << xs.col(1) - xs.col(0), xs.col(2) - xs.col(0), xs.col(3) - xs.col(0);
  const Vec3 l = d.lu().solve(x - xs.col(0));
  return Eigen::Vector4d(1.0 - l.sum(), l[0], l[1], l[2]);
}

// The rule that embeds a point in an FEM body: the containing tet has all barycentric
// coordinates ≥ 0, so take the tet whose smallest coordinate is largest, the first such in the
// order the tets are considered (strict >). Outside the mesh this is the tet the point is
// least outside of, and its weights extrapolate.
struct TetChoice {
  int tet = -1;
  double min = -std::numeric_limits<double>::infinity();
  Eigen::Vector4d w = Eigen::Vector4d::Zero();

  void consider(const FemBody& fb, const VecX& q, const Vec3& x, int e) {
    const Eigen::Vector4d we = barycentric(fb.element_positions(q, e), x);
    if (we.minCoeff() > min) {
      min = we.minCoeff();
      tet = e;
      w = we;
    }
  }
  Marker marker(const Model& model, int body) const { return tet_marker(model, body, tet, {w[0], w[1], w[2], w[3]}); }
};
}  // namespace

Vec3 Marker::position(const VecX& q) const {
  if (count == 0) {
    const Mat3 R = rotation_from_vector(q.segment<3>(rigid_dof + 3));
    return q.segment<3>(rigid_dof) + R * local;
  }
  Vec3 x = Vec3::Zero();
  for (int a = 0; a < count; ++a) x += weights[a] * q.segment<3>(dofs[a]);
  return x;
}

void Marker::vjp(const VecX& q, const Vec3& g, VecX& dphi_dq) const {
  if (count == 0) {
    const Vec3 theta = q.segment<3>(rigid_dof + 3);
    ExpJacobian jac;
    exp_jacobian(theta, 0, jac);
    const Vec3 r = rotation_from_vector(theta) * local;
    dphi_dq.segment<3>(rigid_dof) += g;
    // δx = δω × r = −[r]× J δθ.
    dphi_dq.segment<3>(rigid_dof + 3) += -(skew(r) * jac.J).transpose() * g;
    return;
  }
  for (int a = 0; a < count; ++a) dphi_dq.segment<3>(dofs[a]) += weights[a] * g;
}

Marker node_marker(const Model& model, int body, int k) {
  const Body& b = body_at(model, body, "marker");
  if (b.kind() == BodyKind::kRigid)
    throw InputError("marker: body '" + b.name() + "' is rigid; give a body-frame point instead of a node");
  const int n = b.dof_count() / 3;
  if (k < 0 || k >= n)
    throw InputError("marker: node " + std::to_string(k) + " of body '" + b.name() + "' is outside [0, " +
                     std::to_string(n - 1) + "]");
  Marker m;
  m.body = body;
  m.count = 1;
  m.dofs[0] = b.dof_offset() + 3 * k;
  m.weights[0] = 1.0;
  return m;
}

Marker tet_marker(const Model& model, int body, int tet, const std::array<double, 4>& w) {
  const Body& b = body_at(model, body, "marker");
  if (b.kind() != BodyKind::kFem) throw InputError("marker: body '" + b.name() + "' has no tets");
  const auto& fb = static_cast<const FemBody&>(b);
  if (tet < 0 || tet >= fb.num_tets())
    throw InputError("marker: tet " + std::to_string(tet) + " of body '" + b.name() + "' does not exist");
  if (std::abs(w[0] + w[1] + w[2] + w[3] - 1.0) > 1e-9)
    throw InputError("marker: barycentric weights must sum to 1");
  Marker m;
  m.body = body;
  m.count = 4;
  for (int a = 0; a < 4; ++a) {
    m.dofs[a] = fb.dof(fb.mesh().tets[tet][a]);
    m.weights[a] = w[a];
  }
  return m;
}

Marker rigid_marker(const Model& model, int body, const Vec3& local) {
  const Body& b = body_at(model, body, "marker");
  if (b.kind() != BodyKind::kRigid) throw InputError("marker: body '" + b.name() + "' is not rigid");
  Marker m;
  m.body = body;
  m.rigid_dof = b.dof_offset();
  m.local = local;
  return m;
}

Marker embed_marker(const Model& model, int body, const VecX& q, const Vec3& x) {
  const Body& b = body_at(model, body, "marker");
  switch (b.kind()) {
    case BodyKind::kRigid: {
      const int dof = b.dof_offset();
      const Mat3 R = rotation_from_vector(q.segment<3>(dof + 3));
      return rigid_marker(model, body, R.transpose() * (x - q.segment<3>(dof)));
    }
    case BodyKind::kFem: {
      const auto& fb = static_cast<const FemBody&>(b);
      TetChoice c;
      for (int e = 0; e < fb.num_tets(); ++e) c.consider(fb, q, x, e);
      return c.marker(model, body);
    }
    case BodyKind::kParticles: {
      int best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (int k = 0; k < b.dof_count() / 3; ++k) {
        const double d = (q.segment<3>(b.dof_offset() + 3 * k) - x).squaredNorm();
        if (d < best_d) {
          best_d = d;
          best = k;
        }
      }
      return node_marker(model, body, best);
    }
  }
  throw InternalError("marker: unknown body kind");
}

// A uniform grid of cubic cells over the union of the tets' padded bounding boxes; each cell
// lists, in ascending order, the tets whose padded box overlaps it. What lets the grid skip
// tets: if every barycentric coordinate of x in a tet is ≥ −m, then with μ_a = (λ_a + m)/(1 + 4m)
// (≥ 0, summing to 1) x = c + (1 + 4m)(y − c) for the point y = Σ μ_a x_a of the tet (c its
// centroid), so x lies in the tet's box grown on each side by 4m times the box's extent. A tet
// whose grown box misses x therefore has a smallest coordinate below −m. The pad, 1e-6 of the
// body's box diagonal, and a slack of 1e-6 in m cover the round-off of the 3 × 3 LU solve.
struct MarkerEmbedder::TetGrid {
  bool usable = false;  // false: scan every tet (no tets, or a degenerate or non-finite box)
  Vec3 lo = Vec3::Zero(), hi = Vec3::Zero();
  double inv_h = 0.0;  // 1 / cell edge
  std::array<int, 3> n{};
  std::vector<Vec3> box_lo, box_hi;  // padded box of each tet
  double max_extent = 0.0;           // largest extent of a padded box along any axis
  std::vector<int> start;            // cell c lists tets[start[c] .. start[c + 1])
  std::vector<int> tets;

  // Cell index along axis i of coordinate v: floor((v − lo) / h) clamped to the grid, monotone
  // in v, so a box [a, b] holding v has cell(a) ≤ cell(v) ≤ cell(b).
  int cell(double v, int i) const {
    const double t = std::floor((v - lo[i]) * inv_h);
    return static_cast<int>(std::clamp(t, 0.0, static_cast<double>(n[i] - 1)));
  }
  int flat(int i, int j, int k) const { return (k * n[1] + j) * n[0] + i; }

  TetGrid(const FemBody& fb, const VecX& q) {
    const int T = fb.num_tets();
    if (T == 0) return;
    box_lo.resize(T);
    box_hi.resize(T);
    Vec3 body_lo = Vec3::Constant(std::numeric_limits<double>::infinity()), body_hi = -body_lo;
    for (int e = 0; e < T; ++e) {
      const Eigen::Matrix<double, 3, 4> xs = fb.element_positions(q, e);
      box_lo[e] = xs.rowwise().minCoeff();
      box_hi[e] = xs.rowwise().maxCoeff();
      body_lo = body_lo.cwiseMin(box_lo[e]);
      body_hi = body_hi.cwiseMax(box_hi[e]);
    }
    const double pad = 1e-6 * (body_hi - body_lo).norm();
    if (!std::isfinite(pad) || !(pad > 0.0)) return;
    for (int e = 0; e < T; ++e) {
      box_lo[e].array() -= pad;
      box_hi[e].array() += pad;
      max_extent = std::max(max_extent, (box_hi[e] - box_lo[e]).maxCoeff());
    }
    lo = body_lo.array() - pad;
    hi = body_hi.array() + pad;
    // About one cell per tet; coarser (h doubled) while the cells outnumber the tets 8 to 1,
    // which a flat body's small volume would otherwise give.
    const Vec3 ext = hi - lo;
    double h = std::cbrt(ext.prod() / T);
    for (;;) {
      double cells = 1.0;
      for (int i = 0; i < 3; ++i) cells *= std::max(1.0, std::ceil(ext[i] / h));
      if (cells <= 8.0 * T) break;
      h *= 2.0;
    }
    for (int i = 0; i < 3; ++i) n[i] = static_cast<int>(std::max(1.0, std::ceil(ext[i] / h)));
    inv_h = 1.0 / h;
    const auto for_cells = [&](int e, auto&& f) {
      for (int k = cell(box_lo[e][2], 2); k <= cell(box_hi[e][2], 2); ++k)
        for (int j = cell(box_lo[e][1], 1); j <= cell(box_hi[e][1], 1); ++j)
          for (int i = cell(box_lo[e][0], 0); i <= cell(box_hi[e][0], 0); ++i) f(flat(i, j, k));
    };
    // Count the tets per cell, then fill the lists in ascending tet order.
    start.assign(static_cast<size_t>(n[0]) * n[1] * n[2] + 1, 0);
    for (int e = 0; e < T; ++e) for_cells(e, [&](int c) { ++start[c + 1]; });
    for (size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
    tets.resize(start.back());
    std::vector<int> next(start.begin(), start.end() - 1);
    for (int e = 0; e < T; ++e) for_cells(e, [&](int c) { tets[next[c]++] = e; });
    usable = true;
  }
};

MarkerEmbedder::MarkerEmbedder(const Model& model, const VecX& q) : model_(model), q_(q) {}
MarkerEmbedder::~MarkerEmbedder() = default;

const MarkerEmbedder::TetGrid& MarkerEmbedder::grid(int body) {
  if (grids_.size() <= static_cast<size_t>(body)) grids_.resize(body + 1);
  if (!grids_[body]) grids_[body] = std::make_unique<TetGrid>(static_cast<const FemBody&>(*model_.bodies()[body]), q_);
  return *grids_[body];
}

Marker MarkerEmbedder::embed(int body, const Vec3& x) {
  const Body& b = body_at(model_, body, "marker");
  if (b.kind() != BodyKind::kFem) return embed_marker(model_, body, q_, x);
  const auto& fb = static_cast<const FemBody&>(b);
  const TetGrid& g = grid(body);
  if (!g.usable || !x.allFinite()) return embed_marker(model_, body, q_, x);
  // 1. A first bound: the best smallest coordinate over the tets of x's cell (the nearest
  //    cell of the grid for a point outside it), or of the nearest ring of cells holding any.
  const std::array<int, 3> at = {g.cell(x[0], 0), g.cell(x[1], 1), g.cell(x[2], 2)};
  double bound = -std::numeric_limits<double>::infinity();
  for (int ring = 0; bound == -std::numeric_limits<double>::infinity(); ++ring) {
    if (ring > std::max({g.n[0], g.n[1], g.n[2]})) return embed_marker(model_, body, q_, x);
    for (int k = std::max(at[2] - ring, 0); k <= std::min(at[2] + ring, g.n[2] - 1); ++k)
      for (int j = std::max(at[1] - ring, 0); j <= std::min(at[1] + ring, g.n[1] - 1); ++j)
        for (int i = std::max(at[0] - ring, 0); i <= std::min(at[0] + ring, g.n[0] - 1); ++i) {
          const int c = g.flat(i, j, k);
          for (int t = g.start[c]; t < g.start[c + 1]; ++t) {
            const double w = barycentric(fb.element_positions(q_, g.tets[t]), x).minCoeff();
            if (w > bound) bound = w;
          }
        }
  }
  // 2. Every tet that can reach that bound has x in its box grown by 4m times its extent
  //    (TetGrid); those are found within 4m × the largest extent of x, then tried in index
  //    order with the scan's rule. A reach over the whole grid is the scan itself.
  const double m = std::max(0.0, -bound) + 1e-6;
  const double reach = 4.0 * m * g.max_extent;
  std::array<int, 3> lo{}, hi{};
  bool whole = true;
  for (int a = 0; a < 3; ++a) {
    lo[a] = g.cell(x[a] - reach, a);
    hi[a] = g.cell(x[a] + reach, a);
    whole = whole && lo[a] == 0 && hi[a] == g.n[a] - 1;
  }
  if (whole) return embed_marker(model_, body, q_, x);
  std::vector<int> near;
  for (int k = lo[2]; k <= hi[2]; ++k)
    for (int j = lo[1]; j <= hi[1]; ++j)
      for (int i = lo[0]; i <= hi[0]; ++i) {
        const int c = g.flat(i, j, k);
        for (int t = g.start[c]; t < g.start[c + 1]; ++t) {
          const int e = g.tets[t];
          const Eigen::Array3d grow = 4.0 * m * (g.box_hi[e] - g.box_lo[e]).array();
          if ((x.array() >= g.box_lo[e].array() - grow).all() && (x.array() <= g.box_hi[e].array() + grow).all())
            near.push_back(e);
        }
      }
  std::sort(near.begin(), near.end());
  near.erase(std::unique(near.begin(), near.end()), near.end());
  TetChoice choice;
  for (const int e : near) choice.consider(fb, q_, x, e);
  return choice.marker(model_, body);
}

}  // namespace addsim

namespace addsim {

Vec3 Marker::jvp(const VecX& q, const VecX& dq) const {
  // Embedded markers are linear in their points; rigid ones go through the vjp rows.
  Vec3 out = Vec3::Zero();
  if (count > 0) {
    for (int a = 0; a < count; ++a) out += weights[a] * dq.segment<3>(dofs[a]);
    return out;
  }
  VecX g(q.size());
  for (int k = 0; k < 3; ++k) {
    g.setZero();
    vjp(q, Vec3::Unit(k), g);
    out[k] = g.dot(dq);
  }
  return out;
}

}  // namespace addsim
