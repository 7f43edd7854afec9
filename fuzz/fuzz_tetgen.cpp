/// TetGen .node/.ele pairs: the input is the .node text, a NUL byte, then the .ele text
/// (no NUL: all of it is the .node text and the .ele is empty) → parse_tetgen, what
/// load_tetgen does after reading both files.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "addsim/core/error.h"
#include "addsim/mesh/mesh_io.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  addsim::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t split = bytes.find('\0');
  std::istringstream node(bytes.substr(0, split));
  std::istringstream ele(split == std::string::npos ? std::string() : bytes.substr(split + 1));
  try {
    addsim::TetMesh mesh = addsim::parse_tetgen(node, ele, "fuzz");
  } catch (const addsim::InputError&) {
  }
  return 0;
}
