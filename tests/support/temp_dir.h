#pragma once
/// Temporary directories of the tests (docs/testing.md, "Temporary files"). Every directory a
/// test writes under the system temp dir (std::filesystem::temp_directory_path(): $TMPDIR,
/// else /tmp) comes from here and is registered with the running test: when the test ends
/// without a failure the directory is removed; when it fails the directory is kept and its path
/// printed on stderr, so the failure can be examined. A directory made outside a test (a
/// suite's SetUpTestSuite) belongs to the whole program and is removed at its end unless some
/// test failed.

#include <filesystem>
#include <string>

namespace addsim::test {

/// "<suite>_<test>" of the running test, with the '/' of parameterised names (Matrix/Suite,
/// Case/0) replaced by '.', so that it names one directory, not a nest; "program" outside a
/// test.
std::string current_test_label();

/// temp_directory_path() / (name + "_" + pid) ('/' in name made '.'), emptied and created, and registered for removal
/// as described above. The process id keeps concurrent runs (ctest -j) apart; the same name in
/// the same process gives the same, emptied directory again.
std::filesystem::path fresh_registered_temp_dir(const std::string& name);

/// A fresh registered directory for the running test alone: "addsim_<suite>_<test>[_<tag>]".
inline std::filesystem::path test_temp_dir(const std::string& tag = "") {
  return fresh_registered_temp_dir("addsim_" + current_test_label() + (tag.empty() ? "" : "_" + tag));
}

}  // namespace addsim::test
