#include "addsim/cli/arguments.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "addsim/core/error.h"

namespace addsim::cli {

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
