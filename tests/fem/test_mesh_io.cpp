// Mesh loaders: Gmsh .msh 2.2 and 4.1 ASCII, TetGen .node/.ele, error messages.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "addsim/core/error.h"
#include "addsim/mesh/mesh_io.h"
#include "../support/temp_dir.h"

namespace addsim {
namespace {

// Two tets sharing face (1, 2, 3); node 10 (a geometry point) is used by no tet, the
// second tet is listed with negative orientation, and a triangle element is ignored.
constexpr const char* kMsh2 = R"($MeshFormat
2.2 0 8
$EndMeshFormat
$PhysicalNames
1
3 1 "body"
$EndPhysicalNames
$Nodes
6
1 0 0 0
2 1 0 0
3 0 1 0
4 0 0 1
5 1 1 1
10 5 5 5
$EndNodes
$Elements
4
1 15 2 0 1 10
2 2 2 0 1 1 2 3
3 4 2 1 1 1 2 3 4
4 4 2 1 1 2 3 5 4
$EndElements
)";

constexpr const char* kMsh41 = R"($MeshFormat
4.1 0 8
$EndMeshFormat
$Entities
1 0 0 1
1 5 5 5 0
1 0 0 0 1 1 1 0 0
$EndEntities
$Nodes
2 6 1 10
0 1 0 1
10
5 5 5
3 1 0 5
1
2
3
4
5
0 0 0
1 0 0
0 1 0
0 0 1
1 1 1
$EndNodes
$Elements
2 3 1 3
0 1 15 1
1 10
3 1 4 2
2 1 2 3 4
3 2 3 5 4
$EndElements
)";

void expect_two_tets(const TetMesh& mesh) {
  ASSERT_EQ(mesh.num_nodes(), 5);
  ASSERT_EQ(mesh.num_tets(), 2);
  EXPECT_NEAR(signed_volume(mesh, 0), 1.0 / 6.0, 1e-15);
  EXPECT_NEAR(signed_volume(mesh, 1), 1.0 / 3.0, 1e-15);
  EXPECT_EQ(mesh.nodes[4], Vec3(1.0, 1.0, 1.0));
  EXPECT_EQ(static_cast<int>(boundary_faces(mesh).size()), 6);
}

TEST(MeshIo, GmshFormat2) {
  std::istringstream in(kMsh2);
  expect_two_tets(parse_gmsh_msh(in, "two.msh"));
}

TEST(MeshIo, GmshFormat41) {
  std::istringstream in(kMsh41);
  expect_two_tets(parse_gmsh_msh(in, "two.msh"));
}

TEST(MeshIo, TetgenFiles) {
  const std::string node = "# comment\n5 3 0 1\n0 0 0 0 1\n1 1 0 0 1\n2 0 1 0 1\n3 0 0 1 1\n4 1 1 1 1\n";
  const std::string ele = "2 4 0\n 0 0 1 2 3\n 1 1 2 4 3 # tail\n";
  std::istringstream n(node), e(ele);
  expect_two_tets(parse_tetgen(n, e, "two"));

  // Files on disk, by either extension or the base name, and through load_tet_mesh.
  const auto dir = test::test_temp_dir();
  const std::string base = (dir / "two").string();
  std::ofstream(base + ".node") << node;
  std::ofstream(base + ".ele") << ele;
  std::ofstream(base + ".msh") << kMsh41;
  expect_two_tets(load_tetgen(base));
  expect_two_tets(load_tet_mesh(base + ".ele"));
  expect_two_tets(load_tet_mesh(base + ".msh"));
  expect_two_tets(load_tet_mesh(base));  // TetGen base name without extension
  EXPECT_THROW(load_tet_mesh(base + "_missing"), InputError);
  EXPECT_THROW(load_tet_mesh(base + ".vtk"), InputError);
}

TEST(MeshIo, ErrorsNameFileAndLine) {
  std::istringstream binary("$MeshFormat\n4.1 1 8\n$EndMeshFormat\n");
  try {
    parse_gmsh_msh(binary, "bin.msh");
    FAIL() << "binary accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bin.msh:2"), std::string::npos) << e.what();
  }
  std::istringstream no_tets("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n1\n1 0 0 0\n$EndNodes\n");
  EXPECT_THROW(parse_gmsh_msh(no_tets, "empty.msh"), InputError);
  std::string broken(kMsh2);
  broken.replace(broken.find("3 4 2 1 1 1 2 3 4"), 17, "3 4 2 1 1 1 2 3 7");
  std::istringstream bad_ref(broken);
  EXPECT_THROW(parse_gmsh_msh(bad_ref, "bad.msh"), InputError);
  EXPECT_THROW(load_tet_mesh("/nonexistent/x.msh"), InputError);
  EXPECT_THROW(load_tet_mesh("mesh.obj"), InputError);
}

}  // namespace
}  // namespace addsim
