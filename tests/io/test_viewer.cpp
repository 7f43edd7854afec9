// The viewer page (io/viewer.h) and what it is built from: meta.json's geometry and energies.csv.

#include "addsim/io/viewer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "addsim/io/output.h"
#include "test_util.h"

namespace addsim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// One body of every kind (docs/viewer.md "meta.json").
const char* kScene = R"({
  "name": "kinds", "dt": 0.01, "steps": 20,
  "obstacles": [{"type": "plane", "name": "floor", "normal": [0, 0, 2]}],
  "bodies": [
    {"type": "rigid", "name": "box", "shape": {"type": "box", "size": [0.2, 0.4, 0.1]}, "mass": 2,
     "position": [0, 0, 0.5], "velocity": [1, 0, 0]},
    {"type": "sheet", "name": "cloth", "origin": [1, 0, 1], "size": [0.3, 0.2], "resolution": [3, 2], "mass": 0.1,
     "stiffness": 50},
    {"type": "fem", "name": "soft", "mesh": {"generator": "box", "size": [0.1, 0.1, 0.1], "target_tets": 48},
     "position": [0, 1, 0.06], "material": {"youngs_modulus": 1e4, "density": 100}},
    {"type": "particles", "name": "dot", "positions": [[2, 0, 1]], "mass": 0.5}
  ],
  "handles": [{"name": "h", "position": [1, 0, 1.5], "velocity": [1, 0, 0]}],
  "springs": [{"type": "zero_length", "anchors": [{"handle": "h"}, {"body": "cloth", "point": 0}], "stiffness": 10}],
  "joints": [{"type": "ball", "anchors": [{"body": "box", "point": [0.1, 0, 0]}, {"world": [0.1, 0, 0.5]}],
              "stiffness": 100}]
})";

struct SimRun {
  Scene scene;
  Trajectory traj;
  std::string solver;
};

SimRun simulate() {
  SimRun run{load_scene_text(kScene, "kinds.json"), {}, ""};
  Simulator sim(*run.scene.model);
  run.traj = sim.run(run.scene.model->params().defaults());
  run.solver = sim.linear_solver_name();
  EXPECT_TRUE(run.traj.completed()) << run.traj.failure;
  return run;
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Meta, DescribesTheGeometryOfEveryBodyKind) {
  const SimRun run = simulate();
  const json meta = make_meta(run.scene, &run.traj.p);
  const json& box = meta["bodies"][0]["geometry"];
  EXPECT_EQ(box["kind"], "rigid");
  EXPECT_EQ(box["shape"]["type"], "box");
  EXPECT_EQ(box["kinematic"], false);
  ASSERT_EQ(box["proxies"].size(), 1u);
  EXPECT_EQ(box["proxies"][0]["centers"].size(), 8u);  // the default proxy: the box corners
  const json& cloth = meta["bodies"][1]["geometry"];
  EXPECT_EQ(cloth["kind"], "sheet");
  EXPECT_EQ(cloth["grid"], json::array({3, 2}));
  EXPECT_EQ(cloth["triangles"].size(), 4u);
  const json& soft = meta["bodies"][2]["geometry"];
  EXPECT_EQ(soft["kind"], "fem");
  EXPECT_GT(soft["surface_triangles"].size(), 0u);
  EXPECT_GT(soft["tets"].size(), 0u);
  EXPECT_EQ(meta["bodies"][3]["geometry"]["kind"], "points");
  ASSERT_EQ(meta["obstacles"].size(), 1u);
  EXPECT_EQ(meta["obstacles"][0]["normal"], json::array({0.0, 0.0, 1.0}));  // normalised
  // The sheet's 11 springs and the handle spring; the spring's a end is the handle.
  ASSERT_EQ(meta["springs"].size(), 12u);
  EXPECT_EQ(meta["springs"].back()["a"], json({{"handle", 0}}));
  EXPECT_EQ(meta["springs"].back()["b"]["dofs"], json::array({6}));  // cloth point 0 follows the box's 6 DOFs
  ASSERT_EQ(meta["joints"].size(), 1u);
  EXPECT_EQ(meta["joints"][0]["a"]["rigid"], 0);
  EXPECT_EQ(meta["joints"][0]["b"]["world"], json::array({0.1, 0.0, 0.5}));
  // Handle positions per step: x0 + v t.
  ASSERT_EQ(meta["handles"][0]["positions"].size(), 21u);
  EXPECT_NEAR(meta["handles"][0]["positions"][20][0].get<double>(), 1.2, 1e-12);
}

TEST(Energies, KineticAndGravityPerStateWithContactPoints) {
  const SimRun run = simulate();
  const Energies e = make_energies(run.scene, run.traj);
  ASSERT_EQ(e.values.size(), run.traj.q.size());
  ASSERT_GE(e.columns.size(), 3u);
  EXPECT_EQ(e.columns[0], "kinetic");
  EXPECT_NE(std::find(e.columns.begin(), e.columns.end(), "gravity"), e.columns.end());
  EXPECT_NE(std::find(e.columns.begin(), e.columns.end(), "elastic"), e.columns.end());
  // At t = 0 only the box moves: ½ m v² = ½ · 2 · 1² = 1 J.
  EXPECT_NEAR(e.values[0][0], 1.0, 1e-12);
  // The soft cube starts 1 cm above the floor with half-height 5 cm: its bottom is in contact
  // later, never at t = 0 (gap 0.01 m).
  EXPECT_EQ(e.contact_points.front(), 0);
  EXPECT_GT(e.contact_points.back(), 0);
}

TEST(Viewer, PageEmbedsThreeAndTheDecimatedTrajectory) {
  const SimRun run = simulate();
  const fs::path dir = test::fresh_temp_dir("page");
  write_outputs(dir, run.scene, run.traj, run.solver);
  // A stand-in three.js: the page must inline exactly this file.
  const fs::path three = dir / "fake_three.cjs";
  std::ofstream(three) << "exports.REVISION = 'test-three';\n";
  ViewerOptions options;
  options.three_js = three;
  options.max_trajectory_bytes = 4096;
  const ViewerResult r = write_viewer(dir, options);
  EXPECT_TRUE(r.has_three);
  EXPECT_EQ(r.page, dir / "index.html");
  EXPECT_EQ(r.states_stored, 21);
  EXPECT_LT(r.states_embedded, 21);
  EXPECT_GE(r.states_embedded, 2);
  const std::string page = slurp(r.page);
  EXPECT_NE(page.find("exports.REVISION = 'test-three';"), std::string::npos);
  EXPECT_NE(page.find("window.ADDSIM_FRAMES = \""), std::string::npos);
  EXPECT_EQ(page.find("/*ADDSIM_"), std::string::npos) << "a template marker was left";
  // The embedded state list ends with the last state.
  const std::size_t at = page.find("\"states\":[");
  ASSERT_NE(at, std::string::npos);
  const std::string states = page.substr(at, page.find(']', at) - at);
  EXPECT_NE(states.find(",20"), std::string::npos) << states;
}

// window.ADDSIM_DATA of a page.
json page_data(const std::string& page) {
  const std::string open = "window.ADDSIM_DATA = ", close = ";\nwindow.ADDSIM_FRAMES";
  const std::size_t a = page.find(open), b = page.find(close);
  EXPECT_NE(a, std::string::npos);
  EXPECT_NE(b, std::string::npos);
  return json::parse(page.substr(a + open.size(), b - a - open.size()));
}

// A long run's plots are capped like its trajectory: the per-step series are embedded as the
// minimum and maximum of buckets of steps, so the page stays small and a one-step spike stays.
// (Without the cap, 200,000 steps of a 3-DOF scene made a 63 MB page.)
TEST(Viewer, LongRunsPlotsAreDecimatedKeepingExtremes) {
  const SimRun run = simulate();
  const fs::path dir = test::fresh_temp_dir("long");
  write_outputs(dir, run.scene, run.traj, run.solver);
  // The short run's series are embedded whole.
  ViewerOptions options;
  options.three_js = dir / "fake_three.cjs";
  std::ofstream(options.three_js) << "exports.REVISION = 'test-three';\n";
  ViewerResult r = write_viewer(dir, options);
  EXPECT_EQ(r.series_bucket, 1u);
  json data = page_data(slurp(r.page));
  EXPECT_EQ(data["steps"]["bucket"], 1);
  EXPECT_EQ(data["steps"]["columns"]["step"].size(), data["steps"]["rows"].get<std::size_t>());

  // 200,000 steps with one spike in the residual and in the energy.
  const int n = 200000, spike = 123457;
  {
    std::ofstream steps(dir / "steps.csv"), energies(dir / "energies.csv");
    steps << "step,time,newton_iterations,residual_norm\n";
    energies << "step,time,kinetic,total\n";
    for (int i = 1; i <= n; ++i) {
      steps << i << "," << i * 1e-4 << "," << (i == spike ? 40 : 2) << "," << (i == spike ? 7250.0 : 1e-9) << "\n";
      energies << i << "," << i * 1e-4 << "," << (i == spike ? -3.5 : 1.0) << "," << 2.0 << "\n";
    }
  }
  const std::size_t csv_bytes = fs::file_size(dir / "steps.csv") + fs::file_size(dir / "energies.csv");
  r = write_viewer(dir, options);
  EXPECT_EQ(r.series_rows, static_cast<std::size_t>(n));
  EXPECT_GT(r.series_bucket, 1u);
  const std::string page = slurp(r.page);
  EXPECT_LT(page.size(), 2u * options.max_series_bytes + (std::size_t{1} << 20)) << "undecimated CSVs: " << csv_bytes;
  data = page_data(page);
  const json& steps = data["steps"];
  EXPECT_EQ(steps["rows"], n);
  const std::size_t bucket = steps["bucket"].get<std::size_t>();
  const std::size_t kept = steps["columns"]["residual_norm"].size();
  EXPECT_EQ(kept, 2 * ((n + bucket - 1) / bucket));
  for (const char* c : {"step", "time", "newton_iterations"}) EXPECT_EQ(steps["columns"][c].size(), kept) << c;
  // Extremes survive: the spike is the maximum of its bucket, 1e-9 every minimum.
  double hi = 0.0, lo = 1.0;
  for (const json& v : steps["columns"]["residual_norm"]) {
    hi = std::max(hi, v.get<double>());
    lo = std::min(lo, v.get<double>());
  }
  EXPECT_EQ(hi, 7250.0);
  EXPECT_EQ(lo, 1e-9);
  // Step and time span the run: each bucket gives its first and last.
  EXPECT_EQ(steps["columns"]["step"].front(), 1);
  EXPECT_EQ(steps["columns"]["step"].back(), n);
  EXPECT_EQ(steps["columns"]["step"][1], static_cast<double>(bucket));
  double e_lo = 1.0;
  for (const json& v : data["energies"]["columns"]["kinetic"]) e_lo = std::min(e_lo, v.get<double>());
  EXPECT_EQ(e_lo, -3.5);
  // The CSV files themselves stay complete.
  EXPECT_EQ(fs::file_size(dir / "steps.csv") + fs::file_size(dir / "energies.csv"), csv_bytes);
}

TEST(Viewer, MissingThreeGivesAPageWithTheInstallCommand) {
  const SimRun run = simulate();
  const fs::path dir = test::fresh_temp_dir("nothree");
  ViewerOptions options;
  options.three_js = dir / "missing" / "three.cjs";
  const ViewerResult r = write_viewer(dir, run.scene, run.traj, json::array({{{"title", "Φ/Φ₀"}, {"x", {0, 1}}}}), options);
  EXPECT_FALSE(r.has_three);
  EXPECT_NE(r.notice.find("bash scripts/install-deps.sh"), std::string::npos) << r.notice;
  EXPECT_NE(r.notice.find((dir / "missing" / "three.cjs").string()), std::string::npos) << r.notice;
  for (const char* f : {"meta.json", "trajectory.npy", "steps.csv", "energies.csv", "plots.json", "index.html"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_NE(slurp(r.page).find("install-deps.sh"), std::string::npos);
}

TEST(Viewer, RejectsAFolderWithoutOutputs) {
  const fs::path dir = test::fresh_temp_dir("empty");
  const std::string what = test::input_error([&] { write_viewer(dir); });
  EXPECT_NE(what.find("meta.json"), std::string::npos) << what;
  EXPECT_NE(what.find(dir.string()), std::string::npos) << what;
}

}  // namespace
}  // namespace addsim
