#include "addsim/mesh/mesh_cache.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "addsim/core/error.h"

namespace addsim {

namespace fs = std::filesystem;

namespace {

// File layout (little-endian, native doubles): magic, key length and key, node and tet
// counts, node coordinates (3 doubles each), tet node ids (4 int32 each), then the FNV-1a
// hash of everything before it.
constexpr char kMagic[8] = {'A', 'D', 'D', 'S', 'M', 'S', 'H', '1'};

template <class T>
void put(std::string& out, const T& x) {
  out.append(reinterpret_cast<const char*>(&x), sizeof x);
}

// Reads a T at `at` if the bytes are there.
template <class T>
bool get(const std::string& in, std::size_t& at, T& x) {
  if (in.size() < at + sizeof x) return false;
  std::memcpy(&x, in.data() + at, sizeof x);
  at += sizeof x;
  return true;
}

std::string serialize(const std::string& key, const TetMesh& mesh) {
  std::string out(kMagic, sizeof kMagic);
  put(out, static_cast<std::uint64_t>(key.size()));
  out += key;
  put(out, static_cast<std::uint64_t>(mesh.nodes.size()));
  put(out, static_cast<std::uint64_t>(mesh.tets.size()));
  for (const Vec3& x : mesh.nodes)
    for (int c = 0; c < 3; ++c) put(out, x[c]);
  for (const auto& t : mesh.tets)
    for (int id : t) put(out, static_cast<std::int32_t>(id));
  put(out, fnv1a64(out.data(), out.size()));
  return out;
}

std::optional<TetMesh> deserialize(const std::string& in, const std::string& key) {
  if (in.size() < sizeof kMagic + 8 || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  std::uint64_t stored_hash = 0;
  std::memcpy(&stored_hash, in.data() + in.size() - sizeof stored_hash, sizeof stored_hash);
  if (fnv1a64(in.data(), in.size() - sizeof stored_hash) != stored_hash) return std::nullopt;
  std::size_t at = sizeof kMagic;
  std::uint64_t key_size = 0, nodes = 0, tets = 0;
  if (!get(in, at, key_size) || key_size != key.size() || in.compare(at, key_size, key) != 0) return std::nullopt;
  at += key_size;
  if (!get(in, at, nodes) || !get(in, at, tets) || nodes > in.size() || tets > in.size()) return std::nullopt;
  if (in.size() != at + nodes * 3 * sizeof(double) + tets * 4 * sizeof(std::int32_t) + sizeof stored_hash)
    return std::nullopt;
  TetMesh mesh;
  mesh.nodes.resize(nodes);
  mesh.tets.resize(tets);
  for (Vec3& x : mesh.nodes)
    for (int c = 0; c < 3; ++c) get(in, at, x[c]);
  for (auto& t : mesh.tets)
    for (int& id : t) {
      std::int32_t v = 0;
      get(in, at, v);
      id = v;
    }
  try {
    validate(mesh, "cached mesh");
  } catch (const InputError&) {
    return std::nullopt;
  }
  return mesh;
}

}  // namespace

std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t hash) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t k = 0; k < n; ++k) {
    hash ^= bytes[k];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

fs::path mesh_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (env("ADDSIM_MESH_CACHE") == "0") return {};
  if (!env("ADDSIM_MESH_CACHE_DIR").empty()) return env("ADDSIM_MESH_CACHE_DIR");
  if (!env("XDG_CACHE_HOME").empty()) return fs::path(env("XDG_CACHE_HOME")) / "addsim" / "meshes";
  if (!env("HOME").empty()) return fs::path(env("HOME")) / ".cache" / "addsim" / "meshes";
  return {};
}

fs::path mesh_cache_file(const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.mesh", static_cast<unsigned long long>(fnv1a64(key.data(), key.size())));
  return mesh_cache_dir() / name;
}

std::optional<TetMesh> load_cached_mesh(const std::string& key) {
  if (mesh_cache_dir().empty()) return std::nullopt;
  const fs::path file = mesh_cache_file(key);
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  in.close();
  std::optional<TetMesh> mesh = deserialize(bytes.str(), key);
  std::error_code ec;
  if (!mesh) fs::remove(file, ec);
  return mesh;
}

bool store_cached_mesh(const std::string& key, const TetMesh& mesh) {
  const fs::path dir = mesh_cache_dir();
  if (dir.empty()) return false;
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path file = mesh_cache_file(key);
  // Unique per process, so that concurrent runs never write into the same temporary file.
  const fs::path tmp = file.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return false;
    const std::string bytes = serialize(key, mesh);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, file, ec);
  const bool stored = !ec;
  if (!stored) fs::remove(tmp, ec);
  return stored;
}

namespace {
// The observer of this thread's cached_mesh() calls (ScopedMeshObserver).
thread_local MeshObserver t_mesh_observer;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

ScopedMeshObserver::ScopedMeshObserver(MeshObserver observer) : previous_(std::move(t_mesh_observer)) {
  t_mesh_observer = std::move(observer);
}

ScopedMeshObserver::~ScopedMeshObserver() { t_mesh_observer = std::move(previous_); }

TetMesh cached_mesh(const std::string& key, const std::function<TetMesh()>& generate, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  const MeshObserver observer = t_mesh_observer;
  if (std::optional<TetMesh> mesh = load_cached_mesh(key)) {
    if (observer) observer({MeshEvent::Kind::kFromCache, what, mesh->num_tets(), seconds_since(start)});
    return *std::move(mesh);
  }
  if (observer) observer({MeshEvent::Kind::kGenerating, what, 0, 0.0});
  TetMesh mesh = generate();
  const bool stored = store_cached_mesh(key, mesh);
  if (observer) observer({MeshEvent::Kind::kGenerated, what, mesh.num_tets(), seconds_since(start), stored});
  return mesh;
}

}  // namespace addsim
