// Mesh data, boundary extraction and generators (built-in boxes; gmsh primitives when available).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include <Eigen/Dense>

#include "addsim/core/error.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/mesh/tet_mesh.h"
#include "../support/temp_dir.h"

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

// Canonical numbering (canonicalize): nodes strictly increasing in (x, y, z), every tet
// starting at its smallest id and positively oriented, tets strictly increasing.
void expect_canonical(const TetMesh& mesh) {
  for (int k = 1; k < mesh.num_nodes(); ++k) {
    const Vec3& p = mesh.nodes[k - 1];
    const Vec3& q = mesh.nodes[k];
    ASSERT_TRUE(std::lexicographical_compare(p.data(), p.data() + 3, q.data(), q.data() + 3)) << "node " << k;
  }
  for (int t = 0; t < mesh.num_tets(); ++t) {
    const auto& e = mesh.tets[t];
    ASSERT_EQ(e[0], *std::min_element(e.begin(), e.end())) << "tet " << t;
    ASSERT_GT(signed_volume(mesh, t), 0.0) << "tet " << t;
    if (t > 0) {
      ASSERT_LT(mesh.tets[t - 1], e) << "tet " << t;
    }
  }
}

// The mesh as geometry only: node positions and tets as (x, y, z) corner sets.
using Corner = std::array<double, 3>;
std::set<Corner> position_set(const TetMesh& mesh) {
  std::set<Corner> out;
  for (const Vec3& x : mesh.nodes) out.insert({x.x(), x.y(), x.z()});
  return out;
}
std::set<std::set<Corner>> tet_set(const TetMesh& mesh) {
  std::set<std::set<Corner>> out;
  for (const auto& e : mesh.tets) {
    std::set<Corner> corners;
    for (int id : e) corners.insert({mesh.nodes[id].x(), mesh.nodes[id].y(), mesh.nodes[id].z()});
    out.insert(corners);
  }
  return out;
}

// canonicalize changes numbering only: same positions, same tets, same volume and orientation.
void expect_same_geometry(const TetMesh& a, const TetMesh& b) {
  ASSERT_EQ(a.num_nodes(), b.num_nodes());
  ASSERT_EQ(a.num_tets(), b.num_tets());
  EXPECT_TRUE(position_set(a) == position_set(b));
  EXPECT_TRUE(tet_set(a) == tet_set(b));
  EXPECT_NEAR(mesh_volume(a), mesh_volume(b), 1e-14 * std::abs(mesh_volume(a)));
}

// The exact content of a mesh (hexadecimal floats), for byte-wise comparison.
std::string exact_text(const TetMesh& mesh) {
  std::ostringstream out;
  out << mesh.num_nodes() << " " << mesh.num_tets() << "\n" << std::hexfloat;
  for (const Vec3& x : mesh.nodes) out << x.x() << " " << x.y() << " " << x.z() << "\n";
  for (const auto& e : mesh.tets) out << e[0] << " " << e[1] << " " << e[2] << " " << e[3] << "\n";
  return out.str();
}

TEST(TetMesh, CanonicalNumberingDoesNotDependOnTheInputNumbering) {
  const TetMesh box = make_box_mesh(Vec3(1.0, 0.5, 0.25), Eigen::Vector3i(3, 2, 2), BoxSplit::kFive);
  TetMesh canonical = box;
  canonicalize(canonical);
  expect_canonical(canonical);
  expect_same_geometry(box, canonical);
  // A random relabelling: shuffled nodes, shuffled tets and every tet's ids cycled by an even
  // permutation (a 3-cycle of its last three ids), which keeps its orientation.
  std::mt19937 rng(7);
  std::vector<int> perm(box.num_nodes());
  for (int k = 0; k < box.num_nodes(); ++k) perm[k] = k;
  std::shuffle(perm.begin(), perm.end(), rng);
  TetMesh shuffled;
  shuffled.nodes.resize(box.nodes.size());
  for (int k = 0; k < box.num_nodes(); ++k) shuffled.nodes[perm[k]] = box.nodes[k];
  for (const auto& e : box.tets) {
    const std::array<int, 4> r{perm[e[0]], perm[e[1]], perm[e[2]], perm[e[3]]};
    shuffled.tets.push_back(rng() % 2 ? r : std::array<int, 4>{r[0], r[2], r[3], r[1]});
  }
  std::shuffle(shuffled.tets.begin(), shuffled.tets.end(), rng);
  ASSERT_NE(exact_text(shuffled), exact_text(canonical));
  canonicalize(shuffled);
  EXPECT_EQ(exact_text(shuffled), exact_text(canonical));
  // Orientation is kept, never repaired: a flipped tet stays flipped.
  TetMesh flipped = box;
  std::swap(flipped.tets[3][2], flipped.tets[3][3]);
  const Vec3 centre = 0.25 * (box.nodes[box.tets[3][0]] + box.nodes[box.tets[3][1]] + box.nodes[box.tets[3][2]] +
                              box.nodes[box.tets[3][3]]);
  canonicalize(flipped);
  int negative = 0;
  for (int t = 0; t < flipped.num_tets(); ++t) {
    if (signed_volume(flipped, t) > 0.0) continue;
    ++negative;
    const auto& e = flipped.tets[t];
    const Vec3 c = 0.25 * (flipped.nodes[e[0]] + flipped.nodes[e[1]] + flipped.nodes[e[2]] + flipped.nodes[e[3]]);
    EXPECT_LT((c - centre).norm(), 1e-15);
  }
  EXPECT_EQ(negative, 1);
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
  for (const TetMesh* m : {&ball, &puck, &torus, &tori}) {
    for (int t = 0; t < m->num_tets(); ++t) ASSERT_GT(signed_volume(*m, t), 0.0);
    // Generated meshes come canonically numbered: renumbering again changes nothing.
    expect_canonical(*m);
    TetMesh again = *m;
    canonicalize(again);
    EXPECT_TRUE(again.nodes == m->nodes && again.tets == m->tets);
  }
}

// The fused tori exercise gmsh's address-dependent numbering (before canonical numbering their
// node order differed between any two processes). Helper of the next test: run in a child
// process, it writes the mesh to the file named by ADDSIM_TEST_MESH_DUMP.
TEST(GmshGenerators, ThreeToriDumpForCrossProcessCheck) {
  const char* file = std::getenv("ADDSIM_TEST_MESH_DUMP");
  if (file == nullptr) GTEST_SKIP() << "runs only as the child process of ThreeToriAreIdenticalInEveryProcess";
  if (!gmsh_available()) GTEST_SKIP() << "built without gmsh";
  std::ofstream(file) << exact_text(make_three_tori_mesh(0.1, 0.025, 1930));
}

TEST(GmshGenerators, ThreeToriAreIdenticalInEveryProcess) {
  if (!gmsh_available()) GTEST_SKIP() << "built without gmsh";
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) GTEST_SKIP() << "cannot find the test executable (/proc/self/exe)";
  const std::string exe(self, static_cast<std::size_t>(length));
  // Both processes mesh with gmsh: with the mesh cache (mesh/mesh_cache.h) this one would read
  // the child's mesh back and compare it with itself.
  const char* cache = std::getenv("ADDSIM_MESH_CACHE");
  const std::string saved = cache ? cache : "";
  setenv("ADDSIM_MESH_CACHE", "0", 1);
  struct Restore {
    bool had;
    std::string value;
    ~Restore() {
      if (had)
        setenv("ADDSIM_MESH_CACHE", value.c_str(), 1);
      else
        unsetenv("ADDSIM_MESH_CACHE");
    }
  } restore{cache != nullptr, saved};
  const auto dump = test::test_temp_dir() / "tori.txt";
  // A child with an environment of another size than ours, so that its heap layout differs.
  const std::string cmd = "ADDSIM_TEST_MESH_DUMP='" + dump.string() + "' ADDSIM_TEST_PADDING=" +
                          std::string(97, 'x') + " '" + exe +
                          "' --gtest_filter=GmshGenerators.ThreeToriDumpForCrossProcessCheck >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dump);
  std::stringstream child;
  child << in.rdbuf();
  const std::string here = exact_text(make_three_tori_mesh(0.1, 0.025, 1930));
  EXPECT_EQ(child.str().size(), here.size());
  EXPECT_TRUE(child.str() == here) << "the three-tori mesh differs between two processes";
}

}  // namespace
}  // namespace addsim
