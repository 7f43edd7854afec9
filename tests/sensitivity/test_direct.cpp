// Direct sensitivities: the full vectors s^i = dq^i/dp_j against finite differences of
// whole rollouts, and the parameter-list handling.

#include <gtest/gtest.h>

#include <cmath>

#include "addsim/sensitivity/direct.h"
#include "addsim/solver/simulator.h"
#include "scenes.h"

namespace addsim::testing {
namespace {

// s^i for one initial-velocity and one stiffness parameter vs central differences of q^i.
TEST(Direct, SensitivityVectorsMatchRolloutDifferences) {
  for (Integrator integ : {Integrator::kBdf1, Integrator::kBdf2}) {
    Scene s = make_scene(SceneKind::kChain, integ, ContactModel::kLinear, 40);
    const Model& m = *s.model;
    const VecX p = m.params().defaults();
    Simulator sim(m);
    const Trajectory traj = sim.run(p);
    ASSERT_TRUE(traj.completed());
    for (int j : {s.groups.at("velocities")[4], s.groups.at("stiffness")[0], s.groups.at("positions")[2]}) {
      DirectOptions opt;
      opt.keep_sensitivities_of = j;
      const DirectResult dir = gradient_direct(m, traj, s.objective, std::vector<int>{j}, opt);
      ASSERT_EQ(static_cast<int>(dir.sensitivities.size()), m.scheme().steps + 1);
      const double t = 1e-5 * std::max(1.0, std::abs(p[j]));
      VecX pp = p, pm = p;
      pp[j] += t;
      pm[j] -= t;
      const Trajectory tp = sim.run(pp), tm = sim.run(pm);
      ASSERT_TRUE(tp.completed() && tm.completed());
      for (int i : {0, 1, 2, 10, m.scheme().steps}) {
        const VecX fd = (tp.q[i] - tm.q[i]) / (2.0 * t);
        const VecX& an = dir.sensitivities[i];
        const double err = (an - fd).norm() / std::max(fd.norm(), 1e-8);
        EXPECT_LT(err, 1e-5) << m.params().name_of(j) << " step " << i << " (" << to_string(integ) << "): analytic "
                             << an.transpose() << "\nfd " << fd.transpose();
      }
      EXPECT_GT(dir.sensitivities.back().norm(), 0.0);
    }
  }
}

// The directional product Σ_c w_c s^i_c against finite differences of rollouts along w.
TEST(Direct, DirectionalSensitivityMatchesRolloutDifferences) {
  Scene s = make_scene(SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 40);
  const Model& m = *s.model;
  const VecX p = m.params().defaults();
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed());
  const std::vector<int> params = {s.groups.at("velocities")[4], s.groups.at("stiffness")[0],
                                   s.groups.at("positions")[2]};
  // w scaled by each parameter's magnitude, so one difference step suits all three.
  DirectOptions opt;
  opt.direction = Eigen::Vector3d(0.7, -1.3, 0.4);
  VecX step = VecX::Zero(p.size());
  for (int c = 0; c < 3; ++c) {
    opt.direction[c] *= std::max(1.0, std::abs(p[params[c]]));
    step[params[c]] = opt.direction[c];
  }
  const DirectResult dir = gradient_direct(m, traj, s.objective, params, opt);
  ASSERT_EQ(static_cast<int>(dir.directional.size()), m.scheme().steps + 1);
  const double t = 1e-6;
  const Trajectory tp = sim.run(p + t * step), tm = sim.run(p - t * step);
  ASSERT_TRUE(tp.completed() && tm.completed());
  for (int i : {0, 1, 2, 10, m.scheme().steps}) {
    const VecX fd = (tp.q[i] - tm.q[i]) / (2.0 * t);
    const double err = (dir.directional[i] - fd).norm() / std::max(fd.norm(), 1e-8);
    EXPECT_LT(err, 1e-5) << "step " << i;
  }
  EXPECT_GT(dir.directional.back().norm(), 0.0);
  DirectOptions wrong;
  wrong.direction = VecX::Ones(2);
  EXPECT_THROW(gradient_direct(m, traj, s.objective, params, wrong), InputError);
}

TEST(Direct, RejectsBadParameterLists) {
  Scene s = make_scene(SceneKind::kChain, Integrator::kBdf2, ContactModel::kLinear, 5);
  Simulator sim(*s.model);
  const Trajectory traj = sim.run(s.model->params().defaults());
  EXPECT_THROW(gradient_direct(*s.model, traj, s.objective, std::vector<int>{-1}), InputError);
  EXPECT_THROW(gradient_direct(*s.model, traj, s.objective, std::vector<int>{s.model->params().size()}), InputError);
  DirectOptions opt;
  opt.keep_sensitivities_of = 3;
  EXPECT_THROW(gradient_direct(*s.model, traj, s.objective, std::vector<int>{0, 1}, opt), InputError);
}

}  // namespace
}  // namespace addsim::testing
