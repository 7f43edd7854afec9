#pragma once
/// ParaView output: one VTK XML UnstructuredGrid (.vtu, ASCII) per frame and a .pvd
/// collection that lists the frames with their times. FEM bodies are written as their
/// boundary triangles or their tetrahedra, particle bodies as vertices; positions come
/// from the trajectory (m). Other body kinds are not written.

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

/// Writes one .vtu for q (|q|, m): the points of every particle and FEM body, cells as per
/// `options`, and per-cell data "body" (scene body index). Throws InputError if the file
/// cannot be written.
void write_vtu(const std::filesystem::path& file, const Scene& scene, const VecX& q, const VtkOptions& options = {});

/// Writes `<dir>/vtk/frame_<i>.vtu` for the stored states of `traj` (i = step, zero-padded
/// to 6 digits) and `<dir>/trajectory.pvd` listing them with their times (s). Returns the
/// frame files written, relative to `dir`. Throws InputError for bad options or failed writes.
std::vector<std::string> write_vtk_series(const std::filesystem::path& dir, const Scene& scene,
                                          const Trajectory& traj, const VtkOptions& options = {});

}  // namespace addsim
