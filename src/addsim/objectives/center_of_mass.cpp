#include "addsim/objectives/center_of_mass.h"

#include "addsim/core/error.h"

namespace addsim {

void center_of_mass_vjp(const Body& body, const VecX& q, const VecX& p, const Vec3& g, VecX& dphi_dq,
                        VecX& dphi_dp) {
  if (body.kind() != BodyKind::kParticles)
    throw InputError("centre-of-mass objective: body '" + body.name() +
                     "' is not a particle body; its centre-of-mass derivative is not implemented");
  const auto& pb = static_cast<const ParticleBody&>(body);
  const double total = pb.total_mass(p);
  const Vec3 c = pb.center_of_mass(q, p);
  for (int k = 0; k < pb.count(); ++k) {
    const double mk = p[pb.mass_param() + k];
    dphi_dq.segment<3>(pb.dof(k)) += (mk / total) * g;
    dphi_dp[pb.mass_param() + k] += g.dot(q.segment<3>(pb.dof(k)) - c) / total;
  }
}

}  // namespace addsim
