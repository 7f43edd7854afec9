// Mesh readers refuse hostile headers before allocating: counts larger than the file can
// hold, negative counts, malformed or overflowing OBJ face indices; each an InputError
// naming the file and line.

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "addsim/core/error.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/mesh/mesh_io.h"
#include "addsim/rigid/rigid_mesh.h"
#include "../support/temp_dir.h"

namespace addsim {
namespace {

template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string msh_error(const std::string& text) {
  std::istringstream in(text);
  return input_error([&] { parse_gmsh_msh(in, "m.msh"); });
}

const std::string kMsh2Head = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n";
const std::string kMsh4Head = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n";

TEST(MeshInputLimits, GmshCountsAreCheckedAgainstTheFileSize) {
  std::string e = msh_error(kMsh2Head + "$Nodes\n1000000000000\n1 0 0 0\n$EndNodes\n");
  EXPECT_EQ(e.rfind("m.msh:5: the header announces 1000000000000 nodes, but the file (", 0), 0u) << e;
  e = msh_error(kMsh2Head + "$Nodes\n-5\n$EndNodes\n");
  EXPECT_NE(e.find("m.msh:5: negative node count -5"), std::string::npos) << e;
  e = msh_error(kMsh2Head + "$Nodes\n0\n$EndNodes\n$Elements\n9223372036854775807\n$EndElements\n");
  EXPECT_NE(e.find("elements, but the file"), std::string::npos) << e;
  e = msh_error(kMsh4Head + "$Nodes\n1 4 1 4\n3 1 0 -7\n$EndNodes\n");
  EXPECT_NE(e.find("m.msh:6: negative node count -7"), std::string::npos) << e;
  e = msh_error(kMsh4Head + "$Nodes\n1 4 1 4\n3 1 0 100000000000\n1\n$EndNodes\n");
  EXPECT_NE(e.find("m.msh:6: the header announces 100000000000 nodes"), std::string::npos) << e;
  e = msh_error(kMsh4Head + "$Nodes\n99999999999 4 1 4\n$EndNodes\n");
  EXPECT_NE(e.find("node blocks, but the file"), std::string::npos) << e;
  e = msh_error(kMsh4Head + "$Nodes\n0 0 0 0\n$EndNodes\n$Elements\n1 1 1 1\n3 1 4 -1\n$EndElements\n");
  EXPECT_NE(e.find("negative element count -1"), std::string::npos) << e;
}

TEST(MeshInputLimits, TetgenCountsAreCheckedAgainstTheFileSize) {
  std::istringstream node("4000000000 3 0 0\n1 0 0 0\n"), ele("1 4 0\n1 1 2 3 4\n");
  std::string e = input_error([&] { parse_tetgen(node, ele, "t"); });
  EXPECT_EQ(e.rfind("t.node:1: the header announces 4000000000 nodes", 0), 0u) << e;
  std::istringstream node2("4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n"), ele2("-3 4 0\n");
  e = input_error([&] { parse_tetgen(node2, ele2, "t"); });
  EXPECT_EQ(e.rfind("t.ele:1: negative tetrahedron count -3", 0), 0u) << e;
}

TEST(MeshInputLimits, ObjFaceIndicesAreParsedSafely) {
  const auto dir = test::test_temp_dir();
  const std::string verts = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n";
  for (const auto& [face, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"f 1 2 x", "a.obj:5: face entry \"x\" is not a vertex index"},
           {"f 1 2 99999999999999999999", "a.obj:5: face entry \"99999999999999999999\""},
           {"f 1 2 3000000000", "a.obj:5: face entry \"3000000000\""},
           {"f 1 2 0", "a.obj:5: face entry \"0\""},
           {"f 1 2 -9", "a.obj:5: face entry \"-9\""},
           {"f 1 2", "a.obj:5: face with fewer than 3 vertices"},
           {"f 1 2 7", "triangle refers to missing vertex 7"}}) {
    const auto file = dir / "a.obj";
    std::ofstream(file) << verts << face << "\n";
    const std::string e = input_error([&] { load_surface_mesh(file.string()); });
    EXPECT_NE(e.find(fragment), std::string::npos) << face << " -> " << e;
  }
  std::ofstream(dir / "a.obj") << verts << "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2/1 3/1/1 4//1\n";
  EXPECT_EQ(load_surface_mesh((dir / "a.obj").string()).triangles.size(), 4u);
}

TEST(MeshInputLimits, BoxGeneratorRefusesHugeOrExtremeBoxes) {
  std::string e = input_error([] { make_box_mesh(Vec3(1, 1, 1), Eigen::Vector3i(100000, 100000, 100000)); });
  EXPECT_NE(e.find("box mesh: 1e+05 x 1e+05 x 1e+05 cells"), std::string::npos) << e;
  e = input_error([] { make_box_mesh_target(Vec3(1e300, 1e-300, 1), 6); });
  EXPECT_NE(e.find("more than the limit of 1e8 tetrahedra"), std::string::npos) << e;
  e = input_error([] { make_box_mesh(Vec3(1, 1, 1), Eigen::Vector3i(4000, 4000, 1)); });
  EXPECT_NE(e.find("would need"), std::string::npos) << e;  // 9.6e7 tets: far beyond any budget
  EXPECT_EQ(make_box_mesh_target(Vec3(1, 1, 1), 48).tets.size(), 48u);
}

TEST(MeshInputLimits, GmshVersionOutsideIntRangeIsUnsupported) {
  // Found by fuzz_msh (fuzz/regressions/msh): the version was cast to int before any check.
  std::string e = msh_error("$MeshFormat\n3e112 0 8\n$EndMeshFormat\n");
  EXPECT_EQ(e, "m.msh:2: unsupported msh format version 3e+112 (use 2.2 or 4.1)");
  e = msh_error("$MeshFormat\n-1e300 0 8\n$EndMeshFormat\n");
  EXPECT_EQ(e.rfind("m.msh:2: unsupported msh format version -1e+300", 0), 0u) << e;
}

TEST(MeshInputLimits, InMemoryReadersMatchTheFileReaders) {
  // The entry points the fuzz harnesses use: same meshes and errors as the file readers.
  const std::string cube = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
                           "f 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\n";
  const SurfaceMesh m = parse_surface_mesh(cube, "cube.obj");
  EXPECT_EQ(m.vertices.size(), 8u);
  EXPECT_EQ(m.triangles.size(), 12u);
  EXPECT_NEAR(mesh_mass_properties(m).volume, 1.0, 1e-12);
  std::vector<Vec3> vertices;
  std::vector<std::array<int, 3>> triangles;
  parse_obj_surface(cube, "cube.obj", vertices, triangles);
  EXPECT_EQ(vertices.size(), 8u);
  EXPECT_EQ(triangles.size(), 12u);
  // One face fewer: an open surface, which gmsh could not fill.
  const std::string open = cube.substr(0, cube.rfind("f 4"));
  vertices.clear();
  triangles.clear();
  const std::string e = input_error([&] { parse_obj_surface(open, "open.obj", vertices, triangles); });
  EXPECT_EQ(e.rfind("open.obj: the surface is not closed", 0), 0u) << e;
  EXPECT_EQ(input_error([&] { parse_surface_mesh(cube, "cube.ply"); }),
            "cube.ply: unknown mesh format (expected .obj or .stl)");
}

}  // namespace
}  // namespace addsim
