#pragma once
/// The `addsim` subcommands. Each is one entry of commands(): a name, a one-line help, a
/// function that declares its options on a CLI11 subcommand and returns the function that
/// runs it. Exit codes: 0 success, 1 internal error, 2 bad input, 3 failed simulation.

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace addsim::cli {

/// Process exit codes of addsim.
enum ExitCode : int { kOk = 0, kInternal = 1, kBadInput = 2, kSimulationFailed = 3 };

/// A subcommand: `setup` adds its options to `app` and returns the action to run.
struct Command {
  std::string name;  ///< subcommand name ("simulate")
  std::string help;  ///< one-line description for --help
  std::function<std::function<int()>(CLI::App& app)> setup;  ///< declares options, returns the action
};

/// The scene or task file the running command loads (empty: none yet). An InputError or
/// SimulationError whose message names no file is reported with this file in front (main.cpp),
/// so that errors thrown deep in the library ("joints.0: …", "adjoint: …") still say where.
void note_input_file(const std::string& file);
const std::string& input_file();

/// `message` with input_file() in front when it names no file or option itself: it does not
/// contain the file, does not start with '-' (an option), and its first "X: " field holds no '/'.
std::string with_input_file(const std::string& message);

/// All subcommands (simulate, demo, version; later gradient, gradcheck, landscape).
const std::vector<Command>& commands();

}  // namespace addsim::cli
