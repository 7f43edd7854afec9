#include "addsim/cli/arguments.h"

#include <cerrno>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "addsim/core/error.h"

namespace addsim::cli {

namespace {

// Whether `text` is a whole decimal integer (optional sign), without range limits.
bool is_integer(const std::string& text) {
  std::size_t i = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (i == text.size()) return false;
  for (; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9') return false;
  return true;
}

CLI::Validator integer_at_least(int lo, const std::string& what) {
  return CLI::Validator(
      [lo, what](std::string& text) -> std::string {
        if (is_integer(text) && text[0] != '-' && (lo == 0 || text.find_first_not_of("+0") != std::string::npos))
          return {};
        return "must be " + what + ", got " + text;
      },
      lo == 0 ? "INT>=0" : "INT>=1");
}

}  // namespace

CLI::Validator positive_integer() { return integer_at_least(1, "a positive integer"); }

CLI::Validator non_negative_integer() { return integer_at_least(0, "an integer >= 0"); }

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size() && errno != ERANGE && std::isfinite(v) && v > 0.0)
          return {};
        return "must be a finite number > 0, got " + text;
      },
      "NUMBER>0");
}

CLI::Validator non_empty_path() {
  return CLI::Validator([](std::string& text) { return text.empty() ? std::string("must not be empty") : std::string(); },
                        "PATH");
}

void add_task_override_options(CLI::App& app, std::vector<std::string>& sets, int& steps) {
  app.add_option("--set", sets,
                 "Override a task value (PATH=JSON) or a scene value (scene.PATH=JSON) before validation")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--steps", steps,
                 "Run the scene for N steps: --set scene.steps=N, which also cuts per-step lists (handles, poses, "
                 "motor targets); the objective's steps must lie within N")
      ->check(CLI::Range(1, 1000000000));
}

std::vector<std::string> overrides_in_order(const CLI::App& app, const std::vector<std::string>& sets, int steps,
                                            const std::string& steps_key) {
  if (steps <= 0) return sets;
  const CLI::Option* set_option = app.get_option_no_throw("--set");
  const CLI::Option* steps_option = app.get_option_no_throw("--steps");
  // How many --set values came before the last --steps.
  std::size_t sets_before = 0, seen = 0;
  for (const CLI::Option* o : app.parse_order()) {
    if (o == set_option) ++seen;
    if (o == steps_option) sets_before = seen;
  }
  std::vector<std::string> out(sets.begin(), sets.begin() + static_cast<std::ptrdiff_t>(std::min(sets_before, sets.size())));
  out.push_back(steps_key + "=" + std::to_string(steps));
  out.insert(out.end(), sets.begin() + static_cast<std::ptrdiff_t>(out.size() - 1), sets.end());
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(s);
  while (std::getline(in, cell, sep)) out.push_back(cell);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

std::pair<double, double> parse_range(const std::string& text, const std::string& what) {
  const auto colon = text.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    std::size_t u1 = 0, u2 = 0;
    const std::string sa = text.substr(0, colon), sb = text.substr(colon + 1);
    const double a = std::stod(sa, &u1), b = std::stod(sb, &u2);
    if (u1 == sa.size() && u2 == sb.size() && std::isfinite(a) && std::isfinite(b)) return {a, b};
  } catch (const std::exception&) {
  }
  throw InputError("--range: " + what + " must be a:b with finite numbers, got \"" + text + "\"");
}

}  // namespace addsim::cli
