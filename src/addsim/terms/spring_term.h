#pragma once
/// Springs between two anchors (paper §5.3, potentials (k/2) c(q)ᵀc(q)):
///   distance:    c = ‖x_a − x_b‖ − l₀               (rest length l₀)
///   zero-length: c = x_a − x_b                       (ball-and-socket joints)
///   unilateral:  c = max(‖x_a − x_b‖ − l₀, 0)         (cables and strings: pull only)
/// with optional damping along the spring, f_a = −k_d (u·(ẋ_a − ẋ_b)) u for the distance
/// kinds (u = unit direction a − b) and f_a = −k_d (ẋ_a − ẋ_b) for zero length. A
/// unilateral spring is slack (no force, no damping) when ‖x_a − x_b‖ ≤ l₀.
/// An end on a particle adds its 3 DOFs; an end embedded in an FEM tet (x = Σ_m b_m x_m)
/// adds the tet's 12, with residual rows b_m r_a and Jacobian blocks b_m b_l ∂r_a/∂x.

#include <array>
#include <string>
#include <vector>

#include "addsim/model/anchor.h"
#include "addsim/model/model.h"
#include "addsim/model/term.h"
#include "addsim/terms/spring_pair_forces.h"

namespace addsim {

enum class SpringKind { kDistance, kZeroLength, kUnilateral };
const char* to_string(SpringKind kind);

struct Spring {
  SpringKind kind = SpringKind::kDistance;
  Anchor a, b;
  double rest_length = 0.0;  ///< l₀, m (ignored for zero length)
  int stiffness_param = -1;  ///< index in p of k (N/m)
  int damping_param = -1;    ///< index in p of k_d (N s/m); −1 = no damping
  std::string label;         ///< "springs.3" or "bodies.sheet.springs.12"
};

/// Regime of one spring, for tests.
enum class SpringRegime { kActive, kSlack };

class SpringTerm final : public Term {
 public:
  SpringTerm(const Model* model, std::vector<Spring> springs);
  std::string_view name() const override { return "springs"; }
  void declare(StencilSet& stencils) override;
  void evaluate(const TermContext& ctx, Assembly& out) const override;
  void param_derivatives(const TermContext& ctx, ParamSink& sink) const override;
  double energy(const TermContext& ctx) const override;
  bool admissible(const TermContext& ctx, std::string* why) const override;

  const std::vector<Spring>& springs() const { return springs_; }
  SpringRegime regime(const TermContext& ctx, int k) const;
  /// Distance and unilateral springs between two particles are evaluated several at a time
  /// (spring_pair_forces.h, the same numbers bit for bit); false sends them through the
  /// one-spring path, for tests and measurements.
  void set_batched_pairs(bool on) { batched_pairs_ = on; }

 private:
  struct Local;  // force on a and its partials at one state
  // clamp: drop the transverse stiffness of a compressed spring (Assembly::clamp_compressed_springs).
  // partials = false: r and the energy only (kx, kv, dr_dk, dr_dkd stay zero).
  Local local(const TermContext& ctx, int k, bool clamp = false, bool partials = true) const;

  // Per spring: the weight of each stencil node in d = x_a − x_b (+b_m for a's nodes,
  // −b_m for b's; a particle is one node of weight 1).
  struct NodeWeights {
    std::array<double, 8> w{};
    int count = 0;
    bool unit = true;  // every |w_m| = 1 (no embedded ends)
  };

  // Springs of two distinct particle ends (stencil [a's 3 DOFs, b's 3 DOFs], weights +1, −1):
  // evaluate() and admissible() read their positions and velocities straight from q and v,
  // without the general path's anchor dispatch, and evaluate() adds them by
  // Assembly::add_point_pair (the same numbers bit for bit).
  std::vector<char> particle_pair_;

  // The particle-pair springs of the distance and unilateral kinds, in spring order: their forces
  // and partials are computed spring_pairs::kLanes at a time ahead of their scatter, which keeps
  // the spring order (and so the sums into r and the Jacobian).
  struct PairSpring {
    int spring;      // index in springs_
    int da, db;      // first DOFs of ends a and b
    double min_len;  // collapse bound kMinRelativeLength max(l₀, 1 m)
    // No force at ‖d‖ ≤ skip_len: min_len, or for a unilateral spring max(l₀, min_len) (slack or
    // collapsed; the same decisions as spring_force()'s two tests, comparisons do not round).
    double skip_len;
    // The spring's constants, read per evaluation without the Spring record.
    int stiffness_param, damping_param;
    double rest_length;
    // admissible(): collapsed at ‖d‖² ≤ min_len2 = min_len², unless slack at ‖d‖² ≤ slack_len2
    // (l₀² for a unilateral spring, −∞ otherwise), as its tests of the other springs.
    double min_len2, slack_len2;
    int stencil = -1;  // stencil_[spring]
    // One past the last pair of this pair's run: pairs_[i … run_end) are consecutive springs
    // (evaluate() scatters a run in one loop over pairs_, in spring order).
    int run_end = 0;
  };
  std::vector<PairSpring> pairs_;
  std::vector<int> pair_index_;  // per spring: its index in pairs_, −1 if none
  // Springs that admissible() tests outside pairs_ (neither a pair nor of zero length), in order.
  std::vector<int> other_springs_;
  // Whether spring k is not collapsed (admissible()'s test of one spring).
  bool spring_admissible(const TermContext& ctx, int k) const;
  bool batched_pairs_ = true;
  // Positions, velocities and parameters of pairs_[begin, end) into lanes 0 … end − begin − 1.
  void load_pair_lanes(const TermContext& ctx, int begin, int end, spring_pairs::Input& in) const;

  const Model* model_;
  std::vector<Spring> springs_;
  std::vector<int> stencil_;
  std::vector<NodeWeights> node_weights_;
};

}  // namespace addsim
