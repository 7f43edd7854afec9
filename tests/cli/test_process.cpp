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

}  // namespace
}  // namespace addsim::cli
