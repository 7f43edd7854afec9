#pragma once
/// Checks of a finished run that the solver cannot make step by step (docs/scene-format.md,
/// "Outputs", warnings): steps accepted at the round-off floor or on a tiny Newton step,
/// energy growth in a passive scene, and bodies that start inside an obstacle. Each finding
/// is one line for stderr and a field of summary.json; none of them fails the run (a floor
/// step that is far from converged already did, Simulator::run).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Energy growth above which a passive scene is warned about: max_i E_i − E_0 > this × the
/// energy that moves in the run (max_i T_i + max_i U_i − min_i U_i).
inline constexpr double kEnergyGrowthWarning = 0.1;
/// A contact point starts inside an obstacle when its gap is below −tolerance, the largest of
/// this × its body's extent (bounding-box diagonal of the body's contact points at q⁰), twice
/// the depth at which the obstacle's k_n alone carries the body's weight (2 m |g| / k_n), and
/// kPenetrationFloor.
inline constexpr double kPenetrationFraction = 0.01;
inline constexpr double kPenetrationFloor = 1e-9;  ///< m

/// A body that starts inside an obstacle: its deepest contact point.
struct InitialPenetration {
  std::string body;      ///< scene name or key path
  std::string obstacle;  ///< obstacle name
  double depth = 0.0;    ///< −gap, m (> tolerance)
  double tolerance = 0.0;  ///< m
};

struct RunChecks {
  // Steps accepted at the floor (StepReport::accepted_at_floor).
  int floor_steps = 0;
  int first_floor_step = -1;
  double max_floor_relative_residual = 0.0;  ///< over those steps
  int max_floor_step = -1;
  // Energy (passive scenes only: no handles, kinematic bodies or driven joints, and no body
  // starting inside an obstacle, whose penalty energy E does not count).
  bool passive = false;
  double initial_energy = 0.0;  ///< E_0 = T + U (J)
  double peak_energy = 0.0;     ///< max_i E_i (J)
  int peak_step = 0;
  double energy_scale = 0.0;    ///< max_i T_i + max_i U_i − min_i U_i (J)
  bool energy_growth = false;   ///< peak − initial > kEnergyGrowthWarning × scale
  std::vector<InitialPenetration> penetrations;
  std::vector<std::string> warnings;  ///< one line each, without a "warning:" prefix
};

/// Runs the checks on a (possibly partial) trajectory of `scene`.
RunChecks check_run(const Scene& scene, const Trajectory& traj);
/// The summary.json fields of the checks ("steps_accepted_at_floor", …, "warnings").
void add_run_checks(nlohmann::json& summary, const RunChecks& checks);
/// True for a scene without handles, kinematic rigid bodies or driven joints (motors,
/// prismatic drives): nothing but the initial state puts energy in.
bool passive_scene(const Model& model);

}  // namespace addsim
