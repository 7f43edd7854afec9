#include "addsim/mesh/gmsh_generators.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <mutex>
#include <string>
#include <unordered_map>

#include <Eigen/Geometry>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"
#include "addsim/mesh/mesh_cache.h"

#ifdef ADDSIM_HAVE_GMSH
#include <gmsh.h>
#endif

namespace addsim {

namespace {

void check_target(const char* what, int target_tets) {
  if (target_tets < 1) throw InputError(std::string(what) + ": the target element count must be at least 1");
}

void check_length(const char* what, const char* name, double value) {
  if (!(value > 0.0) || !std::isfinite(value))
    throw InputError(std::string(what) + ": " + name + " must be positive and finite, got " + std::to_string(value));
}

#ifdef ADDSIM_HAVE_GMSH
// Version of what mesh_to_target and canonicalize produce for given arguments: part of every
// cache key, so that a change of the meshing procedure never reuses meshes made by the old one.
constexpr int kMeshingVersion = 1;

// Cache key of a generator call: generator, exact parameters (hexadecimal floats), target
// count, gmsh version and kMeshingVersion.
std::string cache_key(const std::string& generator, std::initializer_list<double> params, int target_tets) {
  std::string key = generator;
  char number[40];
  for (double x : params) {
    std::snprintf(number, sizeof number, " %a", x);
    key += number;
  }
  key += " target " + std::to_string(target_tets) + " gmsh " GMSH_API_VERSION " meshing " + std::to_string(kMeshingVersion);
  return key;
}

std::mutex& gmsh_mutex() {
  static std::mutex m;
  return m;
}

// Builds the OCC geometry with `build`, meshes it at size h and returns the tet mesh.
TetMesh mesh_once(const std::function<void()>& build, double h) {
  gmsh::model::add("addsim");
  build();
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
  TetMesh mesh;
  std::unordered_map<std::size_t, int> ids;
  mesh.nodes.reserve(node_tags.size());
  for (size_t k = 0; k < node_tags.size(); ++k) {
    ids[node_tags[k]] = static_cast<int>(mesh.nodes.size());
    mesh.nodes.emplace_back(coord[3 * k], coord[3 * k + 1], coord[3 * k + 2]);
  }
  for (size_t e = 0; e + 3 < elem_nodes.size(); e += 4)
    mesh.tets.push_back({ids.at(elem_nodes[e]), ids.at(elem_nodes[e + 1]), ids.at(elem_nodes[e + 2]),
                         ids.at(elem_nodes[e + 3])});
  remove_unused_nodes(mesh);
  orient_positively(mesh);
  // gmsh 4.8 numbers the nodes and elements of boolean (OCC fuse) and re-parametrised
  // (classifySurfaces) geometries in an order that depends on heap addresses, so the same
  // scene gave differently numbered meshes in different processes (the positions and tets
  // themselves agree); the canonical numbering makes generated meshes identical bit for bit.
  canonicalize(mesh);
  return mesh;
}

// Meshes repeatedly, scaling h towards the target count; returns the closest mesh.
TetMesh mesh_to_target(const char* what, const std::function<void()>& build, double volume, int target_tets) {
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
  TetMesh best;
  try {
    for (int iter = 0; iter < 6; ++iter) {
      TetMesh mesh = mesh_once(build, h);
      if (mesh.tets.empty()) break;
      if (best.tets.empty() || std::abs(mesh.num_tets() - target_tets) < std::abs(best.num_tets() - target_tets))
        best = mesh;
      const double ratio = static_cast<double>(mesh.num_tets()) / target_tets;
      // Within 3 % of the target is as close as a mesh size can steer.
      if (std::abs(ratio - 1.0) < 0.03) break;
      h *= std::cbrt(ratio);
    }
  } catch (const std::exception& e) {
    gmsh::finalize();
    throw InputError(std::string(what) + ": gmsh failed: " + e.what());
  } catch (const std::string& e) {
    // The gmsh API reports errors by throwing their message as a std::string.
    gmsh::finalize();
    throw InputError(std::string(what) + ": gmsh failed: " + e);
  }
  gmsh::finalize();
  if (best.tets.empty())
    throw InputError(std::string(what) + ": gmsh produced no tetrahedra (meshing failed; try another size)");
  return best;
}
#endif

#ifndef ADDSIM_HAVE_GMSH
[[noreturn]] void no_gmsh(const char* what) {
  throw InputError(std::string(what) + ": addsim was built without gmsh (ADDSIM_WITH_GMSH=OFF or gmsh not found); "
                   "load a .msh/.node file or use make_box_mesh instead");
}
#endif

// Triangles of a Wavefront .obj file: vertices (m) and 0-based corner ids. Polygons are
// fanned; "f" entries may carry /texture/normal indices and negative (relative) ids.
void read_obj(const std::string& path, std::vector<Vec3>& vertices, std::vector<std::array<int, 3>>& triangles) {
  std::istringstream in(read_input_file(path, "surface mesh"));
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "v") {
      Vec3 x;
      if (!(ls >> x.x() >> x.y() >> x.z()) || !x.allFinite())
        throw InputError(path + ":" + std::to_string(line_no) + ": bad vertex");
      vertices.push_back(x);
    } else if (key == "f") {
      std::vector<int> ids;
      std::string corner;
      while (ls >> corner) {
        const long id = std::strtol(corner.c_str(), nullptr, 10);
        const long n = static_cast<long>(vertices.size());
        const long k = id > 0 ? id - 1 : n + id;
        if (id == 0 || k < 0 || k >= n)
          throw InputError(path + ":" + std::to_string(line_no) + ": face refers to a missing vertex");
        ids.push_back(static_cast<int>(k));
      }
      if (ids.size() < 3) throw InputError(path + ":" + std::to_string(line_no) + ": face with fewer than 3 vertices");
      for (std::size_t c = 1; c + 1 < ids.size(); ++c) triangles.push_back({ids[0], ids[c], ids[c + 1]});
    }
  }
  if (triangles.empty()) throw InputError(path + ": no faces");
}

// Volume enclosed by a closed triangle surface (m³, divergence theorem; sign from the winding).
double enclosed_volume(const std::vector<Vec3>& x, const std::vector<std::array<int, 3>>& tris) {
  double v = 0.0;
  for (const auto& t : tris) v += x[t[0]].dot(x[t[1]].cross(x[t[2]])) / 6.0;
  return std::abs(v);
}

}  // namespace

bool gmsh_available() {
#ifdef ADDSIM_HAVE_GMSH
  return true;
#else
  return false;
#endif
}

TetMesh make_sphere_mesh(double radius, int target_tets) {
  constexpr const char* what = "sphere mesh";
  check_length(what, "radius", radius);
  check_target(what, target_tets);
#ifdef ADDSIM_HAVE_GMSH
  return cached_mesh(cache_key("sphere", {radius}, target_tets), [&] {
    return mesh_to_target(what, [&] { gmsh::model::occ::addSphere(0, 0, 0, radius); },
                          4.0 / 3.0 * M_PI * radius * radius * radius, target_tets);
  }, what);
#else
  no_gmsh(what);
#endif
}

TetMesh make_cylinder_mesh(double radius, double height, int target_tets) {
  constexpr const char* what = "cylinder mesh";
  check_length(what, "radius", radius);
  check_length(what, "height", height);
  check_target(what, target_tets);
#ifdef ADDSIM_HAVE_GMSH
  return cached_mesh(cache_key("cylinder", {radius, height}, target_tets), [&] {
    return mesh_to_target(what, [&] { gmsh::model::occ::addCylinder(0, 0, -0.5 * height, 0, 0, height, radius); },
                          M_PI * radius * radius * height, target_tets);
  }, what);
#else
  no_gmsh(what);
#endif
}

TetMesh make_torus_mesh(double major_radius, double minor_radius, int target_tets) {
  constexpr const char* what = "torus mesh";
  check_length(what, "major radius", major_radius);
  check_length(what, "minor radius", minor_radius);
  check_target(what, target_tets);
  if (minor_radius >= major_radius) throw InputError("torus mesh: the minor radius must be below the major radius");
#ifdef ADDSIM_HAVE_GMSH
  return cached_mesh(cache_key("torus", {major_radius, minor_radius}, target_tets), [&] {
    return mesh_to_target(what, [&] { gmsh::model::occ::addTorus(0, 0, 0, major_radius, minor_radius); },
                          2.0 * M_PI * M_PI * major_radius * minor_radius * minor_radius, target_tets);
  }, what);
#else
  no_gmsh(what);
#endif
}

TetMesh make_three_tori_mesh(double major_radius, double minor_radius, int target_tets) {
  constexpr const char* what = "three-tori mesh";
  check_length(what, "major radius", major_radius);
  check_length(what, "minor radius", minor_radius);
  check_target(what, target_tets);
  if (minor_radius >= major_radius) throw InputError("three-tori mesh: the minor radius must be below the major radius");
#ifdef ADDSIM_HAVE_GMSH
  auto build = [&] {
    const int a = gmsh::model::occ::addTorus(0, 0, 0, major_radius, minor_radius);
    const int b = gmsh::model::occ::addTorus(0, 0, 0, major_radius, minor_radius);
    const int c = gmsh::model::occ::addTorus(0, 0, 0, major_radius, minor_radius);
    // Three rings sharing the x diameter, 60° apart (rings at right angles about different
    // axes make gmsh 4.8 fail on the coincident periodic seams).
    gmsh::model::occ::rotate({{3, b}}, 0, 0, 0, 1, 0, 0, M_PI / 3.0);
    gmsh::model::occ::rotate({{3, c}}, 0, 0, 0, 1, 0, 0, 2.0 * M_PI / 3.0);
    gmsh::vectorpair out;
    std::vector<gmsh::vectorpair> map;
    gmsh::model::occ::fuse({{3, a}}, {{3, b}, {3, c}}, out, map);
  };
  // Three tori minus their overlaps: the first guess only needs the right order.
  return cached_mesh(cache_key("three_tori", {major_radius, minor_radius}, target_tets), [&] {
    return mesh_to_target(what, build, 2.6 * 2.0 * M_PI * M_PI * major_radius * minor_radius * minor_radius,
                          target_tets);
  }, what);
#else
  no_gmsh(what);
#endif
}

TetMesh make_mesh_from_surface(const std::string& path, int target_tets) {
  const std::string what = "surface mesh " + path;
  check_target(what.c_str(), target_tets);
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".obj" && ext != ".stl") throw InputError(path + ": expected a .obj or .stl surface mesh");
  check_input_file(path, "surface mesh");
#ifdef ADDSIM_HAVE_GMSH
  std::vector<Vec3> vertices;
  std::vector<std::array<int, 3>> triangles;
  if (ext == ".obj") read_obj(path, vertices, triangles);
  // Closed surfaces have every edge in exactly two triangles (checked for .obj here; gmsh
  // reports open .stl surfaces by failing to build the volume).
  if (ext == ".obj") {
    std::unordered_map<long long, int> edges;
    const long long n = static_cast<long long>(vertices.size());
    for (const auto& t : triangles)
      for (int c = 0; c < 3; ++c) {
        const long long a = t[c], b = t[(c + 1) % 3];
        ++edges[std::min(a, b) * n + std::max(a, b)];
      }
    for (const auto& [edge, count] : edges)
      if (count != 2) throw InputError(path + ": the surface is not closed (an edge is used by " +
                                       std::to_string(count) + " triangles)");
  }
  auto build = [&] {
    if (ext == ".obj") {
      // The triangles become one discrete surface with gmsh node tags 1..n.
      const int surface = gmsh::model::addDiscreteEntity(2);
      std::vector<std::size_t> tags(vertices.size());
      std::vector<double> coords;
      coords.reserve(3 * vertices.size());
      for (std::size_t k = 0; k < vertices.size(); ++k) {
        tags[k] = k + 1;
        coords.insert(coords.end(), {vertices[k].x(), vertices[k].y(), vertices[k].z()});
      }
      gmsh::model::mesh::addNodes(2, surface, tags, coords);
      std::vector<std::size_t> corners;
      corners.reserve(3 * triangles.size());
      for (const auto& t : triangles) corners.insert(corners.end(), {t[0] + 1u, t[1] + 1u, t[2] + 1u});
      gmsh::model::mesh::addElementsByType(surface, 2, {}, corners);
    } else {
      gmsh::merge(path);
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
  };
  // An .stl is read by gmsh only, so the first mesh-size guess assumes one litre; the
  // re-meshing loop then scales the size by (count / target)^(1/3).
  const double volume = ext == ".obj" ? enclosed_volume(vertices, triangles) : 1e-3;
  // Keyed by the file's content, not its name, so that an edited surface is meshed again.
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  char content[40];
  std::snprintf(content, sizeof content, "%016llx",
                static_cast<unsigned long long>(fnv1a64(bytes.str().data(), bytes.str().size())));
  return cached_mesh(cache_key("surface" + ext + " " + content, {}, target_tets),
                     [&] { return mesh_to_target(what.c_str(), build, volume, target_tets); }, what);
#else
  no_gmsh(what.c_str());
#endif
}

}  // namespace addsim
