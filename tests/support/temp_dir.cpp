#include "temp_dir.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

namespace addsim::test {

namespace {

namespace fs = std::filesystem;

// Removes the directories registered during a test when it ends without a failure, else keeps
// and names them; the same for directories made outside any test at the end of the program.
class TempDirCleaner : public ::testing::EmptyTestEventListener {
 public:
  void add(const fs::path& dir, bool in_test) {
    const std::lock_guard lock(mutex_);
    auto& dirs = in_test ? test_dirs_ : program_dirs_;
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }

  void OnTestEnd(const ::testing::TestInfo& info) override { settle(test_dirs_, info.result()->Failed()); }
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override { settle(program_dirs_, unit.Failed()); }

 private:
  void settle(std::vector<fs::path>& dirs, bool failed) {
    const std::lock_guard lock(mutex_);
    for (const fs::path& dir : dirs) {
      if (failed) {
        std::cerr << "addsim test: kept the temporary directory " << dir.string() << " (the test failed)\n";
        continue;
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (ec) std::cerr << "addsim test: cannot remove the temporary directory " << dir.string() << ": " << ec.message() << "\n";
    }
    dirs.clear();
  }

  std::mutex mutex_;
  std::vector<fs::path> test_dirs_;
  std::vector<fs::path> program_dirs_;
};

// The one cleaner of this process, appended to GoogleTest's listeners on first use (which then
// owns it), so that a test binary needs no main() or Environment of its own.
TempDirCleaner& cleaner() {
  static TempDirCleaner* const instance = [] {
    auto* c = new TempDirCleaner;
    ::testing::UnitTest::GetInstance()->listeners().Append(c);
    return c;
  }();
  return *instance;
}

}  // namespace

std::string current_test_label() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return "program";
  std::string label = std::string(info->test_suite_name()) + "_" + info->name();
  std::replace(label.begin(), label.end(), '/', '.');
  return label;
}

fs::path fresh_registered_temp_dir(const std::string& name) {
  // One directory directly under the temp dir: a '/' would nest it, and leave its parents.
  std::string leaf = name + "_" + std::to_string(::getpid());
  std::replace(leaf.begin(), leaf.end(), '/', '.');
  const fs::path dir = fs::temp_directory_path() / leaf;
  const bool in_test = ::testing::UnitTest::GetInstance()->current_test_info() != nullptr;
  // Registered before it exists, so that a failure to create it still leaves nothing behind.
  cleaner().add(dir, in_test);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace addsim::test
