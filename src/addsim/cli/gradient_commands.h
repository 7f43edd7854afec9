#pragma once
/// The gradient subcommands of addsim (docs/task-format.md, docs/gradients.md):
/// `gradient` (Φ and dΦ/dp of a task as JSON), `gradcheck` (adjoint vs direct vs finite
/// differences per selected parameter, skipping steps that change the contact signature) and `landscape` (Φ and its gradient on a
/// 2-D parameter grid, in parallel, as CSV and PNG).

#include <functional>

#include <CLI/CLI.hpp>

namespace addsim::cli {

/// Exit code of `gradcheck` when an estimate disagrees beyond the tolerance.
inline constexpr int kGradcheckFailed = 4;

/// `addsim gradient TASK [--method adjoint|direct] [--scaled] [--out FILE] [--set ...]`.
std::function<int()> setup_gradient(CLI::App& app);
/// `addsim gradcheck TASK [--fd-step H] [--contact] [--tolerance T] [--out FILE] [--set ...]`.
std::function<int()> setup_gradcheck(CLI::App& app);
/// `addsim landscape TASK --axes P1,P2 --grid NxM --range a:b,c:d --out DIR [--threads K]`.
std::function<int()> setup_landscape(CLI::App& app);

}  // namespace addsim::cli
