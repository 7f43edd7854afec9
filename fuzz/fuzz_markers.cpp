/// Marker CSV files of the `markers` objective term: bytes → markers.csv in a private tmpfs
/// folder (the task loader takes marker data only by path) → load_task_text of a fixed task
/// (three particles, three markers, 5 steps), the path of `addsim gradient`.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "addsim/core/error.h"
#include "addsim/io/task.h"
#include "fuzz_common.h"

namespace {

std::filesystem::path g_dir;

const char* kScene = R"({"dt": 0.01, "steps": 5, "bodies": [{"type": "particles", "name": "p",
  "positions": [[0, 0, 1], [1, 0, 1], [0, 1, 1]], "mass": 1}]})";

const char* kTask = R"({"scene": "scene.json", "parameters": ["bodies.p.velocities"],
  "objective": [{"type": "markers", "body": "p", "data": "markers.csv",
                 "markers": [{"position": [0, 0, 1]}, {"position": [1, 0, 1]}, {"node": 2}]}]})";

void remove_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  addsim::fuzz::init_environment();
  // A RAM-backed folder when there is one: one file write per input.
  std::string pattern = (std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp") + std::string("/addsim-fuzz-XXXXXX");
  if (!mkdtemp(pattern.data())) std::abort();
  g_dir = pattern;
  std::atexit(remove_dir);
  std::ofstream(g_dir / "scene.json") << kScene;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream csv(g_dir / "markers.csv", std::ios::binary | std::ios::trunc);
    csv.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    addsim::Task task = addsim::load_task_text(kTask, g_dir / "task.json");
  } catch (const addsim::InputError&) {
  }
  return 0;
}
