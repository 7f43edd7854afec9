#include "addsim/sensitivity/parameter_selection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "addsim/core/error.h"

namespace addsim {

ParameterSelection::ParameterSelection(const ParameterTable& table, const std::vector<ParameterSpec>& specs)
    : num_params_(table.size()) {
  std::vector<bool> taken(table.size(), false);
  for (const ParameterSpec& s : specs) {
    const ParamRange range = table.require(s.path);
    const double lo = std::max(s.lower, range.entry->lower);
    const double hi = std::min(s.upper, range.entry->upper);
    if (!(lo <= hi)) throw InputError("parameter " + s.path + ": lower bound exceeds upper bound");
    if (s.log_scale && lo < 0.0)
      throw InputError("parameter " + s.path + ": log scale needs a lower bound >= 0 (values must stay positive)");
    if (!(std::isfinite(s.scale) && s.scale > 0.0)) {
      std::ostringstream msg;
      msg << "parameter " << s.path << ": scale must be a finite number > 0, got " << s.scale;
      throw InputError(msg.str());
    }
    for (int i = range.offset; i < range.offset + range.size; ++i) {
      if (taken[i]) throw InputError("parameter " + table.name_of(i) + " is selected twice (path " + s.path + ")");
      taken[i] = true;
      indices_.push_back(i);
      names_.push_back(table.name_of(i));
      log_.push_back(s.log_scale);
      lower_.push_back(lo);
      upper_.push_back(hi);
      scale_.push_back(s.scale);
    }
  }
}

// The length checks guard every index into a full vector: the Python binding passes user
// arrays straight through, and a short p would otherwise be read or written out of bounds.
void ParameterSelection::require_full(const VecX& v, const char* what) const {
  if (v.size() != num_params_)
    throw InputError(std::string("parameter selection: ") + what + " has " + std::to_string(v.size()) +
                     " entries, expected |p| = " + std::to_string(num_params_));
}

void ParameterSelection::require_selected(const VecX& v, const char* what) const {
  if (v.size() != size())
    throw InputError(std::string("parameter selection: ") + what + " has " + std::to_string(v.size()) +
                     " entries, expected " + std::to_string(size()) + " (one per selected scalar)");
}

VecX ParameterSelection::pick(const VecX& v, const char* what) const {
  require_full(v, what);
  VecX x(size());
  for (int k = 0; k < size(); ++k) x[k] = v[indices_[k]];
  return x;
}

VecX ParameterSelection::gather(const VecX& p) const { return pick(p, "p"); }

VecX ParameterSelection::select(const VecX& dphi_dp) const { return pick(dphi_dp, "dΦ/dp"); }

VecX ParameterSelection::scatter(const VecX& p, const VecX& values) const {
  require_full(p, "p");
  require_selected(values, "values");
  VecX out = p;
  for (int k = 0; k < size(); ++k) out[indices_[k]] = values[k];
  return out;
}

// Every conversion skips the division or product by s when s = 1, so that selections
// without a scale give the same x, p and gradients bit for bit as before scales existed.

VecX ParameterSelection::to_scaled(const VecX& p) const {
  VecX x = gather(p);
  for (int k = 0; k < size(); ++k) {
    if (log_[k]) {
      if (!(x[k] > 0.0)) {
        std::ostringstream msg;
        msg << "parameter " << names_[k] << " = " << x[k] << " must be > 0 for log scaling";
        throw InputError(msg.str());
      }
      x[k] = std::log(x[k]);
    }
    if (scale_[k] != 1.0) x[k] /= scale_[k];
  }
  return x;
}

VecX ParameterSelection::from_scaled(const VecX& p, const VecX& x) const {
  require_full(p, "p");
  require_selected(x, "x");
  VecX values = x;
  for (int k = 0; k < size(); ++k) {
    if (scale_[k] != 1.0) values[k] *= scale_[k];
    if (log_[k]) values[k] = std::exp(values[k]);
  }
  return scatter(p, values);
}

double ParameterSelection::chain_factor(int k, const VecX& p) const {
  // p = s x (linear): dp/dx = s; p = exp(s x) (log): dp/dx = s p.
  if (log_[k]) require_full(p, "p");
  return log_[k] ? scale_[k] * p[indices_[k]] : scale_[k];
}

VecX ParameterSelection::scaled_gradient(const VecX& p, const VecX& dphi_dp) const {
  require_full(p, "p");
  VecX g = select(dphi_dp);
  for (int k = 0; k < size(); ++k) {
    if (log_[k]) g[k] *= p[indices_[k]];  // d/d(ln p) = p d/dp
    if (scale_[k] != 1.0) g[k] *= scale_[k];
  }
  return g;
}

double ParameterSelection::lower_scaled(int k) const {
  double lo = lower_[k];
  if (log_[k]) lo = lo > 0.0 ? std::log(lo) : -std::numeric_limits<double>::infinity();
  return scale_[k] != 1.0 ? lo / scale_[k] : lo;
}

double ParameterSelection::upper_scaled(int k) const {
  double hi = upper_[k];
  if (log_[k] && hi < std::numeric_limits<double>::infinity()) hi = std::log(hi);
  return scale_[k] != 1.0 ? hi / scale_[k] : hi;
}

void ParameterSelection::check_bounds(const VecX& p) const {
  require_full(p, "p");
  for (int k = 0; k < size(); ++k) {
    const double v = p[indices_[k]];
    if (!std::isfinite(v) || v < lower_[k] || v > upper_[k]) {
      std::ostringstream msg;
      msg << "parameter " << names_[k] << " = " << v << " is outside [" << lower_[k] << ", " << upper_[k] << "]";
      throw InputError(msg.str());
    }
  }
}

}  // namespace addsim
