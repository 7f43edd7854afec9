#include "source_dir.h"

#include <cstdlib>

namespace addsim::test {

std::filesystem::path source_dir() {
  const char* env = std::getenv("ADDSIM_SOURCE_DIR");
  return env ? std::filesystem::path(env) : std::filesystem::path(ADDSIM_SOURCE_DIR_DEFAULT);
}

}  // namespace addsim::test
