#pragma once
/// A selection of parameters for a task or an optimiser: a list of key paths (entries,
/// rows or scalars of the ParameterTable) resolved to indices into p, each with an
/// optional log scaling, a scale s > 0 and bounds. The optimiser variable x holds, per
/// selected scalar, x = p / s (linear) or x = ln(p) / s (log scale); gradients convert by
/// dΦ/dx = s · dΦ/dp (linear) or s · p · dΦ/dp (log). s = 1 (the default) leaves x = p or
/// ln p bit for bit. A scale s > 1 makes one unit of x a change of s in p (or of s in ln p):
/// a parameter whose effect on Φ per unit of p is small (the spin of a throw next to its
/// speed) gets a gradient s times larger and moves s times further per unit step of a
/// method that works in x (L-BFGS-B's first step, its projected-gradient test, CMA-ES's σ,
/// ADAM's learning rate, Levenberg's damping).

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
  double scale = 1.0;  ///< s > 0: the optimiser works in x = p / s (or ln(p) / s)
};

/// Resolved selection: one row per selected scalar.
class ParameterSelection {
 public:
  ParameterSelection() = default;
  /// Resolves every spec against `table`; throws InputError naming the path if it is
  /// unknown, a scalar is selected twice, lower > upper, log scale is asked for an
  /// entry whose lower bound is negative, or the scale is not a finite number > 0.
  ParameterSelection(const ParameterTable& table, const std::vector<ParameterSpec>& specs);

  int size() const { return static_cast<int>(indices_.size()); }
  /// |p| of the table the selection was resolved against. Every function below that takes a
  /// full vector (p or dΦ/dp) throws InputError naming the expected and given lengths when
  /// the vector has another length, and every vector of selected values must have size().
  int num_params() const { return num_params_; }
  /// Index into p of each selected scalar.
  const std::vector<int>& indices() const { return indices_; }
  /// Name of each selected scalar ("contact.kn", "bodies.0.velocity[2]").
  const std::vector<std::string>& names() const { return names_; }
  /// Whether selected scalar k is log-scaled.
  bool log_scale(int k) const { return log_[k]; }
  /// Scale s of selected scalar k (x = p / s or ln(p) / s).
  double scale(int k) const { return scale_[k]; }
  /// Bounds of selected scalar k in p's units (entry bounds ∩ spec bounds).
  double lower(int k) const { return lower_[k]; }
  double upper(int k) const { return upper_[k]; }

  /// The selected values of p (|selection|), in p's units.
  VecX gather(const VecX& p) const;
  /// p with the selected scalars replaced by `values` (|selection|, p's units).
  VecX scatter(const VecX& p, const VecX& values) const;
  /// Optimiser variable x (|selection|): ln(p) / s for log-scaled scalars, else p / s. Throws
  /// InputError naming the scalar if a log-scaled value is not > 0.
  VecX to_scaled(const VecX& p) const;
  /// p with the selected scalars set from the optimiser variable x (|selection|).
  VecX from_scaled(const VecX& p, const VecX& x) const;
  /// dΦ/dx (|selection|) from the full dΦ/dp (|p|) at p: s_k dΦ/dp_j, times p_j for
  /// log-scaled scalars (j the index into p of selected scalar k).
  VecX scaled_gradient(const VecX& p, const VecX& dphi_dp) const;
  /// The selected entries of dΦ/dp (|selection|), unscaled.
  VecX select(const VecX& dphi_dp) const;
  /// The factor dp_j/dx_k of selected scalar k at p: s_k, times p_j for log-scaled scalars
  /// (columns of a Jacobian dρ/dp become dρ/dx by it).
  double chain_factor(int k, const VecX& p) const;
  /// Bounds of selected scalar k in x: ln(bound) / s for log-scaled scalars (ln 0 = −∞),
  /// else bound / s.
  double lower_scaled(int k) const;
  double upper_scaled(int k) const;
  /// Throws InputError naming the scalar if a selected value of p is outside its bounds.
  void check_bounds(const VecX& p) const;

 private:
  // Throws InputError unless v has |p| entries (`what` names v in the message).
  void require_full(const VecX& v, const char* what) const;
  // Throws InputError unless v has size() entries.
  void require_selected(const VecX& v, const char* what) const;
  // The selected entries of the full vector v (gather, select; `what` names v in the message).
  VecX pick(const VecX& v, const char* what) const;

  int num_params_ = 0;
  std::vector<int> indices_;
  std::vector<std::string> names_;
  std::vector<bool> log_;
  std::vector<double> lower_, upper_, scale_;
};

}  // namespace addsim
