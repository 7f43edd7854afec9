#pragma once
/// `addsim sweep`: a task's objective and gradient at many parameter points — a 1-D or 2-D
/// grid of scalar parameters, or N random samples within the task's bounds — run as one
/// batch over all cores (batch/batch.h), written as CSV (docs/task-format.md).

#include <functional>

#include <CLI/CLI.hpp>

namespace addsim::cli {

/// `addsim sweep TASK --out DIR (--axes P1[,P2] --grid N[xM] --range a:b[,c:d] | --samples N [--seed S])
/// [--threads K] [--no-gradient] [--quiet] [--set ...]`.
std::function<int()> setup_sweep(CLI::App& app);

}  // namespace addsim::cli
