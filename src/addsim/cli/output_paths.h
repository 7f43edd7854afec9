#pragma once
/// Output paths of the commands, made and probed before any work: an `--out` that names a
/// regular file, a path under one or an unwritable place is a one-line InputError within a
/// second, not a discovery after the run (issue 18, defect 8).

#include <filesystem>
#include <string>

namespace addsim::cli {

/// Creates the directory `dir` (and its parents) and checks that a file can be created in it;
/// the directories it creates are remembered for remove_unused_output_dirs(). Throws
/// InputError "<option>: <dir>: <why>" when `dir` is a regular file, lies under one, or
/// cannot be created or written.
void prepare_output_dir(const std::filesystem::path& dir, const std::string& option = "--out");

/// Checks that `file` can be written: its directory is prepared as above, `file` is not a
/// directory, and it can be opened for appending (a file that did not exist is removed again).
/// Throws InputError "<option>: <file>: <why>" otherwise.
void prepare_output_file(const std::filesystem::path& file, const std::string& option = "--out");

/// Removes the directories prepare_output_dir created that are still empty (innermost first), so
/// that a command stopped by an error before it wrote anything leaves nothing behind.
void remove_unused_output_dirs();

}  // namespace addsim::cli
