#pragma once
/// Run outputs written into one directory: summary.json (what happened), steps.csv (one
/// row per attempted step), trajectory.npy (q⁰ … q^m, (m+1) × |q|, m) and meta.json (DOF
/// layout and labels, so the trajectory columns can be interpreted).

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Summary of a run: scene name, steps requested/completed, dt (s), integrator, contact
/// model, linear solver, wall time (s), Newton iteration and line-search totals, completed
/// flag, failure message, and per body its final centre of mass (m), its velocity (m/s)
/// and its mass (kg).
nlohmann::json make_summary(const Scene& scene, const Trajectory& traj, const std::string& linear_solver);

/// DOF layout: num_dofs, dt (s), per body name/type/dof_offset/dof_count/dof_labels,
/// per handle its name.
nlohmann::json make_meta(const Scene& scene);

/// Writes "step,time,newton_iterations,residual_norm,line_search_halvings,wall_ms" rows.
void write_steps_csv(const std::filesystem::path& file, const Trajectory& traj, double dt);

/// Creates `dir` if needed and writes summary.json, steps.csv, trajectory.npy, meta.json.
/// Throws InputError if the directory or a file cannot be written.
void write_outputs(const std::filesystem::path& dir, const Scene& scene, const Trajectory& traj,
                   const std::string& linear_solver);

}  // namespace addsim
