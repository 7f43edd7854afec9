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

#include "../support/test_size.h"
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
  // ADAM with a fixed budget on a longer particle run (a few ms per simulation); under
  // ADDSIM_TEST_REDUCED (docs/testing.md) the same 1.5 s in 1,500 steps instead of 3,000.
  json task = throw_task(write_particle_scene(dir, addsim::test::sized(3000, 1500), addsim::test::sized(0.0005, 0.001)));
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
  // A bad objective path names the task file and the stage's key path, before anything is
  // written (the later stage is checked before the first one runs).
  task["stages"][1]["objective_set"] = {{"1.step", 999}};
  write_json(dir / "bad.json", task);
  const CliRun bad = run("optimize bad.json --out run2 --quiet", dir);
  EXPECT_EQ(bad.code, 2);
  expect_one_line_error(bad, "bad.json: stages.1.objective_set.1.step: ");
  EXPECT_FALSE(fs::exists(dir / "run2"));
  task["stages"][1]["objective_set"] = json::array();
  write_json(dir / "bad2.json", task);
  const CliRun bad2 = run("optimize bad2.json --out run3 --quiet", dir);
  EXPECT_EQ(bad2.code, 2);
  expect_one_line_error(bad2, "stages.1.objective_set");
}

TEST(OptimizeCli, AStageOnItsOwnSceneCarriesItsBestPointByNameToTheNext) {
  // stages[k].scene: the stage runs the task on another scene file (relative to the task file; the
  // task's set and the command line's scene overrides still apply), here the particle under a
  // weaker gravity as a surrogate; the next stage starts the task's own scene from its optimum.
  const fs::path dir = fresh_temp_dir();
  write_particle_scene(dir);
  json surrogate = read_json(dir / "particle.json");
  surrogate["gravity"] = {0, 0, -5};
  write_json(dir / "weak_gravity.json", surrogate);
  fs::create_directories(dir / "tasks");
  json task = throw_task("../particle.json");
  task["optimize"]["method"] = "gauss_newton";
  task["stages"] = {{{"name", "surrogate"}, {"scene", "../weak_gravity.json"}, {"optimize", {{"max_sims", 10}}}},
                    {{"name", "real"}, {"optimize", {{"max_sims", 10}}}}};
  write_json(dir / "tasks" / "two_scenes.json", task);
  // Φ at the start on each scene, and Φ of the real scene at the surrogate's optimum.
  json on_surrogate = throw_task("../weak_gravity.json");
  write_json(dir / "tasks" / "surrogate.json", on_surrogate);
  const CliRun gs = run("gradient tasks/surrogate.json --set 'scene.bodies.0.velocities=[[0.5,0,1]]'", dir);
  ASSERT_EQ(gs.code, 0) << gs.err;
  const CliRun r = run("optimize tasks/two_scenes.json --out run --quiet --set 'scene.bodies.0.velocities=[[0.5,0,1]]'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = read_json(dir / "run" / "result.json");
  ASSERT_EQ(res["stages"].size(), 2u);
  // The surrogate stage ran on its scene from the command line's start.
  EXPECT_NEAR(res["stages"][0]["phi0"].get<double>(), json::parse(gs.out)["phi"].get<double>(), 1e-14);
  EXPECT_EQ(res["stages"][0]["stop_reason"], "phi_ratio");
  // Its optimum misses the target under the real gravity, and the real stage solves it from there.
  const std::vector<std::string> rows = csv_rows(dir / "run" / "iterations.csv");
  std::string first_real;
  for (const std::string& row : rows)
    if (row.rfind("1,", 0) == 0 && first_real.empty()) first_real = row;
  ASSERT_FALSE(first_real.empty());
  json at_optimum = throw_task("../particle.json");
  write_json(dir / "tasks" / "real.json", at_optimum);
  std::vector<double> v;
  {
    std::istringstream cells(first_real);
    std::string cell;
    for (int k = 0; std::getline(cells, cell, ','); ++k)
      if (k >= 8) v.push_back(std::stod(cell));
  }
  ASSERT_EQ(v.size(), 3u);
  const CliRun gr = run("gradient tasks/real.json --set 'scene.bodies.0.velocities=[[" + json(v[0]).dump() + "," +
                            json(v[1]).dump() + "," + json(v[2]).dump() + "]]'",
                        dir);
  ASSERT_EQ(gr.code, 0) << gr.err;
  const double phi_real_start = json::parse(gr.out)["phi"].get<double>();
  EXPECT_NEAR(res["stages"][1]["phi0"].get<double>(), phi_real_start, 1e-12 * phi_real_start);
  EXPECT_GT(phi_real_start, 1e-3);
  EXPECT_EQ(res["stages"][1]["stop_reason"], "phi_ratio");
  // The optimised scene is the last stage's: the task's own.
  const json optimized = read_json(dir / "run" / "optimized_scene.json");
  EXPECT_TRUE(!optimized.contains("gravity") || optimized["gravity"] != json({0, 0, -5})) << optimized.dump();
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
  t = base;
  t["stages"] = {{{"fallback", true}}, {{"name", "b"}}};
  cases.push_back({"first fallback", t, "stages.0.fallback"});
  t = base;
  t["stages"] = {{{"optimize", {{"phi_ratio", 0}}}}, {{"fallback", true}}};
  cases.push_back({"fallback without tolerance", t, "stages.1.fallback"});
  t = base;
  t["stages"] = {{{"optimize", {{"phi_below", -1e-6}}}}};
  cases.push_back({"phi below", t, "stages.0.optimize.phi_below"});
  t = base;
  t["optimize"]["stall_sims"] = -1;
  cases.push_back({"stall window", t, "optimize.stall_sims"});
  t = base;
  t["stages"] = {{{"optimize", {{"stall_factor", 1.0}}}}};
  cases.push_back({"stall factor", t, "stages.0.optimize.stall_factor"});
  t = base;
  t["optimize"]["gauss_newton"] = {{"step_shrink", 1.0}};
  cases.push_back({"step shrink", t, "optimize.gauss_newton.step_shrink"});
  t = base;
  t["stages"] = {{{"optimize", {{"gauss_newton", {{"scale_floor", 2.0}}}}}}};
  cases.push_back({"scale floor", t, "stages.0.optimize.gauss_newton.scale_floor"});
  t = base;
  t["optimize"]["gauss_newton"] = {{"step_shrink", 0.5}, {"shrink_after", 0}};
  cases.push_back({"shrink after", t, "optimize.gauss_newton.shrink_after"});
  t = base;
  t["stages"] = {{{"optimize", {{"lbfgsb", {{"first_step", -0.1}}}}}}};
  cases.push_back({"first step", t, "stages.0.optimize.lbfgsb.first_step"});
  t = base;
  t["optimize"]["phi_ratio"] = 1e-6;
  t["stages"] = {json::object(), {{"fallback", true}, {"fallback_after", json::array({"stall", "budget"})}}};
  cases.push_back({"fallback after", t, "stages.1.fallback_after.1"});
  t = base;
  t["optimize"]["phi_ratio"] = 1e-6;
  t["stages"] = {json::object(), {{"fallback_after", json::array({"stall"})}}};
  cases.push_back({"fallback after without fallback", t, "stages.1.fallback_after"});
  t = base;
  t["stages"] = {json::object(), {{"run_after", json::array({"phi_ratio", "solved"})}}};
  cases.push_back({"run after", t, "stages.1.run_after.1"});
  t = base;
  t["stages"] = {{{"run_after", json::array({"phi_ratio"})}}};
  cases.push_back({"run after on the first stage", t, "stages.0.run_after"});
  t = base;
  t["optimize"]["phi_ratio"] = 1e-6;
  t["stages"] = {json::object(), {{"fallback", true}, {"run_after", json::array({"stall"})}}};
  cases.push_back({"run after on a fallback", t, "stages.1.run_after"});
  t = base;
  t["optimize"]["phi_ratio"] = 1e-6;
  t["stages"] = {json::object(), {{"fallback_from", "best"}}};
  cases.push_back({"fallback from without fallback", t, "stages.1.fallback_from"});
  t = base;
  t["optimize"]["phi_ratio"] = 1e-6;
  t["stages"] = {json::object(), {{"fallback", true}, {"fallback_from", "here"}}};
  cases.push_back({"fallback from", t, "stages.1.fallback_from"});
  t = base;
  t["stages"] = {{{"scene", "missing.json"}}};
  cases.push_back({"stage scene file", t, "stages.0.scene"});
  // A stage scene without the task's parameters (a rigid body has no bodies.0.velocities).
  write_json(dir / "rigid.json", {{"dt", 0.01}, {"steps", 5}, {"bodies", {{{"type", "rigid"}, {"shape", {{"type", "sphere"}, {"radius", 0.1}}}, {"mass", 1.0}}}}});
  t = base;
  t["stages"] = {{{"scene", "rigid.json"}}};
  cases.push_back({"stage scene parameters", t, "stages.0.scene \"rigid.json\""});
  t = base;
  t["stages"] = {{{"join", true}}};
  cases.push_back({"first join", t, "stages.0.join"});
  t = base;
  t["optimize"]["phi_ratio"] = 1e-6;
  t["stages"] = {json::object(), {{"fallback", true}, {"join", true}}};
  cases.push_back({"join fallback", t, "stages.1.join"});
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

// A two-link arm on a fixed base written here (no data/robots needed): "shoulder" and
// "elbow.pitch" (a dot in the name: the scene key is a JSON pointer segment) revolute about y
// with limits, 1 kg and 0.5 kg links.
constexpr const char* kArmUrdf = R"(<robot name="arm">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0.15 0 0"/><mass value="1"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.008" iyz="0" izz="0.008"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="0.0005" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.002"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="elbow.pitch" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/><limit lower="-2.5" upper="2.5" effort="1" velocity="1"/></joint>
</robot>)";

// Runs `optimize TASK --out run` in DIR, which must succeed, lower Φ and write the
// optimised scene; `res` and `opt` receive result.json and optimized_scene.json.
void optimize_to_scene(const fs::path& dir, const std::string& task, json& res, json& opt) {
  const CliRun r = run("optimize " + task + " --out run --quiet", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  res = read_json(dir / "run" / "result.json");
  ASSERT_EQ(res["optimized_scene"], "optimized_scene.json") << r.err;
  EXPECT_LT(res["phi_ratio"].get<double>(), 1.0);
  opt = read_json(dir / "run" / "optimized_scene.json");
}

// Replays DIR/run/optimized_scene.json into DIR/sim and returns the optimisation run's
// trajectory.npy after checking that the replay wrote the same bytes.
std::string expect_bitwise_replay(const fs::path& dir) {
  const CliRun sim = run("simulate run/optimized_scene.json --out sim --quiet", dir);
  EXPECT_EQ(sim.code, 0) << sim.err;
  const std::string optimum = slurp(dir / "run" / "trajectory.npy");
  EXPECT_GT(optimum.size(), 100u);
  EXPECT_TRUE(slurp(dir / "sim" / "trajectory.npy") == optimum);
  return optimum;
}

// The arm (URDF next to the scene, referred to relatively) with motors on both joints, one
// motor stiffness for both and no limit or coupling keys: 20 steps of 0.01 s.
fs::path write_arm_scene(const fs::path& dir) {
  std::ofstream(dir / "arm.urdf") << kArmUrdf;
  const json scene = {{"dt", 0.01},
                      {"steps", 20},
                      {"integrator", "bdf2"},
                      {"bodies",
                       {{{"type", "urdf"},
                         {"name", "arm"},
                         {"file", "arm.urdf"},
                         {"initial_angles", {{"elbow.pitch", 0.3}}},
                         {"motors", {{"stiffness", 50.0}, {"damping", 0.1}}}}}}};
  return write_json(dir / "arm.json", scene);
}

TEST(OptimizeCli, RobotMotorTargetsAndGainsReplayBitForBitFromTheOptimisedScene) {
  const fs::path dir = fresh_temp_dir();
  const fs::path scene = write_arm_scene(dir);
  // Per-step targets of both motors, then also a motor gain, a coupling and a limit
  // stiffness (each a scene key that was one number or absent: they become {joint: value}),
  // the second stage with a scene override that the optimised scene must keep.
  const json task = {
      {"scene", scene.string()},
      {"parameters",
       {"robots.arm.joints.shoulder.target_angles",
        "robots.arm.joints.elbow_pitch.target_angles",
        {{"path", "robots.arm.joints.elbow_pitch.motor_stiffness"}, {"log", true}, {"lower", 1.0}, {"upper", 1e4}},
        {{"path", "robots.arm.joints.shoulder.stiffness"}, {"log", true}, {"lower", 1e3}, {"upper", 1e7}},
        {{"path", "robots.arm.joints.elbow_pitch.limit_stiffness"}, {"log", true}, {"lower", 1e2}, {"upper", 1e6}}}},
      {"objective", {{{"type", "com_target"}, {"body", 1}, {"target", {0.2, 0.0, 0.3}}}}},
      {"optimize", {{"method", "lbfgsb"}, {"max_sims", 3}}},
      {"stages",
       {{{"name", "targets"},
         {"parameters", {"robots.arm.joints.shoulder.target_angles", "robots.arm.joints.elbow_pitch.target_angles"}}},
        {{"name", "all"}, {"set", {{"bodies.0.motors.damping", 0.2}}}}}}};
  write_json(dir / "arm_task.json", task);
  json res, opt;
  ASSERT_NO_FATAL_FAILURE(optimize_to_scene(dir, "arm_task.json", res, opt));
  const json& robot = opt["bodies"][0];
  EXPECT_TRUE(fs::path(robot["file"].get<std::string>()).is_absolute());
  EXPECT_EQ(robot["motors"]["damping"], 0.2);  // the last stage's override
  ASSERT_EQ(robot["motors"]["targets"]["elbow.pitch"].size(), 21u);
  EXPECT_EQ(robot["motors"]["targets"]["shoulder"].size(), 21u);
  EXPECT_TRUE(robot["motors"]["stiffness"].is_object());
  EXPECT_EQ(robot["motors"]["stiffness"]["shoulder"], 50.0);  // not optimised: kept
  EXPECT_TRUE(robot["joints"]["stiffness"].contains("elbow.pitch"));
  EXPECT_TRUE(robot["limits"]["stiffness"].contains("shoulder"));
  // The optimised values themselves, and the replay: `simulate` on the optimised scene gives
  // the run's rollout at the best parameters bit for bit (same model, same parameter vector,
  // same solver settings, deterministic solve).
  EXPECT_EQ(robot["motors"]["targets"]["elbow.pitch"][7].get<double>(),
            res["parameters"]["robots.0.joints.1.target_angles.7"].get<double>());
  EXPECT_EQ(robot["motors"]["stiffness"]["elbow.pitch"].get<double>(),
            res["parameters"]["robots.0.joints.1.motor_stiffness"].get<double>());
  const std::string optimum = expect_bitwise_replay(dir);
  // The optimised rollout differs from the start's: the comparison can fail.
  ASSERT_EQ(run("simulate arm.json --out start --quiet", dir).code, 0);
  EXPECT_FALSE(slurp(dir / "start" / "trajectory.npy") == optimum);
}

TEST(OptimizeCli, ARobotLinkStateHasNoSceneKeyAndTheResultSaysSo) {
  const fs::path dir = fresh_temp_dir();
  const fs::path scene = write_arm_scene(dir);
  // bodies.0 is the upper link (a model body of the robot): its initial velocity comes from
  // the URDF and the joint angles, so no scene key reproduces an optimised value.
  const json task = {{"scene", scene.string()},
                     {"parameters", {"bodies.0.velocity"}},
                     {"objective", {{{"type", "com_target"}, {"body", 1}, {"target", {0.2, 0.0, 0.3}}}}},
                     {"optimize", {{"max_sims", 2}}}};
  write_json(dir / "link_task.json", task);
  const CliRun r = run("optimize link_task.json --out run --quiet", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(read_json(dir / "run" / "result.json")["optimized_scene"].is_null());
  EXPECT_FALSE(fs::exists(dir / "run" / "optimized_scene.json"));
  EXPECT_NE(r.err.find("optimized_scene.json not written: bodies.arm/upper.velocity has no scene key"), std::string::npos)
      << r.err;
}

TEST(OptimizeCli, AMassGivenAsDensityAndHandlePositionsGivenAsAVelocityReplayBitForBit) {
  const fs::path dir = fresh_temp_dir();
  // A 0.1 m sphere of density 500 kg/m³ on a ball joint (a spring) to a handle moving at 1 m/s:
  // the optimised mass replaces `density`, the per-step positions `position`/`velocity`.
  const json scene = {
      {"dt", 0.01},
      {"steps", 10},
      {"bodies", {{{"type", "rigid"}, {"shape", {{"type", "sphere"}, {"radius", 0.1}}}, {"density", 500}}}},
      {"handles", {{{"position", {0, 0, 0.2}}, {"velocity", {1, 0, 0}}}}},
      {"joints", {{{"type", "ball"}, {"anchors", {{{"body", 0}}, {{"handle", 0}}}}, {"stiffness", 200}}}}};
  write_json(dir / "s.json", scene);
  const json task = {{"scene", "s.json"},
                     {"parameters", {{{"path", "bodies.0.mass"}, {"log", true}, {"lower", 0.1}, {"upper", 10}},
                                     "handles.0.positions"}},
                     {"objective", {{{"type", "com_target"}, {"body", 0}, {"target", {0.3, 0.1, 0.0}}}}},
                     {"optimize", {{"max_sims", 4}}}};
  write_json(dir / "t.json", task);
  json res, opt;
  ASSERT_NO_FATAL_FAILURE(optimize_to_scene(dir, "t.json", res, opt));
  EXPECT_FALSE(opt["bodies"][0].contains("density"));
  EXPECT_EQ(opt["bodies"][0]["mass"].get<double>(), res["parameters"]["bodies.0.mass"].get<double>());
  EXPECT_FALSE(opt["handles"][0].contains("velocity"));
  EXPECT_EQ(opt["handles"][0]["positions"].size(), 11u);
  expect_bitwise_replay(dir);
}

TEST(OptimizeCli, SheetInitialStatesAndMassesReplayBitForBit) {
  const fs::path dir = fresh_temp_dir();
  // A 2 x 2 sheet thrown upwards: its particles' initial positions, velocities and masses
  // have no key of their own in the scene before; they are written as `positions`,
  // `velocities` (replacing `velocity`) and a `mass` list.
  const json scene = {{"dt", 0.01},
                      {"steps", 10},
                      {"bodies",
                       {{{"type", "sheet"},
                         {"size", {0.2, 0.2}},
                         {"resolution", {2, 2}},
                         {"mass", 1},
                         {"velocity", {0, 0, 1}},
                         {"stiffness", 50}}}}};
  write_json(dir / "s.json", scene);
  const json task = {{"scene", "s.json"},
                     {"parameters",
                      {"bodies.0.positions", "bodies.0.velocities",
                       {{"path", "bodies.0.mass"}, {"log", true}, {"lower", 0.05}, {"upper", 5}}}},
                     {"objective", {{{"type", "com_target"}, {"body", 0}, {"target", {0.3, 0.2, 0.1}}}}},
                     {"optimize", {{"max_sims", 4}}}};
  write_json(dir / "t.json", task);
  json res, opt;
  ASSERT_NO_FATAL_FAILURE(optimize_to_scene(dir, "t.json", res, opt));
  const json& sheet = opt["bodies"][0];
  EXPECT_FALSE(sheet.contains("velocity"));
  EXPECT_EQ(sheet["velocities"].size(), 4u);
  EXPECT_EQ(sheet["positions"].size(), 4u);
  EXPECT_EQ(sheet["mass"].size(), 4u);
  expect_bitwise_replay(dir);
}

// Input errors found only when the stages are set up (a Gauss–Newton method on an objective
// that is not a sum of squares, a bad stage `set`) stop the run before anything is written to
// --out: the corrected command then runs in the same folder. The errors name the task file and
// the key that is wrong.
TEST(OptimizeCli, LateInputErrorsWriteNothingAndNameTheFileAndKey) {
  const fs::path dir = fresh_temp_dir();
  json task = throw_task(write_particle_scene(dir));
  task["objective"].push_back({{"type", "com_coordinate"}, {"body", 0}, {"axis", {1, 0, 0}}});
  write_json(dir / "mixed.json", task);
  const CliRun gn = run("optimize mixed.json --method gauss_newton --out run --quiet", dir);
  EXPECT_EQ(gn.code, 2);
  expect_one_line_error(gn, "mixed.json: --method: gauss_newton needs a sum-of-squares objective; objective.1 "
                            "(com_coordinate) is not one");
  EXPECT_FALSE(fs::exists(dir / "run"));
  task["optimize"]["method"] = "gauss_newton";
  write_json(dir / "mixed_gn.json", task);
  const CliRun key = run("optimize mixed_gn.json --out run --quiet", dir);
  EXPECT_EQ(key.code, 2);
  expect_one_line_error(key, "mixed_gn.json: optimize.method: gauss_newton needs");
  EXPECT_FALSE(fs::exists(dir / "run"));
  const CliRun stage = run("optimize mixed.json --set 'stages=[{\"name\":\"a\",\"set\":{\"dt\":-1}}]' --out run --quiet", dir);
  EXPECT_EQ(stage.code, 2);
  expect_one_line_error(stage, "mixed.json: stages.0.set.dt: must be > 0");
  EXPECT_FALSE(fs::exists(dir / "run"));
  const CliRun ok = run("optimize mixed.json --out run --quiet --max-sims 3", dir);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(dir / "run" / "result.json"));
  // -q prints nothing but errors and warnings (as simulate -q).
  EXPECT_EQ(ok.out, "");
  EXPECT_EQ(ok.err, "");
}

// A stage on its own scene is loaded with that stage's overrides only: another stage's `set`,
// made for the task's scene (a key the own scene lacks), is not applied to it.
TEST(OptimizeCli, AStageOnItsOwnSceneIsNotCheckedWithAnotherStagesSet) {
  const fs::path dir = fresh_temp_dir();
  json floor_scene = json::parse(slurp(write_particle_scene(dir)));
  floor_scene["obstacles"] = {{{"type", "plane"}, {"name", "floor"}, {"point", {0, 0, -10}}, {"friction", 0.5}}};
  json task = throw_task(write_json(dir / "floor.json", floor_scene));
  task["stages"] = {{{"name", "plain"}, {"scene", "particle.json"}, {"optimize", {{"max_sims", 3}}}},
                    {{"name", "floor"}, {"set", {{"obstacles.0.friction", 0.3}}}, {"optimize", {{"max_sims", 3}}}}};
  write_json(dir / "staged.json", task);
  const CliRun r = run("optimize staged.json --out run --quiet", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "run" / "result.json"));
  // The same `set` on the stage with the key-less scene is still an error naming that stage's key.
  task["stages"][0]["set"] = {{"obstacles.0.friction", 0.3}};
  write_json(dir / "bad.json", task);
  const CliRun bad = run("optimize bad.json --out run2 --quiet", dir);
  EXPECT_EQ(bad.code, 2);
  expect_one_line_error(bad, "bad.json: stages.0.set.obstacles");
  EXPECT_FALSE(fs::exists(dir / "run2"));
}

// --resume continues with the options the run was started with: options given again are named
// in a warning, not silently dropped. --steps N is --set scene.steps=N (optimize and sweep too).
TEST(OptimizeCli, ResumeWarnsAboutIgnoredOptionsAndStepsIsASceneOverride) {
  const fs::path dir = fresh_temp_dir();
  json task = throw_task(write_particle_scene(dir));
  task["optimize"] = {{"method", "adam"}, {"max_sims", 6}};
  write_json(dir / "t.json", task);
  const CliRun first = run("optimize t.json --out run --quiet --steps 20", dir);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(read_json(dir / "run" / "checkpoint.json")["sets"], json::array({"scene.steps=20"}));
  // Make the run look killed before its first simulation (the checkpoint it writes at the
  // start), then resume with other options.
  json cp = read_json(dir / "run" / "checkpoint.json");
  for (const char* k : {"stage", "simulations", "iteration", "stage_start_simulations", "failed_simulations"}) cp[k] = 0;
  for (const char* k : {"seconds", "stage_start_seconds"}) cp[k] = 0.0;
  cp["phi0"] = nullptr;
  cp["carried"] = json::object();
  cp["complete"] = false;
  write_json(dir / "run" / "checkpoint.json", cp);
  fs::remove(dir / "run" / "result.json");
  const CliRun again = run("optimize t.json --out run --quiet --resume --max-sims 9 --method lbfgsb", dir);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("addsim: warning: --resume continues with the options the run was started with"),
            std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("ignored: --method, --max-sims"), std::string::npos) << again.err;
  // The run's own budget (6), not --max-sims 9.
  EXPECT_EQ(read_json(dir / "run" / "result.json")["simulations"], 6);
  const CliRun too_long = run("optimize t.json --out run2 --quiet --steps 0", dir);
  EXPECT_EQ(too_long.code, 2);
}

// Option values out of range get a plain message, not CLI11's range with its 309-digit bound.
TEST(OptimizeCli, OptionRangeErrorsArePlain) {
  const fs::path dir = fresh_temp_dir();
  write_json(dir / "t.json", throw_task(write_particle_scene(dir)));
  const CliRun zero = run("optimize t.json --out run --max-sims 0", dir);
  EXPECT_EQ(zero.code, 2);
  expect_one_line_error(zero, "--max-sims: must be a positive integer, got 0");
  EXPECT_LT(zero.err.size(), 120u) << zero.err;
  const CliRun empty = run("optimize t.json --out ''", dir);
  EXPECT_EQ(empty.code, 2);
  expect_one_line_error(empty, "--out: must not be empty");
}

// tasks/soft_material.json fits its own model's marker data to Φ/Φ₀ ≈ 1e-22; there the line
// search ends at its own start and LBFGS++ would replay the same trials until the budget
// (before: 100 simulations, stop simulation_budget). The run stops as converged instead, at
// the same best point (docs/optimization.md "L-BFGS-B at Φ ≈ 0").
TEST(OptimizeCli, SoftMaterialStopsWhenTheLineSearchReturnsToItsStart) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("optimize '" + (source_dir() / "tasks" / "soft_material.json").string() + "' --out run --quiet", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = read_json(dir / "run" / "result.json");
  EXPECT_EQ(res["stop_reason"], "no_progress") << res.dump(2);
  EXPECT_LT(res["simulations"].get<long>(), 100);
  EXPECT_LT(res["phi_ratio"].get<double>(), 1e-20);
  EXPECT_NE(res["message"].get<std::string>().find("converged"), std::string::npos);
}

}  // namespace
