#pragma once
/// Built-in mesh generators that need no external mesher: structured boxes whose cubes
/// are split into 5 or 6 tetrahedra (conforming across cells).

#include <Eigen/Core>

#include "addsim/mesh/tet_mesh.h"

namespace addsim {

/// How each cell of a structured box is split: 6 tets around the main diagonal (Kuhn)
/// or 5 tets (one central tet, alternating mirror images so that faces conform).
enum class BoxSplit { kFive, kSix };

/// Structured box [0, size] (m) centred at `center` with cells (nx, ny, nz ≥ 1) each
/// split per `split`; positively oriented tets. Throws InputError for bad sizes/counts.
TetMesh make_box_mesh(const Vec3& size, const Eigen::Vector3i& cells, BoxSplit split = BoxSplit::kSix,
                      const Vec3& center = Vec3::Zero());

/// Structured box as above with cells chosen as cubic as possible so that the number of
/// tets is close to `target_tets` (≥ 1).
TetMesh make_box_mesh_target(const Vec3& size, int target_tets, BoxSplit split = BoxSplit::kSix,
                             const Vec3& center = Vec3::Zero());

}  // namespace addsim
