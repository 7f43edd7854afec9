#include "addsim/io/vtk.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "addsim/fem/fem_body.h"
#include "addsim/io/output.h"
#include "addsim/rigid/rigid_body.h"
#include "test_util.h"

namespace addsim {
namespace {

using test::fresh_temp_dir;

// A structured-box soft body (no gmsh needed) and two particles over a floor.
const char* kScene = R"({
  "dt": 0.01, "steps": 4,
  "obstacles": [{"type": "plane"}],
  "contact": {"kn": 1000},
  "bodies": [
    {"type": "particles", "name": "dots", "positions": [[1, 0, 0.5], [1, 1, 0.5]], "mass": 0.1},
    {"type": "fem", "name": "cube",
     "mesh": {"generator": "box", "size": [0.1, 0.1, 0.1], "target_tets": 48},
     "position": [0, 0, 0.06], "material": {"youngs_modulus": 1e4, "density": 100}}
  ]
})";

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Integer attribute `name="..."` of the first element that has it.
long attribute(const std::string& text, const std::string& name) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(name + "=\"([0-9]+)\""))) << name;
  return m.empty() ? -1 : std::stol(m[1]);
}

// Element balance: every opened tag closes (self-closing tags count as both).
void expect_balanced(const std::string& xml, const std::string& what) {
  EXPECT_EQ(xml.rfind("<?xml", 0), 0u) << what;
  for (const char* tag : {"VTKFile", "UnstructuredGrid", "Piece", "Points", "Cells", "CellData", "Collection",
                          "AppendedData"})
    EXPECT_EQ(count(xml, std::string("<") + tag + " ") + count(xml, std::string("<") + tag + ">"),
              count(xml, std::string("</") + tag + ">"))
        << what << ": <" << tag << ">";
}

// A .vtu with raw appended data, read back: the XML head and every DataArray by name.
struct Vtu {
  std::string head;
  std::map<std::string, std::vector<double>> arrays;
  std::vector<double> points() const { return arrays.at("Points"); }
  std::vector<int> ints(const std::string& name) const {
    const auto& v = arrays.at(name);
    return {v.begin(), v.end()};
  }
};

template <class T>
std::vector<double> decode(const std::string& raw, std::size_t at) {
  std::uint64_t bytes = 0;
  std::memcpy(&bytes, raw.data() + at, sizeof bytes);
  std::vector<double> out(bytes / sizeof(T));
  for (std::size_t k = 0; k < out.size(); ++k) {
    T x;
    std::memcpy(&x, raw.data() + at + sizeof bytes + k * sizeof(T), sizeof(T));
    out[k] = static_cast<double>(x);
  }
  return out;
}

Vtu read_vtu(const std::filesystem::path& file) {
  const std::string text = slurp(file);
  Vtu v;
  const std::size_t data = text.find("<AppendedData encoding=\"raw\">");
  EXPECT_NE(data, std::string::npos) << file;
  const std::size_t underscore = text.find('_', data);
  v.head = text.substr(0, data);
  EXPECT_EQ(count(v.head, "format=\"ascii\""), 0) << file;
  EXPECT_NE(v.head.find("header_type=\"UInt64\""), std::string::npos);
  const std::string raw = text.substr(underscore + 1);
  const std::regex tag("<DataArray type=\"(\\w+)\" Name=\"(\\w+)\"[^>]*offset=\"([0-9]+)\"/>");
  for (auto it = std::sregex_iterator(v.head.begin(), v.head.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string type = (*it)[1];
    const std::size_t offset = std::stoul((*it)[3]);
    v.arrays[(*it)[2]] = type == "Float64" ? decode<double>(raw, offset)
                         : type == "Int32" ? decode<std::int32_t>(raw, offset)
                                           : decode<std::uint8_t>(raw, offset);
  }
  return v;
}

struct SimRun {
  Scene scene;
  Trajectory traj;
};

SimRun simulate(const char* text = kScene) {
  SimRun run{load_scene_text(text, "vtk_test.json"), {}};
  Simulator sim(*run.scene.model);
  run.traj = sim.run(run.scene.model->params().defaults());
  EXPECT_TRUE(run.traj.completed()) << run.traj.failure;
  return run;
}

TEST(Vtk, SeriesHasOneBinaryFramePerStateAndAPvdIndex) {
  const SimRun run = simulate();
  const auto dir = fresh_temp_dir("series");
  const std::vector<std::string> files = write_vtk_series(dir, run.scene, run.traj);
  ASSERT_EQ(files.size(), run.traj.q.size());
  const std::string pvd = slurp(dir / "trajectory.pvd");
  expect_balanced(pvd, "trajectory.pvd");
  EXPECT_EQ(count(pvd, "<DataSet "), static_cast<int>(files.size()));
  EXPECT_NE(pvd.find("timestep=\"0.04"), std::string::npos) << pvd;
  for (const std::string& f : files) {
    ASSERT_TRUE(std::filesystem::exists(dir / f)) << f;
    EXPECT_NE(pvd.find("file=\"" + f + "\""), std::string::npos) << f;
  }

  // 2 particles + all FEM nodes + the floor patch's 4 corners; 2 vertex cells, the boundary
  // triangles and one quad.
  const auto& fem = static_cast<const FemBody&>(*run.scene.model->bodies()[1]);
  expect_balanced(slurp(dir / files.back()), files.back());
  const Vtu vtu = read_vtu(dir / files.back());
  const long points = 2 + fem.num_nodes() + 4;
  const long cells = 2 + static_cast<long>(fem.surface_faces().size()) + 1;
  EXPECT_EQ(attribute(vtu.head, "NumberOfPoints"), points);
  EXPECT_EQ(attribute(vtu.head, "NumberOfCells"), cells);
  ASSERT_EQ(static_cast<long>(vtu.points().size()), 3 * points);
  ASSERT_EQ(static_cast<long>(vtu.ints("types").size()), cells);
  EXPECT_EQ(vtu.ints("offsets").back(), static_cast<int>(vtu.ints("connectivity").size()));
  EXPECT_EQ(vtu.ints("connectivity").size(), 2 + 3 * fem.surface_faces().size() + 4);
  // Points are the state exactly (Float64): the first particle, then the first FEM node.
  const VecX& q = run.traj.q.back();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(vtu.points()[c], q[c]);
    EXPECT_EQ(vtu.points()[6 + c], q[6 + c]);
  }
  EXPECT_EQ(vtu.ints("types").back(), 9);  // the obstacle quad
  EXPECT_EQ(vtu.ints("part").back(), static_cast<int>(VtkPart::kObstacle));
  EXPECT_EQ(vtu.ints("body").back(), -1);
}

TEST(Vtk, VolumeCellsAndStride) {
  const SimRun run = simulate();
  const auto dir = fresh_temp_dir("volume");
  VtkOptions opt;
  opt.cells = VtkCells::kVolume;
  opt.every = 3;
  const std::vector<std::string> files = write_vtk_series(dir, run.scene, run.traj, opt);
  // States 0..4 with stride 3: 0, 3 and the last (4).
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files.back(), "vtk/frame_000004.vtu");
  const auto& fem = static_cast<const FemBody&>(*run.scene.model->bodies()[1]);
  const Vtu vtu = read_vtu(dir / files.front());
  EXPECT_EQ(attribute(vtu.head, "NumberOfCells"), 2 + fem.num_tets() + 1);
  const std::vector<int> types = vtu.ints("types");
  ASSERT_EQ(static_cast<int>(types.size()), 2 + fem.num_tets() + 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), 10), fem.num_tets());
  opt.every = 0;
  EXPECT_NE(test::input_error([&] { write_vtk_series(dir, run.scene, run.traj, opt); }).find("every"),
            std::string::npos);
}

TEST(Vtk, ARerunRemovesTheFramesOfTheEarlierRun) {
  const SimRun run = simulate();
  const auto dir = fresh_temp_dir("rerun");
  ASSERT_EQ(write_vtk_series(dir, run.scene, run.traj).size(), 5u);
  VtkOptions opt;
  opt.every = 3;
  write_vtk_series(dir, run.scene, run.traj, opt);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir / "vtk")) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"frame_000000.vtu", "frame_000003.vtu", "frame_000004.vtu"}));
}

// Rigid bodies, sheets, handles, springs and joints all appear.
const char* kEveryKind = R"({
  "dt": 0.01, "steps": 3,
  "obstacles": [{"type": "plane"}],
  "bodies": [
    {"type": "rigid", "name": "box", "shape": {"type": "box", "size": [0.2, 0.4, 0.1]}, "mass": 1,
     "position": [0, 0, 0.5], "orientation": [0.3, -0.2, 0.5], "angular_velocity": [1, 2, 0]},
    {"type": "sheet", "name": "cloth", "origin": [1, 0, 1], "size": [0.3, 0.2], "resolution": [3, 2], "mass": 0.1,
     "stiffness": 50},
    {"type": "rigid", "name": "ball", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1, "position": [0, 1, 0.5]}
  ],
  "handles": [{"name": "h", "position": [1, 0, 1.5], "velocity": [1, 0, 0]}],
  "springs": [{"type": "zero_length", "anchors": [{"handle": "h"}, {"body": "cloth", "point": 0}], "stiffness": 10}],
  "joints": [{"type": "distance", "anchors": [{"body": "box"}, {"body": "ball"}], "stiffness": 100}]
})";

TEST(Vtk, EveryBodyKindIsWritten) {
  const SimRun run = simulate(kEveryKind);
  const auto dir = fresh_temp_dir("kinds");
  const std::vector<std::string> files = write_vtk_series(dir, run.scene, run.traj);
  const Vtu vtu = read_vtu(dir / files.back());
  const std::vector<int> body = vtu.ints("body"), part = vtu.ints("part"), types = vtu.ints("types");
  const std::vector<int> conn = vtu.ints("connectivity"), offsets = vtu.ints("offsets");
  const std::vector<double> pts = vtu.points();
  // The box: 12 triangles whose 8 corners are R x + p at the last state.
  const auto& box = static_cast<const RigidBody&>(*run.scene.model->bodies()[0]);
  const VecX& q = run.traj.q.back();
  std::set<int> corners;
  for (std::size_t c = 0; c < types.size(); ++c)
    if (body[c] == 0) {
      EXPECT_EQ(types[c], 5);
      for (int k = (c ? offsets[c - 1] : 0); k < offsets[c]; ++k) corners.insert(conn[k]);
    }
  ASSERT_EQ(corners.size(), 8u);
  const Vec3 corner(0.1, 0.2, 0.05);
  const Vec3 expected = q.segment<3>(0) + box.rotation(q) * corner;
  double best = 1e9;
  for (int i : corners) best = std::min(best, (Vec3(pts[3 * i], pts[3 * i + 1], pts[3 * i + 2]) - expected).norm());
  EXPECT_LT(best, 1e-12);
  EXPECT_GT((expected - Vec3(0.1, 0.2, 0.55)).norm(), 1e-3) << "the box should have moved and turned";
  // The sheet: 6 vertices and 2 × (3−1) × (2−1) = 4 triangles.
  EXPECT_EQ(std::count_if(types.begin(), types.end(), [&, c = 0](int t) mutable { return body[c++] == 1 && t == 5; }), 4);
  EXPECT_EQ(std::count_if(types.begin(), types.end(), [&, c = 0](int t) mutable { return body[c++] == 1 && t == 1; }), 6);
  // The ball is a closed tessellated sphere; the handle, the springs (1 + sheet springs), the joint, the floor.
  EXPECT_GT(std::count(body.begin(), body.end(), 2), 100);
  auto parts = [&](VtkPart p) { return std::count(part.begin(), part.end(), static_cast<int>(p)); };
  EXPECT_EQ(parts(VtkPart::kHandle), 1);
  EXPECT_EQ(parts(VtkPart::kSpring), 1 + 7 + 4);  // the sheet: 4 + 3 structural, 2 × 2 shear springs
  EXPECT_EQ(parts(VtkPart::kJoint), 1);
  EXPECT_EQ(parts(VtkPart::kObstacle), 1);
  // The handle moved at 1 m/s along x over 3 steps of 0.01 s.
  for (std::size_t c = 0; c < types.size(); ++c)
    if (part[c] == static_cast<int>(VtkPart::kHandle)) {
      EXPECT_NEAR(pts[3 * conn[offsets[c] - 1]], 1.03, 1e-12);
    }
}

TEST(Vtk, MetaListsContactNodesOfFemBodies) {
  const SimRun run = simulate();
  const nlohmann::json meta = make_meta(run.scene);
  const auto& fem = static_cast<const FemBody&>(*run.scene.model->bodies()[1]);
  EXPECT_FALSE(meta["bodies"][0].contains("contact_nodes"));
  ASSERT_TRUE(meta["bodies"][1].contains("contact_nodes"));
  EXPECT_EQ(meta["bodies"][1]["contact_nodes"].get<std::vector<int>>(), fem.surface_nodes());
  EXPECT_EQ(meta["bodies"][1]["type"], "fem");
}

}  // namespace
}  // namespace addsim
