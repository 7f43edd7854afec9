#pragma once
/// The HTML viewer of a run (docs/viewer.md): DIR/index.html, one self-contained page that
/// opens offline from the file system (no server, no network) and plays the trajectory in
/// 3D with three.js (inlined from the npm package "three" that scripts/install-deps.sh
/// installs), next to plots of the per-step reports, energies and contact points. The
/// page is built from the files write_outputs() leaves in DIR, so `addsim view DIR`
/// rebuilds it without the scene.

#include <cstddef>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace addsim {

struct ViewerOptions {
  /// three.js as CommonJS (three/build/three.cjs); empty: $ADDSIM_THREE_JS, else the copy
  /// scripts/install-deps.sh puts under third_party/npm of the source tree.
  std::filesystem::path three_js;
  /// Budget of the embedded trajectory (Float32 bytes before base64): states are decimated
  /// evenly (the last always kept) so that the drawn coordinates of all kept states fit.
  std::size_t max_trajectory_bytes = std::size_t{3} << 20;
  /// Budget of each per-step series the plots draw (steps.csv, energies.csv; estimated at 24
  /// bytes per number): longer files are embedded as the minimum and maximum of each bucket of
  /// consecutive steps, so that spikes stay visible (the CSV files themselves stay complete).
  std::size_t max_series_bytes = std::size_t{1} << 20;
};

/// What write_viewer wrote.
struct ViewerResult {
  std::filesystem::path page;   ///< DIR/index.html
  int states_stored = 0;        ///< states in trajectory.npy
  int states_embedded = 0;      ///< states kept in the page
  std::size_t series_rows = 0;  ///< rows of the longer of steps.csv and energies.csv
  std::size_t series_bucket = 1;  ///< rows per min/max bucket of the plotted series (1: every row)
  bool has_three = false;       ///< false: three.js was missing, the page shows plots and a notice
  std::string notice;           ///< why the 3D view is missing (empty when has_three)
};

/// The three.js file write_viewer reads by default (see ViewerOptions::three_js).
std::filesystem::path default_three_js();

/// Writes DIR/index.html from DIR's meta.json, trajectory.npy, steps.csv, and if present
/// summary.json, energies.csv and plots.json. Throws InputError naming the file if DIR is not
/// an output folder or a file cannot be read or written. A missing three.js is not an error:
/// the page then says which command installs it (ViewerResult::notice).
ViewerResult write_viewer(const std::filesystem::path& dir, const ViewerOptions& options = {});

/// For commands that run simulations themselves (optimize, gradient): writes meta.json,
/// trajectory.npy, steps.csv and energies.csv of `traj` into DIR (created if needed), and
/// `plots` (if not null: a list of extra plots, docs/viewer.md "plots.json") as plots.json,
/// then the page as above.
ViewerResult write_viewer(const std::filesystem::path& dir, const Scene& scene, const Trajectory& traj,
                          const nlohmann::json& plots = nullptr, const ViewerOptions& options = {});

}  // namespace addsim
