#include "addsim/rigid/body_frame_cache.h"

#include <array>
#include <cstring>

namespace addsim {

namespace {

thread_local std::array<RotationFrame, kBodyFrameSlots> tls_frames;
thread_local RotationFrame tls_spare;  // body_frame_beside(): b on held's slot

// Consecutive rigid bodies (6 DOFs each) take consecutive slots.
RotationFrame& slot_of(const RigidBody& b) { return tls_frames[(b.dof() / 6) % kBodyFrameSlots]; }

// True if f holds θ's frame up to `order`. θ is compared by its bits: −0.0 and 0.0 build
// frames that differ in the signs of zeros, NaN never matches.
bool holds(const RotationFrame& f, const Vec3& theta, int order) {
  return f.order >= order && std::memcmp(f.theta.data(), theta.data(), 3 * sizeof(double)) == 0;
}

}  // namespace

const RotationFrame& body_frame(const RigidBody& b, const VecX& q, int order) {
  const Vec3 theta = q.segment<3>(b.dof() + 3);
  RotationFrame& f = slot_of(b);
  if (!holds(f, theta, order)) rotation_frame(theta, order, f);
  return f;
}

const RotationFrame& body_frame_beside(const RigidBody& b, const VecX& q, int order, const RotationFrame& held) {
  RotationFrame& f = slot_of(b);
  if (&f != &held) return body_frame(b, q, order);
  const Vec3 theta = q.segment<3>(b.dof() + 3);
  if (holds(f, theta, order)) return f;
  if (!holds(tls_spare, theta, order)) rotation_frame(theta, order, tls_spare);
  return tls_spare;
}

}  // namespace addsim
