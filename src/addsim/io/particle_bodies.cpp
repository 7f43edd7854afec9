#include <cmath>
#include <limits>

#include "addsim/core/input_file.h"
#include "addsim/io/scene_builder.h"

namespace addsim {

using nlohmann::json;

void parse_particles_body(ObjectReader& r, int index, SceneBuilder& b) {
  const std::string name = r.string("name", "");
  const std::vector<Vec3> positions = r.vec3_list("positions");
  const std::size_t n = positions.size();
  std::vector<Vec3> velocities(n, Vec3::Zero());
  if (r.has("velocities")) {
    velocities = r.vec3_list("velocities");
    if (velocities.size() != n)
      r.fail("velocities", "needs one entry per position (" + std::to_string(n) + "), got " +
                               std::to_string(velocities.size()));
  }
  std::vector<double> masses(n);
  const json& m = r.raw("mass");
  const std::string mpath = join_path(r.path(), "mass");
  if (m.is_array()) {
    if (m.size() != n)
      r.fail("mass", "needs one entry per position (" + std::to_string(n) + "), got " + std::to_string(m.size()));
    for (std::size_t k = 0; k < n; ++k)
      masses[k] = to_number(m[k], r.source(), join_path(mpath, std::to_string(k)), Bound::kPositive);
  } else {
    masses.assign(n, to_number(m, r.source(), mpath, Bound::kPositive));
  }
  b.add_particle_body(name, "particles", positions, velocities, masses);
}

void parse_sheet_body(ObjectReader& r, int index, SceneBuilder& b) {
  const std::string name = r.string("name", "");
  const Vec3 origin = r.vec3("origin", Vec3::Zero());
  // size [Lx, Ly] (m) and resolution [nx, ny] (particles per side).
  const json& size = r.raw("size");
  const std::string spath = join_path(r.path(), "size");
  if (!size.is_array() || size.size() != 2) r.fail("size", "expected [Lx, Ly], got " + describe(size));
  const double lx = to_number(size[0], r.source(), spath + ".0", Bound::kPositive);
  const double ly = to_number(size[1], r.source(), spath + ".1", Bound::kPositive);
  const json& res = r.raw("resolution");
  if (!res.is_array() || res.size() != 2) r.fail("resolution", "expected [nx, ny], got " + describe(res));
  int counts[2];
  for (int c = 0; c < 2; ++c) {
    const json& v = res[c];
    if (!v.is_number_integer() || v.get<long long>() < 2 || v.get<long long>() > 10000)
      r.fail("resolution." + std::to_string(c), "expected an integer in [2, 10000], got " + describe(v));
    counts[c] = v.get<int>();
  }
  const int nx = counts[0], ny = counts[1];
  // About 11 KB per particle (measured: 0.48 GB for 200 x 200, 1.8 GB for 400 x 400 particles,
  // one step, Release): springs, their Jacobian blocks and the sparse factorisation.
  check_memory(11e3 * nx * ny, r.source() + ": " + join_path(r.path(), "resolution"),
               "a sheet of " + std::to_string(nx) + " x " + std::to_string(ny) + " particles");
  const int n = nx * ny;
  // Mass: the sheet's total (spread evenly), or one value per particle.
  std::vector<double> masses;
  const json& m = r.raw("mass");
  if (m.is_array()) {
    if (static_cast<int>(m.size()) != n)
      r.fail("mass", "needs one entry per particle (" + std::to_string(n) + ") or one total, got " + describe(m));
    for (int k = 0; k < n; ++k)
      masses.push_back(to_number(m[k], r.source(), join_path(r.path(), "mass." + std::to_string(k)), Bound::kPositive));
  } else {
    masses.assign(n, to_number(m, r.source(), join_path(r.path(), "mass"), Bound::kPositive) / n);
  }
  // Initial velocity: one for all particles, or one per particle.
  if (r.has("velocity") && r.has("velocities")) r.fail("velocities", "give either velocity or velocities");
  std::vector<Vec3> velocities(n, r.vec3("velocity", Vec3::Zero()));
  if (r.has("velocities")) {
    velocities = r.vec3_list("velocities");
    if (static_cast<int>(velocities.size()) != n)
      r.fail("velocities", "needs one entry per particle (" + std::to_string(n) + "), got " +
                               std::to_string(velocities.size()));
  }
  const double stiffness = r.number("stiffness", std::nullopt, Bound::kNonNegative);
  const double shear = r.number("shear_stiffness", stiffness, Bound::kNonNegative);
  const double damping = r.number("damping", 0.0, Bound::kNonNegative);

  // Particles row-major (index ix + nx·iy) in the plane z = origin.z: the rest shape of the
  // springs, and the initial positions unless `positions` gives them.
  std::vector<Vec3> positions(n);
  for (int iy = 0; iy < ny; ++iy)
    for (int ix = 0; ix < nx; ++ix)
      positions[ix + nx * iy] = origin + Vec3(lx * ix / (nx - 1), ly * iy / (ny - 1), 0.0);
  std::vector<Vec3> initial = positions;
  if (r.has("positions")) {
    initial = r.vec3_list("positions");
    if (static_cast<int>(initial.size()) != n)
      r.fail("positions", "needs one entry per particle (" + std::to_string(n) + "), got " +
                              std::to_string(initial.size()));
  }
  const int body = b.add_particle_body(name, "sheet", initial, velocities, masses);

  // One stiffness and one damping value per sheet, shared by its springs.
  const std::string base = "bodies." + std::to_string(index);
  const std::string alias = name.empty() ? base : "bodies." + name;
  const double inf = std::numeric_limits<double>::infinity();
  ParameterTable& params = b.model->params();
  const int k_param = params.add(base + ".stiffness", alias + ".stiffness", ParamKind::kCoupling,
                                 VecX::Constant(1, stiffness), 1, 1, 0.0, inf);
  const int ks_param = params.add(base + ".shear_stiffness", alias + ".shear_stiffness", ParamKind::kCoupling,
                                  VecX::Constant(1, shear), 1, 1, 0.0, inf);
  const int kd_param = params.add(base + ".damping", alias + ".damping", ParamKind::kCoupling,
                                  VecX::Constant(1, damping), 1, 1, 0.0, inf);

  const BodyPoints& pts = b.points[body];
  int count = 0;
  auto connect = [&](int i, int j, int stiffness_param) {
    Spring s;
    s.kind = SpringKind::kDistance;
    s.a = Anchor::particle(pts.dofs[i], base + ".points." + std::to_string(i));
    s.b = Anchor::particle(pts.dofs[j], base + ".points." + std::to_string(j));
    s.rest_length = (positions[i] - positions[j]).norm();
    s.stiffness_param = stiffness_param;
    s.damping_param = kd_param;
    s.label = base + ".springs." + std::to_string(count++);
    b.springs.push_back(s);
  };
  // Structural springs between grid neighbours, then both diagonals of every cell.
  for (int iy = 0; iy < ny; ++iy)
    for (int ix = 0; ix < nx; ++ix) {
      const int i = ix + nx * iy;
      if (ix + 1 < nx) connect(i, i + 1, k_param);
      if (iy + 1 < ny) connect(i, i + nx, k_param);
    }
  for (int iy = 0; iy + 1 < ny; ++iy)
    for (int ix = 0; ix + 1 < nx; ++ix) {
      const int i = ix + nx * iy;
      connect(i, i + nx + 1, ks_param);
      connect(i + 1, i + nx, ks_param);
    }
}

}  // namespace addsim
