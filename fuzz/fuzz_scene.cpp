/// Scene files: JSON text → parse_json_text → build_scene, the path of `addsim simulate`
/// (load_scene_text without overrides). Paths inside the scene resolve against scenes/, so
/// the shipped mesh files are reachable. Documents with gmsh-generated meshes are skipped
/// (fuzz_common.h); box generators run, capped by the 64 MiB memory budget.

#include <cstddef>
#include <cstdint>
#include <string>

#include "addsim/core/error.h"
#include "addsim/io/json_reader.h"
#include "addsim/io/scene.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  addsim::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string source = addsim::fuzz::source_dir() + "/scenes/fuzz.json";
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json doc = addsim::parse_json_text(text, source);
    if (addsim::fuzz::uses_gmsh(doc)) return -1;  // not added to the corpus
    addsim::Scene scene = addsim::build_scene(doc, source);
  } catch (const addsim::InputError&) {
  } catch (const addsim::SimulationError&) {
  }
  return 0;
}
