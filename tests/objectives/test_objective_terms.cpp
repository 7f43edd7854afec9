// Objective terms: values and partials ∂Φ/∂q^i, ∂Φ/∂p against central differences of the
// same objective on a fixed trajectory (no simulation: states and parameters are
// perturbed directly), plus the step-window and input checks.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "addsim/objectives/center_of_mass.h"
#include "addsim/objectives/objective.h"
#include "addsim/objectives/objective_terms.h"

namespace addsim {
namespace {

constexpr int kSteps = 6;

// Two particle bodies (3 and 2 particles) and one handle; finalised, no terms needed.
struct Fixture {
  Model model;
  Trajectory traj;
  Fixture() {
    model.scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.01, kSteps);
    model.add_particles("a", {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0.5)}, std::vector<Vec3>(3, Vec3::Zero()),
                        {0.3, 0.7, 1.1});
    model.add_particles("b", {Vec3(2, 0, 0), Vec3(2, 1, 0)}, std::vector<Vec3>(2, Vec3::Zero()), {0.5, 0.25});
    std::vector<Vec3> path;
    for (int r = 0; r <= kSteps; ++r) path.emplace_back(0.1 * r, 0.02 * r * r, 1.0);
    model.add_handle("hand", path);
    model.finalize();
    // A fixed, made-up trajectory (completed) with distinct states.
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    traj.p = model.params().defaults();
    model.initial_state(traj.p, traj.q0, traj.v0);
    for (int i = 0; i <= kSteps; ++i) {
      VecX q(model.num_dofs());
      for (int k = 0; k < q.size(); ++k) q[k] = u(rng);
      traj.q.push_back(i == 0 ? traj.q0 : q);
    }
  }
};

// Checks every ∂Φ/∂q^i entry and every ∂Φ/∂p entry against central differences.
void check_partials(const Model& m, const Trajectory& traj, const ObjectiveFunction& obj, bool expect_dq,
                    bool expect_dp) {
  ObjectiveGradient g(m.num_dofs(), m.params().size(), kSteps);
  const double phi = obj.evaluate(m, traj, &g);
  EXPECT_DOUBLE_EQ(phi, obj.evaluate(m, traj, nullptr));
  const double t = 1e-6;
  Trajectory pert = traj;
  double dq_norm = 0.0, dp_norm = 0.0;
  for (int i = 0; i <= kSteps; ++i) {
    const VecX* gi = g.find_dphi_dq(i);
    for (int k = 0; k < m.num_dofs(); ++k) {
      pert.q[i][k] = traj.q[i][k] + t;
      const double plus = obj.evaluate(m, pert, nullptr);
      pert.q[i][k] = traj.q[i][k] - t;
      const double minus = obj.evaluate(m, pert, nullptr);
      pert.q[i][k] = traj.q[i][k];
      const double fd = (plus - minus) / (2 * t);
      const double an = gi ? (*gi)[k] : 0.0;
      EXPECT_NEAR(an, fd, 1e-7 * std::max(1.0, std::abs(fd))) << "dphi/dq step " << i << " dof " << k;
      dq_norm += an * an;
    }
  }
  for (int j = 0; j < m.params().size(); ++j) {
    pert.p[j] = traj.p[j] + t;
    const double plus = obj.evaluate(m, pert, nullptr);
    pert.p[j] = traj.p[j] - t;
    const double minus = obj.evaluate(m, pert, nullptr);
    pert.p[j] = traj.p[j];
    const double fd = (plus - minus) / (2 * t);
    EXPECT_NEAR(g.dphi_dp()[j], fd, 1e-7 * std::max(1.0, std::abs(fd))) << "dphi/dp " << m.params().name_of(j);
    dp_norm += g.dphi_dp()[j] * g.dphi_dp()[j];
  }
  EXPECT_EQ(dq_norm > 0.0, expect_dq);
  EXPECT_EQ(dp_norm > 0.0, expect_dp);
}

TEST(CenterOfMass, VjpMatchesDifferencesInPositionsAndMasses) {
  Fixture f;
  const Body& body = *f.model.bodies()[0];
  const Vec3 w(0.3, -1.2, 0.7);
  VecX gq = VecX::Zero(f.model.num_dofs()), gp = VecX::Zero(f.model.params().size());
  const VecX& q = f.traj.q[3];
  center_of_mass_vjp(body, q, f.traj.p, w, gq, gp);
  const double t = 1e-6;
  for (int k = 0; k < q.size(); ++k) {
    VecX a = q, b = q;
    a[k] += t, b[k] -= t;
    const double fd = w.dot(body.center_of_mass(a, f.traj.p) - body.center_of_mass(b, f.traj.p)) / (2 * t);
    EXPECT_NEAR(gq[k], fd, 1e-8);
  }
  const int pm = static_cast<const ParticleBody&>(body).mass_param();
  for (int k = 0; k < 3; ++k) {
    VecX a = f.traj.p, b = f.traj.p;
    a[pm + k] += t, b[pm + k] -= t;
    const double fd = w.dot(body.center_of_mass(q, a) - body.center_of_mass(q, b)) / (2 * t);
    EXPECT_NEAR(gp[pm + k], fd, 1e-8);
    EXPECT_NE(gp[pm + k], 0.0);
  }
}

TEST(ObjectiveTerms, CenterOfMassTargetOverAWindow) {
  Fixture f;
  Objective obj;
  obj.add(0.7, std::make_unique<CenterOfMassTarget>(1, Vec3(0.5, 0.2, -0.1), StepWindow::range(2, -2)));
  check_partials(f.model, f.traj, obj, true, true);
  ObjectiveGradient g(f.model.num_dofs(), f.model.params().size(), kSteps);
  obj.evaluate(f.model, f.traj, &g);
  EXPECT_EQ(g.find_dphi_dq(1), nullptr);
  EXPECT_NE(g.find_dphi_dq(2), nullptr);
  EXPECT_NE(g.find_dphi_dq(kSteps - 1), nullptr);
  EXPECT_EQ(g.find_dphi_dq(kSteps), nullptr);
}

TEST(ObjectiveTerms, PointTargetsAndLinearState) {
  Fixture f;
  Objective obj;
  obj.add(1.3, std::make_unique<PointTargets>(std::vector<DofIndex>{0, 9},
                                              std::vector<Vec3>{Vec3(1, 2, 3), Vec3(-1, 0, 1)}));
  VecX w(f.model.num_dofs());
  for (int k = 0; k < w.size(); ++k) w[k] = std::cos(0.9 * k);
  obj.add(0.4, std::make_unique<LinearState>(w, 0));
  check_partials(f.model, f.traj, obj, true, false);
  // Value by hand.
  const double expect = 1.3 * 0.5 * ((f.traj.q[kSteps].segment<3>(0) - Vec3(1, 2, 3)).squaredNorm() +
                                     (f.traj.q[kSteps].segment<3>(9) - Vec3(-1, 0, 1)).squaredNorm()) +
                        0.4 * w.dot(f.traj.q[0]);
  EXPECT_NEAR(obj.evaluate(f.model, f.traj, nullptr), expect, 1e-12);
}

TEST(ObjectiveTerms, ControlSmoothnessIsAPureParameterTerm) {
  Fixture f;
  Objective obj;
  obj.add(2.0, std::make_unique<ControlSmoothness>(0));
  check_partials(f.model, f.traj, obj, false, true);
  // Σ ‖c^{r+1} − c^r‖² for c^r = (0.1 r, 0.02 r², 1).
  double expect = 0.0;
  for (int r = 0; r < kSteps; ++r) expect += 0.01 + std::pow(0.02 * (2 * r + 1), 2);
  EXPECT_NEAR(obj.evaluate(f.model, f.traj, nullptr), 2.0 * expect, 1e-12);
  const std::vector<double> values = obj.term_values(f.model, f.traj);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_NEAR(values[0], expect, 1e-12);
}

// Any per-step control block (motor targets: 1 column, kinematic poses: 6): the handle form
// is the 3-column case; other shapes and row windows pass the partials check.
TEST(ObjectiveTerms, ControlSmoothnessOnAnyPerStepControl) {
  Fixture f;
  const ParamEntry& hand = *f.model.params().require("handles.0.positions").entry;
  Objective by_handle, by_rows;
  by_handle.add(1.5, std::make_unique<ControlSmoothness>(0));
  by_rows.add(1.5, std::make_unique<ControlSmoothness>(std::vector<ControlRows>{{hand.offset, hand.rows, 3, hand.path}}));
  EXPECT_DOUBLE_EQ(by_handle.evaluate(f.model, f.traj, nullptr), by_rows.evaluate(f.model, f.traj, nullptr));
  // The same 21 numbers as a 1-column control (c^r = one value), and two 6-column rows
  // pairs plus the 1-column one in a window: Σ over every control.
  Objective scalar;
  scalar.add(1.0, std::make_unique<ControlSmoothness>(std::vector<ControlRows>{{hand.offset, 21, 1, "scalar"}}));
  double expect = 0.0;
  for (int k = 0; k < 20; ++k) expect += std::pow(f.traj.p[hand.offset + k + 1] - f.traj.p[hand.offset + k], 2);
  EXPECT_NEAR(scalar.evaluate(f.model, f.traj, nullptr), expect, 1e-14);
  EXPECT_GT(expect, 0.0);
  check_partials(f.model, f.traj, scalar, false, true);
  Objective mixed;
  mixed.add(0.7, std::make_unique<ControlSmoothness>(
                     std::vector<ControlRows>{{hand.offset, 3, 6, "six"}, {hand.offset + 2, 12, 1, "one"}},
                     StepWindow::range(1, 2)));
  check_partials(f.model, f.traj, mixed, false, true);
  EXPECT_THROW(ControlSmoothness(std::vector<ControlRows>{}), InputError);
  EXPECT_THROW(ControlSmoothness(std::vector<ControlRows>{{hand.offset, 1, 3, "one row"}}), InputError);
  Objective outside;
  outside.add(1.0, std::make_unique<ControlSmoothness>(std::vector<ControlRows>{{hand.offset, 30, 3, "too long"}}));
  EXPECT_THROW(outside.evaluate(f.model, f.traj, nullptr), InputError);
}

TEST(ObjectiveTerms, BadInputsAreInputErrors) {
  Fixture f;
  auto eval = [&](std::unique_ptr<ObjectiveTerm> t) {
    Objective o;
    o.add(1.0, std::move(t));
    return o.evaluate(f.model, f.traj, nullptr);
  };
  EXPECT_THROW(eval(std::make_unique<CenterOfMassTarget>(5, Vec3::Zero())), InputError);
  EXPECT_THROW(eval(std::make_unique<CenterOfMassTarget>(0, Vec3::Zero(), StepWindow::range(4, 2))), InputError);
  EXPECT_THROW(eval(std::make_unique<CenterOfMassTarget>(0, Vec3::Zero(), StepWindow::at(kSteps + 1))), InputError);
  EXPECT_THROW(eval(std::make_unique<PointTargets>(std::vector<DofIndex>{f.model.num_dofs() - 2},
                                                   std::vector<Vec3>{Vec3::Zero()})),
               InputError);
  EXPECT_THROW(PointTargets({0, 3}, {Vec3::Zero()}), InputError);
  EXPECT_THROW(eval(std::make_unique<ControlSmoothness>(1)), InputError);
  EXPECT_THROW(eval(std::make_unique<LinearState>(VecX::Zero(2), 0)), InputError);
}

TEST(StepWindow, ResolvesNegativeStepsFromTheEnd) {
  EXPECT_EQ(StepWindow::final_step().resolve(10, "t"), std::make_pair(10, 10));
  EXPECT_EQ(StepWindow::range(-3, -1).resolve(10, "t"), std::make_pair(8, 10));
  EXPECT_EQ(StepWindow::at(0).resolve(10, "t"), std::make_pair(0, 0));
  EXPECT_THROW(StepWindow::at(-12).resolve(10, "t"), InputError);
}

}  // namespace
}  // namespace addsim
