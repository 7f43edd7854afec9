#pragma once
/// The repository root for tests that read scenes, tasks and data: $ADDSIM_SOURCE_DIR (set by
/// CTest), else the configure-time source directory (ADDSIM_SOURCE_DIR_DEFAULT, defined for
/// every test target by addsim_add_test).

#include <cstdlib>
#include <filesystem>
#include <string>

namespace addsim::test {

inline std::filesystem::path source_dir() {
  const char* env = std::getenv("ADDSIM_SOURCE_DIR");
  return env ? std::filesystem::path(env) : std::filesystem::path(ADDSIM_SOURCE_DIR_DEFAULT);
}

/// scenes/<name> in the repository.
inline std::string scene_path(const std::string& name) { return (source_dir() / "scenes" / name).string(); }

}  // namespace addsim::test
