#pragma once
/// Helpers shared by the io tests: the repository root and temporary directories.

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "addsim/core/error.h"
#include "../support/source_dir.h"
#include "../support/temp_dir.h"

namespace addsim::test {

/// A fresh empty directory under the system temp dir, unique per test and process; removed
/// when the test passes, kept and named when it fails (support/temp_dir.h).
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  return fresh_registered_temp_dir("addsim_io_" + current_test_label() + "_" + name);
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
