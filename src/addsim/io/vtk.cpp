#include "addsim/io/vtk.h"

#include <cstdio>
#include <fstream>

#include "addsim/core/error.h"
#include "addsim/fem/fem_view.h"

namespace addsim {

namespace {

// VTK cell type ids (VTK file formats, "VTKCellType").
constexpr int kVtkVertex = 1;
constexpr int kVtkTriangle = 5;
constexpr int kVtkTetra = 10;

// Cells of one frame: connectivity (global point ids), offsets, types and body index.
struct Cells {
  std::vector<int> connectivity, offsets, types, body;
  void add(std::initializer_list<int> ids, int type, int b) {
    connectivity.insert(connectivity.end(), ids);
    offsets.push_back(static_cast<int>(connectivity.size()));
    types.push_back(type);
    body.push_back(b);
  }
};

template <class T>
void write_array(std::ofstream& out, const char* type, const char* name, int components, const std::vector<T>& v) {
  out << "        <DataArray type=\"" << type << "\" Name=\"" << name << "\"";
  if (components > 1) out << " NumberOfComponents=\"" << components << "\"";
  out << " format=\"ascii\">\n          ";
  for (std::size_t k = 0; k < v.size(); ++k) out << v[k] << ((k + 1) % 12 == 0 ? "\n          " : " ");
  out << "\n        </DataArray>\n";
}

}  // namespace

void write_vtu(const std::filesystem::path& file, const Scene& scene, const VecX& q, const VtkOptions& options) {
  const Model& model = *scene.model;
  ADDSIM_CHECK(q.size() == model.num_dofs(), "write_vtu: q has the model's size");
  // Gather points (global DOF of each point's x) and cells body by body.
  std::vector<int> point_dofs;
  Cells cells;
  for (std::size_t b = 0; b < model.bodies().size(); ++b) {
    const Body& body = *model.bodies()[b];
    const int first = static_cast<int>(point_dofs.size());
    const int bi = static_cast<int>(b);
    if (body.kind() == BodyKind::kParticles) {
      const auto& pb = static_cast<const ParticleBody&>(body);
      for (int k = 0; k < pb.count(); ++k) {
        point_dofs.push_back(pb.dof(k));
        cells.add({first + k}, kVtkVertex, bi);
      }
    } else if (const auto fem = fem_mesh_view(body)) {
      for (int k = 0; k < fem->num_nodes; ++k) point_dofs.push_back(fem->dof_offset + 3 * k);
      if (options.cells == VtkCells::kVolume) {
        for (const auto& t : *fem->tets)
          cells.add({first + t[0], first + t[1], first + t[2], first + t[3]}, kVtkTetra, bi);
      } else {
        for (const auto& f : *fem->surface_faces) cells.add({first + f[0], first + f[1], first + f[2]}, kVtkTriangle, bi);
      }
    }
  }
  std::vector<double> points;
  points.reserve(3 * point_dofs.size());
  for (int d : point_dofs)
    for (int c = 0; c < 3; ++c) points.push_back(q[d + c]);

  std::ofstream out(file);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out.precision(17);
  out << "<?xml version=\"1.0\"?>\n"
      << "<VTKFile type=\"UnstructuredGrid\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
      << "  <UnstructuredGrid>\n"
      << "    <Piece NumberOfPoints=\"" << point_dofs.size() << "\" NumberOfCells=\"" << cells.types.size()
      << "\">\n"
      << "      <Points>\n";
  write_array(out, "Float64", "Points", 3, points);
  out << "      </Points>\n      <Cells>\n";
  write_array(out, "Int32", "connectivity", 1, cells.connectivity);
  write_array(out, "Int32", "offsets", 1, cells.offsets);
  write_array(out, "UInt8", "types", 1, cells.types);
  out << "      </Cells>\n      <CellData Scalars=\"body\">\n";
  write_array(out, "Int32", "body", 1, cells.body);
  out << "      </CellData>\n    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n";
  if (!out) throw InputError(file.string() + ": write failed");
}

std::vector<std::string> write_vtk_series(const std::filesystem::path& dir, const Scene& scene,
                                          const Trajectory& traj, const VtkOptions& options) {
  if (options.every < 1) throw InputError("vtk: every must be >= 1, got " + std::to_string(options.every));
  std::error_code ec;
  std::filesystem::create_directories(dir / "vtk", ec);
  if (ec || !std::filesystem::is_directory(dir / "vtk"))
    throw InputError((dir / "vtk").string() + ": cannot create output directory");
  const double h = scene.model->scheme().h;
  const int last = static_cast<int>(traj.q.size()) - 1;
  std::vector<std::string> files;
  std::vector<double> times;
  char name[64];
  for (int i = 0; i <= last; ++i) {
    if (i % options.every != 0 && i != last) continue;
    std::snprintf(name, sizeof name, "vtk/frame_%06d.vtu", i);
    write_vtu(dir / name, scene, traj.q[i], options);
    files.emplace_back(name);
    times.push_back(i * h);
  }
  const std::filesystem::path pvd = dir / "trajectory.pvd";
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
