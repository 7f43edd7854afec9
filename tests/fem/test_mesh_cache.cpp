// The on-disk cache of generated meshes (mesh/mesh_cache.h): round trip, rejection of
// damaged files, and gmsh generators that reuse it bit for bit.

#include "addsim/mesh/mesh_cache.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <fstream>

#include <gtest/gtest.h>

#include "addsim/mesh/gmsh_generators.h"
#include "addsim/mesh/mesh_generators.h"
#include "../support/temp_dir.h"

namespace addsim {
namespace {

namespace fs = std::filesystem;

// Points the cache at a folder that does not exist yet, in the test's temporary directory
// (support/temp_dir.h), and restores the environment after.
class MeshCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::test_temp_dir() / "cache";
    const char* old = std::getenv("ADDSIM_MESH_CACHE_DIR");
    had_old_ = old != nullptr;
    if (old) old_ = old;
    setenv("ADDSIM_MESH_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (had_old_)
      setenv("ADDSIM_MESH_CACHE_DIR", old_.c_str(), 1);
    else
      unsetenv("ADDSIM_MESH_CACHE_DIR");
  }
  fs::path dir_;
  bool had_old_ = false;
  std::string old_;
};

void expect_identical(const TetMesh& a, const TetMesh& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  ASSERT_EQ(a.tets, b.tets);
  for (std::size_t k = 0; k < a.nodes.size(); ++k)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(a.nodes[k][c], b.nodes[k][c]) << k;  // bit for bit
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST_F(MeshCache, RoundTripIsExact) {
  TetMesh mesh = make_box_mesh(Vec3(0.1, 0.2, 0.3), Eigen::Vector3i(2, 3, 4));
  mesh.nodes[0].x() = 0.1 + 1e-17;  // not representable in decimal text with few digits
  ASSERT_TRUE(store_cached_mesh("box a", mesh));
  EXPECT_EQ(mesh_cache_file("box a").parent_path(), dir_);
  const std::optional<TetMesh> back = load_cached_mesh("box a");
  ASSERT_TRUE(back);
  expect_identical(mesh, *back);
  EXPECT_FALSE(load_cached_mesh("box b"));
}

TEST_F(MeshCache, DamagedOrForeignFilesAreRejectedAndRemoved) {
  const TetMesh mesh = make_box_mesh(Vec3(1, 1, 1), Eigen::Vector3i(2, 2, 2));
  ASSERT_TRUE(store_cached_mesh("key", mesh));
  const fs::path file = mesh_cache_file("key");
  const std::string good = read_bytes(file);
  // Truncated.
  write_bytes(file, good.substr(0, good.size() / 2));
  EXPECT_FALSE(load_cached_mesh("key"));
  EXPECT_FALSE(fs::exists(file));
  // One flipped bit in a coordinate.
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  write_bytes(file, flipped);
  EXPECT_FALSE(load_cached_mesh("key"));
  EXPECT_FALSE(fs::exists(file));
  // Another key's (valid) file under this key's name.
  ASSERT_TRUE(store_cached_mesh("other key", mesh));
  fs::copy_file(mesh_cache_file("other key"), file);
  EXPECT_FALSE(load_cached_mesh("key"));
  // The intact file loads.
  write_bytes(file, good);
  EXPECT_TRUE(load_cached_mesh("key"));
}

TEST_F(MeshCache, CanBeTurnedOff) {
  setenv("ADDSIM_MESH_CACHE", "0", 1);
  EXPECT_TRUE(mesh_cache_dir().empty());
  EXPECT_FALSE(store_cached_mesh("k", make_box_mesh(Vec3(1, 1, 1), Eigen::Vector3i(1, 1, 1))));
  unsetenv("ADDSIM_MESH_CACHE");
  EXPECT_EQ(mesh_cache_dir(), dir_);
}

TEST_F(MeshCache, GmshMeshesAreStoredOnceAndReusedBitForBit) {
  if (!gmsh_available()) GTEST_SKIP() << "needs gmsh";
  const TetMesh first = make_sphere_mesh(0.1, 150);
  ASSERT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  const fs::path file = fs::directory_iterator(dir_)->path();
  const TetMesh second = make_sphere_mesh(0.1, 150);
  expect_identical(first, second);
  // The generator does read the file: with another mesh stored under its key (the key is
  // in the file after the 8-byte magic and its 8-byte length), it returns that mesh.
  const std::string good = read_bytes(file);
  std::uint64_t key_size = 0;
  std::memcpy(&key_size, good.data() + 8, sizeof key_size);
  const std::string key = good.substr(16, key_size);
  EXPECT_NE(key.find("sphere"), std::string::npos) << key;
  EXPECT_NE(key.find("gmsh"), std::string::npos) << key;
  const TetMesh box = make_box_mesh(Vec3(1, 1, 1), Eigen::Vector3i(1, 1, 1));
  ASSERT_TRUE(store_cached_mesh(key, box));
  expect_identical(make_sphere_mesh(0.1, 150), box);
  write_bytes(file, good);
  // A corrupted file is regenerated (same mesh) and rewritten intact.
  write_bytes(file, good.substr(0, good.size() - 3));
  const TetMesh third = make_sphere_mesh(0.1, 150);
  expect_identical(first, third);
  EXPECT_EQ(read_bytes(file), good);
  // Other parameters are another entry.
  make_sphere_mesh(0.1, 120);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2);
}

}  // namespace
}  // namespace addsim
