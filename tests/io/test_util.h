#pragma once
/// Helpers shared by the io tests: the repository root and temporary directories.

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "addsim/core/error.h"
#include "../support/source_dir.h"

namespace addsim::test {

/// A fresh empty directory under the system temp dir, unique per test and process.
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("addsim_io_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + name + "_" +
                    std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// The InputError message thrown by f, or "" if nothing was thrown.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace addsim::test
