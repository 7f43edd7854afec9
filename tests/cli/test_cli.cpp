// Runs the built `addsim` binary and checks exit codes, error lines and output files.

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;

using namespace addsim::cli_test;

fs::path scene(const std::string& name) { return source_dir() / "scenes" / (name + ".json"); }

TEST(Cli, SimulateWritesTheFourOutputs) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("simulate --quiet --out result '" + scene("mass_spring_sheet").string() + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"summary.json", "steps.csv", "trajectory.npy", "meta.json", "energies.csv", "index.html"})
    EXPECT_TRUE(fs::exists(dir / "result" / f)) << f;
  const auto summary = nlohmann::json::parse(slurp(dir / "result" / "summary.json"));
  EXPECT_EQ(summary["completed"], true);
  EXPECT_EQ(summary["steps_completed"], 60);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

// summary.json counts the LU factorisations on the stepping thread and, with two threads,
// those made ahead by the helper and adopted (docs/solver.md).
TEST(Cli, SummaryCountsFactorisationsMadeAheadOnTwoThreads) {
  const fs::path dir = fresh_temp_dir();
  for (const char* threads : {"1", "2"}) {
    const std::string out = std::string("t") + threads;
    const CliRun r = run("simulate -q -o " + out + " --set steps=40 --set solver.threads=" + threads + " '" +
                             scene("soft_ball_throw").string() + "'",
                         dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto summary = nlohmann::json::parse(slurp(dir / out / "summary.json"));
    EXPECT_GT(summary["factorizations_total"].get<int>(), 0);
    EXPECT_GT(summary["krylov_iterations_total"].get<int>(), 0);
    if (std::string(threads) == "1")
      EXPECT_EQ(summary["background_factorizations_total"].get<int>(), 0);
    else
      EXPECT_GT(summary["background_factorizations_total"].get<int>(), 0);
  }
}

TEST(Cli, SimulateDefaultsToOutSceneStem) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("simulate '" + scene("particle_incline").string() + "' --set steps=5", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "particle_incline" / "summary.json"));
  EXPECT_NE(r.out.find("Newton iterations"), std::string::npos) << r.out;
}

TEST(Cli, RepeatedSetOptionsMayPrecedeTheScene) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("simulate --set steps=4 --set contact.model=tanh --set 'gravity=[0,0,-1]' '" +
                           scene("particle_incline").string() + "' -q -o o",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto summary = nlohmann::json::parse(slurp(dir / "o" / "summary.json"));
  EXPECT_EQ(summary["steps_completed"], 4);
  EXPECT_EQ(summary["contact_model"], "tanh");
}

TEST(Cli, BadInputIsAOneLineErrorWithExitCode2) {
  const fs::path dir = fresh_temp_dir();
  expect_one_line_error(run("simulate missing.json", dir), "missing.json");
  EXPECT_EQ(run("simulate missing.json", dir).code, 2);
  const CliRun bad = run("simulate '" + scene("particle_incline").string() + "' --set bodies.0.mass=-1", dir);
  EXPECT_EQ(bad.code, 2);
  expect_one_line_error(bad, "bodies.0.mass: must be > 0, got -1");
  const CliRun unknown = run("simulate '" + scene("particle_incline").string() + "' --set contact.kx=1", dir);
  EXPECT_EQ(unknown.code, 2);
  expect_one_line_error(unknown, "contact.kx");
  const CliRun option = run("simulate --no-such-option x.json", dir);
  EXPECT_EQ(option.code, 2);
  expect_one_line_error(option, "--no-such-option");
}

TEST(Cli, HelpAndVersionExitZero) {
  const fs::path dir = fresh_temp_dir();
  for (const char* args : {"--help", "simulate --help", "demo --help", "version --help"}) {
    const CliRun r = run(args, dir);
    EXPECT_EQ(r.code, 0) << args;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args << ": " << r.out;
  }
  EXPECT_NE(run("--version", dir).out.find("addsim "), std::string::npos);
  EXPECT_NE(run("version", dir).out.find("addsim "), std::string::npos);
}

TEST(Cli, NonConvergingStepExitsWith3AndKeepsOutputs) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("simulate --out result --set solver.max_iterations=1 '" + scene("mass_spring_sheet").string() + "'",
                    dir);
  EXPECT_EQ(r.code, 3);
  expect_one_line_error(r, "did not converge");
  const auto summary = nlohmann::json::parse(slurp(dir / "result" / "summary.json"));
  EXPECT_EQ(summary["completed"], false);
  EXPECT_TRUE(fs::exists(dir / "result" / "trajectory.npy"));
}

TEST(Cli, DemoRunsToCompletionLikeTheDemoSceneFile) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("demo --no-png --out d", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote d"), std::string::npos) << r.out;
  const auto summary = nlohmann::json::parse(slurp(dir / "d" / "summary.json"));
  EXPECT_EQ(summary["completed"], true);
  EXPECT_EQ(summary["steps_completed"], 200);
  // scenes/demo.json is the embedded demo: same trajectory, bit for bit.
  ASSERT_EQ(run("simulate --quiet --out f '" + scene("demo").string() + "'", dir).code, 0);
  EXPECT_EQ(slurp(dir / "d" / "trajectory.npy"), slurp(dir / "f" / "trajectory.npy"));
}

// Meshing is reported on stderr (docs/cli.md "Progress"): generation with gmsh starts and
// ends with a line, a cache hit is one line; --quiet prints neither.
TEST(Cli, MeshingAndMeshCacheHitsAreReportedOnStderr) {
  const fs::path dir = fresh_temp_dir();
  nlohmann::json ball = nlohmann::json::parse(slurp(source_dir() / "tasks" / "scenes" / "soft_ball_small.json"));
  ball["steps"] = 2;
  ball["bodies"][0]["mesh"] = {{"generator", "sphere"}, {"radius", 0.05}, {"target_tets", 60}};
  std::ofstream(dir / "ball.json") << ball.dump(2);
  auto simulate = [&](const std::string& flags) {
    return run("simulate ball.json --out o " + flags, dir);
  };
  // A fresh cache folder of this test (the commands inherit the variable).
  setenv("ADDSIM_MESH_CACHE_DIR", (dir / "cache").string().c_str(), 1);
  const CliRun first = simulate("");
  if (first.code == 2 && first.err.find("needs gmsh") != std::string::npos) {
    unsetenv("ADDSIM_MESH_CACHE_DIR");
    GTEST_SKIP() << "addsim was built without gmsh";
  }
  const CliRun second = simulate("");
  const CliRun quiet = simulate("--quiet");
  unsetenv("ADDSIM_MESH_CACHE_DIR");
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.err.find("addsim: meshing sphere mesh with gmsh ...\n"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("addsim: meshed sphere mesh: "), std::string::npos) << first.err;
  EXPECT_NE(first.err.find(" (stored in the mesh cache)\n"), std::string::npos) << first.err;
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(second.err.find("meshing"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("addsim: sphere mesh: "), std::string::npos) << second.err;
  EXPECT_NE(second.err.find(" tets from the mesh cache ("), std::string::npos) << second.err;
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  // gmsh is a module loaded on a cache miss (docs/fem.md): a missing module is a clear error.
  setenv("ADDSIM_MESH_CACHE", "0", 1);
  setenv("ADDSIM_GMSH_MODULE", (dir / "missing" / "libaddsim_gmsh.so").string().c_str(), 1);
  const CliRun no_module = simulate("--quiet");
  unsetenv("ADDSIM_MESH_CACHE");
  unsetenv("ADDSIM_GMSH_MODULE");
  EXPECT_EQ(no_module.code, 2);
  expect_one_line_error(no_module, "cannot load the gmsh module " + (dir / "missing" / "libaddsim_gmsh.so").string());
}

// `view DIR` rewrites the page from the folder's files and prints its path; a folder without
// outputs is bad input.
TEST(Cli, ViewRewritesThePageOfAnOutputFolder) {
  const fs::path dir = fresh_temp_dir();
  ASSERT_EQ(run("simulate -q --out result --set steps=5 '" + scene("rigid_cubes_bounce").string() + "'", dir).code, 0);
  fs::remove(dir / "result" / "index.html");
  const CliRun r = run("view result", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "result/index.html\n");
  const std::string page = slurp(dir / "result" / "index.html");
  EXPECT_NE(page.find("window.ADDSIM_DATA"), std::string::npos);
  EXPECT_NE(page.find("\"cube0\""), std::string::npos);
  fs::create_directories(dir / "empty");
  const CliRun bad = run("view empty", dir);
  EXPECT_EQ(bad.code, 2);
  expect_one_line_error(bad, "no meta.json");
}

// `view --png` checks the still's path before anything runs: a folder, or a file in a missing
// folder, is a one-line error naming the path and why (chromium would fail without saying
// why, or not at all for a folder); --frame needs --png and must name a stored frame.
TEST(Cli, ViewPngPathAndFrameAreChecked) {
  const fs::path dir = fresh_temp_dir();
  ASSERT_EQ(run("simulate -q --out result --set steps=5 '" + scene("rigid_cubes_bounce").string() + "'", dir).code, 0);
  fs::create_directories(dir / "stills");
  const CliRun folder = run("view result --png stills", dir);
  EXPECT_EQ(folder.code, 2);
  expect_one_line_error(folder, "--png: stills: is a directory");
  const CliRun missing = run("view result --png nodir/x.png", dir);
  EXPECT_EQ(missing.code, 2);
  expect_one_line_error(missing, "--png: nodir/x.png: the folder " + (dir / "nodir").string() + " does not exist");
  const CliRun frame = run("view result --frame 3", dir);
  EXPECT_EQ(frame.code, 2);
  expect_one_line_error(frame, "--frame: needs --png");
  const CliRun beyond = run("view result --png x.png --frame 99999", dir);
  EXPECT_EQ(beyond.code, 2);
  expect_one_line_error(beyond, "--frame: 99999 is outside the 6 stored frames");
  EXPECT_FALSE(fs::exists(dir / "x.png"));
}

// Options are applied in command-line order: --steps N is --set steps=N where it stands, so a
// later one wins. Options that only shape another option's output need it; --out "" is refused.
TEST(Cli, StepsAndSetApplyInOrderAndDependentOptionsNeedTheirOption) {
  const fs::path dir = fresh_temp_dir();
  std::string s = scene("spring_oscillator").string();
  s.insert(0, 1, '\'');
  s.push_back('\'');
  auto rows = [&](const std::string& args) {
    const CliRun r = run("simulate -q --out o " + s + " " + args, dir);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string csv = slurp(dir / "o" / "steps.csv");
    return std::count(csv.begin(), csv.end(), '\n') - 1;  // header
  };
  EXPECT_EQ(rows("--steps 3 --set steps=4"), 4);
  EXPECT_EQ(rows("--set steps=4 --steps 3"), 3);
  EXPECT_EQ(rows("--set steps=5 --steps 3 --set steps=4"), 4);
  for (const char* option : {"--vtk-every", "--vtk-volume"}) {
    const std::string value = std::string(option) == "--vtk-every" ? " 3" : "";
    const CliRun r = run("simulate -q --out v " + s + " " + option + value, dir);
    EXPECT_EQ(r.code, 2) << option;
    expect_one_line_error(r, std::string(option) + ": needs --vtk");
  }
  const CliRun empty = run("simulate -q --out '' " + s, dir);
  EXPECT_EQ(empty.code, 2);
  expect_one_line_error(empty, "--out: must not be empty");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// An error thrown where the file is not known (here the rigid joint's check) is reported with
// the scene file in front.
TEST(Cli, ErrorsWithoutAFileNameTheLoadedScene) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("simulate -q --out h '" + scene("hinge_pendulum").string() +
                           "' --set 'joints.0.anchors.1={\"body\":\"rod\",\"point\":[0,0,0]}'",
                       dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, scene("hinge_pendulum").string() + ": joints.0: a rigid joint needs two different bodies");
  // A parameter outside its bounds: named with the file, and nothing is written.
  const CliRun mass = run("simulate -q --out m '" + scene("spring_oscillator").string() + "' --set bodies.0.mass=1e-320", dir);
  EXPECT_EQ(mass.code, 2);
  expect_one_line_error(mass, scene("spring_oscillator").string() + ": bodies.0.mass: must be >= 1e-300");
  EXPECT_FALSE(fs::exists(dir / "m"));
}

}  // namespace
