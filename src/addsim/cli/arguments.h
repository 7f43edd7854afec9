#pragma once
/// Small parsers of command-line values shared by the sampling commands (`landscape`,
/// `sweep`): comma lists and "a:b" ranges. Each failure is an InputError naming the option.

#include <string>
#include <utility>
#include <vector>

namespace addsim::cli {

/// `s` split at every `sep`, keeping empty fields ("a,,b" → {"a", "", "b"}; "a," → {"a", ""}).
std::vector<std::string> split(const std::string& s, char sep);

/// "a:b" → (a, b) with finite numbers; throws InputError "--range: <what> must be a:b …" otherwise.
std::pair<double, double> parse_range(const std::string& text, const std::string& what);

}  // namespace addsim::cli
