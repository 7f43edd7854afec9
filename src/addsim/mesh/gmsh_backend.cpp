// The gmsh calls of the gmsh generators, built as the module addsim_gmsh (gmsh_backend.h).

#include "addsim/mesh/gmsh_backend.h"

#include <cmath>
#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>

#include <gmsh.h>

namespace addsim::gmsh_backend {

namespace {

// gmsh keeps global state: one meshing at a time.
std::mutex& gmsh_mutex() {
  static std::mutex m;
  return m;
}

// Builds the geometry of `recipe` in the current gmsh model.
void build(const Recipe& recipe) {
  switch (recipe.kind) {
    case Recipe::Kind::kSphere:
      gmsh::model::occ::addSphere(0, 0, 0, recipe.a);
      break;
    case Recipe::Kind::kCylinder:
      gmsh::model::occ::addCylinder(0, 0, -0.5 * recipe.b, 0, 0, recipe.b, recipe.a);
      break;
    case Recipe::Kind::kTorus:
      gmsh::model::occ::addTorus(0, 0, 0, recipe.a, recipe.b);
      break;
    case Recipe::Kind::kThreeTori: {
      const int a = gmsh::model::occ::addTorus(0, 0, 0, recipe.a, recipe.b);
      const int b = gmsh::model::occ::addTorus(0, 0, 0, recipe.a, recipe.b);
      const int c = gmsh::model::occ::addTorus(0, 0, 0, recipe.a, recipe.b);
      // Three rings sharing the x diameter, 60° apart (rings at right angles about different
      // axes make gmsh 4.8 fail on the coincident periodic seams).
      gmsh::model::occ::rotate({{3, b}}, 0, 0, 0, 1, 0, 0, M_PI / 3.0);
      gmsh::model::occ::rotate({{3, c}}, 0, 0, 0, 1, 0, 0, 2.0 * M_PI / 3.0);
      gmsh::vectorpair out;
      std::vector<gmsh::vectorpair> map;
      gmsh::model::occ::fuse({{3, a}}, {{3, b}, {3, c}}, out, map);
      break;
    }
    case Recipe::Kind::kTriangles:
    case Recipe::Kind::kFile: {
      if (recipe.kind == Recipe::Kind::kTriangles) {
        // The triangles become one discrete surface with gmsh node tags 1..n.
        const int surface = gmsh::model::addDiscreteEntity(2);
        const std::size_t n = recipe.vertices.size() / 3;
        std::vector<std::size_t> tags(n);
        for (std::size_t k = 0; k < n; ++k) tags[k] = k + 1;
        gmsh::model::mesh::addNodes(2, surface, tags, recipe.vertices);
        std::vector<std::size_t> corners(recipe.triangles.size());
        for (std::size_t k = 0; k < corners.size(); ++k) corners[k] = static_cast<std::size_t>(recipe.triangles[k]) + 1;
        gmsh::model::mesh::addElementsByType(surface, 2, {}, corners);
      } else {
        gmsh::merge(recipe.path);
      }
      // Split the triangulation into patches at sharp edges (40°) and further into patches
      // that can be parametrised (a closed smooth surface cannot be one), give them a
      // parametrisation so that gmsh can re-mesh them at the target size, and close the volume.
      gmsh::model::mesh::classifySurfaces(40.0 * M_PI / 180.0, true, true, M_PI);
      gmsh::model::mesh::createGeometry();
      gmsh::vectorpair surfaces;
      gmsh::model::getEntities(surfaces, 2);
      std::vector<int> surface_tags;
      for (const auto& [dim, tag] : surfaces) surface_tags.push_back(tag);
      const int loop = gmsh::model::geo::addSurfaceLoop(surface_tags);
      gmsh::model::geo::addVolume({loop});
      gmsh::model::geo::synchronize();
      break;
    }
  }
}

// Builds the geometry, meshes it at size h and returns the tets as gmsh numbers them.
RawMesh mesh_once(const Recipe& recipe, double h) {
  gmsh::model::add("addsim");
  build(recipe);
  gmsh::model::occ::synchronize();
  gmsh::option::setNumber("Mesh.MeshSizeMin", h);
  gmsh::option::setNumber("Mesh.MeshSizeMax", h);
  gmsh::option::setNumber("Mesh.MeshSizeFromCurvature", 0);
  gmsh::model::mesh::generate(3);
  std::vector<std::size_t> node_tags, elem_tags, elem_nodes;
  std::vector<double> coord, param;
  gmsh::model::mesh::getNodes(node_tags, coord, param, -1, -1, true, false);
  gmsh::model::mesh::getElementsByType(4, elem_tags, elem_nodes);
  gmsh::model::remove();
  RawMesh mesh;
  std::unordered_map<std::size_t, int> ids;
  mesh.nodes.reserve(coord.size());
  for (std::size_t k = 0; k < node_tags.size(); ++k) {
    ids[node_tags[k]] = static_cast<int>(k);
    mesh.nodes.insert(mesh.nodes.end(), {coord[3 * k], coord[3 * k + 1], coord[3 * k + 2]});
  }
  for (std::size_t e = 0; e + 3 < elem_nodes.size(); e += 4)
    for (int c = 0; c < 4; ++c) mesh.tets.push_back(ids.at(elem_nodes[e + c]));
  return mesh;
}

}  // namespace

}  // namespace addsim::gmsh_backend

// Meshes repeatedly, scaling h towards the target count; keeps the closest mesh.
extern "C" bool addsim_gmsh_mesh(const addsim::gmsh_backend::Recipe& recipe, double volume, int target_tets,
                                 addsim::gmsh_backend::RawMesh& out, std::string& error) {
  using namespace addsim::gmsh_backend;
  std::lock_guard<std::mutex> lock(gmsh_mutex());
  gmsh::initialize(0, nullptr, false);
  gmsh::option::setNumber("General.Terminal", 0);
  gmsh::option::setNumber("General.Verbosity", 0);
  // gmsh throws from inside OpenMP regions when AbortOnError is set, which terminates the
  // process; with 0 a failed mesh comes back empty and is reported below.
  gmsh::option::setNumber("General.AbortOnError", 0);
  gmsh::option::setNumber("Mesh.Algorithm3D", 1);
  gmsh::option::setNumber("General.NumThreads", 1);
  // A regular tetrahedron of edge h has volume h³/(6√2); unstructured meshes need about
  // that many elements per volume, which is the first guess for h.
  double h = std::cbrt(volume / (target_tets * 0.1178511));
  RawMesh best;
  auto count = [](const RawMesh& m) { return static_cast<int>(m.tets.size() / 4); };
  try {
    for (int iter = 0; iter < 6; ++iter) {
      RawMesh mesh = mesh_once(recipe, h);
      if (mesh.tets.empty()) break;
      if (best.tets.empty() || std::abs(count(mesh) - target_tets) < std::abs(count(best) - target_tets))
        best = mesh;
      const double ratio = static_cast<double>(count(mesh)) / target_tets;
      // Within 3 % of the target is as close as a mesh size can steer.
      if (std::abs(ratio - 1.0) < 0.03) break;
      h *= std::cbrt(ratio);
    }
  } catch (const std::exception& e) {
    gmsh::finalize();
    error = std::string("gmsh failed: ") + e.what();
    return false;
  } catch (const std::string& e) {
    // The gmsh API reports errors by throwing their message as a std::string.
    gmsh::finalize();
    error = "gmsh failed: " + e;
    return false;
  }
  gmsh::finalize();
  if (best.tets.empty()) {
    error = "gmsh produced no tetrahedra (meshing failed; try another size)";
    return false;
  }
  out = std::move(best);
  return true;
}
