#include "addsim/io/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "addsim/core/error.h"

namespace addsim {

using nlohmann::json;

namespace {

// SAX handler that builds the document while tracking the key path of the value being
// read, so that errors (syntax, overflow, duplicate keys) can name where they happened.
class PathTrackingSax {
 public:
  json root;
  std::string error;       // set when parsing stopped because of a problem we detected
  std::string error_path;  // key path at the error
  bool depth_exceeded = false;  // stopped because lists/objects nest deeper than kMaxJsonDepth

  bool null() { return put(json(nullptr)); }
  bool boolean(bool b) { return put(json(b)); }
  bool number_integer(json::number_integer_t n) { return put(json(n)); }
  bool number_unsigned(json::number_unsigned_t n) { return put(json(n)); }
  bool number_float(json::number_float_t x, const json::string_t&) { return put(json(x)); }
  bool string(json::string_t& s) { return put(json(s)); }
  bool binary(json::binary_t&) { return put(json(nullptr)); }
  bool start_object(std::size_t) {
    if (too_deep()) return false;
    json* slot = insert(json::object());
    stack_.push_back({slot, ""});
    return true;
  }
  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    f.key = k;
    if (f.node->contains(k)) {
      error_path = current_path();
      error = "duplicate key";
      return false;
    }
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    if (too_deep()) return false;
    json* slot = insert(json::array());
    stack_.push_back({slot, ""});
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    position_ = position;
    error_path = current_path();
    // nlohmann's text without its "[json.exception.parse_error.101] " tag and "parse error at
    // line 1, column 2: " prefix (the caller reports the position itself).
    std::string what = ex.what();
    const auto tag = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && tag != std::string::npos) what = what.substr(tag + 2);
    const auto colon = what.find(": ");
    if (what.rfind("parse error", 0) == 0 && colon != std::string::npos) what = what.substr(colon + 2);
    if (what.rfind("number overflow", 0) == 0) what += " (not a finite double)";
    error = what;
    return false;
  }
  std::size_t position() const { return position_; }

 private:
  struct Frame {
    json* node;
    std::string key;
  };

  // Path of the value about to be read (or being read): keys and list indices. Lists below
  // the top of the stack hold the open child as their last element; the top list's next
  // value goes to index size().
  std::string current_path() const {
    std::string path;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      const bool top = i + 1 == stack_.size();
      path = join_path(path, f.node->is_array() ? std::to_string(f.node->size() - (top ? 0 : 1)) : f.key);
    }
    return path;
  }
  json* insert(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = stack_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return &f.node->back();
    }
    json& slot = (*f.node)[f.key];
    slot = std::move(v);
    return &slot;
  }
  bool put(json v) {
    insert(std::move(v));
    return true;
  }

  // Deeper nesting than any addsim file needs is refused before it can exhaust the stack of
  // the recursive copies and destructors of the document.
  bool too_deep() {
    if (static_cast<int>(stack_.size()) < kMaxJsonDepth) return false;
    error_path = current_path();
    error = "lists and objects are nested more than " + std::to_string(kMaxJsonDepth) + " levels deep";
    depth_exceeded = true;
    return true;
  }

  std::vector<Frame> stack_;
  std::size_t position_ = 0;
};

// Offset of the first '[' or '{' (outside strings) that opens level kMaxJsonDepth + 1.
std::size_t deep_bracket(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' || c == '-'; }

// A readable reason for a syntax error at byte `at`, naming the usual mistakes (comments,
// NaN/Infinity, single quotes, trailing commas, bare keys); nlohmann's own text otherwise.
std::string explain_syntax_error(const std::string& text, std::size_t at, std::string parser_text) {
  if (parser_text.rfind("number overflow", 0) == 0) return parser_text;
  if (at >= text.size() || parser_text.find("unexpected end of input") != std::string::npos)
    return "unexpected end of the text (an unclosed '{', '[' or string?)";
  const char c = text[at];
  if (c == '/') return "JSON has no comments ('//' and '/* */' are not allowed)";
  if (c == '#') return "JSON has no comments ('#' is not allowed)";
  if (c == '\'') return "JSON strings and keys need double quotes (\"...\"), not single quotes";
  // The word around `at` (a literal, number or bare key).
  // (Only when the offending character belongs to one: not for a control character that
  // follows a word inside a string.)
  std::size_t a = at, b = at;
  if (word_char(c)) {
    while (a > 0 && word_char(text[a - 1])) --a;
    while (b < text.size() && word_char(text[b])) ++b;
  }
  std::string word = text.substr(a, b - a);
  std::string bare = word;
  if (!bare.empty() && (bare[0] == '-' || bare[0] == '+')) bare.erase(0, 1);
  std::string lower = bare;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "nan" || lower == "inf" || lower == "infinity")
    return "JSON has no NaN or Infinity numbers, got " + word +
           " (Python's json.dump writes them for non-finite floats; use a finite number)";
  if (c == '}' || c == ']') {
    std::size_t k = at;
    while (k > 0 && std::isspace(static_cast<unsigned char>(text[k - 1]))) --k;
    if (k > 0 && text[k - 1] == ',') return std::string("trailing comma before '") + c + "' (JSON allows none)";
  }
  if (parser_text.find("object key") != std::string::npos && !word.empty() && std::isalpha(static_cast<unsigned char>(word[0])))
    return "object keys must be strings in double quotes, got " + word;
  if (lower == "true" || lower == "false" || lower == "null")
    return "JSON literals are lower case: true, false, null; got " + word;
  // nlohmann's explanation, on one line.
  std::string out;
  for (std::size_t i = 0; i < parser_text.size(); ++i) {
    if (parser_text.compare(i, 8, "<U+000A>") == 0) {
      out += "\\n";
      i += 7;
    } else {
      out += parser_text[i];
    }
  }
  return out;
}

std::string bound_text(Bound bound) {
  switch (bound) {
    case Bound::kPositive: return "must be > 0";
    case Bound::kNonNegative: return "must be >= 0";
    case Bound::kAny: break;
  }
  return "";
}

}  // namespace

std::string join_path(const std::string& path, const std::string& key) {
  if (path.empty()) return key;
  return path + "." + key;
}

json parse_json_text(const std::string& text, const std::string& source) {
  PathTrackingSax sax;
  const bool ok = json::sax_parse(text, &sax, json::input_format_t::json, true);
  if (ok) return std::move(sax.root);
  // The byte where parsing stopped: the offending character (the parser reports the count
  // of characters read, one past it), or the bracket that opened one level too many.
  std::size_t at = std::min(sax.position(), text.size());
  if (at > 0) --at;
  if (sax.depth_exceeded) at = deep_bracket(text);
  int line = 1, column = 1;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::ostringstream msg;
  msg << source << ":" << line << ":" << column << ": ";
  // Key paths of runaway nesting are long runs of "0.0.0...": shortened.
  std::string path = sax.error_path;
  if (path.size() > 80) path = path.substr(0, 60) + "...";
  if (!path.empty()) msg << path << ": ";
  const std::string reason = sax.depth_exceeded ? sax.error : explain_syntax_error(text, at, sax.error);
  msg << (reason.empty() ? std::string("invalid JSON") : reason);
  throw InputError(msg.str());
}

void fail_at(const std::string& source, const std::string& path, const std::string& message) {
  std::string msg = source.empty() ? std::string() : source + ": ";
  if (!path.empty()) msg += path + ": ";
  throw InputError(msg + message);
}

namespace {

// The kind of one list entry, for describe(): "number", "list", ...; empty for null.
std::string entry_kind(const json& e) {
  if (e.is_number()) return "number";
  if (e.is_array()) return "list";
  if (e.is_object()) return "object";
  if (e.is_string()) return "string";
  if (e.is_boolean()) return "boolean";
  return "";
}

}  // namespace

std::string describe(const json& v) {
  if (v.is_array()) {
    // The length, and the entries' kind when they all share one ("a list of 2 numbers"), so
    // a length error shows what was given next to what is needed.
    if (v.empty()) return "an empty list";
    std::string kind = entry_kind(v[0]);
    for (const json& e : v)
      if (entry_kind(e) != kind) kind.clear();
    const std::string n = std::to_string(v.size());
    if (kind.empty()) return "a list of " + n + (v.size() == 1 ? " entry" : " entries");
    return "a list of " + n + " " + kind + (v.size() == 1 ? "" : "s");
  }
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

double to_number(const json& v, const std::string& source, const std::string& path, Bound bound) {
  if (!v.is_number()) fail_at(source, path, "expected a number, got " + describe(v));
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail_at(source, path, "must be finite, got " + describe(v));
  const bool bad = (bound == Bound::kPositive && !(x > 0.0)) || (bound == Bound::kNonNegative && !(x >= 0.0));
  if (bad) fail_at(source, path, bound_text(bound) + ", got " + describe(v));
  return x;
}

Vec3 to_vec3(const json& v, const std::string& source, const std::string& path) {
  if (!v.is_array() || v.size() != 3) fail_at(source, path, "expected a list of 3 numbers, got " + describe(v));
  Vec3 x;
  for (int c = 0; c < 3; ++c) x[c] = to_number(v[c], source, join_path(path, std::to_string(c)), Bound::kAny);
  return x;
}

ObjectReader::ObjectReader(const json& j, std::string path, std::string source)
    : j_(j), path_(std::move(path)), source_(std::move(source)) {
  if (!j_.is_object()) fail_at(source_, path_, "expected an object, got " + describe(j_));
}

void ObjectReader::fail(const std::string& key, const std::string& message) const {
  fail_at(source_, join_path(path_, key), message);
}

bool ObjectReader::boolean(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const nlohmann::json& v = raw(key);
  if (!v.is_boolean()) fail(key, "must be true or false, got " + describe(v));
  return v.get<bool>();
}

bool ObjectReader::has(const std::string& key) {
  known_.insert(key);
  return j_.contains(key);
}

const json& ObjectReader::raw(const std::string& key) {
  if (!has(key)) fail(key, "required key is missing");
  return j_.at(key);
}

double ObjectReader::number(const std::string& key, std::optional<double> fallback, Bound bound) {
  if (!has(key)) {
    if (!fallback) fail(key, "required key is missing");
    return *fallback;
  }
  return to_number(j_.at(key), source_, join_path(path_, key), bound);
}

int ObjectReader::integer(const std::string& key, std::optional<int> fallback, int min_value) {
  if (!has(key)) {
    if (!fallback) fail(key, "required key is missing");
    return *fallback;
  }
  const json& v = j_.at(key);
  if (!v.is_number_integer()) fail(key, "expected an integer, got " + describe(v));
  const long long x = v.get<long long>();
  if (x < min_value) fail(key, "must be >= " + std::to_string(min_value) + ", got " + describe(v));
  if (x > 1000000000LL) fail(key, "is too large, got " + describe(v));
  return static_cast<int>(x);
}

std::string ObjectReader::string(const std::string& key, std::optional<std::string> fallback) {
  if (!has(key)) {
    if (!fallback) fail(key, "required key is missing");
    return *fallback;
  }
  const json& v = j_.at(key);
  if (!v.is_string()) fail(key, "expected a string, got " + describe(v));
  return v.get<std::string>();
}

std::string ObjectReader::choice(const std::string& key, std::optional<std::string> fallback,
                                 std::initializer_list<const char*> choices) {
  const std::string s = string(key, std::move(fallback));
  std::string allowed;
  for (const char* c : choices) {
    if (s == c) return s;
    allowed += allowed.empty() ? std::string("\"") + c + "\"" : std::string(", \"") + c + "\"";
  }
  fail(key, "must be one of " + allowed + ", got \"" + s + "\"");
}

Vec3 ObjectReader::vec3(const std::string& key, std::optional<Vec3> fallback) {
  if (!has(key)) {
    if (!fallback) fail(key, "required key is missing");
    return *fallback;
  }
  return to_vec3(j_.at(key), source_, join_path(path_, key));
}

std::vector<Vec3> ObjectReader::vec3_list(const std::string& key, bool allow_empty) {
  const json& v = raw(key);
  if (!v.is_array()) fail(key, "expected a list of 3-vectors, got " + describe(v));
  if (v.empty() && !allow_empty) fail(key, "must not be empty");
  std::vector<Vec3> out;
  out.reserve(v.size());
  for (std::size_t k = 0; k < v.size(); ++k)
    out.push_back(to_vec3(v[k], source_, join_path(join_path(path_, key), std::to_string(k))));
  return out;
}

const json& ObjectReader::list(const std::string& key) {
  static const json kEmpty = json::array();
  if (!has(key)) return kEmpty;
  const json& v = j_.at(key);
  if (!v.is_array()) fail(key, "expected a list, got " + describe(v));
  return v;
}

void ObjectReader::finish() const {
  for (const auto& [key, value] : j_.items()) {
    if (known_.count(key)) continue;
    std::string allowed;
    for (const std::string& k : known_) allowed += (allowed.empty() ? "" : ", ") + k;
    fail(key, "unknown key (allowed here: " + allowed + ")");
  }
}

}  // namespace addsim
