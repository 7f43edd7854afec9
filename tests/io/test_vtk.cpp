#include "addsim/io/vtk.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "addsim/fem/fem_body.h"
#include "addsim/io/output.h"
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
  std::ifstream in(file);
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
  for (const char* tag : {"VTKFile", "UnstructuredGrid", "Piece", "Points", "Cells", "CellData", "DataArray",
                          "Collection"})
    EXPECT_EQ(count(xml, std::string("<") + tag + " ") + count(xml, std::string("<") + tag + ">"),
              count(xml, std::string("</") + tag + ">"))
        << what << ": <" << tag << ">";
}

struct SimRun {
  Scene scene;
  Trajectory traj;
};

SimRun simulate() {
  SimRun run{load_scene_text(kScene, "vtk_test.json"), {}};
  Simulator sim(*run.scene.model);
  run.traj = sim.run(run.scene.model->params().defaults());
  EXPECT_TRUE(run.traj.completed()) << run.traj.failure;
  return run;
}

TEST(Vtk, SeriesHasOneFramePerStateAndAPvdIndex) {
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

  // Counts: 2 particles + all FEM nodes; 2 vertex cells + the boundary triangles.
  const auto& fem = static_cast<const FemBody&>(*run.scene.model->bodies()[1]);
  const std::string vtu = slurp(dir / files.back());
  expect_balanced(vtu, files.back());
  EXPECT_EQ(attribute(vtu, "NumberOfPoints"), 2 + fem.num_nodes());
  const long cells = 2 + static_cast<long>(fem.surface_faces().size());
  EXPECT_EQ(attribute(vtu, "NumberOfCells"), cells);
  // The last offset is the connectivity length: 2 vertices + 3 per triangle.
  const std::size_t types_at = vtu.find("Name=\"types\"");
  const std::string before_types = vtu.substr(0, types_at);
  const std::regex last_value("([0-9]+)\\s*\n\\s*</DataArray>");
  std::string last;
  for (auto it = std::sregex_iterator(before_types.begin(), before_types.end(), last_value);
       it != std::sregex_iterator(); ++it)
    last = (*it)[1];
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(std::stol(last), 2 + 3 * static_cast<long>(fem.surface_faces().size()));
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
  const std::string vtu = slurp(dir / files.front());
  EXPECT_EQ(attribute(vtu, "NumberOfCells"), 2 + fem.num_tets());
  // The types array: 2 vertices (1) and one tetrahedron (10) per tet.
  const std::size_t from = vtu.find("Name=\"types\"");
  std::istringstream types(vtu.substr(vtu.find('>', from) + 1, vtu.find("</DataArray>", from) - vtu.find('>', from) - 1));
  std::vector<int> type_ids{std::istream_iterator<int>(types), std::istream_iterator<int>()};
  ASSERT_EQ(static_cast<int>(type_ids.size()), 2 + fem.num_tets());
  EXPECT_EQ(std::count(type_ids.begin(), type_ids.end(), 10), fem.num_tets());
  opt.every = 0;
  EXPECT_NE(test::input_error([&] { write_vtk_series(dir, run.scene, run.traj, opt); }).find("every"),
            std::string::npos);
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
