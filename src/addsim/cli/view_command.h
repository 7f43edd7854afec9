#pragma once
/// `addsim view DIR`: (re)writes the viewer page of an output folder (docs/viewer.md).

#include <filesystem>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "addsim/io/viewer.h"

namespace addsim::cli {

/// Writes dir/index.html; a missing three.js is reported as a warning on stderr unless
/// `quiet` (the page itself then says how to install it).
ViewerResult write_viewer_page(const std::filesystem::path& dir, bool quiet = false);

/// Saves a PNG still of `page` at embedded frame `frame` (negative: from the end) with
/// headless chromium ($ADDSIM_CHROMIUM, default "chromium", run with an argument vector and a
/// fresh temporary profile). Returns "" on success, else why not.
std::string write_still(const std::filesystem::path& page, const std::filesystem::path& png, int frame = -1);

/// Declares the options of `view` and returns its action.
std::function<int()> setup_view(CLI::App& app);

}  // namespace addsim::cli
