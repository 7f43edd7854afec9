#pragma once
/// The Model: immutable once finalised. Bodies and their DOF layout, handles, terms,
/// the parameter table with its default values, the time scheme and solver settings.
/// Built from typed C++ (io/ turns scene files into this); strings stop at io/.

#include <memory>
#include <string>
#include <vector>

#include "addsim/math/sparse_assembly.h"
#include "addsim/model/body.h"
#include "addsim/model/handle.h"
#include "addsim/model/parameters.h"
#include "addsim/model/term.h"
#include "addsim/model/time_scheme.h"

namespace addsim {

/// Step-Jacobian solver: kAuto picks the fastest available (docs/solver.md).
enum class LinearSolverKind { kAuto, kUmfpack, kEigenLu, kCholmodBicgstab, kDense, kKlu, kBanded, kSchur };

/// Arithmetic of the forward Newton's factors (solver.factorization_precision): kSingle stores
/// and computes the LU in float while the residual, the iterate and the convergence tests stay
/// double (mixed-precision Newton, docs/solver.md). Only solvers that have a single-precision
/// factorisation accept it (supports_factorization_options, solver/linear_solver.h); the sensitivities'
/// solvers are always double.
enum class FactorizationPrecision { kDouble, kSingle };

/// How the forward Newton's step Jacobians are factorised (solver.factorization_precision,
/// solver.pivot_threshold). The defaults are double factors with partial pivoting, which every
/// solver kind supports and the sensitivities always use; the other values only where
/// supports_factorization_options (solver/linear_solver.h).
struct FactorizationOptions {
  FactorizationPrecision precision = FactorizationPrecision::kDouble;
  /// Threshold of the banded LU's pivots, in (0, 1]: the diagonal stays the pivot while it is
  /// at least this fraction of its column's largest entry below it; 1 = partial pivoting
  /// (solver/banded_lu.h).
  double pivot_threshold = 1.0;
};

/// Largest solver.chord_acceleration (Anderson depth of the chord tail).
inline constexpr int kMaxChordAcceleration = 8;

struct SolverSettings {
  double tolerance = 1e-10;      ///< converged when ‖r‖ < tolerance (N, consistent units) …
  /// … and every body's ‖r_b‖ ≤ relative_tolerance · ‖Σ|contributions|_b‖ (docs/solver.md)
  double relative_tolerance = 1e-8;
  int max_iterations = 50;       ///< Newton iteration cap per step
  int max_halvings = 30;         ///< line-search halvings per iteration
  LinearSolverKind linear_solver = LinearSolverKind::kAuto;
  /// The forward Newton's factorisations (solver.factorization_precision, solver.pivot_threshold).
  FactorizationOptions factorization;
  /// Keep one LU across Newton iterations and steps, solving by GMRES preconditioned with
  /// it while that is cheaper than refactorising (solver/reused_factorization.h).
  bool reuse_factorization = true;
  /// Threads of one simulation: with 2, the element loops of every evaluation are split with
  /// a helper thread (Simulator::evaluate). Results then differ from 1 thread at round-off.
  int threads = 1;
  /// Sub-step retry depth (solver.substep_retry.max_depth): a step that fails is solved again
  /// as sub-steps down to h / 2^depth (Simulator). −1: not set (off for simulate, on for
  /// optimisation problems); 0: off.
  int substep_retry = -1;
  /// Plain Newton: the first iteration of every step solves with the clamped-spring Newton
  /// matrix (compressed springs' transverse stiffness left out, Assembly::clamp_compressed_springs),
  /// the later ones with the exact step Jacobian (solver.clamped_first_iteration; docs/solver.md
  /// "Newton iterations per step on the Table 2 scenes"). Changes the path, not the root.
  bool clamped_first_iteration = false;
  /// Plain Newton, stick predictor (solver.stick_predictor_ratio β; 0: off): the first
  /// iteration of every step linearises the friction of slipping contact points with
  /// k_t ‖Tẋ‖ ≤ β c_f f_n with the stick law −k_t Tẋ (Assembly::stick_predictor_ratio), the
  /// later ones exactly (docs/solver.md "Stick predictor"). Changes the path, not the root.
  double stick_predictor_ratio = 0.0;
  /// Plain Newton, chord tail (solver.chord_contraction ρ; 0: off): once a full Newton step
  /// has shrunk ‖r‖ by at least ρ and its quadratic model predicts that, the following
  /// directions reuse that step's LU (chord steps, no new partials or factorisation) for as
  /// long as each shrinks ‖r‖ by ρ (docs/solver.md "Chord tail"). Same roots, another path.
  double chord_contraction = 0.0;
  /// Chord tail with Anderson mixing (solver.chord_acceleration m; 0: off): from the second
  /// chord step of a sequence on, each chord step J₀⁻¹(−r) is combined with the last m
  /// differences of the sequence's iterates and chord steps, as GMRES would on
  /// J₀⁻¹ J Δq = −J₀⁻¹ r (docs/solver.md "Sheet flip, sixth round"). No effect without
  /// chord_contraction. Same roots, another path.
  int chord_acceleration = 0;
  /// Plain Newton, contact correction (solver.contact_correction): each undamped Newton
  /// direction gets the nonlinear correction of the point-contact laws, solved per body with
  /// the other coordinates held (solver/contact_correction.h; docs/solver.md). Same roots,
  /// another path.
  bool contact_correction = false;
  /// Plain Newton with a reused factorisation, fresh LUs first (solver.fresh_factorization_iterations
  /// n; 0: off): the first n Newton iterations of every step factorise their step Jacobian
  /// instead of first trying GMRES on the kept LU, which the large first steps of a step
  /// (motor-driven legs, contact switches) have moved away from; later iterations reuse as
  /// before (docs/solver.md "Soft-feet quadruped: fresh LUs for a step's first iterations").
  /// Same roots, another path at round-off.
  int fresh_factorization_iterations = 0;
  /// Direct solves of Newton directions refined only to the requested accuracy
  /// (solver.refine_to_tolerance): a direct solve on a fresh LU stops its iterative refinement
  /// once ‖b − A x‖ is within the tolerance the direction was asked for (the inexact-Newton
  /// forcing, as GMRES on a kept LU), instead of refining while the residual halves. The
  /// adjoint and direct-sensitivity solves are unchanged. Same roots, another path (docs/solver.md
  /// "Direct solves to the requested tolerance").
  bool refine_to_tolerance = false;
};

class Model {
 public:
  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // --- building (before finalize) ---
  /// Appends a particle body of `count` points; returns its index.
  int add_particles(const std::string& name, const std::vector<Vec3>& positions, const std::vector<Vec3>& velocities,
                    const std::vector<double>& masses);
  /// Appends a body built elsewhere; its DOF block must start at num_dofs().
  int add_body(std::unique_ptr<Body> body);
  /// Appends a handle with per-step positions ((steps+1) rows); returns its index.
  int add_handle(const std::string& name, const std::vector<Vec3>& positions);
  void add_term(std::unique_ptr<Term> term);
  /// Declares stencils and builds the Jacobian pattern; no changes afterwards.
  void finalize();

  // --- reading ---
  bool finalized() const { return finalized_; }
  int num_dofs() const { return num_dofs_; }
  const TimeScheme& scheme() const { return scheme_; }
  TimeScheme& scheme_mut() { return scheme_; }
  const SolverSettings& solver() const { return solver_; }
  SolverSettings& solver_mut() { return solver_; }
  ParameterTable& params() { return params_; }
  const ParameterTable& params() const { return params_; }
  const std::vector<std::unique_ptr<Body>>& bodies() const { return bodies_; }
  const std::vector<Handle>& handles() const { return handles_; }
  const std::vector<std::unique_ptr<Term>>& terms() const { return terms_; }
  const StencilSet& stencils() const { return stencils_; }
  const SparsePattern& pattern() const { return pattern_; }

  /// q⁰ and v⁰ (|q|) from parameters p.
  void initial_state(const VecX& p, VecX& q0, VecX& v0) const;
  /// Total kinetic energy of all bodies (J) at (q, v).
  double kinetic_energy(const VecX& q, const VecX& v, const VecX& p) const;

  /// Free-form notes for docs/outputs ("gravity", "contact model", ...).
  std::vector<std::pair<std::string, std::string>> info;

 private:
  void require_building() const;

  TimeScheme scheme_ = TimeScheme::make(Integrator::kBdf2, 0.01, 100);
  SolverSettings solver_;
  ParameterTable params_;
  std::vector<std::unique_ptr<Body>> bodies_;
  std::vector<Handle> handles_;
  std::vector<std::unique_ptr<Term>> terms_;
  StencilSet stencils_;
  SparsePattern pattern_;
  int num_dofs_ = 0;
  bool finalized_ = false;
};

}  // namespace addsim
