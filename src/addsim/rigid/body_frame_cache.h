#pragma once
/// Per-thread cache of the rigid bodies' rotation quantities (rigid/so3.h RotationFrame: R,
/// J(θ), ∂J/∂θ, JᵀJ and the coefficients of ∂²J/∂θ²). One evaluation of a model reads them
/// in every term that touches a body — its inertia, each joint and motor on it, its contact
/// proxies — and they depend on θ alone, so the first term builds them and the others read
/// the same numbers.
///
/// Entries are keyed by the bits of θ (and the order built), not by an evaluation count:
/// any entry point (evaluate, param_derivatives, energy, the sensitivity passes) gets the
/// frame of the θ it reads, whatever ran before. The cache is thread-local, so simulators
/// that share one model on several threads never share an entry; it is a fixed table of
/// kBodyFrameSlots entries (no allocation), the slot chosen from the body's DOF offset.
/// Two bodies on one slot only cost a rebuild; the values never depend on the cache.

#include "addsim/core/types.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/rigid/so3.h"

namespace addsim {

inline constexpr int kBodyFrameSlots = 64;

/// The rotation frame of body b at q (θ = q[b.dof() + 3 …]), built up to `order` (0: R, J;
/// 1: also ∂J/∂θ, JᵀJ and the contraction's coefficients) if the cached entry is not. The
/// reference stays valid until the next call on this thread for a body on the same slot
/// (use body_frame_beside() for a second body while holding one).
const RotationFrame& body_frame(const RigidBody& b, const VecX& q, int order);

/// body_frame() of b for use while `held` (a frame returned by body_frame() for another body)
/// is still read: if b's slot is held's and holds another θ, b's frame is built in a second,
/// thread-local entry instead, valid until the next such call on this thread.
const RotationFrame& body_frame_beside(const RigidBody& b, const VecX& q, int order, const RotationFrame& held);

}  // namespace addsim
