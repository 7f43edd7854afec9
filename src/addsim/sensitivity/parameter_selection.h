#pragma once
/// A selection of parameters for a task or an optimiser: a list of key paths (entries,
/// rows or scalars of the ParameterTable) resolved to indices into p, each with an
/// optional log scaling and bounds. The optimiser variable x holds, per selected scalar,
/// x = p (linear) or x = ln p (log scale); gradients convert by dΦ/dx = p · dΦ/dp.

#include <limits>
#include <string>
#include <vector>

#include "addsim/model/parameters.h"

namespace addsim {

/// One requested parameter: a key path plus its scaling and bounds (in p's units).
struct ParameterSpec {
  std::string path;  ///< "contact.kn", "bodies.0.velocity", "handles.0.positions.12"
  bool log_scale = false;  ///< optimise ln p (requires p > 0 and a lower bound ≥ 0)
  double lower = -std::numeric_limits<double>::infinity();  ///< bound on p (tightened by the entry's bounds)
  double upper = std::numeric_limits<double>::infinity();
};

/// Resolved selection: one row per selected scalar.
class ParameterSelection {
 public:
  ParameterSelection() = default;
  /// Resolves every spec against `table`; throws InputError naming the path if it is
  /// unknown, a scalar is selected twice, lower > upper, or log scale is asked for an
  /// entry whose lower bound is negative.
  ParameterSelection(const ParameterTable& table, const std::vector<ParameterSpec>& specs);

  int size() const { return static_cast<int>(indices_.size()); }
  /// Index into p of each selected scalar.
  const std::vector<int>& indices() const { return indices_; }
  /// Name of each selected scalar ("contact.kn", "bodies.0.velocity[2]").
  const std::vector<std::string>& names() const { return names_; }
  /// Whether selected scalar k is log-scaled.
  bool log_scale(int k) const { return log_[k]; }
  /// Bounds of selected scalar k in p's units (entry bounds ∩ spec bounds).
  double lower(int k) const { return lower_[k]; }
  double upper(int k) const { return upper_[k]; }

  /// The selected values of p (|selection|), in p's units.
  VecX gather(const VecX& p) const;
  /// p with the selected scalars replaced by `values` (|selection|, p's units).
  VecX scatter(const VecX& p, const VecX& values) const;
  /// Optimiser variable x (|selection|): ln p for log-scaled scalars, else p. Throws
  /// InputError naming the scalar if a log-scaled value is not > 0.
  VecX to_scaled(const VecX& p) const;
  /// p with the selected scalars set from the optimiser variable x (|selection|).
  VecX from_scaled(const VecX& p, const VecX& x) const;
  /// dΦ/dx (|selection|) from the full dΦ/dp (|p|) at p: p_j dΦ/dp_j for log-scaled scalars.
  VecX scaled_gradient(const VecX& p, const VecX& dphi_dp) const;
  /// The selected entries of dΦ/dp (|selection|), unscaled.
  VecX select(const VecX& dphi_dp) const { return gather(dphi_dp); }
  /// Throws InputError naming the scalar if a selected value of p is outside its bounds.
  void check_bounds(const VecX& p) const;

 private:
  std::vector<int> indices_;
  std::vector<std::string> names_;
  std::vector<bool> log_;
  std::vector<double> lower_, upper_;
};

}  // namespace addsim
