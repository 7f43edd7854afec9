/// Gmsh .msh files (ASCII 2.x and 4.1): bytes → parse_gmsh_msh, what load_gmsh_msh does after
/// reading the file.

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
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    addsim::TetMesh mesh = addsim::parse_gmsh_msh(in, "fuzz.msh");
  } catch (const addsim::InputError&) {
  }
  return 0;
}
