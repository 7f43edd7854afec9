#pragma once
/// ParaView output: one VTK XML UnstructuredGrid (.vtu, binary appended data) per frame and
/// a .pvd collection that lists the frames with their times. Every body kind is written:
/// FEM bodies as their boundary triangles or their tetrahedra, particles as vertices, sheets
/// as vertices and triangles, rigid bodies as their shape's triangle mesh posed by q; and
/// handles (vertices), springs and joints (lines) and obstacles (a finite quad per plane,
/// centred under the bodies). Positions come from the trajectory (m).

#include <filesystem>
#include <string>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Which cells represent a FEM body.
enum class VtkCells { kSurface, kVolume };

/// Options of a VTK series.
struct VtkOptions {
  VtkCells cells = VtkCells::kSurface;  ///< FEM bodies as boundary triangles or tetrahedra
  int every = 1;                        ///< write every n-th stored state (≥ 1); the last is always written
};

/// Values of the per-cell array "part": what a cell belongs to (cell array "body" holds the
/// scene body index of kBody cells, −1 for the others).
enum class VtkPart : int { kBody = 0, kHandle = 1, kSpring = 2, kJoint = 3, kObstacle = 4 };

/// Writes one .vtu for q (|q|, m) at step `step` (handle positions come from p, |p|). Throws
/// InputError if the file cannot be written.
void write_vtu(const std::filesystem::path& file, const Scene& scene, const VecX& q, const VecX& p, int step,
               const VtkOptions& options = {});

/// Writes `<dir>/vtk/frame_<i>.vtu` for the stored states of `traj` (i = step, zero-padded
/// to 6 digits), after removing the frame files an earlier run left in `<dir>/vtk`, and
/// `<dir>/trajectory.pvd` listing them with their times (s). Returns the frame files
/// written, relative to `dir`. Throws InputError for bad options or failed writes.
std::vector<std::string> write_vtk_series(const std::filesystem::path& dir, const Scene& scene,
                                          const Trajectory& traj, const VtkOptions& options = {});

}  // namespace addsim
