// `addsim simulate` reports steps accepted at the round-off floor, energy growth and initial
// penetration: one stderr warning line each, summary.json fields and the steps.csv column;
// a floor step far from convergence is a failure (exit 3) with the relative residual
// (docs/scene-format.md "Outputs", docs/solver.md "Acceptance").

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using namespace addsim::cli_test;

void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CliWarnings, FloorStepsAndEnergyGrowthAreReported) {
  // The issue's E = 1e12 Pa box thrown at the floor at 50 m/s with dt = 0.5 s.
  const fs::path dir = fresh_temp_dir();
  write(dir / "bounce.json", R"({"dt": 0.5, "steps": 12, "contact": {"kn": 1e5},
      "obstacles": [{"type": "plane", "name": "floor", "point": [0, 0, 0], "normal": [0, 0, 1], "friction": 0.5}],
      "bodies": [{"type": "fem", "name": "box", "mesh": {"generator": "box", "size": [1, 1, 1], "target_tets": 6},
                  "position": [0, 0, 0.6], "velocity": [0, 0, -50],
                  "material": {"youngs_modulus": 1e12, "density": 1000}}]})");
  const CliRun r = run("simulate --quiet --out o bounce.json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count(r.err, "addsim: warning: bounce.json: "), 2) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 2) << r.err;
  EXPECT_NE(r.err.find("12 of 12 steps were accepted at the round-off floor"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("first: step 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("energy of this passive scene grew"), std::string::npos) << r.err;
  const auto s = nlohmann::json::parse(slurp(dir / "o" / "summary.json"));
  EXPECT_EQ(s["completed"], true);
  EXPECT_EQ(s["status"], "completed_with_warnings");
  EXPECT_EQ(s["steps_accepted_at_floor"], 12);
  EXPECT_EQ(s["first_step_accepted_at_floor"], 1);
  EXPECT_GT(s["max_relative_residual_at_floor"].get<double>(), 1e-8);
  EXPECT_EQ(s["energy"]["growth_warning"], true);
  EXPECT_GT(s["energy"]["peak"].get<double>(), 3.0 * s["energy"]["initial"].get<double>());
  EXPECT_EQ(s["warnings"].size(), 2u);
  const std::string csv = slurp(dir / "o" / "steps.csv");
  EXPECT_NE(csv.find(",wall_ms,accepted_at_floor,relative_residual,"), std::string::npos);
  // Every row flagged: accepted_at_floor is the ninth column (after wall_ms).
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  int flagged = 0, rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    std::istringstream cells(line);
    std::string cell;
    for (int c = 0; c < 9 && std::getline(cells, cell, ','); ++c) {
    }
    flagged += cell == "1";
  }
  EXPECT_EQ(rows, 12);
  EXPECT_EQ(flagged, 12) << csv;
}

TEST(CliWarnings, UnresolvableStepIsAFailureWithItsRelativeResidual) {
  const fs::path dir = fresh_temp_dir();
  write(dir / "stiff.json", R"({"dt": 0.01, "steps": 5,
      "bodies": [{"type": "fem", "name": "box", "mesh": {"generator": "box", "size": [1, 1, 1], "target_tets": 6},
                  "position": [0, 0, 1], "material": {"youngs_modulus": 1e30, "density": 1000}}]})");
  const CliRun r = run("simulate --quiet --out o stiff.json", dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("addsim: error: stiff.json: step 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("relative residual 1 on body 'box'"), std::string::npos) << r.err;
  const auto s = nlohmann::json::parse(slurp(dir / "o" / "summary.json"));
  EXPECT_EQ(s["completed"], false);
  EXPECT_EQ(s["status"], "failed");
  EXPECT_EQ(s["failed_step"], 1);
}

TEST(CliWarnings, BodyInsideAnObstacleIsNamedAndCleanRunsSayNothing) {
  const fs::path dir = fresh_temp_dir();
  write(dir / "buried.json", R"({"dt": 0.01, "steps": 3, "contact": {"kn": 1e4},
      "obstacles": [{"type": "plane", "name": "ground", "point": [0, 0, 0], "normal": [0, 0, 1]}],
      "bodies": [{"type": "particles", "name": "stone", "positions": [[0, 0, -0.05]], "mass": 1}]})");
  const CliRun r = run("simulate --quiet --out o buried.json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1) << r.err;
  EXPECT_NE(r.err.find("addsim: warning: buried.json: body 'stone' starts inside obstacle 'ground'"),
            std::string::npos)
      << r.err;
  const auto s = nlohmann::json::parse(slurp(dir / "o" / "summary.json"));
  ASSERT_EQ(s["initial_penetrations"].size(), 1u);
  EXPECT_EQ(s["initial_penetrations"][0]["body"], "stone");

  const CliRun clean = run("simulate --quiet --out c '" + (source_dir() / "scenes" / "particle_incline.json").string() + "'", dir);
  ASSERT_EQ(clean.code, 0) << clean.err;
  EXPECT_EQ(clean.err, "");
  const auto c = nlohmann::json::parse(slurp(dir / "c" / "summary.json"));
  EXPECT_EQ(c["status"], "completed");
  EXPECT_EQ(c["steps_accepted_at_floor"], 0);
  EXPECT_TRUE(c["warnings"].empty());
}

}  // namespace
