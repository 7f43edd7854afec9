#include "addsim/fem/fem_view.h"

#include "addsim/fem/fem_body.h"

namespace addsim {

std::optional<FemMeshView> fem_mesh_view(const Body& body) {
  if (body.kind() != BodyKind::kFem) return std::nullopt;
  const auto& fem = static_cast<const FemBody&>(body);
  FemMeshView view;
  view.dof_offset = fem.dof_offset();
  view.num_nodes = fem.num_nodes();
  view.tets = &fem.mesh().tets;
  view.surface_faces = &fem.surface_faces();
  view.surface_nodes = &fem.surface_nodes();
  return view;
}

}  // namespace addsim
