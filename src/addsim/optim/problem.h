#pragma once
/// The optimisation problem over a simulation (paper §6): x ↦ Φ(x) and ∇Φ(x) by the adjoint,
/// and for sum-of-squares objectives x ↦ ρ(x) and its Jacobian dρ/dx by direct
/// sensitivities or reverse mode (JacobianMode), where x is the optimiser variable of a ParameterSelection (x = p / s
/// or x = ln(p) / s per scalar with the scalar's scale s, default 1; bounds from the task). One Simulator per evaluation slot is kept
/// alive across evaluations, so an evaluation costs one forward run plus one gradient pass
/// and nothing else (no re-parsing, no re-meshing; the linear solver's symbolic analysis is
/// reused). A failed simulation (a step that does not converge, an inverted element, a
/// SimulationError in the gradient pass) is an evaluation with Φ = +∞, counted, never an
/// exception.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/objectives/objective.h"
#include "addsim/sensitivity/direct_jacobian.h"
#include "addsim/sensitivity/parameter_selection.h"
#include "addsim/sensitivity/reverse_jacobian.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// One evaluation of the problem at x.
struct Evaluation {
  VecX x;                 ///< optimiser variable (|x|)
  double phi = 0.0;       ///< Φ(x), +∞ if the simulation failed
  VecX gradient;          ///< dΦ/dx (|x|) when asked for and the run completed, else empty
  bool failed = false;    ///< the simulation or its gradient pass failed
  std::string failure;    ///< what failed (step and reason), empty otherwise
  double seconds = 0.0;   ///< wall time of the forward run + gradient pass
};

/// Residuals ρ(x) with Φ = ½ ‖ρ‖² and, when asked for, the Jacobian dρ/dx (|ρ| × |x|).
struct LeastSquaresEvaluation {
  VecX x;
  double phi = 0.0;  ///< ½ ‖ρ‖², +∞ if failed
  VecX residuals;
  MatX jacobian;     ///< empty unless asked for and the run completed
  bool failed = false;
  std::string failure;
  double seconds = 0.0;
};

/// How the Gauss–Newton Jacobian dρ/dx is formed (docs/gradients.md §Reverse mode):
/// forward by direct sensitivities (one right-hand side per parameter and step,
/// sensitivity/direct_jacobian.h), backward by adjoints (one per residual row that reads the
/// state and step, sensitivity/reverse_jacobian.h), or whichever the cost model
/// jacobian_mode_cost() says is cheaper. Both give the same Jacobian to round-off.
enum class JacobianMode { kAuto, kDirect, kAdjoint };

/// "auto", "direct", "adjoint".
const char* to_string(JacobianMode mode);

/// Keeps the caller's model and objective alive (e.g. a loaded task); may be null.
using ProblemOwner = std::shared_ptr<const void>;

/// Memory for the stored sensitivities S^0 … S^n of one direct sweep (bytes); the Gauss–Newton
/// Jacobian is computed in blocks of columns that fit (cube drag: 0.2 MB for all 366).
inline constexpr double kSensitivityMemoryBytes = 512.0 * 1024.0 * 1024.0;

class SimulationProblem {
 public:
  /// `model` and `objective` must outlive the problem (or be kept alive by `owner`); p_base
  /// (|p|) holds the values of the unselected parameters and the starting point of the
  /// selected ones. `slots` simulators are created (one per thread that evaluates
  /// concurrently); each runs with `threads_per_slot` threads (1 or 2; 0 = the model's
  /// solver.threads). Throws InputError if p_base is outside the selection's bounds.
  SimulationProblem(const Model& model, const Objective& objective, ParameterSelection selection, VecX p_base,
                    int slots = 1, int threads_per_slot = 0, ProblemOwner owner = {});

  int size() const { return selection_.size(); }
  /// Number of simulators (evaluations that may run concurrently, one per slot).
  int slots() const { return static_cast<int>(simulators_.size()); }
  const ParameterSelection& selection() const { return selection_; }
  const Model& model() const { return model_; }
  const Objective& objective() const { return objective_; }
  /// Parameters of the problem's start (|p|).
  const VecX& p_base() const { return p_base_; }
  /// The optimiser variable at p_base.
  VecX x0() const { return selection_.to_scaled(p_base_); }
  /// Bounds on x (|x|): the selection's bounds, as ln for log-scaled scalars (ln 0 = −∞),
  /// divided by the scalar's scale.
  const VecX& lower() const { return lower_; }
  const VecX& upper() const { return upper_; }
  /// x projected onto [lower, upper].
  VecX project(const VecX& x) const;
  /// Full parameters p (|p|) at x.
  VecX parameters(const VecX& x) const { return selection_.from_scaled(p_base_, x); }
  /// The selected parameters in p's units (|x|) at x.
  VecX values(const VecX& x) const { return selection_.gather(parameters(x)); }
  /// True if every term of the objective is a sum of squares (Gauss–Newton applies).
  bool least_squares() const { return objective_.first_non_least_squares_term() < 0; }

  /// Φ(x) and, if `gradient`, dΦ/dx by the adjoint (one forward run + one backward pass).
  /// Uses simulator `slot`; evaluations on different slots may run concurrently.
  Evaluation evaluate(const VecX& x, bool gradient, int slot = 0);
  /// ρ(x) and, if `jacobian`, dρ/dx: one forward run + one multi-parameter direct sweep for
  /// all selected scalars (sensitivity/direct_jacobian.h; more sweeps only when the stored
  /// sensitivities would exceed kSensitivityMemoryBytes) or one reverse sweep
  /// (sensitivity/reverse_jacobian.h), as set_jacobian_mode() says.
  /// Throws InputError if !least_squares(). The slot keeps the completed trajectory for
  /// add_jacobian().
  LeastSquaresEvaluation evaluate_residuals(const VecX& x, bool jacobian, int slot = 0);
  /// Adds dρ/dx to `e`, a completed evaluate_residuals(x, false) of `slot`, from the
  /// trajectory that evaluation kept (no second simulation; Gauss–Newton asks for the
  /// Jacobian only at the points it accepts). If the slot has evaluated another point since,
  /// x is simulated again (counted). A failing sweep marks `e` failed (Φ = +∞, counted), as
  /// in evaluate_residuals(x, true). e.seconds grows by the time spent.
  void add_jacobian(LeastSquaresEvaluation& e, int slot = 0);

  /// Memory for the stored sensitivities of one direct sweep (bytes, > 0; default
  /// kSensitivityMemoryBytes): evaluate_residuals() splits the Jacobian into column blocks
  /// that fit.
  void set_sensitivity_memory(double bytes);
  /// How add_jacobian() and evaluate_residuals(x, true) form dρ/dx (default kAuto).
  /// kAdjoint needs every objective term to give its state rows
  /// (ObjectiveTerm::residual_state_rows; InputError at the first Jacobian otherwise); kAuto
  /// uses direct sensitivities for objectives with such a term.
  void set_jacobian_mode(JacobianMode mode) { jacobian_mode_ = mode; }
  JacobianMode jacobian_mode() const { return jacobian_mode_; }
  /// The mode the last Jacobian of `slot` was formed in (kDirect or kAdjoint; kAuto before
  /// the first).
  JacobianMode last_jacobian_mode(int slot = 0) const { return residual_slots_.at(slot).used; }

  /// Forward simulations run so far (the paper's "simulation runs").
  long simulations() const { return simulations_.load(); }
  /// Of these, the failed ones (Φ = +∞).
  long failures() const { return failures_.load(); }

 private:
  // Runs the forward simulation at x on `slot`; false (with `why`) if it failed.
  bool simulate(const VecX& x, int slot, Trajectory& traj, std::string& why);
  // dρ/dx (|ρ| × |x|) of the completed `traj` at x with the sweep of `slot` (throws
  // SimulationError if the sweep fails).
  void residual_jacobian(const Trajectory& traj, int slot, MatX& out);
  // Marks `e` failed (Φ = +∞, counted).
  void fail(LeastSquaresEvaluation& e);

  ProblemOwner owner_;
  const Model& model_;
  const Objective& objective_;
  ParameterSelection selection_;
  VecX p_base_, lower_, upper_;
  double sensitivity_memory_ = kSensitivityMemoryBytes;
  JacobianMode jacobian_mode_ = JacobianMode::kAuto;
  std::vector<std::unique_ptr<Simulator>> simulators_;
  // Per slot: the direct and reverse sweeps' workspaces (created at the first Jacobian in
  // their mode) and the last completed trajectory of evaluate_residuals with its x (for
  // add_jacobian).
  struct ResidualSlot {
    std::unique_ptr<DirectSensitivitySweep> sweep;
    std::unique_ptr<ReverseJacobianSweep> reverse;
    TrajectorySensitivities zero;          ///< no active column: the terms give ∂ρ/∂p with it
    std::vector<ResidualStateRows> rows;  ///< the terms' ∂ρ/∂q^i blocks (reverse mode)
    JacobianMode used = JacobianMode::kAuto;
    bool no_state_rows = false;            ///< a term gives no state rows (kAuto: direct from then on)
    std::vector<MatX> parts;  ///< the objective terms' residual blocks (memory reused)
    MatX block;               ///< a column block's Jacobian when the columns are split
    Trajectory traj;
    VecX x;
    bool valid = false;
  };
  std::vector<ResidualSlot> residual_slots_;
  std::atomic<long> simulations_{0}, failures_{0};
};

}  // namespace addsim
