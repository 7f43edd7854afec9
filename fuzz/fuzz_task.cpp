/// Task files: JSON text → load_task_text, the path of `addsim gradient`/`optimize` (task
/// parsing, its scene from disk with the task's `set` overrides, parameters, objective terms,
/// optimiser and stages). The text is read as if it were tasks/fuzz.json, so the shipped
/// scenes and marker data resolve. Tasks whose scene (after `set`) has a gmsh-generated mesh
/// are skipped, like in fuzz_scene.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"
#include "addsim/io/json_path.h"
#include "addsim/io/json_reader.h"
#include "addsim/io/task.h"
#include "fuzz_common.h"

namespace {

// True when the scene the task names, with the task's `set` applied, meshes with gmsh.
bool task_uses_gmsh(const nlohmann::json& task, const std::filesystem::path& dir) {
  if (!task.is_object() || !task.contains("scene") || !task["scene"].is_string()) return false;
  nlohmann::json scene;
  try {
    scene = addsim::parse_json_text(addsim::read_input_file(dir / task["scene"].get<std::string>(), "scene file"), "scene");
    if (task.contains("set") && task["set"].is_object())
      for (const auto& [path, value] : task["set"].items()) addsim::apply_override(scene, path + "=" + value.dump());
  } catch (const addsim::InputError&) {
    return false;  // the loader reports it
  }
  return addsim::fuzz::uses_gmsh(scene);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  addsim::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path file = std::filesystem::path(addsim::fuzz::source_dir()) / "tasks" / "fuzz.json";
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    if (task_uses_gmsh(addsim::parse_json_text(text, file.string()), file.parent_path())) return -1;
    addsim::Task task = addsim::load_task_text(text, file);
  } catch (const addsim::InputError&) {
  } catch (const addsim::SimulationError&) {
  }
  return 0;
}
