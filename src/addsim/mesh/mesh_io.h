#pragma once
/// Tetrahedral mesh files: Gmsh .msh (ASCII format 2.x and 4.1; element type 4 = linear
/// tetrahedron, all other element types ignored) and TetGen .node/.ele pairs. Loaders keep
/// only nodes used by some tetrahedron and orient every tetrahedron positively.

#include <istream>
#include <string>

#include "addsim/mesh/tet_mesh.h"

namespace addsim {

/// Parses a Gmsh ASCII .msh stream (format 2.x or 4.1); `name` labels errors.
/// Throws InputError naming the file and line for binary or malformed files and meshes
/// without tetrahedra.
TetMesh parse_gmsh_msh(std::istream& in, const std::string& name);

/// Loads a Gmsh ASCII .msh file (see parse_gmsh_msh).
TetMesh load_gmsh_msh(const std::string& path);

/// Parses TetGen .node and .ele streams (any first index, attributes and markers ignored).
TetMesh parse_tetgen(std::istream& node, std::istream& ele, const std::string& name);

/// Loads TetGen files: `path` is either "<base>.node", "<base>.ele" or "<base>"; both
/// "<base>.node" and "<base>.ele" are read.
TetMesh load_tetgen(const std::string& path);

/// Loads a mesh by extension: ".msh" (Gmsh) or ".node"/".ele" (TetGen). Throws InputError
/// for other extensions or unreadable files.
TetMesh load_tet_mesh(const std::string& path);

}  // namespace addsim
