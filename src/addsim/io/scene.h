#pragma once
/// Scene files (docs/scene-format.md): JSON in SI units → a finalised Model. Validation is
/// strict: unknown keys, wrong types, non-finite or out-of-range values and missing
/// required keys throw InputError naming the file and key path.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/model/model.h"
#include "addsim/terms/contact_force.h"

namespace addsim {

/// What the outputs need to know about one scene body besides the Model's Body.
struct SceneBody {
  std::string name;  ///< as given in the scene (may be empty)
  std::string type;  ///< scene type: "particles", "sheet", ...
  std::string path;  ///< canonical key path, "bodies.<i>"
};

/// A loaded scene: the finalised model plus the metadata the outputs report.
struct Scene {
  std::unique_ptr<Model> model;
  nlohmann::json json;              ///< the scene after --set overrides, as validated
  std::string source;               ///< file name (or label) used in messages
  std::string name;                 ///< "name" key, else the file stem
  std::string description;          ///< "description" key, may be empty
  ContactModel contact_model = ContactModel::kLinear;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);  ///< m/s²
  std::vector<SceneBody> bodies;    ///< parallel to model->bodies()
  std::vector<std::string> obstacle_names;
  std::vector<std::string> notices;  ///< per-step lists cut by a "steps" override (truncate_scene_steps)
  /// Scene keys of the parameter entries whose canonical path is not their place in the scene
  /// document: a URDF robot's joints ("robots.1.joints.3.target_angles" is read from
  /// "/bodies/1/motors/targets/<joint name>"), as JSON pointers (RFC 6901, so joint names may
  /// hold dots). An empty pointer: the entry has no scene key (a robot link's initial state,
  /// computed from the URDF). `optimize` writes optimised values there (optimized_scene.json).
  std::map<std::string, std::string> param_keys;
};

/// Reads, overrides ("PATH=JSON" each, applied in order) and builds a scene file.
/// Throws InputError for a missing file, bad JSON, a bad override or an invalid scene.
Scene load_scene_file(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});

/// Same for scene text; `source` names it in messages (e.g. "demo.json").
Scene load_scene_text(const std::string& text, const std::string& source,
                      const std::vector<std::string>& overrides = {});

/// Validates a scene document and builds the finalised model; `source` prefixes messages.
Scene build_scene(const nlohmann::json& doc, const std::string& source);

}  // namespace addsim
