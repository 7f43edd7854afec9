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
#include "addsim/optim/optimizer.h"
#include "addsim/sensitivity/parameter_selection.h"

namespace addsim {

/// One stage of a continuation (task key `stages[k]`): its parameter subset (specs of the
/// task's own parameters, bounds and log scale inherited unless the stage gives its own),
/// scene overrides ("PATH=JSON", from the stage's `set` and `steps`), optimiser options
/// (the task's `optimize` section with the stage's `optimize` keys applied) and objective
/// overrides ("objective.PATH=JSON", from the stage's `objective_set`: e.g. a term's weight or
/// window, so that a short-horizon stage can leave out a term beyond its horizon).
struct TaskStage {
  std::string name;
  std::vector<ParameterSpec> specs;
  std::vector<std::string> scene_overrides;
  OptimizerOptions options;
  std::vector<std::string> objective_overrides;
  bool fallback = false;  ///< begins another attempt from the start (optim/continuation.h)
  std::vector<StopReason> fallback_after;  ///< `fallback_after`: the stop reasons it answers (empty: any)
  bool fallback_from_best = false;  ///< `fallback_from`: "best" (the best point so far) or "start" (default)
  /// `scene`: another scene file for this stage (as written, relative to the task file; empty: the task's
  /// scene), e.g. a cheap surrogate of the same throw for the first stages of a multi-fidelity
  /// continuation. The stage runs the task with its `scene` key replaced (the task's `set`, the command
  /// line's `scene.` overrides and the stage's `set` apply on top), so every task parameter and
  /// objective term must resolve in it; values carry over by name.
  std::string scene;
  bool join = false;  ///< `join`: ends the attempts before it (optim/continuation.h)
  std::vector<StopReason> run_after;  ///< `run_after`: the stop reasons of the stage before after which it runs
};

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
  /// The `optimize` section (defaults when absent; addsim optimize reads it).
  OptimizerOptions optimize;
  bool has_optimize = false;  ///< the task has an `optimize` section
  /// The `stages` list; empty when absent (one stage: the task itself).
  std::vector<TaskStage> stages;
  /// Parameters the task runs at: the scene defaults.
  const VecX& p() const { return scene.model->params().defaults(); }
};

/// Reads a task file, applies overrides ("PATH=JSON": task keys, or "scene.<path>=JSON"
/// for the scene, applied after the task's own `set`) and builds it. Throws InputError
/// naming the file and key path for anything invalid (including the scene's own errors).
/// With `check_stage_scenes`, each stage's scene is loaded with its `set` and `steps` too, so
/// that a bad value is an error of the task naming stages.k.set.<key>; false for the task as one
/// of its stages runs it (addsim optimize: the overrides already hold that stage's scene and
/// set, which the other stages' checks must not be combined with).
Task load_task_file(const std::filesystem::path& file, const std::vector<std::string>& overrides = {},
                    bool check_stage_scenes = true);

/// Same for task text; `file` names it in messages and its folder resolves the scene and data
/// paths, as if the text had been read from `file`.
Task load_task_text(const std::string& text, const std::filesystem::path& file,
                    const std::vector<std::string>& overrides = {}, bool check_stage_scenes = true);

/// The optimiser method named `name` ("lbfgsb", "gauss_newton", "adam", "cmaes"); throws
/// InputError naming `what` otherwise.
OptimizerMethod parse_optimizer_method(const std::string& name, const std::string& what);

/// A CSV file of numbers: its header columns, its rows (each as many numbers as columns;
/// empty fields and "nan" are NaN) and each row's line number in the file (blank lines are
/// skipped, so a row's index and its line differ).
struct NumericCsv {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
  std::vector<int> lines;
};

/// Reads a CSV file of numbers with a header line (a leading UTF-8 byte-order mark, as
/// spreadsheet programs write, is skipped). Throws InputError naming the file and line for a
/// bad number or a wrong column count.
NumericCsv read_numeric_csv(const std::filesystem::path& file);

/// Same for CSV text; `file` names it in messages.
NumericCsv parse_numeric_csv(const std::string& text, const std::filesystem::path& file);

}  // namespace addsim
