#pragma once
/// `addsim optimize` (docs/optimization.md): runs a task's optimisation (its `optimize`
/// section and `stages`) with one Simulator kept alive per stage, logging every evaluation
/// to iterations.csv, a progress line per iteration on stderr, a checkpoint after every
/// iteration (for --resume), and at the end result.json, optimized_scene.json and
/// convergence.png.

#include <functional>

#include <CLI/CLI.hpp>

namespace addsim::cli {

/// `addsim optimize TASK --out DIR [--method M] [--max-sims N] [--resume] [--quiet] [--set ...]`.
std::function<int()> setup_optimize(CLI::App& app);

}  // namespace addsim::cli
