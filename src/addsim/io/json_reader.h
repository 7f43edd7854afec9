#pragma once
/// Strict JSON reading for scene files: a parser that names the file, line, column and key
/// path of syntax errors, and ObjectReader, a typed view of one JSON object that names the
/// key path of every wrong type, missing key, unknown key and out-of-range value in the
/// InputError it throws ("scene.json: bodies.0.mass: must be > 0, got -1").

#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/core/types.h"

namespace addsim {

/// Deepest nesting of lists and objects accepted in any JSON input (addsim's own files need
/// fewer than 10 levels).
inline constexpr int kMaxJsonDepth = 64;

/// Parses JSON text; throws InputError "<source>:<line>:<col>: <key path>: <problem>" on a
/// syntax error (with a readable reason: comments, NaN/Infinity, single quotes, trailing
/// commas and bare keys are named as such), a duplicate key, a number that overflows a
/// double, or nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

/// Joins a key path and a key ("bodies.0" + "mass" → "bodies.0.mass"; "" + "dt" → "dt").
std::string join_path(const std::string& path, const std::string& key);

/// Allowed range of a scalar.
enum class Bound { kAny, kPositive, kNonNegative };

/// Typed, validating access to one JSON object at a key path. Every getter marks its key
/// as known; finish() then rejects any key that was never asked for.
class ObjectReader {
 public:
  /// j must outlive the reader; throws InputError if j is not an object.
  ObjectReader(const nlohmann::json& j, std::string path, std::string source);

  /// Key path of this object ("" for the top level, "bodies.0", ...).
  const std::string& path() const { return path_; }
  /// File name (or label) that prefixes error messages.
  const std::string& source() const { return source_; }
  /// True if the key is present (and marks it as known).
  bool has(const std::string& key);
  /// The raw value of a present key (marks it as known); throws if absent.
  const nlohmann::json& raw(const std::string& key);
  /// A finite number within `bound`; `fallback` when absent (throws if absent and none).
  double number(const std::string& key, std::optional<double> fallback, Bound bound = Bound::kAny);
  /// An integer ≥ min_value; `fallback` when absent.
  int integer(const std::string& key, std::optional<int> fallback, int min_value);
  /// true or false; `fallback` when absent.
  bool boolean(const std::string& key, bool fallback);
  /// A string; `fallback` when absent.
  std::string string(const std::string& key, std::optional<std::string> fallback);
  /// One of `choices`; `fallback` when absent.
  std::string choice(const std::string& key, std::optional<std::string> fallback,
                     std::initializer_list<const char*> choices);
  /// A list of 3 finite numbers; `fallback` when absent.
  Vec3 vec3(const std::string& key, std::optional<Vec3> fallback);
  /// A list of 3-vectors (non-empty unless allow_empty).
  std::vector<Vec3> vec3_list(const std::string& key, bool allow_empty = false);
  /// A list of JSON values (empty when absent).
  const nlohmann::json& list(const std::string& key);
  /// Throws InputError naming the first key that no getter asked for.
  void finish() const;
  /// Throws InputError "<source>: <path.key>: <message>".
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::json& j_;
  std::string path_;
  std::string source_;
  std::set<std::string> known_;
};

/// Throws InputError "<source>: <path>: <message>" (path may be empty).
[[noreturn]] void fail_at(const std::string& source, const std::string& path, const std::string& message);

/// The value as a finite number within `bound`, else InputError naming `path`.
double to_number(const nlohmann::json& v, const std::string& source, const std::string& path, Bound bound);
/// The value as a 3-vector of finite numbers, else InputError naming `path`.
Vec3 to_vec3(const nlohmann::json& v, const std::string& source, const std::string& path);
/// Short description of a JSON value for error messages ("-1", "\"abc\"", "a list of 2 numbers",
/// "a list of 3 lists", "an empty list", "an object").
std::string describe(const nlohmann::json& v);

}  // namespace addsim
