#pragma once
/// Closed triangle surface meshes for rigid bodies: OBJ and STL (ASCII or binary) reading and
/// mass properties by the divergence theorem ([Mirtich 1996]; [Eberly 2002] "Polyhedral
/// Mass Properties"): volume, centroid and inertia per unit density of the enclosed solid.

#include <array>
#include <string>
#include <vector>

#include "addsim/core/types.h"

namespace addsim {

/// A triangle surface: vertices (m) and outward-oriented (counter-clockwise) triangles.
struct SurfaceMesh {
  std::vector<Vec3> vertices;
  std::vector<std::array<int, 3>> triangles;
};

/// Reads an OBJ (v/f lines; polygons are fanned) or STL (ASCII or binary, vertices merged
/// when bit-identical) file. Throws InputError naming the file for unreadable or empty meshes.
SurfaceMesh load_surface_mesh(const std::string& path);

/// Same for the file's content `bytes`; `path` gives the format (its extension) and labels errors.
SurfaceMesh parse_surface_mesh(const std::string& bytes, const std::string& path);

/// Mass properties of the solid a closed, outward-oriented surface encloses, per unit density.
struct MeshMassProperties {
  double volume = 0.0;                ///< m³ (> 0 for outward orientation)
  Vec3 centroid = Vec3::Zero();       ///< m, in the mesh frame
  Mat3 inertia_per_mass = Mat3::Zero();  ///< about the centroid, mesh axes (m²)
};

/// Volume, centroid and Î = I/m about the centroid by the divergence theorem. Throws
/// InputError if the volume is not positive (open or inward-oriented surface).
MeshMassProperties mesh_mass_properties(const SurfaceMesh& mesh);

}  // namespace addsim
