// Runs `addsim gradient`, `gradcheck` and `landscape` on small task files and checks their
// outputs, exit codes and one-line errors; generates the marker data of tasks/soft_material.json
// (written into the source tree when ADDSIM_WRITE_TASK_DATA=1).

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "../support/test_size.h"

#include "addsim/io/task.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using namespace addsim::cli_test;

// A task on the small soft ball (48 tets, 40 steps): COM target w.r.t. velocity, spin and k_n.
fs::path write_ball_task(const fs::path& dir) {
  const json task = {
      {"scene", (source_dir() / "tasks" / "scenes" / "soft_ball_small.json").string()},
      {"set", {{"steps", 20}}},
      {"parameters",
       {"bodies.ball.velocity", "bodies.ball.angular_velocity.0.1", {{"path", "contact.kn"}, {"log", true}}}},
      {"objective", {{{"type", "com_target"}, {"body", "ball"}, {"target", {0.5, 0.0, 0.1}}}}}};
  const fs::path file = dir / "ball.json";
  std::ofstream(file) << task.dump(2);
  return file;
}

// A contact-free task: the spring oscillator's bob, COM target w.r.t. its initial state and the spring.
fs::path write_spring_task(const fs::path& dir) {
  const json task = {{"scene", (source_dir() / "scenes" / "spring_oscillator.json").string()},
                     {"set", {{"steps", 100}}},
                     {"parameters", {"bodies.bob.positions", "bodies.bob.velocities", "springs.spring.stiffness"}},
                     {"objective", {{{"type", "com_target"}, {"body", "bob"}, {"target", {0.1, 0.0, 0.2}}},
                                    {{"type", "com_line"}, {"body", 0}, {"point", {0, 0, 0}}, {"direction", {1, 1, 0}},
                                     {"steps", {10, 60}}, {"weight", 0.5}}}}};
  const fs::path file = dir / "spring.json";
  std::ofstream(file) << task.dump(2);
  return file;
}

TEST(GradientCli, PrintsPhiAndOneGradientEntryPerScalar) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_ball_task(dir);
  const CliRun a = run("gradient '" + task.string() + "' --out grad.json", dir);
  ASSERT_EQ(a.code, 0) << a.err;
  const json ja = json::parse(a.out);
  EXPECT_EQ(ja, json::parse(slurp(dir / "grad.json")));
  EXPECT_EQ(ja["gradient"].size(), 5u);
  for (const char* k : {"bodies.0.velocity.0.0", "bodies.0.velocity.0.2", "bodies.0.angular_velocity.0.1", "contact.kn"})
    EXPECT_TRUE(ja["gradient"].contains(k)) << k << "\n" << a.out;
  EXPECT_GT(ja["phi"].get<double>(), 0.0);
  EXPECT_NE(ja["gradient"]["contact.kn"].get<double>(), 0.0);

  const CliRun d = run("gradient '" + task.string() + "' --method direct", dir);
  ASSERT_EQ(d.code, 0) << d.err;
  const json jd = json::parse(d.out);
  for (auto& [k, v] : ja["gradient"].items())
    EXPECT_NEAR(v.get<double>(), jd["gradient"][k].get<double>(), 1e-9 * std::abs(v.get<double>()) + 1e-14) << k;

  // --scaled reports d/d(ln k_n) = k_n d/dk_n for the log-scaled k_n only.
  const CliRun s = run("gradient '" + task.string() + "' --scaled", dir);
  ASSERT_EQ(s.code, 0) << s.err;
  const json js = json::parse(s.out);
  EXPECT_NEAR(js["gradient"]["contact.kn"].get<double>(), 1000.0 * ja["gradient"]["contact.kn"].get<double>(),
              1e-9 * std::abs(js["gradient"]["contact.kn"].get<double>()));
  EXPECT_EQ(js["gradient"]["bodies.0.velocity.0.0"], ja["gradient"]["bodies.0.velocity.0.0"]);
}

TEST(GradientCli, SetOverridesTaskAndSceneKeys) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_ball_task(dir);
  const CliRun a = run("gradient '" + task.string() + "'", dir);
  const CliRun b = run("gradient '" + task.string() + "' --set objective.0.target=[0.6,0,0.1]", dir);
  const CliRun c = run("gradient '" + task.string() + "' --set scene.contact.kn=2000", dir);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(json::parse(a.out)["phi"], json::parse(b.out)["phi"]);
  EXPECT_EQ(json::parse(c.out)["parameters"]["contact.kn"].get<double>(), 2000.0);
}

TEST(GradientCli, GradcheckPassesOnAContactFreeTask) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_spring_task(dir);
  const CliRun ok = run("gradcheck '" + task.string() + "' --out check.json", dir);
  ASSERT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("gradcheck passed"), std::string::npos);
  const json j = json::parse(slurp(dir / "check.json"));
  EXPECT_EQ(j["parameters"].size(), 7u);
  for (const auto& row : j["parameters"]) EXPECT_LT(row["rel_error_fd"].get<double>(), 1e-6) << row.dump();
}

// A finite difference beyond the tolerance and beyond its own noise fails: on
// tasks/cube_drag.json (its first pose row) the sweep's small steps agree with each other to
// 2e-9 but are 1e-3 off the adjoint at the default Newton tolerance (they differentiate the
// stopped iterates, docs/task-format.md "gradcheck"), so the check exits 4 and notes the
// rerun; --tolerance 1e-2 lets that through, and tighter forward solves make the finite
// differences agree with the adjoint.
TEST(GradientCli, GradcheckFailsBeyondTheToleranceAndNotesTheForwardTolerance) {
  const fs::path dir = fresh_temp_dir();
  const std::string task = "'" + (source_dir() / "tasks" / "cube_drag.json").string() +
                           "' --quiet --set 'parameters=[\"bodies.effector.poses.1\"]'";
  const CliRun bad = run("gradcheck " + task, dir);
  EXPECT_EQ(bad.code, 4) << bad.out;
  expect_one_line_error(bad, "gradient check failed");
  EXPECT_NE(bad.out.find("FAIL"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("rerun with tighter forward solves"), std::string::npos) << bad.out;
  const CliRun loose = run("gradcheck " + task + " --tolerance 1e-2", dir);
  EXPECT_EQ(loose.code, 0) << loose.out << loose.err;
  const CliRun tight = run("gradcheck " + task +
                               " --set scene.solver.tolerance=1e-13 --set scene.solver.relative_tolerance=1e-12",
                           dir);
  EXPECT_EQ(tight.code, 0) << tight.out << tight.err;
  EXPECT_NE(tight.out.find("gradcheck passed"), std::string::npos) << tight.out;
}

// A sweep of Φ(x) = g x + ½ c x² + η(x) over the gradcheck's contact-rich steps, η a rollout
// noise of amplitude sigma (deterministic pseudo-random values per evaluation), all on the
// unperturbed contact branch; the chosen value as gradcheck picks it.
addsim::FdSweep noisy_sweep(double g, double c, double sigma, unsigned seed) {
  unsigned state = seed;
  const auto noise = [&] {
    state = state * 1664525u + 1013904223u;
    return sigma * (2.0 * (state >> 8) / double(1u << 24) - 1.0);
  };
  const double phi0 = 1e-3 + noise();
  addsim::FdSweep sweep;
  for (double t : {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8}) {
    const double plus = 1e-3 + g * t + 0.5 * c * t * t + noise();
    const double minus = 1e-3 - g * t + 0.5 * c * t * t + noise();
    addsim::FdSample s;
    s.step = t;
    s.central = (plus - minus) / (2.0 * t);
    s.forward = (plus - phi0) / t;
    s.backward = (phi0 - minus) / t;
    s.events_plus = s.events_minus = 0;
    sweep.samples.push_back(s);
  }
  EXPECT_TRUE(addsim::choose_fd_value(sweep));
  return sweep;
}

// gradcheck's rule against FD (docs/task-format.md "gradcheck"): relative error with the floor
// max(1e-8 ‖g‖, ν / tol). With ν measured from the sweep's own second differences, a correct
// derivative passes however the rollout noise falls — also a component that is zero by symmetry,
// whose FD is pure noise (the quadruped's, where the neighbour spread alone was below |a − f| in
// about half the cases) — while a derivative off by 0.1 %, or a zero component given a value
// far above the noise, still fails.
TEST(GradientCli, GradcheckNoiseFloorPassesNoiseAndFailsWrongDerivatives) {
  constexpr double tol = 1e-4, g_norm = 7e-3, sigma = 1e-17, phi = 1e-3;
  int trials = 0, failed = 0, failed_spread_only = 0;
  for (unsigned seed = 1; seed <= 200; ++seed) {
    for (double g : {0.0, 6e-12, -9.6e-6, 1.8e-4}) {
      const addsim::FdSweep fd = noisy_sweep(g, 2e-2, sigma, seed);
      const double nu = addsim::fd_noise(fd, phi);
      const double floor = std::max(1e-8 * g_norm, nu / tol);
      ++trials;
      failed += addsim::check_derivative(g, fd, floor, tol).pass ? 0 : 1;
      // The earlier estimate: the neighbour spread and 4 ε |Φ| / t only.
      double spread = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < fd.samples.size(); ++i)
        if (fd.samples[i].step == fd.step)
          for (std::size_t n : {i - 1, i + 1})
            if (n < fd.samples.size()) spread = std::min(spread, std::abs(fd.samples[n].central - fd.derivative));
      const double old_nu = std::max(spread, 4.0 * std::numeric_limits<double>::epsilon() * phi / fd.step);
      failed_spread_only += addsim::check_derivative(g, fd, std::max(1e-8 * g_norm, old_nu / tol), tol).pass ? 0 : 1;
      // Wrong derivatives fail: 0.1 % off (a component above the floor 1e-8 ‖g‖; one below it
      // is held to 1e-4 of the floor, not of itself), or 1e-9 added to a small component.
      if (std::abs(g) > 1e-8 * g_norm) {
        EXPECT_FALSE(addsim::check_derivative(g * (1.0 + 1e-3), fd, floor, tol).pass) << g << " noise " << nu;
      }
      if (std::abs(g) < 1e-6) {
        EXPECT_FALSE(addsim::check_derivative(g + 1e-9, fd, floor, tol).pass) << "g " << g << " noise " << nu;
      }
    }
  }
  // A noise estimate is itself a sample: a correct derivative may still fail at the rare draw
  // where the noise happened to cancel in every second difference, far less often than with
  // the spread alone.
  EXPECT_LE(failed, trials / 100) << failed << " of " << trials << " (spread only: " << failed_spread_only << ")";
  EXPECT_LT(4 * failed, failed_spread_only) << failed << " vs " << failed_spread_only;
}

// Adjoint vs direct: the floor is the whole gradient's norm, as both passes' round-off is
// relative to it: a zero-by-symmetry component at 2e-12 ‖g‖ (the quadruped's) passes, a wrong
// component at 1e-6 ‖g‖, or a large one off by 1e-8 of itself, fails.
TEST(GradientCli, AdjointDirectFloorIsTheGradientNorm) {
  constexpr double tol = 1e-9, g_norm = 7.33e-3;
  EXPECT_LE(addsim::adjoint_direct_error(2.2e-15, 1.7e-18, g_norm), tol);
  EXPECT_LE(addsim::adjoint_direct_error(-9.588697913369e-06, -9.588697964713e-06, g_norm), tol);
  EXPECT_EQ(addsim::adjoint_direct_error(0.0, 0.0, 0.0), 0.0);
  EXPECT_GT(addsim::adjoint_direct_error(1e-18, 1e-6 * g_norm, g_norm), tol);
  EXPECT_GT(addsim::adjoint_direct_error(5e-3, 5e-3 * (1.0 + 1e-8), g_norm), tol);
}

// A --fd-step so small that Φ(p ± h) differ only by round-off (FD = 0, or far off) cannot
// confirm the adjoint: such parameters are "inconclusive", the check exits 4 and says why,
// instead of passing under the noise floor ν / tol. The default sweep still passes (above).
TEST(GradientCli, GradcheckWithARoundOffStepIsInconclusive) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_spring_task(dir);
  for (const std::string step : {"1e-17", "1e-300"}) {
    const CliRun r = run("gradcheck '" + task.string() + "' --quiet --fd-step " + step + " --out check.json", dir);
    EXPECT_EQ(r.code, 4) << step << "\n" << r.out;
    // Where some FD is also far off (a failure), the line says both.
    expect_one_line_error(r, "inconclusive");
    EXPECT_NE(r.err.find("use a larger --fd-step"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("INCONCLUSIVE"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("gradcheck passed"), std::string::npos) << r.out;
    const json j = json::parse(slurp(dir / "check.json"));
    EXPECT_FALSE(j["passed"].get<bool>());
    EXPECT_GT(j["inconclusive"].get<int>(), 0);
    for (const auto& row : j["parameters"])
      if (row["status"] == "inconclusive") {
        EXPECT_FALSE(row["pass"].get<bool>());
        EXPECT_GE(row["fd_noise"].get<double>(), std::abs(row["adjoint"].get<double>()));
      }
  }
}

// The standalone "upright" term: the axis between a node and a point embedded at its step-0
// position, kept along u at the last step of a contact-free flight of the small ball; its
// adjoint gradient w.r.t. the spin matches central differences, and bad markers are errors
// naming their key.
TEST(GradientCli, UprightTermGradcheckAndErrors) {
  const fs::path dir = fresh_temp_dir();
  const json task = {
      {"scene", (source_dir() / "tasks" / "scenes" / "soft_ball_small.json").string()},
      {"set", {{"steps", 8}}},
      {"parameters", {"bodies.ball.angular_velocity"}},
      {"objective",
       {{{"type", "upright"},
         {"body", "ball"},
         {"bottom", {{"node", 0}}},
         {"top", {{"position", {0.01, 0.02, 0.15}}}},
         {"direction", {0.0, 0.3, 1.0}},
         {"weight", 2.0}}}}};
  const fs::path file = dir / "upright.json";
  std::ofstream(file) << task.dump(2);
  const CliRun ok = run("gradcheck '" + file.string() + "' --out check.json", dir);
  ASSERT_EQ(ok.code, 0) << ok.out << ok.err;
  const json j = json::parse(slurp(dir / "check.json"));
  ASSERT_EQ(j["parameters"].size(), 3u);
  double largest = 0.0;
  for (const auto& row : j["parameters"]) {
    EXPECT_LT(row["rel_error_fd"].get<double>(), 1e-6) << row.dump();
    largest = std::max(largest, std::abs(row["adjoint"].get<double>()));
  }
  EXPECT_GT(largest, 1e-6);  // the spin tilts the axis: a non-vacuous check

  for (const auto& [override_, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"objective.0.top.node=100000", "objective.0.top"},
           {"objective.0.direction=[0,0,0]", "objective.0.direction"},
           {"objective.0.bottom.bogus=1", "objective.0.bottom.bogus"}}) {
    const CliRun r = run("gradient '" + file.string() + "' --set " + override_, dir);
    EXPECT_EQ(r.code, 2) << override_ << "\n" << r.err;
    expect_one_line_error(r, fragment);
  }
}

// Under ADDSIM_TEST_REDUCED (docs/testing.md) two of the five parameters: the vertical throw
// speed (it sets the impact) and the log-scaled contact stiffness.
TEST(GradientCli, GradcheckContactTolerance) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_ball_task(dir);
  const std::string params = addsim::test::reduced()
                                 ? R"( --set 'parameters=["bodies.ball.velocity.0.2",{"path":"contact.kn","log":true}]')"
                                 : "";
  const CliRun r = run("gradcheck '" + task.string() + "' --contact" + params, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// tasks/ball_to_target.json (project issue 5), reduced to 55 steps (the first bounce) and the
// two parameters whose largest sweep step straddles a contact event: without --contact the
// rollout is recognised as contact-rich, the straddling samples are not used and the check passes.
// Under ADDSIM_TEST_REDUCED (docs/testing.md) the ball has 120 tets instead of 451 (the same
// first bounce and straddling largest step; Release CPU 2.9 s -> 0.95 s) and only the first
// parameter is checked (its largest step straddles there: central -0.071 vs adjoint -0.035;
// coarser balls, 40-100 tets, have no straddling sample).
TEST(GradientCli, GradcheckBallToTargetSkipsContactEventStraddlingSteps) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = source_dir() / "tasks" / "ball_to_target.json";
  const bool reduced = addsim::test::reduced();
  const std::string coarse = reduced ? " --set scene.bodies.0.mesh.target_tets=120" : "";
  const std::string params = reduced ? R"(["bodies.ball.velocity.0.2"])"
                                     : R"(["bodies.ball.velocity.0.2","bodies.ball.angular_velocity.0.1"])";
  const CliRun r = run("gradcheck '" + task.string() + "' --set scene.steps=55 --set 'parameters=" + params +
                           "' --out check.json" + coarse,
                       dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("contact-rich"), std::string::npos) << r.out;
  const json j = json::parse(slurp(dir / "check.json"));
  EXPECT_TRUE(j["contact_rich"].get<bool>());
  EXPECT_GT(j["contact_steps"].get<int>(), 0);
  EXPECT_EQ(j["tolerance_fd"].get<double>(), 1e-4);
  ASSERT_EQ(j["parameters"].size(), reduced ? 1u : 2u);
  int straddling_samples = 0;
  for (const auto& row : j["parameters"]) {
    EXPECT_EQ(row["status"], "pass") << row.dump();
    EXPECT_EQ(row["fd_mode"], "central") << row.dump();
    EXPECT_LT(row["rel_error_fd"].get<double>(), 1e-6) << row.dump();
    const double adjoint = row["adjoint"].get<double>();
    for (const auto& s : row["sweep"]) {
      if (s["usable"] != "straddling") continue;
      ++straddling_samples;
      // The central difference across the event is what the plain sweep compared with.
      EXPECT_GT(std::abs(s["central"].get<double>() - adjoint), 1e-2 * std::abs(adjoint)) << s.dump();
      EXPECT_TRUE(s["rel_error"].is_null());
    }
  }
  EXPECT_GT(straddling_samples, 0) << r.out;
}

TEST(GradientCli, LandscapeWritesCsvAndPng) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_spring_task(dir);
  const CliRun r = run("landscape '" + task.string() +
                           "' --axes bodies.bob.velocities.0.0,springs.spring.stiffness --grid 3x4 "
                           "--range=-0.5:0.5,80:120 --out land --threads 2",
                       dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(dir / "land" / "landscape.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13);
  EXPECT_EQ(csv.rfind("i,j,bodies.bob.velocities.0.0,springs.spring.stiffness,phi,", 0), 0u) << csv;
  EXPECT_EQ(csv.find("nan"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "land" / "landscape.png"));
  EXPECT_GT(fs::file_size(dir / "land" / "landscape.png"), 1000u);
  // --quiet: nothing but errors and warnings (like simulate and sweep); one thread in the singular.
  const std::string grid = "' --axes bodies.bob.velocities.0.0,springs.spring.stiffness --grid 2x2 --range 0:0.5,80:120 "
                           "--no-png --threads 1 --out ";
  const CliRun quiet = run("landscape '" + task.string() + grid + "q --quiet", dir);
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(quiet.err, "");
  const CliRun one = run("landscape '" + task.string() + grid + "one", dir);
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("4 grid points on 1 thread in "), std::string::npos) << one.out;
}

// Sets an environment variable for the commands a test runs, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(name_.c_str());
    else
      setenv(name_.c_str(), old_.c_str(), 1);
  }

 private:
  std::string name_, old_;
};

// Piped progress (docs/cli.md "Progress"): with ADDSIM_PROGRESS_SECONDS=0 every update is a
// line "addsim: …" on stderr (no escape codes, stdout untouched); --quiet prints none.
TEST(GradientCli, ProgressLinesOnStderrWhenPipedAndNoneWhenQuiet) {
  const fs::path dir = fresh_temp_dir();
  const fs::path ball = write_ball_task(dir), spring = write_spring_task(dir);
  const ScopedEnv every_update("ADDSIM_PROGRESS_SECONDS", "0");
  struct Case {
    std::string args;
    std::vector<std::string> lines;  // fragments that must appear on stderr
  };
  const std::vector<Case> cases = {
      {"gradient '" + ball.string() + "'", {"addsim: forward step 1/20", "addsim: adjoint sweep step 20/20"}},
      {"gradient '" + ball.string() + "' --method direct",
       {"addsim: forward step 20/20", "addsim: direct sensitivities step 20/20"}},
      {"gradcheck '" + spring.string() + "'",
       {"addsim: forward step 100/100", "addsim: adjoint sweep step 100/100", "addsim: direct sensitivities step 1/100",
        "addsim: parameter 1/7 (bodies.0.positions.0.0): finite-difference rollout 1/9",
        "addsim: parameter 7/7 (springs.0.stiffness): finite-difference rollout 9/9"}},
      {"landscape '" + spring.string() +
           "' --axes bodies.bob.velocities.0.0,springs.spring.stiffness --grid 2x2 --range=-0.5:0.5,80:120 "
           "--out land --threads 1 --no-png",
       {"addsim: landscape 1/4", "addsim: landscape 4/4"}},
  };
  for (const Case& c : cases) {
    const CliRun r = run(c.args, dir);
    ASSERT_EQ(r.code, 0) << c.args << "\n" << r.err;
    for (const std::string& line : c.lines) EXPECT_NE(r.err.find(line + ","), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\033'), std::string::npos) << c.args;
    EXPECT_EQ(r.err.find('\r'), std::string::npos) << c.args;
    EXPECT_EQ(r.out.find("addsim: "), std::string::npos) << c.args;
    const CliRun quiet = run(c.args + " --quiet", dir);
    ASSERT_EQ(quiet.code, 0) << c.args << "\n" << quiet.err;
    EXPECT_EQ(quiet.err, "") << c.args;
  }
}

TEST(GradientCli, BadInputIsAOneLineErrorWithExitCode2) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_spring_task(dir);
  std::string t = task.string();  // quoted for the shell (built in place: GCC 12 warns falsely on "'" + s)
  t.insert(t.begin(), '\'');
  t.push_back('\'');
  struct Bad {
    std::string args, fragment;
  };
  for (const Bad& b : std::vector<Bad>{
           {"gradient missing.json", "missing.json: no such task file"},
           {"gradient " + t + " --set objective.0.bogus=1", "objective.0.bogus"},
           {"gradient " + t + " --set parameters.0=bodies.bob.nothing", "bodies.bob.nothing"},
           {"gradient " + t + " --set objective.1.steps=[5,500]", "objective.1.steps"},
           {"gradient " + t + " --set scene.bodies.0.mass=-1", "bodies.0.mass"},
           {"landscape " + t + " --axes springs.spring.stiffness --grid 3x3 --range 0:1,0:1 --out o", "--axes"},
           {"landscape " + t + " --axes bodies.bob.positions,springs.spring.stiffness --grid 3x3 --range 0:1,0:1 --out o",
            "name one scalar"},
           {"landscape " + t + " --axes bodies.bob.positions.0.0,springs.spring.stiffness --grid 3 --range 0:1,1:2 --out o",
            "--grid"},
           {"landscape " + t + " --axes bodies.bob.positions.0.0,springs.spring.stiffness --grid 3x3 --range=0:1,-2:1 --out o",
            "--range"},
       }) {
    const CliRun r = run(b.args, dir);
    EXPECT_EQ(r.code, 2) << b.args << "\n" << r.err;
    expect_one_line_error(r, b.fragment);
  }
}

// Task values that used to wrap or mislead (issue 18, defect 9): integers beyond int, a marker
// file without a visible row (Φ = 0 for every parameter), duplicate (step, marker) rows.
TEST(GradientCli, TaskValuesThatWrapOrMisleadAreInputErrors) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_spring_task(dir);
  std::string t = task.string();
  t.insert(t.begin(), '\'');
  t.push_back('\'');
  struct Bad {
    std::string args, fragment;
  };
  for (const Bad& b : std::vector<Bad>{
           {"gradient " + t + " --set objective.0.step=4294967296", "objective.0.step: integer 4294967296 is out of range"},
           {"gradient " + t + " --set objective.0.body=4294967296", "objective.0.body: integer 4294967296 is out of range"},
           {"gradient " + t + " --set objective.0.step=-9223372036854775808", "out of range"},
       }) {
    const CliRun r = run(b.args, dir);
    EXPECT_EQ(r.code, 2) << b.args << "\n" << r.err;
    expect_one_line_error(r, b.fragment);
  }
  // Marker data: the soft-material task with its CSV replaced.
  const fs::path src = source_dir() / "tasks";
  fs::create_directories(dir / "data");
  fs::copy_file(src / "soft_material.json", dir / "material.json");
  std::ofstream(dir / "data" / "soft_material_markers.csv") << "step,marker,x,y,z\n";
  const std::string m = "gradient '" + (dir / "material.json").string() + "' --set scene=" + "'\"" +
                        (src / "scenes" / "soft_ball_small.json").string() + "\"'";
  CliRun r = run(m, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  expect_one_line_error(r, "has no visible marker row");
  std::ofstream(dir / "data" / "soft_material_markers.csv")
      << "step,marker,x,y,z,visible\n3,0,0.1,0,0.2,0\n";
  r = run(m, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  expect_one_line_error(r, "has no visible marker row");
  std::ofstream(dir / "data" / "soft_material_markers.csv")
      << "step,marker,x,y,z\n3,0,0.1,0,0.2\n4,1,0.1,0,0.2\n3,0,0.2,0,0.2\n";
  r = run(m, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  expect_one_line_error(r, "marker 0 at step 3 is already given on line 2");
}

TEST(GradientCli, FailedForwardRunIsAnErrorWithExitCode3) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task = write_ball_task(dir);
  const CliRun r = run("gradient '" + task.string() + "' --set scene.solver.max_iterations=1", dir);
  EXPECT_EQ(r.code, 3) << r.out;
  expect_one_line_error(r, "forward run failed at step");
  // An adjoint sweep that overflows (Φ itself is not finite at a target of 1e308) names the task.
  const CliRun inf = run("gradient '" + task.string() + "' --set 'objective.0.target=[1e308,1e308,0]'", dir);
  EXPECT_EQ(inf.code, 3) << inf.out;
  expect_one_line_error(inf, task.string() + ": adjoint: ");
}

// Generates the marker data of tasks/soft_material.json from a run at the "true" material, then
// checks that the task's gradient at the default material is finite and non-zero per parameter.
TEST(GradientCli, SoftMaterialTaskFromGeneratedData) {
  const fs::path dir = fresh_temp_dir();
  const fs::path task_file = source_dir() / "tasks" / "soft_material.json";
  const bool write_source = std::getenv("ADDSIM_WRITE_TASK_DATA") != nullptr;
  const fs::path data = write_source ? source_dir() / "tasks" / "data" / "soft_material_markers.csv"
                                     : dir / "soft_material_markers.csv";
  // The task needs some data file to load: point it at a one-row one first (a file with no
  // visible row is an input error).
  std::ofstream(dir / "seed.csv") << "step,marker,x,y,z\n0,0,0,0,0\n";
  const std::vector<std::string> truth = {"objective.0.data=" + (dir / "seed.csv").string(),
                                          "scene.bodies.ball.material.youngs_modulus=3e4",
                                          "scene.bodies.ball.material.viscosity=0.02",
                                          "scene.obstacles.floor.friction=0.3"};
  const addsim::Task t = addsim::load_task_file(task_file, truth);
  const auto* term = dynamic_cast<const addsim::MarkerTrajectories*>(&t.objective.term(0));
  ASSERT_NE(term, nullptr);
  addsim::Simulator sim(*t.scene.model);
  const addsim::Trajectory traj = sim.run(t.p());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  {
    std::ofstream out(data);
    out.precision(17);
    out << "step,marker,x,y,z,visible\n";
    for (int i = 2; i < static_cast<int>(traj.q.size()); i += 2)
      for (size_t m = 0; m < term->markers().size(); ++m) {
        const addsim::Vec3 x = term->markers()[m].position(traj.q[i]);
        // Marker 3 (inside the ball) is seen only every other frame.
        const bool visible = m != 3 || i % 4 == 0;
        out << i << "," << m << "," << x.x() << "," << x.y() << "," << x.z() << "," << (visible ? 1 : 0) << "\n";
      }
  }
  const CliRun r = run("gradient '" + task_file.string() + "' --set objective.0.data='" + data.string() + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_GT(j["phi"].get<double>(), 0.0);
  for (auto& [k, v] : j["gradient"].items()) EXPECT_NE(v.get<double>(), 0.0) << k;
  // At the true parameters Φ vanishes.
  const CliRun z = run("gradient '" + task_file.string() + "' --set objective.0.data='" + data.string() +
                           "' --set scene.bodies.ball.material.youngs_modulus=3e4 --set "
                           "scene.bodies.ball.material.viscosity=0.02 --set scene.obstacles.floor.friction=0.3",
                       dir);
  ASSERT_EQ(z.code, 0) << z.err;
  EXPECT_LT(json::parse(z.out)["phi"].get<double>(), 1e-20);
}

}  // namespace

namespace {

// The tracked point of target terms (objectives/tracked_point.h): boundary means of the small
// soft ball through a contact-rich run, adjoint = direct and = central differences, non-zero.
// Under ADDSIM_TEST_REDUCED (docs/testing.md) three of the task's six parameters: the throw's
// x and z velocity and the spin about y (Release CPU 0.51 s -> 0.26 s).
TEST(GradientCli, TrackedBoundaryMeanGradcheck) {
  const fs::path dir = fresh_temp_dir();
  const bool reduced = addsim::test::reduced();
  const std::string some =
      reduced ? R"( --set 'parameters=["bodies.0.velocity.0.0","bodies.0.velocity.0.2","bodies.0.angular_velocity.0.1"]')"
              : "";
  const CliRun r = run(
      "gradcheck '" + (source_dir() / "tasks" / "ball_small_tracked.json").string() + "' --out check.json" + some, dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = json::parse(slurp(dir / "check.json"));
  ASSERT_EQ(j["parameters"].size(), reduced ? 3u : 6u);
  EXPECT_TRUE(j["contact_rich"].get<bool>());
  for (const auto& row : j["parameters"]) {
    EXPECT_EQ(row["status"], "pass") << row.dump();
    EXPECT_GT(std::abs(row["adjoint"].get<double>()), 1e-6) << row.dump();
  }
}

}  // namespace
