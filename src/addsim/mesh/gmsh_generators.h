#pragma once
/// Solid primitives meshed with the gmsh C++ API (OpenCASCADE kernel), when addsim is
/// built with ADDSIM_WITH_GMSH and gmsh was found; otherwise every generator throws
/// InputError saying so. The element count is steered through the mesh size: a few
/// re-meshes with h scaled by (count / target)^(1/3) pick the closest count. Shapes are
/// centred at the origin; axes along z. The paper's objects (Table 1): the cylinder
/// "puck" (≈ 879 tets), the ball (≈ 451 tets) and three fused tori (≈ 1930 tets).
/// gmsh keeps global state: calls are serialised by a mutex. The returned meshes are in
/// canonical numbering (see canonicalize in tet_mesh.h), so the same arguments give the
/// same mesh, bit for bit, in every process.

#include <array>
#include <string>
#include <vector>

#include "addsim/mesh/tet_mesh.h"

namespace addsim {

/// True when the gmsh generators are available in this build.
bool gmsh_available();

/// Ball of radius r (m) with about target_tets tetrahedra.
TetMesh make_sphere_mesh(double radius, int target_tets);

/// Solid cylinder of radius r and height (m), axis z, with about target_tets tetrahedra.
TetMesh make_cylinder_mesh(double radius, double height, int target_tets);

/// Solid torus with centre-line radius R and tube radius r < R (m), axis z.
TetMesh make_torus_mesh(double major_radius, double minor_radius, int target_tets);

/// Three copies of the torus (R, r) sharing the x diameter, rotated 0°, 60° and 120°
/// about x and fused into one solid (like the paper's "three tori" drop, Fig. ToriBall).
TetMesh make_three_tori_mesh(double major_radius, double minor_radius, int target_tets);

/// Reads the closed triangle surface of Wavefront .obj text (`path` labels errors): vertices
/// (m) and 0-based corner ids; polygons are fanned, "f" entries may carry /texture/normal
/// indices and negative (relative) ids. Throws InputError naming the file and line for bad
/// vertices or face entries, and naming the file for no faces or an open surface (an edge
/// not shared by exactly two triangles). Needs no gmsh.
void parse_obj_surface(const std::string& text, const std::string& path, std::vector<Vec3>& vertices,
                       std::vector<std::array<int, 3>>& triangles);

/// Tetrahedralises the solid bounded by a closed triangle surface read from `path`: Wavefront
/// .obj (v/f lines; polygons fanned into triangles) or .stl. The surface is re-meshed at the
/// size that gives about target_tets tetrahedra (gmsh classifySurfaces + createGeometry),
/// keeping the file's coordinates and units. Throws InputError naming the file for unreadable,
/// unsupported or open surfaces and when gmsh is unavailable.
TetMesh make_mesh_from_surface(const std::string& path, int target_tets);

}  // namespace addsim
