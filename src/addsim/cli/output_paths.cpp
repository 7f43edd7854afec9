#include "addsim/cli/output_paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "addsim/core/error.h"

namespace addsim::cli {

namespace fs = std::filesystem;

namespace {

// The first existing ancestor of `p` that is not a directory, or empty (create_directories would
// report that only as "Not a directory" without saying which component).
fs::path file_in_the_way(const fs::path& p) {
  std::error_code ec;
  for (fs::path a = p; !a.empty(); a = a.parent_path()) {
    if (fs::exists(a, ec)) return fs::is_directory(a, ec) ? fs::path() : a;
    if (a == a.parent_path()) break;
  }
  return {};
}

// Folders prepare_output_dir created in this process, outermost first.
std::vector<fs::path>& created_dirs() {
  static std::vector<fs::path> dirs;
  return dirs;
}

}  // namespace

void prepare_output_dir(const fs::path& dir, const std::string& option) {
  const std::string head = option + ": " + dir.string() + ": ";
  if (dir.empty()) throw InputError(option + ": empty path");
  if (const fs::path f = file_in_the_way(dir); !f.empty())
    throw InputError(head + (f == dir ? std::string("is a regular file, not a directory")
                                      : "cannot create the output directory: " + f.string() + " is a regular file"));
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path a = fs::absolute(dir, ec).lexically_normal(); !a.empty() && !fs::exists(a, ec); a = a.parent_path()) {
    missing.insert(missing.begin(), a);
    if (a == a.parent_path()) break;
  }
  // A parent can vanish between the steps of create_directories when another addsim process
  // that created it removes it again as unused (remove_unused_output_dirs): try again then.
  for (int attempt = 0; attempt < 5; ++attempt) {
    fs::create_directories(dir, ec);
    if (ec != std::errc::no_such_file_or_directory) break;
  }
  if (!ec) created_dirs().insert(created_dirs().end(), missing.begin(), missing.end());
  if (ec || !fs::is_directory(dir))
    throw InputError(head + "cannot create the output directory" + (ec ? ": " + ec.message() : std::string()));
  // Probe: create and remove a file with a name no command writes (the process id keeps
  // concurrent runs into one folder apart).
  const fs::path probe = dir / (".addsim_probe_" + std::to_string(::getpid()));
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) throw InputError(head + "cannot write into the output directory: " + std::strerror(errno));
  std::fclose(f);
  fs::remove(probe, ec);
}

void prepare_output_file(const fs::path& file, const std::string& option) {
  if (file.empty()) throw InputError(option + ": empty path");
  if (const fs::path f = file_in_the_way(file.parent_path()); !f.empty())
    throw InputError(option + ": " + file.string() + ": cannot create the output directory: " + f.string() +
                     " is a regular file");
  if (file.has_parent_path()) prepare_output_dir(file.parent_path(), option);
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw InputError(option + ": " + file.string() + ": is a directory, not a file");
  const bool existed = fs::exists(file, ec);
  std::FILE* f = std::fopen(file.c_str(), "ab");
  if (!f) throw InputError(option + ": " + file.string() + ": cannot write: " + std::strerror(errno));
  std::fclose(f);
  if (!existed) fs::remove(file, ec);
}

void remove_unused_output_dirs() {
  std::error_code ec;
  for (auto it = created_dirs().rbegin(); it != created_dirs().rend(); ++it)
    if (fs::is_empty(*it, ec) && !ec) fs::remove(*it, ec);
  created_dirs().clear();
}

}  // namespace addsim::cli
