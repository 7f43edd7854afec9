// Mass properties of closed triangle meshes by the divergence theorem, against closed forms.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "addsim/core/error.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/rigid/rigid_mesh.h"
#include "../support/temp_dir.h"

namespace addsim {
namespace {

// An OBJ box [0, a] × [0, b] × [0, c] with outward triangles.
std::string box_obj(double a, double b, double c) {
  std::string s;
  for (int k = 0; k < 8; ++k)
    s += "v " + std::to_string((k & 1) * a) + " " + std::to_string(((k >> 1) & 1) * b) + " " +
         std::to_string(((k >> 2) & 1) * c) + "\n";
  // Quads (1-based), counter-clockwise seen from outside.
  const int quads[6][4] = {{1, 3, 4, 2}, {5, 6, 8, 7}, {1, 2, 6, 5}, {3, 7, 8, 4}, {1, 5, 7, 3}, {2, 4, 8, 6}};
  for (const auto& f : quads) s += "f " + std::to_string(f[0]) + " " + std::to_string(f[1]) + "/1 " +
                                   std::to_string(f[2]) + " " + std::to_string(f[3]) + "\n";
  return s;
}

TEST(RigidMesh, BoxObjMatchesClosedForm) {
  const auto path = test::test_temp_dir() / "box.obj";
  std::ofstream(path) << box_obj(0.4, 0.2, 0.1);
  const MeshMassProperties mp = mesh_mass_properties(load_surface_mesh(path.string()));
  EXPECT_NEAR(mp.volume, 0.4 * 0.2 * 0.1, 1e-12);
  EXPECT_TRUE(mp.centroid.isApprox(Vec3(0.2, 0.1, 0.05), 1e-12));
  const Mat3 expected = RigidShape::box(Vec3(0.4, 0.2, 0.1)).unit_inertia();
  EXPECT_LT((mp.inertia_per_mass - expected).norm(), 1e-12);
}

TEST(RigidMesh, AsciiStlTetrahedronAndErrors) {
  const auto path = test::test_temp_dir() / "tet.stl";
  // Unit right tetrahedron: V = 1/6, centroid (1/4, 1/4, 1/4).
  const char* tris[4][3] = {{"0 0 0", "0 1 0", "1 0 0"}, {"0 0 0", "1 0 0", "0 0 1"},
                            {"0 0 0", "0 0 1", "0 1 0"}, {"1 0 0", "0 1 0", "0 0 1"}};
  {
    std::ofstream out(path);
    out << "solid t\n";
    for (const auto& t : tris) {
      out << "facet normal 0 0 0\nouter loop\n";
      for (const char* v : t) out << "vertex " << v << "\n";
      out << "endloop\nendfacet\n";
    }
    out << "endsolid t\n";
  }
  const SurfaceMesh m = load_surface_mesh(path.string());
  EXPECT_EQ(m.vertices.size(), 4u);
  const MeshMassProperties mp = mesh_mass_properties(m);
  EXPECT_NEAR(mp.volume, 1.0 / 6.0, 1e-14);
  EXPECT_TRUE(mp.centroid.isApprox(Vec3::Constant(0.25), 1e-12));
  // About the centroid: ∫x² = 1/60, ∫xy = 1/120, so cov_xx = 1/160, cov_xy = −1/480 and
  // I_xx/m = 2 cov_xx / V = 0.075, I_xy/m = −cov_xy / V = 0.0125.
  EXPECT_NEAR(mp.inertia_per_mass(0, 0), mp.inertia_per_mass(1, 1), 1e-14);
  EXPECT_NEAR(mp.inertia_per_mass(0, 0), 0.075, 1e-12);
  EXPECT_NEAR(mp.inertia_per_mass(0, 1), 0.0125, 1e-12);
  EXPECT_THROW(load_surface_mesh("/nonexistent/mesh.obj"), InputError);
}

}  // namespace
}  // namespace addsim
