#include "addsim/sensitivity/parameter_selection.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "addsim/core/error.h"

namespace addsim {

ParameterSelection::ParameterSelection(const ParameterTable& table, const std::vector<ParameterSpec>& specs) {
  std::vector<bool> taken(table.size(), false);
  for (const ParameterSpec& s : specs) {
    const ParamRange range = table.require(s.path);
    const double lo = std::max(s.lower, range.entry->lower);
    const double hi = std::min(s.upper, range.entry->upper);
    if (!(lo <= hi)) throw InputError("parameter " + s.path + ": lower bound exceeds upper bound");
    if (s.log_scale && lo < 0.0)
      throw InputError("parameter " + s.path + ": log scale needs a lower bound >= 0 (values must stay positive)");
    for (int i = range.offset; i < range.offset + range.size; ++i) {
      if (taken[i]) throw InputError("parameter " + table.name_of(i) + " is selected twice (path " + s.path + ")");
      taken[i] = true;
      indices_.push_back(i);
      names_.push_back(table.name_of(i));
      log_.push_back(s.log_scale);
      lower_.push_back(lo);
      upper_.push_back(hi);
    }
  }
}

VecX ParameterSelection::gather(const VecX& p) const {
  VecX x(size());
  for (int k = 0; k < size(); ++k) x[k] = p[indices_[k]];
  return x;
}

VecX ParameterSelection::scatter(const VecX& p, const VecX& values) const {
  ADDSIM_CHECK(values.size() == size(), "parameter selection: wrong number of values");
  VecX out = p;
  for (int k = 0; k < size(); ++k) out[indices_[k]] = values[k];
  return out;
}

VecX ParameterSelection::to_scaled(const VecX& p) const {
  VecX x = gather(p);
  for (int k = 0; k < size(); ++k) {
    if (!log_[k]) continue;
    if (!(x[k] > 0.0)) {
      std::ostringstream msg;
      msg << "parameter " << names_[k] << " = " << x[k] << " must be > 0 for log scaling";
      throw InputError(msg.str());
    }
    x[k] = std::log(x[k]);
  }
  return x;
}

VecX ParameterSelection::from_scaled(const VecX& p, const VecX& x) const {
  ADDSIM_CHECK(x.size() == size(), "parameter selection: wrong number of scaled values");
  VecX values = x;
  for (int k = 0; k < size(); ++k)
    if (log_[k]) values[k] = std::exp(x[k]);
  return scatter(p, values);
}

VecX ParameterSelection::scaled_gradient(const VecX& p, const VecX& dphi_dp) const {
  VecX g = gather(dphi_dp);
  // d/d(ln p) = p d/dp.
  for (int k = 0; k < size(); ++k)
    if (log_[k]) g[k] *= p[indices_[k]];
  return g;
}

void ParameterSelection::check_bounds(const VecX& p) const {
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
