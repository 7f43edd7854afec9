#include "addsim/io/json_path.h"

#include <cctype>

#include "addsim/core/error.h"
#include "addsim/io/json_reader.h"

namespace addsim {

using nlohmann::json;

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : path) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

bool is_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// True if the text is one bare word (letters, digits, '_', '-', '/', '.'), which an
// override may give without JSON quotes.
bool is_bare_word(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '/' && c != '.') return false;
  return true;
}

}  // namespace

void set_json_path(json& root, const std::string& path, json value) {
  const std::vector<std::string> parts = split_path(path);
  json* node = &root;
  std::string done;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& seg = parts[i];
    const bool last = i + 1 == parts.size();
    const std::string here = join_path(done, seg);
    if (seg.empty()) throw InputError("--set " + path + ": empty path segment");
    if (node->is_array()) {
      json* next = nullptr;
      if (is_index(seg)) {
        const std::size_t k = std::stoul(seg);
        if (k >= node->size())
          throw InputError("--set " + path + ": " + here + ": index out of range (the list has " +
                           std::to_string(node->size()) + " entries)");
        next = &(*node)[k];
      } else {
        for (json& e : *node)
          if (e.is_object() && e.contains("name") && e["name"] == seg) next = &e;
        if (!next) throw InputError("--set " + path + ": " + here + ": no entry named \"" + seg + "\" in " + done);
      }
      if (last) {
        *next = std::move(value);
        return;
      }
      node = next;
    } else if (node->is_object()) {
      if (last) {
        (*node)[seg] = std::move(value);
        return;
      }
      if (!node->contains(seg)) {
        // Intermediate objects may be created ("contact.kt" when the scene has no "contact").
        if (is_index(seg)) throw InputError("--set " + path + ": " + here + ": no such key");
        (*node)[seg] = json::object();
      }
      node = &(*node)[seg];
    } else {
      throw InputError("--set " + path + ": " + (done.empty() ? std::string("<root>") : done) +
                       " is not an object or a list");
    }
    done = here;
  }
}

json parse_override_value(const std::string& text, const std::string& what) {
  try {
    return parse_json_text(text, what);
  } catch (const InputError& e) {
    if (is_bare_word(text) && !std::isdigit(static_cast<unsigned char>(text[0])) && text[0] != '-') return json(text);
    throw;
  }
}

void apply_override(json& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set " + assignment + ": expected PATH=JSON, e.g. --set contact.kn=2000");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  set_json_path(root, path, parse_override_value(text, "--set " + path));
}

std::vector<std::string> truncate_scene_steps(json& scene, int steps) {
  std::vector<std::string> notices;
  if (!scene.is_object()) return notices;
  scene["steps"] = steps;
  const std::size_t keep = static_cast<std::size_t>(steps) + 1;
  // (list of entries, per-step key) pairs of the scene format.
  static const char* const kPerStep[][2] = {{"handles", "positions"}, {"bodies", "poses"}, {"joints", "target_angles"}};
  for (const auto& [list, key] : kPerStep) {
    if (!scene.contains(list) || !scene[list].is_array()) continue;
    json& entries = scene[list];
    for (std::size_t k = 0; k < entries.size(); ++k) {
      json& e = entries[k];
      if (!e.is_object() || !e.contains(key) || !e[key].is_array() || e[key].size() <= keep) continue;
      const std::size_t had = e[key].size();
      e[key].erase(e[key].begin() + static_cast<std::ptrdiff_t>(keep), e[key].end());
      notices.push_back(std::string(list) + "." + std::to_string(k) + "." + key + ": " + std::to_string(had) +
                        " entries cut to " + std::to_string(keep) + " for steps = " + std::to_string(steps));
    }
  }
  // A "urdf" robot's per-step motor targets: bodies.*.motors.targets.<joint>.
  if (scene.contains("bodies") && scene["bodies"].is_array())
    for (std::size_t k = 0; k < scene["bodies"].size(); ++k) {
      json& e = scene["bodies"][k];
      if (!e.is_object() || !e.contains("motors") || !e["motors"].is_object() || !e["motors"].contains("targets") ||
          !e["motors"]["targets"].is_object())
        continue;
      for (auto& [joint, value] : e["motors"]["targets"].items()) {
        if (!value.is_array() || value.size() <= keep) continue;
        const std::size_t had = value.size();
        value.erase(value.begin() + static_cast<std::ptrdiff_t>(keep), value.end());
        notices.push_back("bodies." + std::to_string(k) + ".motors.targets." + joint + ": " + std::to_string(had) +
                          " entries cut to " + std::to_string(keep) + " for steps = " + std::to_string(steps));
      }
    }
  return notices;
}

}  // namespace addsim
