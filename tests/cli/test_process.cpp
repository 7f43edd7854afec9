// run_program passes arguments verbatim (no shell), reports exit status and signals, and
// says why a program could not be started.

#include "addsim/cli/process.h"

#include <gtest/gtest.h>

namespace addsim::cli {
namespace {

TEST(RunProgram, ArgumentsReachTheProgramVerbatim) {
  // test(1) compares its arguments as given: quotes, ';' and '$' are not interpreted.
  const std::string tricky = "x'; touch FILE; echo '$HOME \"*\"";
  EXPECT_TRUE(run_program({"/usr/bin/test", tricky, "=", tricky}).ok());
  const ProgramResult differ = run_program({"/usr/bin/test", tricky, "=", "x"});
  EXPECT_TRUE(differ.started);
  EXPECT_EQ(differ.exit_code, 1);
  EXPECT_FALSE(differ.ok());
  EXPECT_EQ(differ.describe(), "exited with status 1");
}

TEST(RunProgram, ReportsSignalsAndStartFailures) {
  const ProgramResult killed = run_program({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_TRUE(killed.started);
  EXPECT_EQ(killed.signal, 9);
  EXPECT_EQ(killed.describe(), "was killed by signal 9");
  const ProgramResult missing = run_program({"/nonexistent/plotter", "a"});
  EXPECT_FALSE(missing.started);
  EXPECT_NE(missing.describe().find("/nonexistent/plotter"), std::string::npos) << missing.describe();
  EXPECT_FALSE(run_program({}).started);
}

TEST(RunProgram, SearchesPathOnlyWhenAskedAndSilencesOutput) {
  // A bare name is not looked up in PATH by default (the plotters are absolute paths).
  EXPECT_FALSE(run_program({"test", "a", "=", "a"}).started);
  ProgramOptions search;
  search.search_path = true;
  EXPECT_TRUE(run_program({"test", "a", "=", "a"}, search).ok());
  // With `silent` the program's stdout and stderr go to /dev/null: nothing reaches ours.
  ProgramOptions quiet = search;
  quiet.silent = true;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const ProgramResult r = run_program({"sh", "-c", "echo out; echo err >&2"}, quiet);
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "");
}

}  // namespace
}  // namespace addsim::cli
