#include "addsim/objectives/center_of_mass.h"

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"

namespace addsim {

void center_of_mass_vjp(const Body& body, const VecX& q, const VecX& p, const Vec3& g, VecX& dphi_dq,
                        VecX& dphi_dp) {
  switch (body.kind()) {
    case BodyKind::kParticles: {
      const auto& pb = static_cast<const ParticleBody&>(body);
      const double total = pb.total_mass(p);
      const Vec3 c = pb.center_of_mass(q, p);
      for (int k = 0; k < pb.count(); ++k) {
        const double mk = p[pb.mass_param() + k];
        dphi_dq.segment<3>(pb.dof(k)) += (mk / total) * g;
        dphi_dp[pb.mass_param() + k] += g.dot(q.segment<3>(pb.dof(k)) - c) / total;
      }
      return;
    }
    case BodyKind::kFem: {
      // Each node carries a quarter of the volume of each of its tets (FemBody::center_of_mass).
      const auto& fb = static_cast<const FemBody&>(body);
      double volume = 0.0;
      for (int e = 0; e < fb.num_tets(); ++e) volume += fb.rest_volume(e);
      for (int e = 0; e < fb.num_tets(); ++e) {
        const double w = 0.25 * fb.rest_volume(e) / volume;
        for (int a = 0; a < 4; ++a) dphi_dq.segment<3>(fb.dof(fb.mesh().tets[e][a])) += w * g;
      }
      return;
    }
    case BodyKind::kRigid:
      // q = (p_WB, θ): the centre of mass is the first 3 DOFs.
      dphi_dq.segment<3>(body.dof_offset()) += g;
      return;
  }
  throw InternalError("centre-of-mass objective: unknown body kind of '" + body.name() + "'");
}

}  // namespace addsim

namespace addsim {

Vec3 center_of_mass_jvp(const Body& body, const VecX& q, const VecX& p, const VecX& dq, const VecX& dp) {
  // One vjp per unit vector e_k gives row k of [∂c/∂q ∂c/∂p]; c is linear in few DOFs, so
  // three sparse rows are cheap next to a simulation.
  Vec3 out;
  VecX gq(q.size()), gp(p.size());
  for (int k = 0; k < 3; ++k) {
    gq.setZero();
    gp.setZero();
    center_of_mass_vjp(body, q, p, Vec3::Unit(k), gq, gp);
    out[k] = gq.dot(dq) + gp.dot(dp);
  }
  return out;
}

}  // namespace addsim
