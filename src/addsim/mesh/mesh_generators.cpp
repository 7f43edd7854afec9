#include "addsim/mesh/mesh_generators.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"

namespace addsim {

namespace {

// Refuses a box of nx·ny·nz cells (doubles, so that nothing overflows) that would have more
// than kMaxBoxTets tets or not fit in memory.
void check_box_size(double nx, double ny, double nz, int per_cell) {
  const double tets = nx * ny * nz * per_cell;
  char what[160];
  std::snprintf(what, sizeof what, "%.3g x %.3g x %.3g cells (%.3g tetrahedra)", nx, ny, nz, tets);
  if (!(tets <= kMaxBoxTets))
    throw InputError("box mesh: " + std::string(what) + " are more than the limit of 1e8 tetrahedra");
  check_memory(estimated_fem_bytes(tets), "box mesh", what);
}

}  // namespace

double estimated_fem_bytes(double tets) { return 7.4e3 * tets * std::max(1.0, std::cbrt(tets / 1e5)); }

TetMesh make_box_mesh(const Vec3& size, const Eigen::Vector3i& cells, BoxSplit split, const Vec3& center) {
  if (!size.allFinite() || (size.array() <= 0.0).any())
    throw InputError("box mesh: every size must be positive and finite");
  if ((cells.array() < 1).any()) throw InputError("box mesh: every cell count must be at least 1");
  check_box_size(cells[0], cells[1], cells[2], split == BoxSplit::kSix ? 6 : 5);
  const int nx = cells[0], ny = cells[1], nz = cells[2];
  TetMesh mesh;
  auto node_id = [&](int i, int j, int k) { return i + (nx + 1) * (j + (ny + 1) * k); };
  mesh.nodes.resize(static_cast<size_t>(nx + 1) * (ny + 1) * (nz + 1));
  for (int k = 0; k <= nz; ++k)
    for (int j = 0; j <= ny; ++j)
      for (int i = 0; i <= nx; ++i)
        mesh.nodes[node_id(i, j, k)] =
            center + Vec3(size[0] * (static_cast<double>(i) / nx - 0.5), size[1] * (static_cast<double>(j) / ny - 0.5),
                          size[2] * (static_cast<double>(k) / nz - 0.5));

  // Cell corners by bit pattern: corner c = (c & 1, (c >> 1) & 1, (c >> 2) & 1).
  static constexpr int kSix[6][4] = {{0, 1, 3, 7}, {0, 1, 5, 7}, {0, 2, 3, 7},
                                     {0, 2, 6, 7}, {0, 4, 5, 7}, {0, 4, 6, 7}};
  static constexpr int kFiveEven[5][4] = {{0, 1, 2, 4}, {3, 1, 2, 7}, {5, 1, 4, 7}, {6, 2, 4, 7}, {1, 2, 4, 7}};
  static constexpr int kFiveOdd[5][4] = {{1, 0, 3, 5}, {2, 0, 3, 6}, {4, 0, 5, 6}, {7, 3, 5, 6}, {0, 3, 5, 6}};
  mesh.tets.reserve(static_cast<size_t>(nx) * ny * nz * (split == BoxSplit::kSix ? 6 : 5));
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) {
        int corner[8];
        for (int c = 0; c < 8; ++c) corner[c] = node_id(i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
        auto emit = [&](const int (&t)[4]) {
          mesh.tets.push_back({corner[t[0]], corner[t[1]], corner[t[2]], corner[t[3]]});
        };
        if (split == BoxSplit::kSix) {
          for (const auto& t : kSix) emit(t);
        } else if ((i + j + k) % 2 == 0) {
          for (const auto& t : kFiveEven) emit(t);
        } else {
          for (const auto& t : kFiveOdd) emit(t);
        }
      }
  orient_positively(mesh);
  return mesh;
}

TetMesh make_box_mesh_target(const Vec3& size, int target_tets, BoxSplit split, const Vec3& center) {
  if (target_tets < 1) throw InputError("box mesh: the target element count must be at least 1");
  if (!size.allFinite() || (size.array() <= 0.0).any())
    throw InputError("box mesh: every size must be positive and finite");
  const int per_cell = split == BoxSplit::kSix ? 6 : 5;
  // Cube edge h such that (V / h³) · per_cell = target.
  const double h = std::cbrt(size.prod() * per_cell / target_tets);
  Vec3 n;
  for (int d = 0; d < 3; ++d) n[d] = std::max(1.0, std::round(size[d] / h));
  check_box_size(n[0], n[1], n[2], per_cell);
  const Eigen::Vector3i cells = n.cast<int>();
  return make_box_mesh(size, cells, split, center);
}

}  // namespace addsim
