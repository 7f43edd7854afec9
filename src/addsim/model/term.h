#pragma once
/// The term contract (DESIGN.md §1): every physical ingredient adds its contribution to
/// the residual r = M a + c − f and reports its local partials ∂r/∂q, ∂r/∂v, ∂r/∂a (by
/// stencil, through Assembly) and ∂r/∂p (through ParamSink). Terms never see which
/// integrator runs; they read q^i, v^i, a^i of the step being solved.

#include <string>
#include <string_view>

#include "addsim/core/types.h"
#include "addsim/math/sparse_assembly.h"
#include "addsim/model/time_scheme.h"

namespace addsim {

/// Everything a term may read when evaluated at step i.
struct TermContext {
  const VecX& q;      ///< q^i (|q|)
  const VecX& v;      ///< v^i (|q|), from the time scheme
  const VecX& a;      ///< a^i (|q|), from the time scheme
  const VecX& p;      ///< full parameter vector (|p|)
  int step;           ///< i ≥ 1
  const TimeScheme& scheme;
};

class Term {
 public:
  virtual ~Term() = default;
  /// Short name used in reports ("inertia", "contact", "spring").
  virtual std::string_view name() const = 0;
  /// Called once when the model is finalised: add stencils and remember their ids.
  virtual void declare(StencilSet& stencils) = 0;
  /// Adds r contributions and, when asked, the local partial Jacobians.
  virtual void evaluate(const TermContext& ctx, Assembly& out) const = 0;
  /// Terms whose evaluation is a sum over independent items (an FEM body's elements)
  /// return their number, and evaluate_items() adds the items [begin, end) alone, so that
  /// an evaluation can be split between threads (Simulator::evaluate). 0: not splittable.
  virtual int item_count() const { return 0; }
  virtual void evaluate_items(const TermContext& ctx, Assembly& out, int begin, int end) const {}
  /// Adds ∂r/∂p for this term's parameters (vjp or column, as the sink decides).
  virtual void param_derivatives(const TermContext& ctx, ParamSink& sink) const {}
  /// Potential energy of conservative parts (J), for diagnostics; 0 if none.
  virtual double energy(const TermContext& ctx) const { return 0.0; }
  /// False (with a reason naming the element) if the state is outside the term's
  /// domain, e.g. an inverted element; the line search rejects such states.
  virtual bool admissible(const TermContext& ctx, std::string* why) const { return true; }
};

}  // namespace addsim
