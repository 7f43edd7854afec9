#pragma once
/// The repository root for tests that read scenes, tasks and data: $ADDSIM_SOURCE_DIR (set by
/// CTest), else the configure-time source directory. That fallback is compiled into
/// source_dir.cpp alone (library addsim_test_support), so no other test compile carries the
/// checkout's path and ccache shares them between checkouts (docs/testing.md, "Build time").

#include <filesystem>
#include <string>

namespace addsim::test {

std::filesystem::path source_dir();

/// scenes/<name> in the repository.
inline std::string scene_path(const std::string& name) { return (source_dir() / "scenes" / name).string(); }

}  // namespace addsim::test
