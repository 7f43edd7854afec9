#include "addsim/mesh/tet_mesh.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <Eigen/Dense>

#include "addsim/core/error.h"

namespace addsim {

double signed_volume(const TetMesh& mesh, int t) {
  const auto& e = mesh.tets[t];
  Mat3 D;
  D.col(0) = mesh.nodes[e[1]] - mesh.nodes[e[0]];
  D.col(1) = mesh.nodes[e[2]] - mesh.nodes[e[0]];
  D.col(2) = mesh.nodes[e[3]] - mesh.nodes[e[0]];
  return D.determinant() / 6.0;
}

std::array<double, 4> barycentric_coordinates(const std::array<Vec3, 4>& corners, const Vec3& x) {
  Mat3 D;
  for (int c = 0; c < 3; ++c) D.col(c) = corners[c + 1] - corners[0];
  const Vec3 l = D.partialPivLu().solve(x - corners[0]);
  return {1.0 - l.sum(), l[0], l[1], l[2]};
}

TetLocation locate_point(const std::vector<Vec3>& nodes, const std::vector<std::array<int, 4>>& tets, const Vec3& x,
                         double tolerance) {
  TetLocation best;
  double best_min = -tolerance;
  for (int t = 0; t < static_cast<int>(tets.size()); ++t) {
    std::array<Vec3, 4> c;
    Vec3 lo = Vec3::Constant(std::numeric_limits<double>::infinity()), hi = -lo;
    for (int k = 0; k < 4; ++k) {
      c[k] = nodes[tets[t][k]];
      lo = lo.cwiseMin(c[k]);
      hi = hi.cwiseMax(c[k]);
    }
    // Cheap rejection: x outside the tet's bounding box, enlarged well beyond what b_k ≥ −tol allows.
    const double pad = std::max(1e-6, 4.0 * tolerance) * (hi - lo).maxCoeff();
    if ((x.array() < lo.array() - pad).any() || (x.array() > hi.array() + pad).any()) continue;
    const std::array<double, 4> b = barycentric_coordinates(c, x);
    const double m = std::min(std::min(b[0], b[1]), std::min(b[2], b[3]));
    if (m > best_min || (best.tet < 0 && m >= best_min)) {
      best_min = m;
      best.tet = t;
      best.barycentric = b;
    }
  }
  return best;
}

void validate(const TetMesh& mesh, const std::string& what) {
  if (mesh.nodes.empty() || mesh.tets.empty())
    throw InputError(what + ": the mesh has " + std::to_string(mesh.num_nodes()) + " nodes and " +
                     std::to_string(mesh.num_tets()) + " tetrahedra; both must be non-zero");
  for (int k = 0; k < mesh.num_nodes(); ++k)
    if (!mesh.nodes[k].allFinite()) throw InputError(what + ": node " + std::to_string(k) + " is not finite");
  for (int t = 0; t < mesh.num_tets(); ++t) {
    const auto& e = mesh.tets[t];
    for (int i = 0; i < 4; ++i) {
      if (e[i] < 0 || e[i] >= mesh.num_nodes())
        throw InputError(what + ": tetrahedron " + std::to_string(t) + " refers to node " + std::to_string(e[i]) +
                         " of " + std::to_string(mesh.num_nodes()));
      for (int j = 0; j < i; ++j)
        if (e[i] == e[j])
          throw InputError(what + ": tetrahedron " + std::to_string(t) + " repeats node " + std::to_string(e[i]));
    }
  }
}

int orient_positively(TetMesh& mesh) {
  int flipped = 0;
  for (int t = 0; t < mesh.num_tets(); ++t) {
    if (signed_volume(mesh, t) < 0.0) {
      std::swap(mesh.tets[t][2], mesh.tets[t][3]);
      ++flipped;
    }
  }
  return flipped;
}

int remove_unused_nodes(TetMesh& mesh) {
  std::vector<int> map(mesh.nodes.size(), -1);
  for (const auto& e : mesh.tets)
    for (int id : e) map[id] = 0;
  std::vector<Vec3> kept;
  kept.reserve(mesh.nodes.size());
  for (size_t k = 0; k < mesh.nodes.size(); ++k) {
    if (map[k] < 0) continue;
    map[k] = static_cast<int>(kept.size());
    kept.push_back(mesh.nodes[k]);
  }
  const int dropped = mesh.num_nodes() - static_cast<int>(kept.size());
  for (auto& e : mesh.tets)
    for (int& id : e) id = map[id];
  mesh.nodes = std::move(kept);
  return dropped;
}

void canonicalize(TetMesh& mesh) {
  const int n = mesh.num_nodes();
  std::vector<int> order(n);
  for (int k = 0; k < n; ++k) order[k] = k;
  const auto by_position = [&](int a, int b) {
    const Vec3& p = mesh.nodes[a];
    const Vec3& q = mesh.nodes[b];
    return std::lexicographical_compare(p.data(), p.data() + 3, q.data(), q.data() + 3);
  };
  std::stable_sort(order.begin(), order.end(), by_position);
  std::vector<int> new_id(n);
  std::vector<Vec3> nodes(n);
  for (int k = 0; k < n; ++k) {
    new_id[order[k]] = k;
    nodes[k] = mesh.nodes[order[k]];
  }
  mesh.nodes = std::move(nodes);
  // The 12 even permutations of (0, 1, 2, 3): exactly those keep det[x_b − x_a, x_c − x_a, x_d − x_a].
  static constexpr int kEven[12][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {1, 0, 3, 2},
                                       {1, 2, 0, 3}, {1, 3, 2, 0}, {2, 0, 1, 3}, {2, 1, 3, 0},
                                       {2, 3, 0, 1}, {3, 0, 2, 1}, {3, 1, 0, 2}, {3, 2, 1, 0}};
  for (auto& e : mesh.tets) {
    const std::array<int, 4> relabelled{new_id[e[0]], new_id[e[1]], new_id[e[2]], new_id[e[3]]};
    std::array<int, 4> best = relabelled;
    for (const auto& p : kEven) {
      const std::array<int, 4> candidate{relabelled[p[0]], relabelled[p[1]], relabelled[p[2]], relabelled[p[3]]};
      if (candidate < best) best = candidate;
    }
    e = best;
  }
  std::sort(mesh.tets.begin(), mesh.tets.end());
}

std::vector<std::array<int, 3>> boundary_faces(const TetMesh& mesh) {
  // Outward faces of a positively oriented tet (a, b, c, d) in local numbering.
  static constexpr int kFaces[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
  std::map<std::array<int, 3>, std::pair<int, std::array<int, 3>>> faces;
  for (const auto& e : mesh.tets) {
    for (const auto& f : kFaces) {
      const std::array<int, 3> oriented{e[f[0]], e[f[1]], e[f[2]]};
      std::array<int, 3> key = oriented;
      std::sort(key.begin(), key.end());
      auto [it, inserted] = faces.try_emplace(key, 0, oriented);
      ++it->second.first;
    }
  }
  std::vector<std::array<int, 3>> out;
  for (const auto& [key, value] : faces)
    if (value.first == 1) out.push_back(value.second);
  return out;
}

std::vector<int> boundary_nodes(const TetMesh& mesh) {
  std::vector<int> ids;
  for (const auto& f : boundary_faces(mesh)) ids.insert(ids.end(), f.begin(), f.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

double mesh_volume(const TetMesh& mesh) {
  double v = 0.0;
  for (int t = 0; t < mesh.num_tets(); ++t) v += signed_volume(mesh, t);
  return v;
}

Vec3 mesh_centroid(const TetMesh& mesh) {
  Vec3 c = Vec3::Zero();
  double v = 0.0;
  for (int t = 0; t < mesh.num_tets(); ++t) {
    const double vt = signed_volume(mesh, t);
    const auto& e = mesh.tets[t];
    c += vt * 0.25 * (mesh.nodes[e[0]] + mesh.nodes[e[1]] + mesh.nodes[e[2]] + mesh.nodes[e[3]]);
    v += vt;
  }
  return c / v;
}

}  // namespace addsim
