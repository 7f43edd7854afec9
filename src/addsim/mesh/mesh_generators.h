#pragma once
/// Built-in mesh generators that need no external mesher: structured boxes whose cubes
/// are split into 5 or 6 tetrahedra (conforming across cells).

#include <Eigen/Core>

#include "addsim/mesh/tet_mesh.h"

namespace addsim {

/// Estimated peak memory (bytes) of simulating an FEM body of `tets` linear tetrahedra:
/// 7.4 KB per tet measured on box meshes of 2e4 and 8e4 tets (one step, Release), grown by
/// (tets / 1e5)^{1/3} beyond 1e5 tets for the fill-in of the sparse factorisation.
double estimated_fem_bytes(double tets);

/// Largest generated box (tetrahedra): element ids are ints, and a box this large needs far
/// more memory than any machine addsim targets.
inline constexpr double kMaxBoxTets = 1e8;

/// How each cell of a structured box is split: 6 tets around the main diagonal (Kuhn)
/// or 5 tets (one central tet, alternating mirror images so that faces conform).
enum class BoxSplit { kFive, kSix };

/// Structured box [0, size] (m) centred at `center` with cells (nx, ny, nz ≥ 1) each
/// split per `split`; positively oriented tets. Throws InputError for bad sizes/counts, more
/// than kMaxBoxTets tets, or a mesh whose simulation would not fit in memory (check_memory).
TetMesh make_box_mesh(const Vec3& size, const Eigen::Vector3i& cells, BoxSplit split = BoxSplit::kSix,
                      const Vec3& center = Vec3::Zero());

/// Structured box as above with cells chosen as cubic as possible so that the number of
/// tets is close to `target_tets` (≥ 1); at least one cell per side, so an extreme aspect
/// ratio may need many more tets than the target (refused as above).
TetMesh make_box_mesh_target(const Vec3& size, int target_tets, BoxSplit split = BoxSplit::kSix,
                             const Vec3& center = Vec3::Zero());

}  // namespace addsim
