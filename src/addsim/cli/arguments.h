#pragma once
/// Options and small parsers of command-line values shared by the commands: the task
/// overrides (`--set`, `--steps`), plain range checks, comma lists and "a:b" ranges. Each
/// failure is an InputError naming the option.

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace addsim::cli {

/// CLI11 checks with plain messages ("--max-sims: must be a positive integer, got 0") instead of
/// CLI11's PositiveNumber/NonNegativeNumber, whose message prints the double range's 309-digit bound.
/// A whole number ≥ 1.
CLI::Validator positive_integer();
/// A whole number ≥ 0 (0: the option's default, e.g. all cores for --threads).
CLI::Validator non_negative_integer();
/// A finite number > 0.
CLI::Validator positive_number();
/// A non-empty path ("--out: must not be empty").
CLI::Validator non_empty_path();

/// Adds a task command's `--set PATH=JSON` (task values, or scene values as scene.PATH; repeatable)
/// and `--steps N`; overrides_in_order() merges them in command-line order.
void add_task_override_options(CLI::App& app, std::vector<std::string>& sets, int& steps);

/// The `--set` overrides of `app` with its `--steps N` (if given, N > 0) inserted as
/// `<steps_key>=N` where --steps stood on the command line, so that a later one wins
/// ("--steps 3 --set steps=4" runs 4 steps, "--set steps=4 --steps 3" runs 3).
std::vector<std::string> overrides_in_order(const CLI::App& app, const std::vector<std::string>& sets, int steps,
                                            const std::string& steps_key);

/// `s` split at every `sep`, keeping empty fields ("a,,b" → {"a", "", "b"}; "a," → {"a", ""}).
std::vector<std::string> split(const std::string& s, char sep);

/// "a:b" → (a, b) with finite numbers; throws InputError "--range: <what> must be a:b …" otherwise.
std::pair<double, double> parse_range(const std::string& text, const std::string& what);

}  // namespace addsim::cli
