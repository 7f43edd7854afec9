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
#include <dlfcn.h>

// Only for GMSH_API_VERSION (part of the cache keys): the gmsh calls are in the module
// addsim_gmsh (gmsh_backend.h), and this library does not link libgmsh.
#include <gmsh.h>

#include "addsim/mesh/gmsh_backend.h"
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

// The module that calls gmsh (gmsh_backend.h), loaded on first use and kept for the life
// of the process: $ADDSIM_GMSH_MODULE, else the one built with this addsim.
gmsh_backend::MeshFunction gmsh_module(const char* what) {
  static std::mutex mutex;
  static gmsh_backend::MeshFunction function = nullptr;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mutex);
  if (!function && failure.empty()) {
    const char* env = std::getenv("ADDSIM_GMSH_MODULE");
    const std::string path = env && *env ? env : ADDSIM_GMSH_MODULE_PATH;
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      function = reinterpret_cast<gmsh_backend::MeshFunction>(dlsym(handle, gmsh_backend::kEntryPoint));
      if (!function) failure = path + " has no " + gmsh_backend::kEntryPoint;
    } else {
      const char* reason = dlerror();
      failure = "cannot load the gmsh module " + path + ": " + (reason ? reason : "unknown error") +
                " (set ADDSIM_GMSH_MODULE to the built libaddsim_gmsh.so)";
    }
  }
  if (!function) throw InputError(std::string(what) + ": " + failure);
  return function;
}

// An OpenCASCADE primitive with dimensions a, b (gmsh_backend::Recipe).
gmsh_backend::Recipe primitive(gmsh_backend::Recipe::Kind kind, double a, double b = 0.0) {
  gmsh_backend::Recipe recipe;
  recipe.kind = kind;
  recipe.a = a;
  recipe.b = b;
  return recipe;
}

// Meshes `recipe` with gmsh towards target_tets (gmsh_backend.h) and returns the mesh without
// unused nodes, positively oriented and canonically numbered.
TetMesh mesh_to_target(const char* what, const gmsh_backend::Recipe& recipe, double volume, int target_tets) {
  gmsh_backend::RawMesh raw;
  std::string error;
  if (!gmsh_module(what)(recipe, volume, target_tets, raw, error)) throw InputError(std::string(what) + ": " + error);
  TetMesh mesh;
  mesh.nodes.reserve(raw.nodes.size() / 3);
  for (std::size_t k = 0; k + 2 < raw.nodes.size(); k += 3) mesh.nodes.emplace_back(raw.nodes[k], raw.nodes[k + 1], raw.nodes[k + 2]);
  mesh.tets.reserve(raw.tets.size() / 4);
  for (std::size_t e = 0; e + 3 < raw.tets.size(); e += 4)
    mesh.tets.push_back({raw.tets[e], raw.tets[e + 1], raw.tets[e + 2], raw.tets[e + 3]});
  remove_unused_nodes(mesh);
  orient_positively(mesh);
  // gmsh 4.8 numbers the nodes and elements of boolean (OCC fuse) and re-parametrised
  // (classifySurfaces) geometries in an order that depends on heap addresses, so the same
  // scene gave differently numbered meshes in different processes (the positions and tets
  // themselves agree); the canonical numbering makes generated meshes identical bit for bit.
  canonicalize(mesh);
  return mesh;
}
#endif

#ifndef ADDSIM_HAVE_GMSH
[[noreturn]] void no_gmsh(const char* what) {
  throw InputError(std::string(what) + ": addsim was built without gmsh (ADDSIM_WITH_GMSH=OFF or gmsh not found); "
                   "load a .msh/.node file or use make_box_mesh instead");
}
#endif


// Volume enclosed by a closed triangle surface (m³, divergence theorem; sign from the winding).
double enclosed_volume(const std::vector<Vec3>& x, const std::vector<std::array<int, 3>>& tris) {
  double v = 0.0;
  for (const auto& t : tris) v += x[t[0]].dot(x[t[1]].cross(x[t[2]])) / 6.0;
  return std::abs(v);
}

}  // namespace

void parse_obj_surface(const std::string& text, const std::string& path, std::vector<Vec3>& vertices,
                       std::vector<std::array<int, 3>>& triangles) {
  std::istringstream in(text);
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
  // Closed surfaces have every edge in exactly two triangles.
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
    return mesh_to_target(what, primitive(gmsh_backend::Recipe::Kind::kSphere, radius),
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
    return mesh_to_target(what, primitive(gmsh_backend::Recipe::Kind::kCylinder, radius, height),
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
    return mesh_to_target(what, primitive(gmsh_backend::Recipe::Kind::kTorus, major_radius, minor_radius),
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
  // Three tori minus their overlaps: the first guess only needs the right order.
  return cached_mesh(cache_key("three_tori", {major_radius, minor_radius}, target_tets), [&] {
    return mesh_to_target(what, primitive(gmsh_backend::Recipe::Kind::kThreeTori, major_radius, minor_radius),
                          2.6 * 2.0 * M_PI * M_PI * major_radius * minor_radius * minor_radius, target_tets);
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
  // Open .obj surfaces are refused by the reader; gmsh reports open .stl surfaces by failing
  // to build the volume.
  if (ext == ".obj") parse_obj_surface(read_input_file(path, "surface mesh"), path, vertices, triangles);
  // The surface for gmsh: the .obj triangles inline, an .stl by its path.
  gmsh_backend::Recipe recipe;
  if (ext == ".obj") {
    recipe.kind = gmsh_backend::Recipe::Kind::kTriangles;
    for (const Vec3& v : vertices) recipe.vertices.insert(recipe.vertices.end(), {v.x(), v.y(), v.z()});
    for (const auto& t : triangles) recipe.triangles.insert(recipe.triangles.end(), {t[0], t[1], t[2]});
  } else {
    recipe.kind = gmsh_backend::Recipe::Kind::kFile;
    recipe.path = path;
  }
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
                     [&] { return mesh_to_target(what.c_str(), recipe, volume, target_tets); }, what);
#else
  no_gmsh(what.c_str());
#endif
}

}  // namespace addsim
