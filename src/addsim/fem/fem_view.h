#pragma once
/// A light read-only view of a soft body's mesh for outputs (VTK, meta.json), which need
/// only nodes, tets and boundary faces, not the FEM terms.

#include <array>
#include <optional>
#include <vector>

#include "addsim/model/body.h"

namespace addsim {

/// Mesh connectivity of one FEM body; node k's x coordinate is global DOF dof_offset + 3k.
struct FemMeshView {
  int dof_offset = 0;                                           ///< first global DOF of the body
  int num_nodes = 0;                                            ///< number of mesh nodes
  const std::vector<std::array<int, 4>>* tets = nullptr;        ///< node ids per tetrahedron
  const std::vector<std::array<int, 3>>* surface_faces = nullptr;  ///< outward boundary triangles
  const std::vector<int>* surface_nodes = nullptr;              ///< sorted boundary (contact) node ids
};

/// The view of `body` if it is a soft (FEM) body, else nullopt. The pointers live as long as the body.
std::optional<FemMeshView> fem_mesh_view(const Body& body);

}  // namespace addsim
