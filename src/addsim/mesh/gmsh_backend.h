#pragma once
/// The interface between the gmsh generators (gmsh_generators.cpp, in addsim_mesh) and the
/// module that calls gmsh (gmsh_backend.cpp, built as the shared module addsim_gmsh and
/// loaded with dlopen only when a mesh is not in the mesh cache). libgmsh 4.8 pulls in
/// OpenCASCADE, FLTK, OpenGL and X11 (≈ 100 libraries): linking it into every binary cost
/// ≈ 85 ms of dynamic loading at each process start, also for runs that mesh nothing.
/// Plain data only crosses the boundary; errors come back as a message, not an exception.

#include <string>
#include <vector>

namespace addsim::gmsh_backend {

/// What to mesh: an OpenCASCADE primitive, a triangle surface given inline, or a surface file.
struct Recipe {
  enum class Kind { kSphere, kCylinder, kTorus, kThreeTori, kTriangles, kFile };
  Kind kind = Kind::kSphere;
  double a = 0.0;  ///< sphere/cylinder radius, torus major radius, m
  double b = 0.0;  ///< cylinder height, torus minor radius, m
  std::vector<double> vertices;  ///< kTriangles: 3 coordinates per vertex, m
  std::vector<int> triangles;    ///< kTriangles: 3 0-based vertex ids per triangle
  std::string path;              ///< kFile: a surface file gmsh reads (.stl)
};

/// A tet mesh as gmsh numbers it (before the caller removes unused nodes, orients and
/// canonicalises it).
struct RawMesh {
  std::vector<double> nodes;  ///< 3 coordinates per node, m
  std::vector<int> tets;      ///< 4 0-based node ids per tet
};

/// Signature of the module's entry point kEntryPoint: meshes `recipe` repeatedly, scaling
/// the size towards `target_tets` from the first guess for `volume` (m³), and stores the
/// closest mesh in `out`. Returns false with the reason in `error` when gmsh fails or makes
/// no tetrahedra.
using MeshFunction = bool (*)(const Recipe& recipe, double volume, int target_tets, RawMesh& out, std::string& error);

/// The exported C name of the MeshFunction in the module.
inline constexpr const char* kEntryPoint = "addsim_gmsh_mesh";

}  // namespace addsim::gmsh_backend
