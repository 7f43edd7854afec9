#pragma once
/// Dotted key paths into a JSON document, used by `--set PATH=JSON` overrides: numeric
/// segments index lists, other segments select object keys or, on a list, the element
/// whose "name" equals the segment ("bodies.sheet.mass").

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace addsim {

/// Sets the value at `path` in `root`, creating the last key if the object lacks it.
/// Throws InputError naming the path when a segment does not resolve.
void set_json_path(nlohmann::json& root, const std::string& path, nlohmann::json value);

/// Parses the value side of an override: JSON if it parses, otherwise a bare word as a
/// string (`tanh` → "tanh"). Throws InputError naming `what` for a number that overflows.
nlohmann::json parse_override_value(const std::string& text, const std::string& what);

/// Applies one "PATH=JSON" assignment to `root`; throws InputError naming it when malformed.
void apply_override(nlohmann::json& root, const std::string& assignment);

/// Shortens a scene document to `steps` time steps (a quick look at any example): sets
/// "steps" and cuts the per-step lists that have more than steps + 1 entries
/// (handles.*.positions, bodies.*.poses, joints.*.target_angles, a robot's
/// bodies.*.motors.targets.*) to their first steps + 1.
/// Returns one notice per list cut ("handles.0.positions: 401 entries cut to 11 for steps = 10").
std::vector<std::string> truncate_scene_steps(nlohmann::json& scene, int steps);

}  // namespace addsim
