// Interrupted, failing and misdirected runs (issue 18, defect 8 and "fault tolerance"): every
// command probes its --out before any work; `simulate` streams steps.csv and trajectory.npy
// and, on SIGINT/SIGTERM, stops after the current step with everything done so far written
// and "completed": false; a step that fails leaves every converged step and says which step
// failed and why, in simulate, gradient, landscape and optimize; nothing partial looks complete.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "addsim/io/npy.h"
#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using namespace addsim::cli_test;

fs::path write_json(const fs::path& file, const json& j) {
  std::ofstream(file) << j.dump(2);
  return file;
}

json read_json(const fs::path& file) { return json::parse(slurp(file)); }

// Data rows of a CSV file (the header dropped), each split at commas.
std::vector<std::vector<std::string>> csv_rows(const fs::path& file) {
  std::istringstream in(slurp(file));
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

std::vector<std::string> csv_header(const fs::path& file) {
  std::istringstream in(slurp(file));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> cells;
  std::stringstream s(line);
  for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
  return cells;
}

// A 1 kg particle dropped from 0.1 m onto the floor z = 0. With one Newton iteration per step
// free flight converges (the residual is linear in q there) and the first step into contact
// does not (the penalty switches on inside the step): the run fails at a known step ≈ 15.
json drop_scene(int max_iterations) {
  return {{"name", "drop"},
          {"dt", 0.01},
          {"steps", 40},
          {"integrator", "bdf2"},
          {"contact", {{"model", "linear"}, {"kn", 100000}}},
          {"solver", {{"max_iterations", max_iterations}}},
          {"obstacles", {{{"type", "plane"}, {"point", {0, 0, 0}}, {"normal", {0, 0, 1}}, {"friction", 0.3}}}},
          {"bodies", {{{"type", "particles"}, {"name", "p"}, {"positions", {{0, 0, 0.1}}}, {"mass", 1}}}}};
}

// Task on the drop scene: throw velocity as the parameter, Φ = ½‖x(T) − target‖².
json drop_task(const fs::path& scene) {
  return {{"scene", scene.string()},
          {"parameters", {"bodies.0.velocities.0.0", "bodies.0.velocities.0.2"}},
          {"objective", {{{"type", "com_target"}, {"body", 0}, {"target", {0.5, 0.0, 0.0}}}}},
          {"optimize", {{"method", "lbfgsb"}, {"max_sims", 5}}}};
}

TEST(FaultTolerance, OutNamingAFileFailsFirstForEveryCommand) {
  const fs::path dir = fresh_temp_dir();
  std::ofstream(dir / "taken") << "not a folder\n";
  // The scene and task files do not exist: the --out error comes first, so --out is probed
  // before anything is loaded (let alone meshed or simulated).
  const std::vector<std::string> commands = {
      "simulate missing.json --out OUT",
      "demo --out OUT",
      "gradient missing.json --out OUT/g.json",
      "gradcheck missing.json --out OUT/g.json",
      "landscape missing.json --axes a,b --grid 2x2 --range 0:1,0:1 --out OUT",
      "sweep missing.json --samples 2 --out OUT",
      "optimize missing.json --out OUT",
  };
  for (const std::string& c : commands)
    for (const std::string out : {"taken", "taken/sub"}) {
      std::string args = c;
      args.replace(args.find("OUT"), 3, out);
      if (args.rfind("gradient", 0) == 0 || args.rfind("gradcheck", 0) == 0) {
        if (out == "taken/sub") continue;
        args = c;
        args.replace(args.find("OUT/g.json"), 10, "taken/g.json");
      }
      SCOPED_TRACE(args);
      const CliRun r = run(args, dir);
      EXPECT_EQ(r.code, 2);
      expect_one_line_error(r, "--out: ");
      const bool under = args.find("taken/") != std::string::npos;
      EXPECT_NE(r.err.find(!under ? "--out: taken: is a regular file, not a directory"
                                          : ": cannot create the output directory: taken is a regular file"),
                std::string::npos)
          << r.err;
      EXPECT_EQ(r.err.find("missing.json"), std::string::npos) << r.err;
    }
  EXPECT_EQ(slurp(dir / "taken"), "not a folder\n");
  // --out naming a folder where gradient expects a file.
  fs::create_directories(dir / "folder");
  const CliRun g = run("gradient missing.json --out folder", dir);
  EXPECT_EQ(g.code, 2);
  expect_one_line_error(g, "--out: folder: is a directory, not a file");
}

// Sends `sig` to `addsim simulate` once steps.csv holds a few steps; checks that the run stops
// with exit 128 + sig, every written file holds exactly the completed steps, and summary.json
// says it is not complete and why.
void interrupt_simulate(int sig, const std::string& name) {
  const fs::path dir = fresh_temp_dir();
  const fs::path scene = write_json(dir / "scene.json", [] {
    json s = drop_scene(50);
    s["steps"] = 200000;  // ~10 s at least: the signal comes long before the end
    return s;
  }());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    if (!freopen("err.txt", "w", stderr) || !freopen("out.txt", "w", stdout)) _exit(127);
    execl(ADDSIM_BINARY, ADDSIM_BINARY, "simulate", "scene.json", "--out", "run", static_cast<char*>(nullptr));
    _exit(127);
  }
  const fs::path run_dir = dir / "run";
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t seen = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
    if (fs::exists(run_dir / "steps.csv")) seen = csv_rows(run_dir / "steps.csv").size();
    if (seen >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // While the run goes on, the files are valid and do not look complete.
  if (seen >= 3) {
    EXPECT_EQ(read_json(run_dir / "summary.json")["status"], "running");
    EXPECT_GE(addsim::read_npy(run_dir / "trajectory.npy").rows, 1u);
  }
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_GE(seen, 3u) << slurp(dir / "err.txt");
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping";
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << slurp(dir / "err.txt");

  const json summary = read_json(run_dir / "summary.json");
  const int k = summary["steps_completed"].get<int>();
  EXPECT_GE(k, 3);
  EXPECT_LT(k, 200000);
  EXPECT_EQ(summary["completed"], false);
  EXPECT_EQ(summary["status"], "interrupted");
  EXPECT_TRUE(summary["failed_step"].is_null());
  EXPECT_EQ(summary["failure"], "interrupted by " + name + " after step " + std::to_string(k) + " of 200000");
  const std::string err = slurp(dir / "err.txt");
  EXPECT_NE(err.find("interrupted by " + name), std::string::npos) << err;
  // Exactly the completed steps: k step rows, k + 1 states (q⁰ … q^k).
  const auto steps = csv_rows(run_dir / "steps.csv");
  ASSERT_EQ(static_cast<int>(steps.size()), k);
  EXPECT_EQ(steps.back()[0], std::to_string(k));
  const addsim::NpyArray traj = addsim::read_npy(run_dir / "trajectory.npy");
  EXPECT_EQ(traj.rows, static_cast<std::size_t>(k + 1));
  EXPECT_EQ(traj.cols, 3u);
  // The file is exactly its header and those rows (nothing past the shape it declares).
  EXPECT_EQ(fs::file_size(run_dir / "trajectory.npy"), 128u + traj.rows * traj.cols * 8u);
  EXPECT_EQ(csv_rows(run_dir / "energies.csv").size(), static_cast<std::size_t>(k + 1));
  EXPECT_TRUE(fs::exists(run_dir / "meta.json"));
  EXPECT_TRUE(fs::exists(run_dir / "index.html"));
  EXPECT_FALSE(fs::exists(run_dir / "summary.json.tmp"));
}

TEST(FaultTolerance, SigintStopsSimulateAfterTheCurrentStepAndKeepsTheSteps) { interrupt_simulate(SIGINT, "SIGINT"); }

TEST(FaultTolerance, SigtermStopsSimulateAfterTheCurrentStepAndKeepsTheSteps) {
  interrupt_simulate(SIGTERM, "SIGTERM");
}

TEST(FaultTolerance, SimulateWritesTheConvergedStepsOfAFailedRun) {
  const fs::path dir = fresh_temp_dir();
  write_json(dir / "drop.json", drop_scene(1));
  const CliRun r = run("simulate drop.json --out run --quiet", dir);
  EXPECT_EQ(r.code, 3) << r.err;
  expect_one_line_error(r, "did not converge");
  const json summary = read_json(dir / "run" / "summary.json");
  EXPECT_EQ(summary["completed"], false);
  EXPECT_EQ(summary["status"], "failed");
  const int failed = summary["failed_step"].get<int>();
  // Contact begins at t = √(2 · 0.1 / 9.81) = 0.143 s: step 14 to 16.
  EXPECT_GE(failed, 13);
  EXPECT_LE(failed, 17);
  EXPECT_EQ(summary["steps_completed"].get<int>(), failed - 1);
  EXPECT_NE(summary["failure"].get<std::string>().find("step " + std::to_string(failed)), std::string::npos);
  // steps.csv: one row per attempted step, the failed one last with nan diagnostics.
  const auto steps = csv_rows(dir / "run" / "steps.csv");
  ASSERT_EQ(static_cast<int>(steps.size()), failed);
  const auto header = csv_header(dir / "run" / "steps.csv");
  const auto col = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    EXPECT_NE(it, header.end()) << name;
    return static_cast<std::size_t>(it - header.begin());
  };
  EXPECT_EQ(steps.back()[col("kinetic_energy")], "nan");
  EXPECT_EQ(steps.back()[col("p.com_z")], "nan");
  EXPECT_NE(steps[failed - 2][col("p.com_z")], "nan");
  EXPECT_EQ(addsim::read_npy(dir / "run" / "trajectory.npy").rows, static_cast<std::size_t>(failed));
}

TEST(FaultTolerance, GradientSaysWhichStepFailedAndOverwritesAnEarlierResult) {
  const fs::path dir = fresh_temp_dir();
  write_json(dir / "task.json", drop_task(write_json(dir / "drop.json", drop_scene(1))));
  // An earlier, complete result in the --out file must not survive a failed run.
  std::ofstream(dir / "g.json") << R"({"completed": true, "phi": 1})";
  const CliRun r = run("gradient task.json --out g.json", dir);
  EXPECT_EQ(r.code, 3) << r.err;
  expect_one_line_error(r, "forward run failed at step ");
  const json g = read_json(dir / "g.json");
  EXPECT_EQ(g["completed"], false);
  const int failed = g["failed_step"].get<int>();
  EXPECT_GE(failed, 13);
  EXPECT_EQ(g["steps_completed"].get<int>(), failed - 1);
  EXPECT_NE(g["failure"].get<std::string>().find("did not converge"), std::string::npos);
  EXPECT_FALSE(g.contains("gradient"));
  // The same task converges with enough iterations, and then says so.
  write_json(dir / "drop.json", drop_scene(50));
  const CliRun ok = run("gradient task.json --out g.json", dir);
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(read_json(dir / "g.json")["completed"], true);
}

TEST(FaultTolerance, LandscapeMarksTheFailedPointsWithTheirStep) {
  const fs::path dir = fresh_temp_dir();
  // Thrown upwards at 3 m/s the particle is still in the air after 0.4 s; thrown downwards it
  // reaches the floor (and fails there with one Newton iteration).
  json scene = drop_scene(1);
  scene["steps"] = 40;
  write_json(dir / "task.json", drop_task(write_json(dir / "drop.json", scene)));
  const CliRun r = run("landscape task.json --axes bodies.0.velocities.0.0,bodies.0.velocities.0.2 --grid 2x2 "
                       "--range 0:1,-1:3 --out land --no-png",
                       dir);
  EXPECT_EQ(r.code, 3) << r.err;
  // The last line of stderr (progress lines come before it) is the error.
  EXPECT_NE(r.err.find("addsim: error: task.json: 2 of 4 grid points failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did not converge"), std::string::npos) << r.err;
  const auto rows = csv_rows(dir / "land" / "landscape.csv");
  ASSERT_EQ(rows.size(), 4u);
  const auto header = csv_header(dir / "land" / "landscape.csv");
  ASSERT_EQ(header.back(), "failed_step");
  for (const auto& row : rows) {
    const bool down = std::stod(row[3]) < 0.0;
    EXPECT_EQ(row[7], down ? "0" : "1");
    if (down) {
      EXPECT_EQ(row[4], "nan");
      EXPECT_GE(std::stoi(row[8]), 2);
    } else {
      EXPECT_TRUE(std::isfinite(std::stod(row[4])));
      EXPECT_EQ(row[8], "-1");
    }
  }
}

TEST(FaultTolerance, OptimizeStartingAtAFailingRolloutSaysSoAndLooksIncomplete) {
  const fs::path dir = fresh_temp_dir();
  // Sub-step retry off (optimize turns it on by default, and sub-steps rescue this run).
  json scene = drop_scene(1);
  scene["solver"]["substep_retry"] = {{"max_depth", 0}};
  write_json(dir / "task.json", drop_task(write_json(dir / "drop.json", scene)));
  const CliRun r = run("optimize task.json --out opt --quiet", dir);
  EXPECT_EQ(r.code, 3) << r.out;
  expect_one_line_error(r, "the simulation at the start failed: step ");
  EXPECT_NE(r.err.find("did not converge"), std::string::npos) << r.err;
  const json res = read_json(dir / "opt" / "result.json");
  EXPECT_EQ(res["completed"], false);
  EXPECT_EQ(res["stop_reason"], "initial_failure");
  EXPECT_EQ(res["failed_simulations"], 1);
  EXPECT_TRUE(res["optimized_scene"].is_null());
  EXPECT_FALSE(fs::exists(dir / "opt" / "optimized_scene.json"));
  EXPECT_EQ(read_json(dir / "opt" / "checkpoint.json")["complete"], false);
  // With enough Newton iterations the same task optimises and says it completed.
  write_json(dir / "drop.json", drop_scene(50));
  const CliRun ok = run("optimize task.json --out opt2 --quiet", dir);
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(read_json(dir / "opt2" / "result.json")["completed"], true);
  EXPECT_TRUE(fs::exists(dir / "opt2" / "optimized_scene.json"));
}

}  // namespace
