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

/// Renumbers the mesh into a canonical form that depends only on its geometry and
/// connectivity, not on the input numbering: nodes sorted lexicographically by their exact
/// coordinates (x, then y, then z), each tet's ids rotated by an even permutation (which keeps
/// its orientation) so that its smallest id comes first with the rest in the lowest
/// lexicographic order, and tets sorted by those id tuples. Two meshes that are relabellings
/// of each other (same positions, same tets up to even permutations) become identical; the
/// boundary faces follow, as they are derived from the tets. Nodes at identical positions
/// keep their relative order.
void canonicalize(TetMesh& mesh);

/// Boundary triangles (faces used by exactly one tet), ordered so that their normal
/// (x_b − x_a) × (x_c − x_a) points out of a positively oriented mesh.
std::vector<std::array<int, 3>> boundary_faces(const TetMesh& mesh);

/// Sorted ids of the nodes on the boundary faces.
std::vector<int> boundary_nodes(const TetMesh& mesh);

/// A point located in a tet mesh: the tet and the point's barycentric coordinates there,
/// x = Σ_k b_k x_{tets[tet][k]} with Σ_k b_k = 1; tet = −1 if no tet contains the point.
struct TetLocation {
  int tet = -1;
  std::array<double, 4> barycentric{};
};

/// Barycentric coordinates of x in the non-degenerate tet with the given corners.
std::array<double, 4> barycentric_coordinates(const std::array<Vec3, 4>& corners, const Vec3& x);

/// The tet (node ids `tets`, positions `nodes`) that contains x, i.e. every b_k ≥ −tolerance.
/// Where several do (x on a shared face, edge or node), the one in which x lies deepest
/// (largest smallest b_k) wins and ties go to the lowest tet index, so the choice is
/// deterministic. Linear in the number of tets.
TetLocation locate_point(const std::vector<Vec3>& nodes, const std::vector<std::array<int, 4>>& tets, const Vec3& x,
                         double tolerance = 1e-10);

/// Total signed volume of the mesh (m³).
double mesh_volume(const TetMesh& mesh);
/// Volume-weighted centroid of the mesh (m); the rest centre X_c of a soft body.
Vec3 mesh_centroid(const TetMesh& mesh);

}  // namespace addsim
