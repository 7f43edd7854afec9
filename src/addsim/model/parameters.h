#pragma once
/// The named parameter table: every differentiable scalar of a model lives in one flat
/// vector p, grouped into entries named by their scene key path (e.g. "contact.kn",
/// "obstacles.0.friction", "bodies.0.velocities", "handles.1.positions"). An entry is a
/// rows × cols block (row-major in p), so "bodies.0.positions.3" names row 3.

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "addsim/core/types.h"

namespace addsim {

/// What a parameter is; optimisers and reports group by it.
enum class ParamKind { kMaterial, kContact, kCoupling, kInitialCondition, kControl, kMass };

const char* to_string(ParamKind kind);

struct ParamEntry {
  std::string path;                 ///< canonical key path with list indices ("bodies.0.mass")
  std::string alias;                ///< same path with list names where the scene gave one ("bodies.sheet.mass")
  ParamKind kind = ParamKind::kMaterial;
  int offset = 0;                   ///< first index in p
  int rows = 1;
  int cols = 1;
  double lower = -std::numeric_limits<double>::infinity();  ///< bound on every value
  double upper = std::numeric_limits<double>::infinity();
  bool log_scale = false;           ///< optimisers should work on log(value)
  int size() const { return rows * cols; }
};

/// A contiguous selection inside p resolved from a key path.
struct ParamRange {
  const ParamEntry* entry = nullptr;
  int offset = 0;
  int size = 0;
};

class ParameterTable {
 public:
  /// Adds an entry holding `values` (rows × cols, row-major); returns its offset in p.
  int add(std::string path, std::string alias, ParamKind kind, const VecX& values, int rows, int cols,
          double lower = -std::numeric_limits<double>::infinity(),
          double upper = std::numeric_limits<double>::infinity(), bool log_scale = false);

  /// Resolves a key path (canonical or by name) to a range of p: an entry, or one row
  /// of it ("handles.0.positions.12"), or one scalar ("bodies.0.positions.3.2").
  std::optional<ParamRange> resolve(const std::string& path) const;
  /// Like resolve() but throws InputError naming the path when it is unknown.
  ParamRange require(const std::string& path) const;

  const std::vector<ParamEntry>& entries() const { return entries_; }
  const VecX& defaults() const { return defaults_; }
  int size() const { return static_cast<int>(defaults_.size()); }
  /// Entry containing index `i` of p.
  const ParamEntry& entry_of(int i) const;
  /// Human-readable name of index i ("contact.kn", "bodies.0.velocities[2][1]").
  std::string name_of(int i) const;
  /// Throws InputError if any value of p is non-finite or outside its entry's bounds.
  void check(const VecX& p) const;

 private:
  std::vector<ParamEntry> entries_;
  VecX defaults_;
};

}  // namespace addsim
