// Scene bodies of type "fem" (io/fem_bodies.cpp): keys, defaults, errors naming key paths.

#include <fstream>

#include <gtest/gtest.h>

#include "addsim/fem/fem_body.h"
#include "addsim/io/scene.h"
#include "addsim/mesh/gmsh_generators.h"
#include "test_util.h"

namespace addsim {
namespace {

using test::fresh_temp_dir;
using test::input_error;

// A scene with one "fem" body given by `body` (JSON object text) and a spring to node 0.
std::string scene_with(const std::string& body, const std::string& extra = "") {
  return R"({"steps": 2, "obstacles": [{"type": "plane"}], "bodies": [)" + body + "]" + extra + "}";
}

const std::string kBox =
    R"({"type": "fem", "name": "cube", "mesh": {"generator": "box", "size": [0.1, 0.1, 0.1], "target_tets": 48})";

TEST(FemBodies, BoxGeneratorBodyWithDefaultsAndParameters) {
  const Scene scene = load_scene_text(scene_with(kBox + R"(, "position": [0, 0, 1], "velocity": [1, 0, 0]})"), "s.json");
  ASSERT_EQ(scene.bodies.size(), 1u);
  EXPECT_EQ(scene.bodies[0].type, "fem");
  const auto& fem = static_cast<const FemBody&>(*scene.model->bodies()[0]);
  EXPECT_EQ(fem.num_tets(), 48);
  const ParameterTable& p = scene.model->params();
  const VecX& d = p.defaults();
  EXPECT_EQ(d[fem.params().youngs_modulus], 2.0e4);
  EXPECT_EQ(d[fem.params().density], 150.0);
  EXPECT_EQ(d[fem.params().velocity], 1.0);
  EXPECT_EQ(d[fem.params().position + 2], 1.0);
  VecX q0(scene.model->num_dofs()), v0(scene.model->num_dofs());
  scene.model->initial_state(d, q0, v0);
  EXPECT_NEAR(fem.center_of_mass(q0, d).z(), 1.0, 1e-12);
}

TEST(FemBodies, SpringsAnchorToFemNodes) {
  const Scene scene = load_scene_text(
      scene_with(kBox + "}", R"(, "springs": [{"type": "distance", "stiffness": 10,
                 "anchors": [{"body": "cube", "point": 3}, {"world": [0, 0, 2]}]}])"),
      "s.json");
  const auto& fem = static_cast<const FemBody&>(*scene.model->bodies()[0]);
  const std::string e = input_error([&] {
    load_scene_text(scene_with(kBox + "}", R"(, "springs": [{"type": "distance", "stiffness": 10,
                     "anchors": [{"body": "cube", "point": 100000}, {"world": [0, 0, 2]}]}])"),
                    "s.json");
  });
  EXPECT_NE(e.find("springs.0.anchors.0.point"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(fem.num_nodes())), std::string::npos) << e;
}

TEST(FemBodies, OptionsAndMaterialKeys) {
  const Scene scene = load_scene_text(
      scene_with(kBox + R"(, "elasticity": "standard", "viscosity_model": "linear", "mass": "lumped",
                 "material": {"youngs_modulus": 1e5, "poisson_ratio": 0.45, "density": 90, "viscosity": 0.5}})"),
      "s.json");
  const auto& fem = static_cast<const FemBody&>(*scene.model->bodies()[0]);
  EXPECT_EQ(fem.mass_kind(), MassMatrixKind::kLumped);
  EXPECT_EQ(scene.model->params().defaults()[fem.params().viscosity], 0.5);
  EXPECT_EQ(scene.model->params().defaults()[fem.params().poisson_ratio], 0.45);
}

TEST(FemBodies, ErrorsNameTheKeyPath) {
  auto err = [](const std::string& body) { return input_error([&] { load_scene_text(scene_with(body), "s.json"); }); };
  EXPECT_NE(err(kBox + R"(, "material": {"poisson_ratio": 0.5}})").find("s.json: bodies.0.material.poisson_ratio"),
            std::string::npos);
  EXPECT_NE(err(kBox + R"(, "material": {"density": -1}})").find("bodies.0.material.density"), std::string::npos);
  EXPECT_NE(err(kBox + R"(, "material": {"stiffness": 1}})").find("bodies.0.material.stiffness"), std::string::npos);
  EXPECT_NE(err(kBox + R"(, "colour": 1})").find("bodies.0.colour"), std::string::npos);
  EXPECT_NE(err(kBox + R"(, "mass": "heavy"})").find("bodies.0.mass"), std::string::npos);
  EXPECT_NE(err(R"({"type": "fem", "mesh": {"generator": "box", "size": [1, 1, 1]}})").find("bodies.0.mesh.target_tets"),
            std::string::npos);
  EXPECT_NE(err(R"({"type": "fem", "mesh": {"generator": "cone", "target_tets": 5}})").find("bodies.0.mesh.generator"),
            std::string::npos);
  EXPECT_NE(err(R"({"type": "fem", "mesh": {"generator": "box", "size": [1, 1, 1], "target_tets": 5, "r": 1}})")
                .find("bodies.0.mesh.r"),
            std::string::npos);
  EXPECT_NE(err(R"({"type": "fem", "mesh": {"generator": "torus", "major_radius": 0.1, "minor_radius": 0.2,
                    "target_tets": 100}})")
                .find("bodies.0.mesh."),
            std::string::npos);
  EXPECT_NE(err(R"({"type": "fem", "mesh": 3})").find("bodies.0.mesh"), std::string::npos);
  EXPECT_NE(err(R"({"type": "fem", "mesh": "missing.msh"})").find("bodies.0.mesh: "), std::string::npos);
  EXPECT_NE(err(R"({"type": "fem"})").find("bodies.0.mesh"), std::string::npos);
}

TEST(FemBodies, MeshFileRelativeToTheSceneFile) {
  const auto dir = fresh_temp_dir("meshfile");
  std::filesystem::create_directories(dir / "meshes");
  // One tetrahedron in TetGen format (1-based ids).
  std::ofstream(dir / "meshes" / "tet.node") << "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n";
  std::ofstream(dir / "meshes" / "tet.ele") << "1 4 0\n1 1 2 3 4\n";
  std::ofstream(dir / "scene.json") << scene_with(R"({"type": "fem", "mesh": "meshes/tet.node"})");
  const Scene scene = load_scene_file(dir / "scene.json");
  const auto& fem = static_cast<const FemBody&>(*scene.model->bodies()[0]);
  EXPECT_EQ(fem.num_tets(), 1);
  EXPECT_EQ(fem.num_nodes(), 4);
}

TEST(FemBodies, SurfaceGeneratorFillsAClosedObj) {
  if (!gmsh_available()) GTEST_SKIP() << "needs gmsh";
  const auto dir = fresh_temp_dir("surface");
  // The unit cube as 12 outward triangles.
  std::ofstream(dir / "tet.obj") << "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nv 1 0 1\nv 0 1 1\nv 1 1 1\n"
                                    "f 1 3 4\nf 1 4 2\nf 5 6 8\nf 5 8 7\nf 1 2 6\nf 1 6 5\n"
                                    "f 3 7 8\nf 3 8 4\nf 1 5 7\nf 1 7 3\nf 2 4 8\nf 2 8 6\n";
  std::ofstream(dir / "scene.json") << scene_with(
      R"({"type": "fem", "mesh": {"generator": "surface", "file": "tet.obj", "target_tets": 100}})");
  const Scene scene = load_scene_file(dir / "scene.json");
  const auto& fem = static_cast<const FemBody&>(*scene.model->bodies()[0]);
  EXPECT_GT(fem.num_tets(), 20);
  EXPECT_NEAR(mesh_volume(fem.mesh()), 1.0, 1e-9);
  std::ofstream(dir / "bad.json") << scene_with(
      R"({"type": "fem", "mesh": {"generator": "surface", "file": "none.obj", "target_tets": 100}})");
  const std::string e = input_error([&] { load_scene_file(dir / "bad.json"); });
  EXPECT_NE(e.find("bodies.0.mesh.file"), std::string::npos) << e;
}

}  // namespace
}  // namespace addsim
