#pragma once
/// Linear tetrahedral meshes (rest geometry of FEM bodies, paper §5.1): node positions,
/// tetrahedra as 4 node ids, and the boundary surface (faces used by exactly one tet),
/// which carries the contact points and the output surface.

#include <array>
#include <string>
#include <vector>

#include "addsim/core/types.h"

namespace addsim {

/// A tetrahedral mesh: nodes (m) and tets (4 node ids each, 0-based). A tet (a, b, c, d)
/// is positively oriented when det[x_b − x_a, x_c − x_a, x_d − x_a] > 0.
struct TetMesh {
  std::vector<Vec3> nodes;               ///< rest positions, m
  std::vector<std::array<int, 4>> tets;  ///< node ids per tet

  int num_nodes() const { return static_cast<int>(nodes.size()); }  ///< number of nodes
  int num_tets() const { return static_cast<int>(tets.size()); }    ///< number of tetrahedra
};

/// Signed volume of tet t (m³): det[x_b − x_a, x_c − x_a, x_d − x_a] / 6.
double signed_volume(const TetMesh& mesh, int t);

/// Throws InputError (prefixed by `what`) if the mesh is empty, has non-finite node
/// coordinates, node ids out of range, or a tet that repeats a node.
void validate(const TetMesh& mesh, const std::string& what);

/// Swaps the last two nodes of every negatively oriented tet; returns how many changed.
/// File formats differ in their orientation convention; loaders call this.
int orient_positively(TetMesh& mesh);

/// Drops nodes referenced by no tet and renumbers the tets; returns how many were dropped.
int remove_unused_nodes(TetMesh& mesh);

/// Boundary triangles (faces used by exactly one tet), ordered so that their normal
/// (x_b − x_a) × (x_c − x_a) points out of a positively oriented mesh.
std::vector<std::array<int, 3>> boundary_faces(const TetMesh& mesh);

/// Sorted ids of the nodes on the boundary faces.
std::vector<int> boundary_nodes(const TetMesh& mesh);

/// Total signed volume of the mesh (m³).
double mesh_volume(const TetMesh& mesh);
/// Volume-weighted centroid of the mesh (m); the rest centre X_c of a soft body.
Vec3 mesh_centroid(const TetMesh& mesh);

}  // namespace addsim
