// Runs `addsim sweep` on the small soft-ball material task: grid and random samples, CSV
// contents equal for one and two threads, seeded samples reproducible, bad input one-line
// errors with exit code 2.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_test_util.h"

namespace {

using namespace addsim::cli_test;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Appended piece by piece: "'" + std::string&& trips gcc 12's -Wrestrict false positive.
const std::string kTask = [] {
  std::string s = "'";
  s += (source_dir() / "tasks" / "soft_material.json").string();
  s += "'";
  return s;
}();

TEST(SweepCli, GridWritesOneRowPerPointIdenticalForAnyThreadCount) {
  const fs::path dir = fresh_temp_dir();
  const std::string grid = " --axes obstacles.floor.friction --grid 4 --range 0.1:0.7 --quiet";
  const CliRun one = run("sweep " + kTask + " --out one --threads 1" + grid, dir);
  ASSERT_EQ(one.code, 0) << one.err;
  const CliRun two = run("sweep " + kTask + " --out two --threads 2" + grid, dir);
  ASSERT_EQ(two.code, 0) << two.err;
  const std::string csv = slurp(dir / "one" / "sweep.csv");
  EXPECT_EQ(csv, slurp(dir / "two" / "sweep.csv"));
  const auto rows = lines(csv);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], "k,obstacles.0.friction,phi,dphi_dobstacles.0.friction,completed,failure");
  EXPECT_EQ(rows[1].rfind("0,0.1", 0), 0u) << rows[1];
  EXPECT_EQ(rows[4].rfind("3,0.7", 0), 0u) << rows[4];
  for (std::size_t k = 1; k < rows.size(); ++k) EXPECT_NE(rows[k].find(",1,\"\""), std::string::npos) << rows[k];
  EXPECT_TRUE(one.err.empty()) << one.err;  // --quiet
}

TEST(SweepCli, SeededSamplesAreReproducibleAndWithinBounds) {
  const fs::path dir = fresh_temp_dir();
  const CliRun a = run("sweep " + kTask + " --out a --samples 3 --seed 5 --no-gradient", dir);
  ASSERT_EQ(a.code, 0) << a.err;
  const CliRun b = run("sweep " + kTask + " --out b --samples 3 --seed 5 --no-gradient", dir);
  ASSERT_EQ(b.code, 0) << b.err;
  const CliRun c = run("sweep " + kTask + " --out c --samples 3 --seed 6 --no-gradient", dir);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(slurp(dir / "a" / "sweep.csv"), slurp(dir / "b" / "sweep.csv"));
  EXPECT_NE(slurp(dir / "a" / "sweep.csv"), slurp(dir / "c" / "sweep.csv"));
  const auto rows = lines(slurp(dir / "a" / "sweep.csv"));
  ASSERT_EQ(rows.size(), 4u);
  // Columns: k, E, viscosity, friction, phi, completed, failure; the task bounds E to [1e3, 1e6].
  for (std::size_t k = 1; k < rows.size(); ++k) {
    std::istringstream in(rows[k]);
    std::string cell;
    std::vector<double> v;
    for (int j = 0; j < 5 && std::getline(in, cell, ','); ++j) v.push_back(std::stod(cell));
    ASSERT_EQ(v.size(), 5u);
    EXPECT_GE(v[1], 1e3);
    EXPECT_LE(v[1], 1e6);
    EXPECT_GE(v[3], 0.0);
    EXPECT_LE(v[3], 2.0);
  }
  // Progress goes to stderr (piped: one line at the end).
  EXPECT_NE(a.err.find("sweep 3/3 points"), std::string::npos) << a.err;
}

TEST(SweepCli, BadInputIsAOneLineErrorBeforeAnyRollout) {
  const fs::path dir = fresh_temp_dir();
  CliRun r = run("sweep " + kTask + " --out o --samples 2 --axes contact.kn", dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "either a grid");
  r = run("sweep " + kTask + " --out o --axes contact.kn --grid 3", dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "needs all of --axes, --grid and --range");
  r = run("sweep " + kTask + " --out o --axes obstacles.floor.friction --grid 3 --range=-1:1", dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "--range");
  r = run("sweep " + kTask + " --out o --axes bodies.ball.velocity --grid 3 --range 0:1", dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "name one scalar");
  r = run("sweep " + kTask + " --out o --axes obstacles.floor.friction --grid 100000x100000 --range 0:1", dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "--grid");
  std::ofstream(dir / "file") << "x";
  r = run("sweep " + kTask + " --out file --samples 2", dir);
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "not a directory");
  // A task parameter without finite bounds cannot be sampled.
  r = run("sweep " + kTask + " --out o --samples 2 --set parameters.1.upper=null", dir);
  EXPECT_NE(r.code, 0);
}

// sweep takes --steps N like gradient (--set scene.steps=N; here the scene's own 40 steps), and
// its summary line counts in the singular where it should.
TEST(SweepCli, StepsOptionAndSingularSummary) {
  const fs::path dir = fresh_temp_dir();
  const CliRun r = run("sweep " + kTask + " --out o --samples 1 --no-gradient --threads 1 --steps 40", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(": 1 point on 1 thread in "), std::string::npos) << r.out;
  const CliRun bad = run("sweep " + kTask + " --out o2 --samples 1 --threads -1", dir);
  EXPECT_EQ(bad.code, 2);
  expect_one_line_error(bad, "--threads: must be an integer >= 0, got -1");
}

}  // namespace
