// Mesh data, boundary extraction and generators (built-in boxes; gmsh primitives when available).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include <Eigen/Dense>

#include "addsim/core/error.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/mesh/tet_mesh.h"

namespace addsim {
namespace {

// Every interior face must be shared by exactly two tets with opposite orientation, and the
// boundary faces must close up: Σ outward area vectors = 0 and the divergence theorem
// gives the volume.
void expect_watertight(const TetMesh& mesh) {
  const auto faces = boundary_faces(mesh);
  Vec3 area_sum = Vec3::Zero();
  double vol = 0.0;
  for (const auto& f : faces) {
    const Vec3& a = mesh.nodes[f[0]];
    const Vec3& b = mesh.nodes[f[1]];
    const Vec3& c = mesh.nodes[f[2]];
    const Vec3 n2 = (b - a).cross(c - a);
    area_sum += n2;
    vol += a.dot(n2) / 6.0;
  }
  EXPECT_LT(area_sum.norm(), 1e-10);
  EXPECT_NEAR(vol, mesh_volume(mesh), 1e-10 * std::abs(mesh_volume(mesh)));
}

TEST(BoxMesh, SixAndFiveSplitsAreConformingAndPositive) {
  for (BoxSplit split : {BoxSplit::kSix, BoxSplit::kFive}) {
    const TetMesh mesh = make_box_mesh(Vec3(2.0, 1.0, 0.5), Eigen::Vector3i(4, 2, 3), split, Vec3(1.0, 0.0, 0.0));
    EXPECT_EQ(mesh.num_nodes(), 5 * 3 * 4);
    EXPECT_EQ(mesh.num_tets(), 24 * (split == BoxSplit::kSix ? 6 : 5));
    for (int t = 0; t < mesh.num_tets(); ++t) EXPECT_GT(signed_volume(mesh, t), 0.0);
    EXPECT_NEAR(mesh_volume(mesh), 1.0, 1e-12);
    EXPECT_LT((mesh_centroid(mesh) - Vec3(1.0, 0.0, 0.0)).norm(), 1e-12);
    // A conforming box surface: 2 triangles per boundary cell face.
    EXPECT_EQ(static_cast<int>(boundary_faces(mesh).size()), 2 * 2 * (4 * 2 + 2 * 3 + 4 * 3));
    EXPECT_EQ(static_cast<int>(boundary_nodes(mesh).size()), 60 - 3 * 1 * 2);
    expect_watertight(mesh);
  }
}

TEST(BoxMesh, TargetCountIsClose) {
  const TetMesh mesh = make_box_mesh_target(Vec3(1.0, 1.0, 1.0), 750, BoxSplit::kSix);
  EXPECT_EQ(mesh.num_tets(), 750);
  const TetMesh slab = make_box_mesh_target(Vec3(4.0, 1.0, 0.5), 400, BoxSplit::kFive);
  EXPECT_NEAR(slab.num_tets(), 400, 100);
  EXPECT_THROW(make_box_mesh(Vec3(1.0, -1.0, 1.0), Eigen::Vector3i(1, 1, 1)), InputError);
  EXPECT_THROW(make_box_mesh(Vec3(1.0, 1.0, 1.0), Eigen::Vector3i(1, 0, 1)), InputError);
}

TEST(TetMesh, OrientAndCompact) {
  TetMesh mesh = make_box_mesh(Vec3::Ones(), Eigen::Vector3i(1, 1, 1), BoxSplit::kFive);
  std::swap(mesh.tets[2][0], mesh.tets[2][1]);
  mesh.nodes.push_back(Vec3(9.0, 9.0, 9.0));
  EXPECT_EQ(orient_positively(mesh), 1);
  EXPECT_EQ(remove_unused_nodes(mesh), 1);
  EXPECT_EQ(mesh.num_nodes(), 8);
  for (int t = 0; t < mesh.num_tets(); ++t) EXPECT_GT(signed_volume(mesh, t), 0.0);
  TetMesh bad = mesh;
  bad.tets[0][1] = 42;
  EXPECT_THROW(validate(bad, "bodies.0"), InputError);
  bad = mesh;
  bad.tets[0][1] = bad.tets[0][0];
  EXPECT_THROW(validate(bad, "bodies.0"), InputError);
}

TEST(GmshGenerators, PaperObjectsHitTheirElementCounts) {
  if (!gmsh_available()) {
    EXPECT_THROW(make_sphere_mesh(0.1, 451), InputError);
    GTEST_SKIP() << "built without gmsh";
  }
  const TetMesh ball = make_sphere_mesh(0.1, 451);
  EXPECT_NEAR(ball.num_tets(), 451, 0.1 * 451);
  EXPECT_NEAR(mesh_volume(ball), 4.0 / 3.0 * M_PI * 1e-3, 0.1 * 4.0 / 3.0 * M_PI * 1e-3);
  expect_watertight(ball);
  const TetMesh puck = make_cylinder_mesh(0.1, 0.05, 879);
  EXPECT_NEAR(puck.num_tets(), 879, 0.1 * 879);
  expect_watertight(puck);
  const TetMesh torus = make_torus_mesh(0.1, 0.03, 600);
  EXPECT_NEAR(torus.num_tets(), 600, 0.15 * 600);
  expect_watertight(torus);
  const TetMesh tori = make_three_tori_mesh(0.1, 0.025, 1930);
  EXPECT_NEAR(tori.num_tets(), 1930, 0.15 * 1930);
  expect_watertight(tori);
  std::printf("[fem] gmsh meshes: ball %d tets (target 451), puck %d (879), torus %d (600), three tori %d (1930)\n",
              ball.num_tets(), puck.num_tets(), torus.num_tets(), tori.num_tets());
  for (const TetMesh* m : {&ball, &puck, &torus, &tori})
    for (int t = 0; t < m->num_tets(); ++t) ASSERT_GT(signed_volume(*m, t), 0.0);
}

}  // namespace
}  // namespace addsim
