// Runs `addsim optimize` on small task files: outputs (iterations.csv, result.json,
// optimized_scene.json that replays the optimum, convergence.png), stages, resuming a run
// killed mid-way, and bad input (exit 2, one line naming the key path, nothing written
// that looks complete).

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

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using namespace addsim::cli_test;

// A 1 kg particle under gravity (no contact), `steps` steps of `dt`.
fs::path write_particle_scene(const fs::path& dir, int steps = 50, double dt = 0.01) {
  const json scene = {{"dt", dt},
                      {"steps", steps},
                      {"integrator", "bdf2"},
                      {"bodies", {{{"type", "particles"}, {"name", "p"}, {"positions", {{0, 0, 0}}}, {"mass", 1}}}}};
  const fs::path file = dir / "particle.json";
  std::ofstream(file) << scene.dump(2);
  return file;
}

// Throw the particle to a target: parameters v_x, v_y, v_z; Φ = ½‖x(T) − target‖².
json throw_task(const fs::path& scene) {
  return {{"scene", scene.string()},
          {"parameters", {"bodies.0.velocities.0.0", "bodies.0.velocities.0.1", "bodies.0.velocities.0.2"}},
          {"objective", {{{"type", "com_target"}, {"body", 0}, {"target", {1.0, 0.5, 0.2}}}}},
          {"optimize", {{"method", "lbfgsb"}, {"max_sims", 30}, {"phi_ratio", 1e-20}}}};
}

fs::path write_json(const fs::path& file, const json& j) {
  std::ofstream(file) << j.dump(2);
  return file;
}

json read_json(const fs::path& file) { return json::parse(slurp(file)); }

// Data rows of iterations.csv.
std::vector<std::string> csv_rows(const fs::path& file) {
  std::istringstream in(slurp(file));
  std::vector<std::string> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(line);
  return rows;
}

// The third column (sims) of a row.
long sims_of(const std::string& row) {
  const auto a = row.find(','), b = row.find(',', a + 1), c = row.find(',', b + 1);
  return std::stol(row.substr(b + 1, c - b - 1));
}

TEST(OptimizeCli, WritesItsOutputsAndTheOptimisedSceneReplaysTheOptimum) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_json(dir / "throw.json", throw_task(write_particle_scene(dir)));
  const CliRun r = run("optimize throw.json --out run", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  // Progress: one plain line per iteration (stderr is a file here: no escape codes).
  EXPECT_NE(r.err.find("iter 1  sims "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\033'), std::string::npos);
  const json res = read_json(dir / "run" / "result.json");
  EXPECT_EQ(res["stop_reason"], "phi_ratio");
  EXPECT_LE(res["phi_ratio"].get<double>(), 1e-20);
  EXPECT_EQ(res["failed_simulations"], 0);
  ASSERT_TRUE(res["parameters"].contains("bodies.0.velocities.0.2"));
  const long sims = res["simulations"].get<long>();
  const std::vector<std::string> rows = csv_rows(dir / "run" / "iterations.csv");
  ASSERT_EQ(static_cast<long>(rows.size()), sims);
  for (size_t k = 0; k < rows.size(); ++k) EXPECT_EQ(sims_of(rows[k]), static_cast<long>(k) + 1);
  EXPECT_EQ(slurp(dir / "run" / "iterations.csv")
                .rfind("stage,iteration,sims,phi,phi_ratio,grad_norm,failed,elapsed,bodies.0.velocities.0.0,", 0),
            0u);
  EXPECT_TRUE(read_json(dir / "run" / "checkpoint.json")["complete"].get<bool>());
  EXPECT_GT(fs::file_size(dir / "run" / "convergence.png"), 1000u);
  // The optimised scene replays the optimum: the same task on it gives the same Φ.
  json replay = throw_task(dir / "run" / "optimized_scene.json");
  write_json(dir / "replay.json", replay);
  const CliRun g = run("gradient replay.json", dir);
  ASSERT_EQ(g.code, 0) << g.err;
  const double phi = json::parse(g.out)["phi"].get<double>();
  EXPECT_NEAR(phi, res["phi"].get<double>(), 1e-14);
  EXPECT_EQ(run("simulate run/optimized_scene.json --out sim", dir).code, 0);
  // The folder now holds a run: a fresh start there is refused.
  const CliRun again = run("optimize throw.json --out run", dir);
  EXPECT_EQ(again.code, 2);
  expect_one_line_error(again, "--resume");
}

TEST(OptimizeCli, StagesAndMethodsFromTheTaskFile) {
  const fs::path dir = fresh_temp_dir();
  json task = throw_task(write_particle_scene(dir));
  task["stages"] = {{{"name", "x only"},
                     {"parameters", {"bodies.0.velocities.0.0"}},
                     {"steps", 40},
                     {"optimize", {{"max_sims", 4}}}},
                    {{"name", "all"}, {"optimize", {{"method", "gauss_newton"}, {"max_sims", 10}}}}};
  write_json(dir / "stages.json", task);
  const CliRun r = run("optimize stages.json --out run --quiet", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json res = read_json(dir / "run" / "result.json");
  ASSERT_EQ(res["stages"].size(), 2u);
  EXPECT_EQ(res["stages"][0]["method"], "lbfgsb");
  EXPECT_EQ(res["stages"][0]["simulations"], 4);
  EXPECT_EQ(res["stages"][1]["method"], "gauss_newton");
  EXPECT_EQ(res["stop_reason"], "phi_ratio");
  EXPECT_LE(res["stages"][1]["simulations"].get<long>(), 4 + 4);
  // --method overrides every stage.
  const CliRun adam = run("optimize stages.json --out run2 --quiet --method adam --max-sims 5", dir);
  ASSERT_EQ(adam.code, 0) << adam.err;
  const json res2 = read_json(dir / "run2" / "result.json");
  EXPECT_EQ(res2["stages"][1]["method"], "adam");
  EXPECT_EQ(res2["simulations"], 10);
}

TEST(OptimizeCli, ResumesARunKilledMidway) {
  const fs::path dir = fresh_temp_dir();
  // ADAM with a fixed budget on a longer particle run (a few ms per simulation).
  json task = throw_task(write_particle_scene(dir, 3000, 0.0005));
  task["optimize"] = {{"method", "adam"}, {"max_sims", 120}, {"adam", {{"learning_rate", 0.05}}}};
  write_json(dir / "adam.json", task);
  // Start the CLI, wait until iterations.csv has ≥ 30 rows, kill it.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    freopen("killed_err.txt", "w", stderr);
    freopen("killed_out.txt", "w", stdout);
    execl(ADDSIM_BINARY, ADDSIM_BINARY, "optimize", "adam.json", "--out", "run", static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto t0 = std::chrono::steady_clock::now();
  size_t seen = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
    if (fs::exists(dir / "run" / "iterations.csv")) seen = csv_rows(dir / "run" / "iterations.csv").size();
    if (seen >= 30) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed (" << seen << " rows)";
  ASSERT_GE(seen, 30u);
  EXPECT_FALSE(fs::exists(dir / "run" / "result.json"));
  const json cp = read_json(dir / "run" / "checkpoint.json");
  EXPECT_FALSE(cp["complete"].get<bool>());
  const long at_kill = cp["simulations"].get<long>();
  EXPECT_GE(at_kill, 25);
  // Resume: counts continue from the checkpoint and the log has every simulation once.
  const CliRun r = run("optimize adam.json --out run --resume --quiet", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = read_json(dir / "run" / "result.json");
  EXPECT_EQ(res["simulations"], 120);
  EXPECT_EQ(res["stop_reason"], "simulation_budget");
  EXPECT_TRUE(res["resumed"].get<bool>());
  EXPECT_LT(res["phi_ratio"].get<double>(), 0.5);
  const std::vector<std::string> rows = csv_rows(dir / "run" / "iterations.csv");
  ASSERT_EQ(rows.size(), 120u);
  for (size_t k = 0; k < rows.size(); ++k) EXPECT_EQ(sims_of(rows[k]), static_cast<long>(k) + 1);
  // A completed run cannot be resumed.
  const CliRun done = run("optimize adam.json --out run --resume", dir);
  EXPECT_EQ(done.code, 2);
  expect_one_line_error(done, "nothing to resume");
}

// A stage's objective_set changes the objective for that stage only: stage 1 drops the second
// term (weight 0), so its Φ₀ is the first term alone; stage 2 has both again.
TEST(OptimizeCli, StageObjectiveOverridesApplyToThatStageOnly) {
  const fs::path dir = fresh_temp_dir();
  json task = throw_task(write_particle_scene(dir));
  task["objective"].push_back({{"type", "com_target"}, {"body", 0}, {"target", {0.0, 0.0, 5.0}}, {"step", 20}});
  task["stages"] = {{{"name", "end only"}, {"objective_set", {{"1.weight", 0}}}, {"optimize", {{"max_sims", 3}}}},
                    {{"name", "both"}, {"optimize", {{"max_sims", 3}}}}};
  write_json(dir / "two.json", task);
  json one_term = throw_task(dir / "particle.json");
  write_json(dir / "one.json", one_term);
  const CliRun g1 = run("gradient one.json", dir);
  ASSERT_EQ(g1.code, 0) << g1.err;
  const double phi_first = json::parse(g1.out)["phi"].get<double>();
  const CliRun g2 = run("gradient two.json", dir);
  ASSERT_EQ(g2.code, 0) << g2.err;
  const double phi_both = json::parse(g2.out)["phi"].get<double>();
  ASSERT_GT(phi_both, phi_first + 1.0);  // the second term is far from zero at the start
  const CliRun r = run("optimize two.json --out run --quiet", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = read_json(dir / "run" / "result.json");
  ASSERT_EQ(res["stages"].size(), 2u);
  EXPECT_NEAR(res["stages"][0]["phi0"].get<double>(), phi_first, 1e-12 * phi_both);
  EXPECT_GT(res["stages"][1]["phi0"].get<double>(), res["stages"][0]["phi"].get<double>() + 1.0);
  // A bad objective path names the stage's task file and the key path when the stage starts.
  task["stages"][1]["objective_set"] = {{"1.step", 999}};
  write_json(dir / "bad.json", task);
  const CliRun bad = run("optimize bad.json --out run2 --quiet", dir);
  EXPECT_EQ(bad.code, 2);
  expect_one_line_error(bad, "objective.1.step");
  task["stages"][1]["objective_set"] = json::array();
  write_json(dir / "bad2.json", task);
  const CliRun bad2 = run("optimize bad2.json --out run3 --quiet", dir);
  EXPECT_EQ(bad2.code, 2);
  expect_one_line_error(bad2, "stages.1.objective_set");
}

TEST(OptimizeCli, BadInputNamesTheKeyPathAndWritesNoResult) {
  const fs::path dir = fresh_temp_dir();
  const json base = throw_task(write_particle_scene(dir));
  struct Case {
    std::string name;
    json task;
    std::string fragment;
  };
  std::vector<Case> cases;
  json t = base;
  t["optimize"]["method"] = "newton";
  cases.push_back({"method", t, "optimize.method"});
  t = base;
  t["optimize"]["max_sims"] = 0;
  cases.push_back({"budget", t, "optimize.max_sims"});
  t = base;
  t["stages"] = {{{"parameters", {"bodies.0.velocities.0.0"}}}, {{"parameters", {"bodies.0.mass"}}}};
  cases.push_back({"stage", t, "stages.1.parameters.0"});
  t = base;
  t["parameters"][0] = {{"path", "bodies.0.mass"}, {"lower", -1.0}};
  cases.push_back({"bound", t, "parameters.0.lower"});
  t = base;
  t["stages"] = json::array();
  cases.push_back({"no stages", t, "stages"});
  t = base;
  t["optimize"]["adam"] = {{"beta1", 1.5}};
  cases.push_back({"adam", t, "optimize.adam.beta1"});
  for (const Case& c : cases) {
    write_json(dir / (c.name + ".json"), c.task);
    const CliRun r = run("optimize '" + c.name + ".json' --out 'out " + c.name + "'", dir);
    EXPECT_EQ(r.code, 2) << c.name << ": " << r.err;
    expect_one_line_error(r, c.fragment);
    EXPECT_NE(r.err.find(c.name + ".json"), std::string::npos) << r.err;
    // The folder is made and probed first, and removed again when the run ends in an error
    // before anything was written into it.
    EXPECT_FALSE(fs::exists(dir / ("out " + c.name))) << c.name;
  }
  write_json(dir / "ok.json", base);
  CliRun r = run("optimize ok.json --out x --method newton", dir);
  EXPECT_EQ(r.code, 2);
  r = run("optimize ok.json --out fresh --resume", dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "checkpoint.json");
}

}  // namespace
