#pragma once
/// Contact signature of a recorded rollout: for every step and every contact pair (a
/// contact point of a PointContactTerm or RigidContactTerm against one of its obstacles)
/// the branch of the contact law that step was on. Φ(p) is smooth only while the signature
/// stays the same: the normal penalty k_n max(−g, 0) and the clamped linear friction
/// min(k_t ‖Tẋ‖, c_f f_n) are only C⁰ at their switches, and hybrid stick/slip labels
/// change the step equations. A finite difference whose perturbed rollout has another
/// signature than the unperturbed one differentiates across such a switch, not the
/// trajectory the adjoint differentiates (sensitivity/finite_difference.h uses this).
///
/// The codes are recomputed from the stored states (q^i and the BDF rates, exactly as the
/// forward step formed them) and, for hybrid contact, from the labels recorded in
/// StepReport::contact. The damping ramp is C¹ and the tanh friction smooth, so neither
/// splits a branch.

#include <cstdint>
#include <string>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/solver/simulator.h"

namespace addsim {

/// Branch of one contact pair in one step.
enum class ContactCode : std::uint8_t {
  kSeparated = 0,  ///< g ≥ 0: no contact force
  kTouching = 1,   ///< g < 0, friction on its smooth branch (linear penalty below the limit, or tanh)
  kLimited = 2,    ///< g < 0, clamped linear friction at the Coulomb limit c_f f_n
  kHeld = 3,       ///< g < 0, hybrid stick constraint (label in StepReport::contact)
  kSliding = 4,    ///< g < 0, hybrid sliding force after a release (label in StepReport::contact)
};

struct ContactSignature {
  /// codes[i − 1][k]: code of pair k in step i = 1 … m (m converged steps).
  std::vector<std::vector<ContactCode>> codes;
  /// One name per pair, e.g. "point_contact dof 12 / floor" or "rigid_contact dof 0 point 3 / floor".
  std::vector<std::string> pairs;
  /// Steps with at least one pair in contact (code ≠ kSeparated).
  int contact_steps() const;
};

/// The signature of `traj` (a rollout of `model`; its converged steps only).
ContactSignature contact_signature(const Model& model, const Trajectory& traj);

/// Where two signatures of the same model differ.
struct SignatureDifference {
  int steps = 0;        ///< steps with at least one differing pair (a step missing on one side counts)
  int first_step = -1;  ///< first such step (≥ 1), −1 if none
  /// The first differing pair and its codes, e.g. "step 41: point_contact dof 12 / floor touching -> separated".
  std::string first;
  bool same() const { return steps == 0; }
};

SignatureDifference compare(const ContactSignature& a, const ContactSignature& b);

/// "separated", "touching", "limited", "held" or "sliding".
const char* to_string(ContactCode code);

}  // namespace addsim
