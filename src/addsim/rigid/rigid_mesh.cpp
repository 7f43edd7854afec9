#include "addsim/rigid/rigid_mesh.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <Eigen/Geometry>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"

namespace addsim {

namespace {

std::string lower_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// One "f" entry ("i", "i/t", "i/t/n"; negative counts from the end) as a 0-based vertex id,
// or -1 if it is not a usable integer (zero, overflowing, or counting back past the start).
int obj_vertex_id(const std::string& tok, std::size_t vertices) {
  const std::string head = tok.substr(0, tok.find('/'));
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(head.c_str(), &end, 10);
  if (head.empty() || *end != '\0' || errno == ERANGE || i == 0) return -1;
  // Positive ids may refer to vertices defined further down (checked once all are read).
  const long long k = i < 0 ? static_cast<long long>(vertices) + i : i - 1;
  return k >= 0 && k < std::numeric_limits<int>::max() ? static_cast<int>(k) : -1;
}

SurfaceMesh read_obj(std::istream& in, const std::string& path) {
  SurfaceMesh m;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (tag == "v") {
      Vec3 x;
      if (!(ls >> x.x() >> x.y() >> x.z()) || !x.allFinite()) throw InputError(where + "bad vertex line \"" + line + "\"");
      m.vertices.push_back(x);
    } else if (tag == "f") {
      std::vector<int> ids;
      std::string tok;
      while (ls >> tok) {
        const int id = obj_vertex_id(tok, m.vertices.size());
        if (id < 0)
          throw InputError(where + "face entry \"" + tok + "\" is not a vertex index (1, 2, ... or negative from the end; " +
                           std::to_string(m.vertices.size()) + " vertices so far)");
        ids.push_back(id);
      }
      if (ids.size() < 3) throw InputError(where + "face with fewer than 3 vertices");
      for (std::size_t k = 2; k < ids.size(); ++k) m.triangles.push_back({ids[0], ids[k - 1], ids[k]});
    }
  }
  return m;
}

// Merges bit-identical vertices of an STL triangle soup.
struct VertexMerger {
  std::map<std::array<double, 3>, int> index;
  SurfaceMesh* mesh;
  int id(const Vec3& x) {
    const std::array<double, 3> key{x.x(), x.y(), x.z()};
    const auto [it, added] = index.emplace(key, static_cast<int>(mesh->vertices.size()));
    if (added) mesh->vertices.push_back(x);
    return it->second;
  }
};

SurfaceMesh read_stl(const std::string& bytes, const std::string& path) {
  SurfaceMesh m;
  VertexMerger merge{{}, &m};
  // Binary STL: 80-byte header, uint32 count, 50 bytes per triangle (normal, 3 vertices, attribute).
  if (bytes.size() >= 84) {
    std::uint32_t n = 0;
    std::memcpy(&n, bytes.data() + 80, 4);
    if (bytes.size() == 84 + 50 * static_cast<std::size_t>(n)) {
      for (std::uint32_t t = 0; t < n; ++t) {
        std::array<int, 3> tri{};
        for (int v = 0; v < 3; ++v) {
          float f[3];
          std::memcpy(f, bytes.data() + 84 + 50 * t + 12 + 12 * v, 12);
          tri[v] = merge.id(Vec3(f[0], f[1], f[2]));
        }
        m.triangles.push_back(tri);
      }
      return m;
    }
  }
  std::istringstream in(bytes);
  std::string tok;
  std::vector<int> ids;
  while (in >> tok) {
    if (tok != "vertex") continue;
    Vec3 x;
    if (!(in >> x.x() >> x.y() >> x.z())) throw InputError(path + ": bad STL vertex");
    ids.push_back(merge.id(x));
    if (ids.size() == 3) {
      m.triangles.push_back({ids[0], ids[1], ids[2]});
      ids.clear();
    }
  }
  return m;
}

}  // namespace

SurfaceMesh load_surface_mesh(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext != "obj" && ext != "stl") throw InputError(path + ": unknown mesh format (expected .obj or .stl)");
  return parse_surface_mesh(read_input_file(path, "mesh file"), path);
}

SurfaceMesh parse_surface_mesh(const std::string& bytes, const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext != "obj" && ext != "stl") throw InputError(path + ": unknown mesh format (expected .obj or .stl)");
  SurfaceMesh m;
  if (ext == "obj") {
    std::istringstream in(bytes);
    m = read_obj(in, path);
  } else {
    m = read_stl(bytes, path);
  }
  if (m.triangles.empty()) throw InputError(path + ": mesh has no triangles");
  for (const auto& t : m.triangles)
    for (int i : t)
      if (i < 0 || i >= static_cast<int>(m.vertices.size()))
        throw InputError(path + ": triangle refers to missing vertex " + std::to_string(i + 1));
  return m;
}

MeshMassProperties mesh_mass_properties(const SurfaceMesh& mesh) {
  // Signed tetrahedra (origin, a, b, c): volume det/6, first moments det/24 Σ x, second
  // moments det/120 (Σ x_i x_jᵀ + (Σ x)(Σ x)ᵀ) over the tetrahedron's vertices (origin = 0).
  double vol = 0.0;
  Vec3 first = Vec3::Zero();
  Mat3 second = Mat3::Zero();
  for (const auto& t : mesh.triangles) {
    const Vec3& a = mesh.vertices[t[0]];
    const Vec3& b = mesh.vertices[t[1]];
    const Vec3& c = mesh.vertices[t[2]];
    const double det = a.dot(b.cross(c));
    const Vec3 sum = a + b + c;
    vol += det / 6.0;
    first += det / 24.0 * sum;
    second += det / 120.0 * (a * a.transpose() + b * b.transpose() + c * c.transpose() + sum * sum.transpose());
  }
  if (!(vol > 0.0))
    throw InputError("mesh encloses no positive volume (" + std::to_string(vol) +
                     " m³): it must be closed with outward-facing triangles");
  MeshMassProperties out;
  out.volume = vol;
  out.centroid = first / vol;
  // Covariance about the centroid C = ∫ x xᵀ − V c cᵀ; inertia I = tr(C) 1 − C (per unit density).
  const Mat3 cov = second - vol * out.centroid * out.centroid.transpose();
  out.inertia_per_mass = (cov.trace() * Mat3::Identity() - cov) / vol;
  return out;
}

}  // namespace addsim
