#include "addsim/sensitivity/objective_function.h"

#include <string>

#include "addsim/core/error.h"

namespace addsim {

ObjectiveGradient::ObjectiveGradient(int num_dofs, int num_params, int num_steps)
    : num_dofs_(num_dofs), dphi_dq_(num_steps + 1), dphi_dp_(VecX::Zero(num_params)) {}

VecX& ObjectiveGradient::dphi_dq(int step) {
  ADDSIM_CHECK(step >= 0 && step <= num_steps(),
               "objective touched step " + std::to_string(step) + " outside [0, " + std::to_string(num_steps()) + "]");
  VecX& g = dphi_dq_[step];
  if (g.size() == 0) g.setZero(num_dofs_);
  return g;
}

const VecX* ObjectiveGradient::find_dphi_dq(int step) const {
  if (step < 0 || step > num_steps()) return nullptr;
  const VecX& g = dphi_dq_[step];
  return g.size() == 0 ? nullptr : &g;
}

void require_complete_trajectory(const Model& model, const Trajectory& traj, const char* who) {
  if (!traj.completed()) {
    throw SimulationError(std::string(who) + ": cannot differentiate an incomplete trajectory: step " +
                              std::to_string(traj.failed_step) + " failed (" + traj.failure + ")",
                          traj.failed_step);
  }
  const int n = model.scheme().steps;
  if (static_cast<int>(traj.q.size()) != n + 1)
    throw InputError(std::string(who) + ": trajectory has " + std::to_string(traj.q.size()) +
                     " states, the model's scheme needs steps + 1 = " + std::to_string(n + 1));
  if (traj.p.size() != model.params().size())
    throw InputError(std::string(who) + ": trajectory has " + std::to_string(traj.p.size()) +
                     " parameters, the model has " + std::to_string(model.params().size()));
  if (traj.q0.size() != model.num_dofs() || traj.v0.size() != model.num_dofs())
    throw InputError(std::string(who) + ": trajectory initial state does not match the model's " +
                     std::to_string(model.num_dofs()) + " DOFs");
}

}  // namespace addsim
