#include "addsim/mesh/mesh_io.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"

namespace addsim {

namespace {

// Bytes in a stream from its current position (-1 if it cannot seek).
long long stream_bytes(std::istream& in) {
  const auto start = in.tellg();
  if (start < 0) return -1;
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  in.seekg(start);
  return end < 0 ? -1 : static_cast<long long>(end - start);
}

// Line reader that counts lines for error messages and checks counts announced by headers
// against the stream's size before anything is allocated for them.
class Reader {
 public:
  Reader(std::istream& in, std::string name) : in_(in), name_(std::move(name)), bytes_(stream_bytes(in)) {}
  bool next(std::string& line) {
    if (!std::getline(in_, line)) return false;
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }
  std::string require_line(const char* what) {
    std::string line;
    if (!next(line)) fail(std::string("unexpected end of file while reading ") + what);
    return line;
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw InputError(name_ + ":" + std::to_string(line_no_) + ": " + msg);
  }
  // Fails unless 0 <= n and n entries of at least `min_bytes` bytes each fit in the file,
  // so that a header announcing 10^18 nodes or a negative count cannot cause an allocation.
  void check_count(long long n, int min_bytes, const std::string& what, const std::string& plural) const {
    if (n < 0) fail("negative " + what + " count " + std::to_string(n));
    if (bytes_ >= 0 && n > bytes_ / min_bytes)
      fail("the header announces " + std::to_string(n) + " " + plural + ", but the file (" + std::to_string(bytes_) +
           " bytes) can hold at most " + std::to_string(bytes_ / min_bytes));
  }

 private:
  std::istream& in_;
  std::string name_;
  long long bytes_;
  int line_no_ = 0;
};

// Shortest line of a node ("1 0 0 0\n"), of any Gmsh element ("1 15 2 0 1 1\n" in format 2,
// "1 1\n" in 4.1), of a 4.1 node tag and coordinate line, and of a TetGen tetrahedron.
constexpr int kMinNodeBytes = 8;
constexpr int kMinElementBytes = 4;
constexpr int kMinNodeTagBytes = 2;
constexpr int kMinCoordinateBytes = 6;
constexpr int kMinTetBytes = 10;

// Finishes a loaded mesh: drops unused nodes, orients tets, validates.
TetMesh finish(TetMesh mesh, const std::string& name) {
  if (mesh.tets.empty()) throw InputError(name + ": the file contains no tetrahedra");
  validate(mesh, name);
  remove_unused_nodes(mesh);
  orient_positively(mesh);
  return mesh;
}

// Node-id map of a Gmsh file: tag -> index in mesh.nodes.
using TagMap = std::unordered_map<long long, int>;

int lookup(const TagMap& tags, long long tag, Reader& r) {
  const auto it = tags.find(tag);
  if (it == tags.end()) r.fail("element refers to unknown node " + std::to_string(tag));
  return it->second;
}

void read_msh2_nodes(Reader& r, TetMesh& mesh, TagMap& tags) {
  std::istringstream head(r.require_line("$Nodes count"));
  long long n = -1;
  if (!(head >> n)) r.fail("bad node count");
  r.check_count(n, kMinNodeBytes, "node", "nodes");
  mesh.nodes.reserve(n);
  for (long long k = 0; k < n; ++k) {
    std::istringstream ls(r.require_line("a node"));
    long long tag;
    Vec3 x;
    if (!(ls >> tag >> x[0] >> x[1] >> x[2])) r.fail("bad node line");
    tags[tag] = static_cast<int>(mesh.nodes.size());
    mesh.nodes.push_back(x);
  }
}

void read_msh2_elements(Reader& r, TetMesh& mesh, const TagMap& tags) {
  std::istringstream head(r.require_line("$Elements count"));
  long long n = -1;
  if (!(head >> n)) r.fail("bad element count");
  r.check_count(n, kMinElementBytes, "element", "elements");
  for (long long k = 0; k < n; ++k) {
    std::istringstream ls(r.require_line("an element"));
    long long tag;
    int type, ntags;
    if (!(ls >> tag >> type >> ntags)) r.fail("bad element line");
    for (int i = 0; i < ntags; ++i) {
      long long skip;
      if (!(ls >> skip)) r.fail("bad element tags");
    }
    if (type != 4) continue;
    std::array<int, 4> e;
    for (int i = 0; i < 4; ++i) {
      long long node;
      if (!(ls >> node)) r.fail("tetrahedron with fewer than 4 nodes");
      e[i] = lookup(tags, node, r);
    }
    mesh.tets.push_back(e);
  }
}

void read_msh4_nodes(Reader& r, TetMesh& mesh, TagMap& tags) {
  std::istringstream head(r.require_line("$Nodes header"));
  long long blocks, total, min_tag, max_tag;
  if (!(head >> blocks >> total >> min_tag >> max_tag)) r.fail("bad $Nodes header (format 4.1 expected)");
  r.check_count(blocks, kMinElementBytes, "node block", "node blocks");
  r.check_count(total, kMinNodeTagBytes + kMinCoordinateBytes, "node", "nodes");
  mesh.nodes.reserve(total);
  for (long long b = 0; b < blocks; ++b) {
    std::istringstream bh(r.require_line("a node block header"));
    int dim, entity, parametric;
    long long count;
    if (!(bh >> dim >> entity >> parametric >> count)) r.fail("bad node block header");
    r.check_count(count, kMinNodeTagBytes + kMinCoordinateBytes, "node", "nodes");
    std::vector<long long> block_tags(count);
    for (long long k = 0; k < count; ++k) {
      std::istringstream ls(r.require_line("a node tag"));
      if (!(ls >> block_tags[k])) r.fail("bad node tag");
    }
    for (long long k = 0; k < count; ++k) {
      std::istringstream ls(r.require_line("node coordinates"));
      Vec3 x;
      if (!(ls >> x[0] >> x[1] >> x[2])) r.fail("bad node coordinates");
      tags[block_tags[k]] = static_cast<int>(mesh.nodes.size());
      mesh.nodes.push_back(x);
    }
  }
}

void read_msh4_elements(Reader& r, TetMesh& mesh, const TagMap& tags) {
  std::istringstream head(r.require_line("$Elements header"));
  long long blocks, total, min_tag, max_tag;
  if (!(head >> blocks >> total >> min_tag >> max_tag)) r.fail("bad $Elements header (format 4.1 expected)");
  r.check_count(blocks, kMinElementBytes, "element block", "element blocks");
  r.check_count(total, kMinElementBytes, "element", "elements");
  for (long long b = 0; b < blocks; ++b) {
    std::istringstream bh(r.require_line("an element block header"));
    int dim, entity, type;
    long long count;
    if (!(bh >> dim >> entity >> type >> count)) r.fail("bad element block header");
    r.check_count(count, kMinElementBytes, "element", "elements");
    for (long long k = 0; k < count; ++k) {
      const std::string line = r.require_line("an element");
      if (type != 4) continue;
      std::istringstream ls(line);
      long long tag;
      std::array<int, 4> e;
      if (!(ls >> tag)) r.fail("bad element line");
      for (int i = 0; i < 4; ++i) {
        long long node;
        if (!(ls >> node)) r.fail("tetrahedron with fewer than 4 nodes");
        e[i] = lookup(tags, node, r);
      }
      mesh.tets.push_back(e);
    }
  }
}

// Skips to the line "$End<section>".
void skip_section(Reader& r, const std::string& section) {
  const std::string end = "$End" + section.substr(1);
  std::string line;
  while (r.next(line))
    if (line == end) return;
  r.fail("missing " + end);
}

std::string base_of(const std::string& path) {
  for (const char* ext : {".node", ".ele"}) {
    const std::string e(ext);
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0)
      return path.substr(0, path.size() - e.size());
  }
  return path;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Next non-empty, non-comment line of a TetGen file, comments ('#') stripped.
std::string tetgen_line(Reader& r, const char* what) {
  while (true) {
    std::string line = r.require_line(what);
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    if (line.find_first_not_of(" \t") != std::string::npos) return line;
  }
}

}  // namespace

TetMesh parse_gmsh_msh(std::istream& in, const std::string& name) {
  Reader r(in, name);
  TetMesh mesh;
  TagMap tags;
  int major = 0;
  std::string line;
  while (r.next(line)) {
    if (line.empty() || line[0] != '$') continue;
    if (line == "$MeshFormat") {
      std::istringstream ls(r.require_line("$MeshFormat"));
      double version;
      int file_type;
      if (!(ls >> version >> file_type)) r.fail("bad $MeshFormat line");
      if (file_type != 0) r.fail("binary .msh files are not supported; save as ASCII");
      // Range first: casting a version beyond int's range (3e112) to int is undefined.
      if (!(version >= 2.0 && version < 3.0) && !(version >= 4.0 && version < 5.0)) {
        std::ostringstream v;
        v << version;
        r.fail("unsupported msh format version " + v.str() + " (use 2.2 or 4.1)");
      }
      major = static_cast<int>(version);
      if (major == 4 && version < 4.05) r.fail("msh format 4.0 is not supported; use 2.2 or 4.1");
      skip_section(r, line);
    } else if (line == "$Nodes") {
      if (major == 0) r.fail("$Nodes before $MeshFormat");
      if (major == 2) read_msh2_nodes(r, mesh, tags); else read_msh4_nodes(r, mesh, tags);
      skip_section(r, line);
    } else if (line == "$Elements") {
      if (major == 0) r.fail("$Elements before $MeshFormat");
      if (major == 2) read_msh2_elements(r, mesh, tags); else read_msh4_elements(r, mesh, tags);
      skip_section(r, line);
    } else if (line.rfind("$End", 0) != 0) {
      skip_section(r, line);
    }
  }
  if (major == 0) throw InputError(name + ": not a Gmsh .msh file (no $MeshFormat section)");
  return finish(std::move(mesh), name);
}

TetMesh load_gmsh_msh(const std::string& path) {
  std::istringstream in(read_input_file(path, "mesh file"));
  return parse_gmsh_msh(in, path);
}

TetMesh parse_tetgen(std::istream& node_in, std::istream& ele_in, const std::string& name) {
  TetMesh mesh;
  std::unordered_map<long long, int> ids;
  {
    Reader r(node_in, name + ".node");
    std::istringstream head(tetgen_line(r, "the .node header"));
    long long n;
    int dim;
    if (!(head >> n >> dim)) r.fail("bad .node header");
    if (dim != 3) r.fail("dimension must be 3, got " + std::to_string(dim));
    r.check_count(n, kMinNodeBytes, "node", "nodes");
    mesh.nodes.reserve(n);
    for (long long k = 0; k < n; ++k) {
      std::istringstream ls(tetgen_line(r, "a node"));
      long long id;
      Vec3 x;
      if (!(ls >> id >> x[0] >> x[1] >> x[2])) r.fail("bad node line");
      ids[id] = static_cast<int>(mesh.nodes.size());
      mesh.nodes.push_back(x);
    }
  }
  {
    Reader r(ele_in, name + ".ele");
    std::istringstream head(tetgen_line(r, "the .ele header"));
    long long n;
    int per;
    if (!(head >> n >> per)) r.fail("bad .ele header");
    if (per != 4 && per != 10) r.fail("nodes per tetrahedron must be 4 or 10, got " + std::to_string(per));
    r.check_count(n, kMinTetBytes, "tetrahedron", "tetrahedra");
    mesh.tets.reserve(n);
    for (long long k = 0; k < n; ++k) {
      std::istringstream ls(tetgen_line(r, "a tetrahedron"));
      long long id;
      std::array<int, 4> e;
      if (!(ls >> id)) r.fail("bad tetrahedron line");
      // Only the 4 corner nodes are used (second-order nodes, if any, come after them).
      for (int i = 0; i < 4; ++i) {
        long long node;
        if (!(ls >> node)) r.fail("tetrahedron with fewer than 4 nodes");
        const auto it = ids.find(node);
        if (it == ids.end()) r.fail("tetrahedron refers to unknown node " + std::to_string(node));
        e[i] = it->second;
      }
      mesh.tets.push_back(e);
    }
  }
  return finish(std::move(mesh), name);
}

TetMesh load_tetgen(const std::string& path) {
  const std::string base = base_of(path);
  std::istringstream node(read_input_file(base + ".node", "TetGen node file"));
  std::istringstream ele(read_input_file(base + ".ele", "TetGen element file"));
  return parse_tetgen(node, ele, base);
}

TetMesh load_tet_mesh(const std::string& path) {
  if (ends_with(path, ".msh")) return load_gmsh_msh(path);
  if (ends_with(path, ".node") || ends_with(path, ".ele")) return load_tetgen(path);
  // A TetGen base name without extension reads base.node and base.ele.
  if (std::filesystem::path(path).extension().empty()) return load_tetgen(path);
  throw InputError("mesh file '" + path + "': unknown extension (expected .msh, .node, .ele, or a TetGen base name without extension)");
}

}  // namespace addsim
