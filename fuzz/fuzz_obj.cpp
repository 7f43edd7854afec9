/// Wavefront .obj surfaces, both readers: the rigid-body shape reader (parse_surface_mesh,
/// then the mass properties the rigid loader computes) and the FEM surface reader that feeds
/// gmsh (parse_obj_surface, without meshing).

#include <cstddef>
#include <cstdint>
#include <string>

#include "addsim/core/error.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/rigid/rigid_mesh.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  addsim::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const addsim::SurfaceMesh mesh = addsim::parse_surface_mesh(text, "fuzz.obj");
    addsim::mesh_mass_properties(mesh);
  } catch (const addsim::InputError&) {
  }
  try {
    std::vector<addsim::Vec3> vertices;
    std::vector<std::array<int, 3>> triangles;
    addsim::parse_obj_surface(text, "fuzz.obj", vertices, triangles);
  } catch (const addsim::InputError&) {
  }
  return 0;
}
