#pragma once
// Shared helpers of the CLI tests: run the built `addsim` binary in a fresh directory
// with stdout and stderr captured, and check its one-line errors.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "../support/source_dir.h"
#include "../support/temp_dir.h"

namespace addsim::cli_test {

namespace fs = std::filesystem;

using addsim::test::source_dir;

/// An empty temporary directory named after the running test (suite and name) and this
/// process, so that test runs sharing a machine do not collide; removed when the test passes,
/// kept and named when it fails (support/temp_dir.h).
inline fs::path fresh_temp_dir() { return addsim::test::test_temp_dir(); }

/// The whole content of a text file.
inline std::string slurp(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs `addsim <args>` in `dir` with stdout and stderr captured in files.
inline CliRun run(const std::string& args, const fs::path& dir) {
  const std::string cmd = "cd '" + dir.string() + "' && '" + ADDSIM_BINARY + "' " + args + " >stdout.txt 2>stderr.txt";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "stdout.txt");
  r.err = slurp(dir / "stderr.txt");
  return r;
}

/// Checks that stderr is exactly one line "addsim: error: ..." containing `fragment`.
inline void expect_one_line_error(const CliRun& r, const std::string& fragment) {
  EXPECT_EQ(r.err.rfind("addsim: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

}  // namespace addsim::cli_test
