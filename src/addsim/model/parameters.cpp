#include "addsim/model/parameters.h"

#include <cmath>
#include <sstream>

#include "addsim/core/error.h"

namespace addsim {

const char* to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::kMaterial: return "material";
    case ParamKind::kContact: return "contact";
    case ParamKind::kCoupling: return "coupling";
    case ParamKind::kInitialCondition: return "initial_condition";
    case ParamKind::kControl: return "control";
    case ParamKind::kMass: return "mass";
  }
  return "unknown";
}

int ParameterTable::add(std::string path, std::string alias, ParamKind kind, const VecX& values, int rows,
                        int cols, double lower, double upper, bool log_scale) {
  ADDSIM_CHECK(values.size() == rows * cols, "parameter values do not match rows × cols");
  ParamEntry e;
  e.path = std::move(path);
  e.alias = alias.empty() ? e.path : std::move(alias);
  e.kind = kind;
  e.offset = size();
  e.rows = rows;
  e.cols = cols;
  e.lower = lower;
  e.upper = upper;
  e.log_scale = log_scale;
  for (const auto& other : entries_)
    ADDSIM_CHECK(other.path != e.path, "duplicate parameter path " + e.path);
  VecX grown(size() + values.size());
  grown << defaults_, values;
  defaults_ = std::move(grown);
  entries_.push_back(e);
  return e.offset;
}

namespace {
bool parse_index(const std::string& s, int* out) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *out = std::stoi(s);
  return true;
}
}  // namespace

std::optional<ParamRange> ParameterTable::resolve(const std::string& path) const {
  for (const auto& e : entries_) {
    for (const std::string* name : {&e.path, &e.alias}) {
      if (path == *name) return ParamRange{&e, e.offset, e.size()};
      if (path.size() <= name->size() + 1 || path.compare(0, name->size(), *name) != 0 || path[name->size()] != '.')
        continue;
      // Trailing ".row" or ".row.col" selects inside the entry.
      const std::string rest = path.substr(name->size() + 1);
      const auto dot = rest.find('.');
      int row = 0, col = 0;
      if (dot == std::string::npos) {
        if (!parse_index(rest, &row) || row >= e.rows) return std::nullopt;
        if (e.cols == 1 && e.rows > 1) return ParamRange{&e, e.offset + row, 1};
        return ParamRange{&e, e.offset + row * e.cols, e.cols};
      }
      if (!parse_index(rest.substr(0, dot), &row) || !parse_index(rest.substr(dot + 1), &col) || row >= e.rows ||
          col >= e.cols)
        return std::nullopt;
      return ParamRange{&e, e.offset + row * e.cols + col, 1};
    }
  }
  return std::nullopt;
}

ParamRange ParameterTable::require(const std::string& path) const {
  auto r = resolve(path);
  if (!r) {
    // A known entry with a row or column beyond its size (e.g. a per-step control's step after
    // --steps cut the scene) is named as such, not as an unknown parameter.
    for (const auto& e : entries_)
      for (const std::string* name : {&e.path, &e.alias}) {
        if (path.size() <= name->size() + 1 || path.compare(0, name->size(), *name) != 0 || path[name->size()] != '.')
          continue;
        const std::string rest = path.substr(name->size() + 1);
        const auto dot = rest.find('.');
        int row = 0, col = 0;
        if (!parse_index(rest.substr(0, dot), &row)) continue;
        if (dot != std::string::npos && !parse_index(rest.substr(dot + 1), &col)) continue;
        std::ostringstream msg;
        msg << "parameter '" << path << "': " << *name << " has " << e.rows << (e.rows == 1 ? " row" : " rows");
        if (e.cols > 1) msg << " of " << e.cols;
        msg << " (indices from 0)";
        if (e.kind == ParamKind::kControl) msg << "; per-step controls have one row per state of the scene's steps";
        throw InputError(msg.str());
      }
    std::ostringstream msg;
    msg << "unknown parameter '" << path << "'; differentiable values of this model are:";
    for (const auto& e : entries_) msg << " " << e.path;
    throw InputError(msg.str());
  }
  return *r;
}

const ParamEntry& ParameterTable::entry_of(int i) const {
  for (const auto& e : entries_)
    if (i >= e.offset && i < e.offset + e.size()) return e;
  throw InternalError("parameter index out of range: " + std::to_string(i));
}

std::string ParameterTable::name_of(int i) const {
  const ParamEntry& e = entry_of(i);
  if (e.size() == 1) return e.path;
  const int k = i - e.offset;
  if (e.cols == 1) return e.path + "." + std::to_string(k);
  return e.path + "." + std::to_string(k / e.cols) + "." + std::to_string(k % e.cols);
}

void ParameterTable::check(const VecX& p) const {
  if (p.size() != size())
    throw InputError("parameter vector has " + std::to_string(p.size()) + " values, the model has " +
                     std::to_string(size()));
  for (int i = 0; i < size(); ++i) {
    const ParamEntry& e = entry_of(i);
    if (!std::isfinite(p[i])) throw InputError("parameter " + name_of(i) + " is not finite");
    if (p[i] < e.lower || p[i] > e.upper) {
      std::ostringstream msg;
      msg << "parameter " << name_of(i) << " = " << p[i] << " is outside [" << e.lower << ", " << e.upper << "]";
      throw InputError(msg.str());
    }
  }
}

}  // namespace addsim
