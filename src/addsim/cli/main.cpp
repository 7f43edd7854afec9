/// The addsim command-line tool: `addsim <command> [options]`, see `addsim --help`.

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "addsim/cli/commands.h"
#include "addsim/cli/output_paths.h"
#include "addsim/core/error.h"
#include "addsim/solver/linear_solver.h"

namespace {

// Error messages are one line: newlines inside them become "; ".
std::string one_line(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

int fail(int code, const std::string& what) {
  addsim::cli::remove_unused_output_dirs();
  std::cerr << "addsim: error: " << one_line(what) << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  addsim::keep_freed_memory();  // the executable owns its allocator (linear_solver.h)
  using addsim::cli::ExitCode;
  CLI::App app{"addsim: analytically differentiable dynamics with frictional contact", "addsim"};
  app.set_version_flag("--version", "addsim " ADDSIM_VERSION_STRING);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
  for (const auto& cmd : addsim::cli::commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    actions.emplace_back(sub, cmd.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(ExitCode::kBadInput, std::string(e.what()) + " (see addsim --help)");
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
    return fail(ExitCode::kBadInput, "no command given (see addsim --help)");
  } catch (const addsim::InputError& e) {
    return fail(ExitCode::kBadInput, addsim::cli::with_input_file(e.what()));
  } catch (const addsim::SimulationError& e) {
    return fail(ExitCode::kSimulationFailed, addsim::cli::with_input_file(e.what()));
  } catch (const std::exception& e) {
    return fail(ExitCode::kInternal, std::string("internal error: ") + e.what());
  }
}
