#pragma once
/// Task files (docs/task-format.md): JSON naming a scene (path relative to the task file,
/// plus `set` overrides), the parameters to differentiate (key paths with optional log
/// scale and bounds) and the objective terms. Validation is strict like scene files:
/// every error names the task file and the key path.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/io/scene.h"
#include "addsim/objectives/objective.h"
#include "addsim/sensitivity/parameter_selection.h"

namespace addsim {

/// A loaded task: the scene's model, the selected parameters and the objective.
struct Task {
  Scene scene;
  std::string source;       ///< task file name used in messages
  std::string name;         ///< "name" key, else the file stem
  std::string description;  ///< "description" key, may be empty
  nlohmann::json json;      ///< the task after --set overrides
  std::vector<ParameterSpec> specs;
  ParameterSelection selection;
  Objective objective;
  std::vector<std::string> term_types;  ///< "type" of every objective term, in order
  /// Parameters the task runs at: the scene defaults.
  const VecX& p() const { return scene.model->params().defaults(); }
};

/// Reads a task file, applies overrides ("PATH=JSON": task keys, or "scene.<path>=JSON"
/// for the scene, applied after the task's own `set`) and builds it. Throws InputError
/// naming the file and key path for anything invalid (including the scene's own errors).
Task load_task_file(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});

/// Rows of a CSV file of numbers with a header line; returns the header columns and the
/// rows (each as many numbers as columns; empty fields and "nan" are NaN). Throws
/// InputError naming the file and line for a bad number or a wrong column count.
std::pair<std::vector<std::string>, std::vector<std::vector<double>>> read_numeric_csv(
    const std::filesystem::path& file);

}  // namespace addsim
