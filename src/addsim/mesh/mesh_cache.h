#pragma once
/// A cache of generated tetrahedral meshes on disk, so that scenes do not re-mesh the same
/// gmsh primitives at every start (the three tori took ≈ 5 s). A mesh is stored under a
/// key that names the generator, its exact parameters and the gmsh version; the file holds
/// the key itself and a checksum, and is used only if both match and the mesh validates.
/// Folder: $ADDSIM_MESH_CACHE_DIR, else $XDG_CACHE_HOME/addsim/meshes, else
/// $HOME/.cache/addsim/meshes; ADDSIM_MESH_CACHE=0 turns the cache off.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "addsim/mesh/tet_mesh.h"

namespace addsim {

/// The cache folder, or an empty path when caching is off (ADDSIM_MESH_CACHE=0, or no
/// $ADDSIM_MESH_CACHE_DIR, $XDG_CACHE_HOME or $HOME).
std::filesystem::path mesh_cache_dir();

/// 64-bit FNV-1a hash of `n` bytes, continuing from `hash`.
std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t hash = 0xcbf29ce484222325ULL);

/// The file that holds the mesh of `key` (in mesh_cache_dir()).
std::filesystem::path mesh_cache_file(const std::string& key);

/// The mesh stored for `key`, or nullopt when caching is off or there is none. A file that is
/// truncated, fails its checksum, belongs to another key or holds an invalid mesh is
/// removed and nullopt returned, so that the caller regenerates it.
std::optional<TetMesh> load_cached_mesh(const std::string& key);

/// Stores `mesh` for `key` (written to a temporary file and renamed, so readers never see
/// a partial file). Returns false, leaving no file, when it cannot be written: the cache is
/// an optimisation, not an error.
bool store_cached_mesh(const std::string& key, const TetMesh& mesh);

/// The cached mesh of `key`, else `generate()`, stored for the next time.
TetMesh cached_mesh(const std::string& key, const std::function<TetMesh()>& generate);

}  // namespace addsim
