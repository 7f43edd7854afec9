#pragma once
/// Run outputs written into one directory: summary.json (what happened), steps.csv (one
/// row per attempted step with the solver's report and per-state diagnostics), trajectory.npy (q⁰ … q^m, (m+1) × |q|, m), meta.json (DOF
/// layout, labels and geometry, so the trajectory can be interpreted and drawn) and
/// energies.csv (energies and contact points per stored state).

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/io/npy.h"
#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Summary of a run: scene name, steps requested/completed, dt (s), integrator, contact
/// model, linear solver, wall time (s), Newton iteration and line-search totals, completed
/// flag, status ("completed", "failed": a step did not converge, "interrupted": stopped
/// early), failure message (the reason, also for an interrupt), failed step, and per body its final centre of mass (m), its velocity (m/s)
/// and its mass (kg).
nlohmann::json make_summary(const Scene& scene, const Trajectory& traj, const std::string& linear_solver);

/// DOF layout: num_dofs, dt (s), per body name/type/dof_offset/dof_count/dof_labels and its
/// drawable geometry, per handle its name and positions per step (from p, default: the
/// scene's parameters), obstacles, springs and joints (docs/viewer.md "meta.json").
nlohmann::json make_meta(const Scene& scene, const VecX* p = nullptr);

/// What steps.csv and energies.csv report about one stored state q^i: the energies (J) in
/// the order of energy_columns(), the number of contact points (point–obstacle pairs with
/// negative gap), the smallest gap (m; rigid proxies: minus their radius; +inf without any
/// obstacle) and per body its centre of mass (m) and that point's velocity (m/s).
struct StateDiagnostics {
  std::vector<double> energies;
  int contact_points = 0;
  double min_gap = 0.0;
  std::vector<Vec3> com;
  std::vector<Vec3> com_velocity;
};

/// The energy groups of the model: "kinetic", then the potential energies of its terms grouped
/// as "gravity", "elastic" (FEM), "springs", "joints" or the term's own name.
std::vector<std::string> energy_columns(const Model& model);

/// Diagnostics of stored state i (0 ≤ i < traj.q.size()), energies in `columns` order.
StateDiagnostics state_diagnostics(const Scene& scene, const Trajectory& traj, int i,
                                   const std::vector<std::string>& columns);

/// Energies per stored state (J): kinetic first, then the potential groups of
/// energy_columns() that are non-zero at some state, and the number of contact points.
struct Energies {
  std::vector<std::string> columns;          ///< "kinetic", "gravity", ...
  std::vector<std::vector<double>> values;   ///< [state][column]
  std::vector<int> contact_points;           ///< [state]
};
Energies make_energies(const Scene& scene, const Trajectory& traj);

/// Writes "step,time,<columns>,total,contact_points" rows, one per stored state.
void write_energies_csv(const std::filesystem::path& file, const Energies& energies, double dt);

/// Writes steps.csv: one row per attempted step, the solver's report and the diagnostics
/// of the state it reached (nan for a step that failed); columns in docs/viewer.md.
void write_steps_csv(const std::filesystem::path& file, const Scene& scene, const Trajectory& traj);

/// Writes a run's files into a folder while it runs, so an interrupted or failed run keeps
/// every converged step (issue 18, defect 8). The constructor writes meta.json, a
/// summary.json saying "status": "running" (completed false) and the headers of steps.csv
/// and trajectory.npy; append() adds the steps and states the run gained since the last
/// call, flushed to the files at least every kFlushSeconds (and at every step slower than
/// that), so a killed process leaves valid files of almost all its steps; finish() adds the
/// rest and writes energies.csv and the final summary.json (atomically, by renaming).
class RunWriter {
 public:
  /// Longest time the files lag behind the run, s (two system calls per flush: cheap at this rate).
  static constexpr double kFlushSeconds = 0.2;
  /// `dir` must exist (cli::prepare_output_dir). With `summary` false no summary.json is
  /// written (the viewer's data folders). Throws InputError if a file cannot be written.
  RunWriter(const std::filesystem::path& dir, const Scene& scene, const VecX& p, std::string linear_solver,
            bool summary = true);
  ~RunWriter();
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;
  /// Writes the reports and states of `traj` not yet written (traj grows between calls).
  void append(const Trajectory& traj);
  /// append(), then energies.csv and summary.json. Call once, at the end of the run.
  void finish(const Trajectory& traj);

 private:
  const std::filesystem::path dir_;
  const Scene& scene_;
  const std::string linear_solver_;
  const bool summary_;
  std::vector<std::string> energy_columns_;
  std::vector<StateDiagnostics> states_;  ///< diagnostics of every stored state written so far
  std::size_t reports_written_ = 0;
  std::FILE* steps_ = nullptr;
  std::string pending_rows_;  ///< steps.csv rows not yet flushed
  std::chrono::steady_clock::time_point last_flush_;
  void flush();
  std::unique_ptr<NpyRowWriter> npy_;
};

/// Writes summary.json, steps.csv, trajectory.npy, meta.json and energies.csv of a finished
/// (or failed) run into `dir`, created if needed. Throws InputError if a file cannot be written.
void write_outputs(const std::filesystem::path& dir, const Scene& scene, const Trajectory& traj,
                   const std::string& linear_solver);

}  // namespace addsim
