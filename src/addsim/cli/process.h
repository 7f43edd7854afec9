#pragma once
/// Running external programs without a shell: the arguments go to the program as they are
/// (no quoting, no word splitting, no globbing), so task names and paths with quotes,
/// spaces or `;` cannot inject commands.

#include <string>
#include <vector>

namespace addsim::cli {

/// Outcome of run_program.
struct ProgramResult {
  bool started = false;  ///< the program could be executed
  int exit_code = -1;    ///< its exit status when it exited normally, else -1
  int signal = 0;        ///< the signal that ended it, 0 if none
  std::string error;     ///< why it could not be started or waited for (empty if it ran)
  /// True if the program ran and exited with status 0.
  bool ok() const { return started && error.empty() && exit_code == 0; }
  /// "exited with status 1", "killed by signal 9", "could not be started: ..." for messages.
  std::string describe() const;
};

/// How run_program starts the program.
struct ProgramOptions {
  bool search_path = false;  ///< argv[0] may be a bare name looked up in PATH (posix_spawnp)
  bool silent = false;       ///< stdout and stderr go to /dev/null (a chatty browser)
};

/// Runs argv[0] (an absolute path unless options.search_path) with arguments argv[1..] via
/// posix_spawn, inheriting stdin, the environment and (unless options.silent) stdout and
/// stderr, and waits for it to finish.
ProgramResult run_program(const std::vector<std::string>& argv, const ProgramOptions& options = {});

}  // namespace addsim::cli
