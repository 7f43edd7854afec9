#include "addsim/io/vtk.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include <Eigen/Geometry>

#include "addsim/core/error.h"
#include "addsim/fem/fem_view.h"
#include "addsim/io/scene_geometry.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/terms/spring_term.h"

namespace addsim {

namespace {

namespace fs = std::filesystem;

// VTK cell type ids (VTK file formats, "VTKCellType").
constexpr std::uint8_t kVtkVertex = 1;
constexpr std::uint8_t kVtkLine = 3;
constexpr std::uint8_t kVtkTriangle = 5;
constexpr std::uint8_t kVtkQuad = 9;
constexpr std::uint8_t kVtkTetra = 10;

// Side of an obstacle patch relative to the scene's extent at t = 0, and its minimum, m.
constexpr double kPatchScale = 1.5;
constexpr double kMinPatchSide = 0.2;

// A frame's points and cells. Cell data: body (scene body index, −1 for the rest) and part.
struct Grid {
  std::vector<double> points;
  std::vector<std::int32_t> connectivity, offsets, body, part;
  std::vector<std::uint8_t> types;

  int point(const Vec3& x) {
    points.insert(points.end(), {x.x(), x.y(), x.z()});
    return static_cast<int>(points.size() / 3) - 1;
  }
  void cell(std::initializer_list<int> ids, std::uint8_t type, int b, VtkPart p) {
    connectivity.insert(connectivity.end(), ids);
    offsets.push_back(static_cast<std::int32_t>(connectivity.size()));
    types.push_back(type);
    body.push_back(b);
    part.push_back(static_cast<std::int32_t>(p));
  }
};

// What a series draws besides the bodies' own points, prepared once.
struct Layout {
  std::vector<SurfaceMesh> rigid_meshes;  ///< per body (empty unless rigid), body frame
  std::vector<std::vector<std::array<int, 3>>> sheet_triangles;  ///< per body (empty unless sheet)
  std::vector<std::pair<Vec3, Vec3>> patches;  ///< obstacle patch centre and normal
  std::vector<Vec3> patch_u, patch_v;          ///< half side vectors of each patch
};

Layout make_layout(const Scene& scene, const VecX& q0) {
  const Model& model = *scene.model;
  Layout l;
  l.rigid_meshes.resize(model.bodies().size());
  l.sheet_triangles.resize(model.bodies().size());
  Vec3 lo = Vec3::Constant(std::numeric_limits<double>::infinity()), hi = -lo;
  for (std::size_t b = 0; b < model.bodies().size(); ++b) {
    const Body& body = *model.bodies()[b];
    const nlohmann::json g = body_geometry(scene, b);
    if (g["kind"] == "rigid") l.rigid_meshes[b] = rigid_display_mesh(g["shape"]);
    if (g["kind"] == "sheet")
      for (const auto& t : g["triangles"]) l.sheet_triangles[b].push_back({t[0].get<int>(), t[1].get<int>(), t[2].get<int>()});
    const int step = body.kind() == BodyKind::kRigid ? 6 : 3;
    for (int d = body.dof_offset(); d < body.dof_offset() + body.dof_count(); d += step) {
      lo = lo.cwiseMin(q0.segment<3>(d));
      hi = hi.cwiseMax(q0.segment<3>(d));
    }
  }
  const Vec3 center = model.bodies().empty() ? Vec3::Zero() : Vec3(0.5 * (lo + hi));
  const double side = std::max(kMinPatchSide, kPatchScale * (hi - lo).norm());
  for (const auto& o : obstacle_geometry(scene)) {
    const Vec3 n(o["normal"][0].get<double>(), o["normal"][1].get<double>(), o["normal"][2].get<double>());
    const Vec3 p(o["point"][0].get<double>(), o["point"][1].get<double>(), o["point"][2].get<double>());
    const Vec3 helper = std::abs(n.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
    const Vec3 u = (helper - helper.dot(n) * n).normalized();
    l.patches.emplace_back(center - (center - p).dot(n) * n, n);
    l.patch_u.push_back(0.5 * side * u);
    l.patch_v.push_back(0.5 * side * n.cross(u));
  }
  return l;
}

Vec3 anchor_position(const Anchor& a, const VecX& q, const std::vector<Vec3>& handles) {
  switch (a.kind) {
    case Anchor::Kind::kParticle:
    case Anchor::Kind::kEmbedded: {
      Vec3 x = Vec3::Zero();
      for (int m = 0; m < a.num_nodes(); ++m) x += a.node_weight(m) * q.segment<3>(a.node_dof(m));
      return x;
    }
    case Anchor::Kind::kHandle: return handles[a.handle];
    case Anchor::Kind::kWorld: return a.world;
  }
  return Vec3::Zero();
}

Grid make_grid(const Scene& scene, const Layout& layout, const VecX& q, const std::vector<Vec3>& handles,
               const VtkOptions& options) {
  const Model& model = *scene.model;
  Grid g;
  for (std::size_t b = 0; b < model.bodies().size(); ++b) {
    const Body& body = *model.bodies()[b];
    const int bi = static_cast<int>(b);
    const int first = static_cast<int>(g.points.size() / 3);
    if (body.kind() == BodyKind::kParticles) {
      const auto& pb = static_cast<const ParticleBody&>(body);
      for (int k = 0; k < pb.count(); ++k) g.cell({g.point(q.segment<3>(pb.dof(k)))}, kVtkVertex, bi, VtkPart::kBody);
      for (const auto& t : layout.sheet_triangles[b])
        g.cell({first + t[0], first + t[1], first + t[2]}, kVtkTriangle, bi, VtkPart::kBody);
    } else if (const auto fem = fem_mesh_view(body)) {
      for (int k = 0; k < fem->num_nodes; ++k) g.point(q.segment<3>(fem->dof_offset + 3 * k));
      if (options.cells == VtkCells::kVolume) {
        for (const auto& t : *fem->tets)
          g.cell({first + t[0], first + t[1], first + t[2], first + t[3]}, kVtkTetra, bi, VtkPart::kBody);
      } else {
        for (const auto& f : *fem->surface_faces)
          g.cell({first + f[0], first + f[1], first + f[2]}, kVtkTriangle, bi, VtkPart::kBody);
      }
    } else if (body.kind() == BodyKind::kRigid) {
      const auto& rb = static_cast<const RigidBody&>(body);
      const Mat3 R = rb.rotation(q);
      const Vec3 p = q.segment<3>(rb.dof());
      for (const Vec3& x : layout.rigid_meshes[b].vertices) g.point(p + R * x);
      for (const auto& t : layout.rigid_meshes[b].triangles)
        g.cell({first + t[0], first + t[1], first + t[2]}, kVtkTriangle, bi, VtkPart::kBody);
    }
  }
  for (const Vec3& x : handles) g.cell({g.point(x)}, kVtkVertex, -1, VtkPart::kHandle);
  for (const auto& term : model.terms()) {
    if (const auto* st = dynamic_cast<const SpringTerm*>(term.get())) {
      for (const Spring& s : st->springs()) {
        const int a = g.point(anchor_position(s.a, q, handles));
        g.cell({a, g.point(anchor_position(s.b, q, handles))}, kVtkLine, -1, VtkPart::kSpring);
      }
    } else if (const auto* jt = dynamic_cast<const RigidJointTerm*>(term.get())) {
      for (const RigidJoint& j : jt->joints()) {
        if (j.kind == RigidJoint::Kind::kMotorDamping) continue;
        const Vec3 xa = q.segment<3>(j.body_a->dof()) + j.body_a->rotation(q) * j.point_a;
        Vec3 xb = j.point_b;
        if (j.body_b) {
          xb = q.segment<3>(j.body_b->dof()) + j.body_b->rotation(q) * j.point_b;
        } else if (j.particle_b >= 0) {
          xb = q.segment<3>(j.particle_b);
        } else if (j.tet_b[0] >= 0) {
          xb.setZero();
          for (int m = 0; m < 4; ++m) xb += j.bary_b[m] * q.segment<3>(j.tet_b[m]);
        } else if (j.handle_b >= 0) {
          xb = handles[j.handle_b];
        }
        const int a = g.point(xa);
        g.cell({a, g.point(xb)}, kVtkLine, -1, VtkPart::kJoint);
      }
    }
  }
  for (std::size_t k = 0; k < layout.patches.size(); ++k) {
    const Vec3& c = layout.patches[k].first;
    const Vec3 &u = layout.patch_u[k], &v = layout.patch_v[k];
    const int a = g.point(c - u - v), b = g.point(c + u - v), d = g.point(c + u + v), e = g.point(c - u + v);
    g.cell({a, b, d, e}, kVtkQuad, -1, VtkPart::kObstacle);
  }
  return g;
}

// Raw appended data: per array a UInt64 byte count, then the bytes (header_type="UInt64").
class Appended {
 public:
  template <class T>
  std::size_t add(const std::vector<T>& v) {
    const std::size_t offset = blob_.size();
    const std::uint64_t bytes = sizeof(T) * v.size();
    blob_.append(reinterpret_cast<const char*>(&bytes), sizeof bytes);
    blob_.append(reinterpret_cast<const char*>(v.data()), bytes);
    return offset;
  }
  const std::string& blob() const { return blob_; }

 private:
  std::string blob_;
};

void array_tag(std::ostream& out, const char* type, const char* name, int components, std::size_t offset) {
  out << "        <DataArray type=\"" << type << "\" Name=\"" << name << "\"";
  if (components > 1) out << " NumberOfComponents=\"" << components << "\"";
  out << " format=\"appended\" offset=\"" << offset << "\"/>\n";
}

void write_grid(const fs::path& file, const Grid& g) {
  Appended data;
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\"?>\n"
      << "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
      << "  <UnstructuredGrid>\n"
      << "    <Piece NumberOfPoints=\"" << g.points.size() / 3 << "\" NumberOfCells=\"" << g.types.size() << "\">\n"
      << "      <Points>\n";
  array_tag(xml, "Float64", "Points", 3, data.add(g.points));
  xml << "      </Points>\n      <Cells>\n";
  array_tag(xml, "Int32", "connectivity", 1, data.add(g.connectivity));
  array_tag(xml, "Int32", "offsets", 1, data.add(g.offsets));
  array_tag(xml, "UInt8", "types", 1, data.add(g.types));
  xml << "      </Cells>\n      <CellData Scalars=\"body\">\n";
  array_tag(xml, "Int32", "body", 1, data.add(g.body));
  array_tag(xml, "Int32", "part", 1, data.add(g.part));
  xml << "      </CellData>\n    </Piece>\n  </UnstructuredGrid>\n  <AppendedData encoding=\"raw\">\n   _";
  std::ofstream out(file, std::ios::binary);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out << xml.str() << data.blob() << "\n  </AppendedData>\n</VTKFile>\n";
  if (!out) throw InputError(file.string() + ": write failed");
}

// Handle positions (m) at step i from parameters p.
std::vector<Vec3> handle_points(const Model& model, const VecX& p, int i) {
  std::vector<Vec3> x;
  for (const Handle& h : model.handles()) x.push_back(p.segment<3>(h.positions_param + 3 * i));
  return x;
}

}  // namespace

void write_vtu(const fs::path& file, const Scene& scene, const VecX& q, const VecX& p, int step,
               const VtkOptions& options) {
  const Model& model = *scene.model;
  ADDSIM_CHECK(q.size() == model.num_dofs(), "write_vtu: q has the model's size");
  ADDSIM_CHECK(p.size() == model.params().size(), "write_vtu: p has the parameter table's size");
  write_grid(file, make_grid(scene, make_layout(scene, q), q, handle_points(model, p, step), options));
}

std::vector<std::string> write_vtk_series(const fs::path& dir, const Scene& scene, const Trajectory& traj,
                                          const VtkOptions& options) {
  if (options.every < 1) throw InputError("vtk: every must be >= 1, got " + std::to_string(options.every));
  std::error_code ec;
  fs::create_directories(dir / "vtk", ec);
  if (ec || !fs::is_directory(dir / "vtk")) throw InputError((dir / "vtk").string() + ": cannot create output directory");
  // Frames of an earlier run in the same folder would otherwise mix with this one's.
  const std::regex frame_name("frame_[0-9]+\\.vtu");
  for (const auto& entry : fs::directory_iterator(dir / "vtk"))
    if (std::regex_match(entry.path().filename().string(), frame_name)) fs::remove(entry.path(), ec);
  const Model& model = *scene.model;
  const double h = model.scheme().h;
  const int last = static_cast<int>(traj.q.size()) - 1;
  std::vector<std::string> files;
  std::vector<double> times;
  if (last < 0) return files;
  const Layout layout = make_layout(scene, traj.q.front());
  char name[64];
  for (int i = 0; i <= last; ++i) {
    if (i % options.every != 0 && i != last) continue;
    std::snprintf(name, sizeof name, "vtk/frame_%06d.vtu", i);
    write_grid(dir / name, make_grid(scene, layout, traj.q[i], handle_points(model, traj.p, i), options));
    files.emplace_back(name);
    times.push_back(i * h);
  }
  const fs::path pvd = dir / "trajectory.pvd";
  std::ofstream out(pvd);
  if (!out) throw InputError(pvd.string() + ": cannot open for writing");
  out.precision(17);
  out << "<?xml version=\"1.0\"?>\n"
      << "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <Collection>\n";
  for (std::size_t k = 0; k < files.size(); ++k)
    out << "    <DataSet timestep=\"" << times[k] << "\" group=\"\" part=\"0\" file=\"" << files[k] << "\"/>\n";
  out << "  </Collection>\n</VTKFile>\n";
  if (!out) throw InputError(pvd.string() + ": write failed");
  return files;
}

}  // namespace addsim
