#pragma once
/// Run outputs written into one directory: summary.json (what happened), steps.csv (one
/// row per attempted step), trajectory.npy (q⁰ … q^m, (m+1) × |q|, m), meta.json (DOF
/// layout, labels and geometry, so the trajectory can be interpreted and drawn) and
/// energies.csv (energies and contact points per stored state).

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Summary of a run: scene name, steps requested/completed, dt (s), integrator, contact
/// model, linear solver, wall time (s), Newton iteration and line-search totals, completed
/// flag, failure message, and per body its final centre of mass (m), its velocity (m/s)
/// and its mass (kg).
nlohmann::json make_summary(const Scene& scene, const Trajectory& traj, const std::string& linear_solver);

/// DOF layout: num_dofs, dt (s), per body name/type/dof_offset/dof_count/dof_labels and its
/// drawable geometry, per handle its name and positions per step (from p, default: the
/// scene's parameters), obstacles, springs and joints (docs/viewer.md "meta.json").
nlohmann::json make_meta(const Scene& scene, const VecX* p = nullptr);

/// Energies per stored state (J): kinetic first, then the potential energies of the terms
/// grouped as "gravity", "elastic" (FEM), "springs", "joints" (only groups non-zero at some
/// state), and the number of contact points (point–obstacle pairs with negative gap).
struct Energies {
  std::vector<std::string> columns;          ///< "kinetic", "gravity", ...
  std::vector<std::vector<double>> values;   ///< [state][column]
  std::vector<int> contact_points;           ///< [state]
};
Energies make_energies(const Scene& scene, const Trajectory& traj);

/// Writes "step,time,<columns>,total,contact_points" rows, one per stored state.
void write_energies_csv(const std::filesystem::path& file, const Energies& energies, double dt);

/// Writes "step,time,newton_iterations,residual_norm,line_search_halvings,wall_ms" rows.
void write_steps_csv(const std::filesystem::path& file, const Trajectory& traj, double dt);

/// Creates `dir` if needed and writes summary.json, steps.csv, trajectory.npy, meta.json, energies.csv.
/// Throws InputError if the directory or a file cannot be written.
void write_outputs(const std::filesystem::path& dir, const Scene& scene, const Trajectory& traj,
                   const std::string& linear_solver);

}  // namespace addsim
