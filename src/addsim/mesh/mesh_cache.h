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

/// What happened to one mesh that cached_mesh() was asked for, for progress reports (the
/// library does no I/O; the CLI prints these, cli/progress.h).
struct MeshEvent {
  enum class Kind {
    kGenerating,  ///< not in the cache: generation starts now
    kGenerated,   ///< generated (and stored in the cache if possible)
    kFromCache,   ///< loaded from the cache
  };
  Kind kind = Kind::kGenerating;
  std::string what;      ///< what is meshed, e.g. "three-tori mesh"
  int tets = 0;          ///< tetrahedra of the mesh (kGenerated, kFromCache)
  double seconds = 0.0;  ///< wall time of the generation or of the cache load (kGenerated, kFromCache), s
  bool stored = false;   ///< kGenerated: the mesh was written to the cache
};

/// Called by cached_mesh() on the thread that asks for a mesh.
using MeshObserver = std::function<void(const MeshEvent&)>;

/// Installs `observer` for the cached_mesh() calls of this thread while alive, restoring the
/// previous observer at the end. Thread-local, so that meshes built on other threads (batch
/// workers) are not reported to it.
class ScopedMeshObserver {
 public:
  explicit ScopedMeshObserver(MeshObserver observer);
  ~ScopedMeshObserver();
  ScopedMeshObserver(const ScopedMeshObserver&) = delete;
  ScopedMeshObserver& operator=(const ScopedMeshObserver&) = delete;

 private:
  MeshObserver previous_;
};

/// The cached mesh of `key`, else `generate()`, stored for the next time; `what` names the
/// mesh in the MeshEvents this thread's observer receives.
TetMesh cached_mesh(const std::string& key, const std::function<TetMesh()>& generate,
                    const std::string& what = "mesh");

}  // namespace addsim
