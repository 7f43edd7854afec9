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

}  // namespace
