// Per-parameter scales of a ParameterSelection (task key `parameters[k].scale`): the
// optimiser variable is x = p / s (or ln(p) / s), its bounds are the physical bounds mapped the
// same way, and every derivative in x is the physical one times dp/dx = s (or s · p): the
// adjoint gradient, the Gauss–Newton Jacobian in both modes, and central differences in x.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/objectives/markers.h"
#include "addsim/optim/optimizer.h"
#include "optim_scenes.h"

namespace addsim {
namespace {

using test::kParticleIncline;
using test::kRigidSphereThrow;

constexpr double kNoBound = std::numeric_limits<double>::infinity();

// Positions of two surface markers of the rigid sphere at steps 50 and 100 when thrown at the
// scene's v, ω plus an offset: the objective depends on ω through the rotation.
std::vector<MarkerFrame> sphere_frames(const std::vector<Vec3>& locals) {
  Scene s = load_scene_text(kRigidSphereThrow, "test.json");
  VecX p = s.model->params().defaults();
  p.segment<3>(s.model->params().require("bodies.0.velocity").offset) += Vec3(0.3, 0.1, 0.2);
  p.segment<3>(s.model->params().require("bodies.0.angular_velocity").offset) += Vec3(2.0, -4.0, 1.0);
  Simulator sim(*s.model, 1);
  const Trajectory traj = sim.run(p);
  EXPECT_TRUE(traj.completed());
  std::vector<MarkerFrame> frames;
  for (int step : {50, 100}) {
    MarkerFrame f;
    f.step = step;
    for (const Vec3& l : locals) {
      f.positions.push_back(rigid_marker(*s.model, 0, l).position(traj.q[step]));
      f.visible.push_back(true);
    }
    frames.push_back(f);
  }
  return frames;
}

std::shared_ptr<test::SceneTask> sphere_task(const std::vector<ParameterSpec>& specs) {
  const std::vector<Vec3> locals = {Vec3(0.1, 0, 0), Vec3(0, 0.05, 0.08)};
  auto t = test::scene_task(kRigidSphereThrow, specs);
  std::vector<Marker> markers;
  for (const Vec3& l : locals) markers.push_back(rigid_marker(*t->scene.model, 0, l));
  t->objective.add(1.0, std::make_unique<MarkerTrajectories>(markers, sphere_frames(locals)));
  return t;
}

// The particle on the incline: its positions at four steps with μ = 0.3, fitted from μ = 0.15
// and a perturbed initial velocity.
std::shared_ptr<test::SceneTask> incline_task(const std::vector<ParameterSpec>& specs) {
  std::vector<MarkerFrame> frames;
  {
    Scene s = load_scene_text(kParticleIncline, "test.json");
    Simulator sim(*s.model, 1);
    const Trajectory traj = sim.run(s.model->params().defaults());
    EXPECT_TRUE(traj.completed());
    for (int step : {25, 50, 75, 100}) frames.push_back({step, {traj.q[step].head<3>()}, {true}});
  }
  auto t = test::scene_task(kParticleIncline, specs);
  t->objective.add(1.0,
                   std::make_unique<MarkerTrajectories>(std::vector<Marker>{node_marker(*t->scene.model, 0, 0)}, frames));
  return t;
}

VecX incline_start(const test::SceneTask& t) {
  VecX p = t.scene.model->params().defaults();
  p[t.scene.model->params().require("obstacles.0.friction").offset] = 0.15;
  p.segment<3>(t.scene.model->params().require("bodies.0.velocities").offset) = Vec3(0.2, -0.1, 0.0);
  return p;
}

// `specs` with every scale set to 1 (the physical problem) and as given (the scaled one).
std::vector<ParameterSpec> unscaled(std::vector<ParameterSpec> specs) {
  for (ParameterSpec& s : specs) s.scale = 1.0;
  return specs;
}

// dΦ/dx̃ (adjoint), dρ/dx̃ (direct and adjoint Jacobians) of the scaled problem against s ⊙
// those of the physical problem at the same p, and against central differences in x̃.
void expect_scaled_derivatives(const std::shared_ptr<test::SceneTask>& scaled_task,
                               const std::shared_ptr<test::SceneTask>& plain_task, const VecX& p, double fd_tolerance) {
  auto scaled = test::make_problem(scaled_task, p);
  auto plain = test::make_problem(plain_task, p);
  const ParameterSelection& sel = scaled->selection();
  const VecX xs = scaled->x0(), xp = plain->x0();
  VecX factor(sel.size());  // dx_plain/dx_scaled = s per scalar (log: ln p = s x̃)
  for (int k = 0; k < sel.size(); ++k) factor[k] = sel.scale(k);

  const Evaluation es = scaled->evaluate(xs, true), ep = plain->evaluate(xp, true);
  ASSERT_FALSE(es.failed) << es.failure;
  ASSERT_FALSE(ep.failed) << ep.failure;
  EXPECT_EQ(es.phi, ep.phi);  // the same simulation
  ASSERT_GT(ep.gradient.norm(), 0.0);
  for (int k = 0; k < sel.size(); ++k) {
    EXPECT_NEAR(es.gradient[k], factor[k] * ep.gradient[k], 1e-12 * std::abs(factor[k] * ep.gradient[k]) + 1e-300)
        << sel.names()[k];
    EXPECT_NE(ep.gradient[k], 0.0) << sel.names()[k] << " has no influence: the check would be empty";
  }

  // Central differences in x̃ (relative step h per scalar).
  for (int k = 0; k < sel.size(); ++k) {
    const double h = 1e-6 * std::max(1.0, std::abs(xs[k]));
    VecX a = xs, b = xs;
    a[k] += h;
    b[k] -= h;
    const double fd = (scaled->evaluate(a, false).phi - scaled->evaluate(b, false).phi) / (2.0 * h);
    EXPECT_NEAR(es.gradient[k], fd, fd_tolerance * es.gradient.norm()) << sel.names()[k];
  }

  for (JacobianMode mode : {JacobianMode::kDirect, JacobianMode::kAdjoint}) {
    scaled->set_jacobian_mode(mode);
    plain->set_jacobian_mode(mode);
    const LeastSquaresEvaluation ls = scaled->evaluate_residuals(xs, true);
    const LeastSquaresEvaluation lp = plain->evaluate_residuals(xp, true);
    ASSERT_FALSE(ls.failed) << ls.failure;
    ASSERT_FALSE(lp.failed) << lp.failure;
    const MatX expected = lp.jacobian * factor.asDiagonal();
    EXPECT_LE((ls.jacobian - expected).norm(), 1e-12 * expected.norm()) << to_string(mode);
    // Jᵀρ in x̃ is the adjoint gradient in x̃.
    const VecX g = ls.jacobian.transpose() * ls.residuals;
    EXPECT_LE((g - es.gradient).norm(), 1e-7 * es.gradient.norm()) << to_string(mode);
  }
}

TEST(ParameterScale, VariablesAndBoundsAreDividedByTheScale) {
  // v scaled by 2 with bounds ±5 m/s, kn log-scaled with scale 4 on [10, 1e7], ω unscaled.
  auto t = test::scene_task(kRigidSphereThrow, {{"bodies.0.velocity", false, -5.0, 5.0, 2.0},
                                                {"contact.kn", true, 10.0, 1e7, 4.0},
                                                {"bodies.0.angular_velocity"}});
  auto problem = test::make_problem(t);
  const ParameterSelection& sel = problem->selection();
  const VecX p = t->scene.model->params().defaults();
  const VecX values = sel.gather(p);
  const VecX x = problem->x0();
  ASSERT_EQ(x.size(), 7);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(sel.scale(k), 2.0);
    EXPECT_EQ(x[k], values[k] / 2.0);
    EXPECT_EQ(problem->lower()[k], -2.5);
    EXPECT_EQ(problem->upper()[k], 2.5);
  }
  EXPECT_EQ(x[3], std::log(values[3]) / 4.0);
  EXPECT_EQ(problem->lower()[3], std::log(10.0) / 4.0);
  EXPECT_EQ(problem->upper()[3], std::log(1e7) / 4.0);
  for (int k = 4; k < 7; ++k) {
    EXPECT_EQ(sel.scale(k), 1.0);
    EXPECT_EQ(x[k], values[k]);  // scale 1: x = p bit for bit
    EXPECT_EQ(problem->lower()[k], -kNoBound);
  }
  // p → x → p.
  const VecX back = sel.gather(problem->parameters(x));
  for (int k = 0; k < 7; ++k) EXPECT_NEAR(back[k], values[k], 1e-14 * std::abs(values[k])) << k;
  // A log-scaled scalar with lower bound 0 has no lower bound in x.
  auto t0 = test::scene_task(kRigidSphereThrow, {{"contact.kn", true, 0.0, kNoBound, 3.0}});
  EXPECT_EQ(test::make_problem(t0)->lower()[0], -kNoBound);
  EXPECT_EQ(test::make_problem(t0)->upper()[0], kNoBound);
}

TEST(ParameterScale, AScaleThatIsNotAFinitePositiveNumberIsAnInputError) {
  const Scene scene = load_scene_text(kRigidSphereThrow, "test.json");
  const ParameterTable& table = scene.model->params();
  for (double s : {0.0, -2.0, std::numeric_limits<double>::quiet_NaN(), kNoBound}) {
    try {
      ParameterSelection(table, {{"bodies.0.velocity", false, -kNoBound, kNoBound, s}});
      ADD_FAILURE() << "scale " << s << " accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("bodies.0.velocity"), std::string::npos) << msg;
      EXPECT_NE(msg.find("scale"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

TEST(ParameterScale, GradientAndJacobianInScaledSpaceAreTheScaleTimesThePhysicalOnes) {
  // Rigid sphere, markers: v in units of 0.5 m/s, ω in units of 30 rad/s.
  const std::vector<ParameterSpec> specs = {{"bodies.0.velocity", false, -kNoBound, kNoBound, 0.5},
                                            {"bodies.0.angular_velocity", false, -kNoBound, kNoBound, 30.0}};
  expect_scaled_derivatives(sphere_task(specs), sphere_task(unscaled(specs)),
                            load_scene_text(kRigidSphereThrow, "test.json").model->params().defaults(), 1e-6);
}

TEST(ParameterScale, LogScaledParameterWithAScale) {
  // The incline: friction log-scaled with scale 2.5 (x̃ = ln μ / 2.5), the initial velocity in
  // units of 3 m/s; the physical problem keeps the log scaling with scale 1.
  const std::vector<ParameterSpec> specs = {{"obstacles.0.friction", true, 0.05, 0.35, 2.5},
                                            {"bodies.0.velocities", false, -kNoBound, kNoBound, 3.0}};
  auto scaled = incline_task(specs);
  expect_scaled_derivatives(scaled, incline_task(unscaled(specs)), incline_start(*scaled), 1e-5);
}

TEST(ParameterScale, MethodsKeepThePhysicalBoundsAndReachTheSameOptimum) {
  // The friction fit with μ ∈ [0.05, 0.35] in units of 0.1 (linear) and of 2 (log): every
  // evaluation of every method stays inside the physical bounds and μ = 0.3 is recovered.
  for (bool log : {false, true}) {
    for (OptimizerMethod m : {OptimizerMethod::kLbfgsb, OptimizerMethod::kGaussNewton}) {
      auto t = incline_task({{"obstacles.0.friction", log, 0.05, 0.35, log ? 2.0 : 0.1}});
      VecX p = t->scene.model->params().defaults();
      p[t->selection.indices()[0]] = 0.15;
      auto problem = test::make_problem(t, p);
      OptimizerOptions o;
      o.method = m;
      o.max_simulations = 30;
      o.phi_ratio_tolerance = 1e-20;
      int outside = 0;
      OptimizerCallbacks cb;
      cb.on_evaluation = [&](const EvaluationRecord& r) { outside += r.values[0] < 0.05 || r.values[0] > 0.35; };
      const OptimizationResult r = minimize(*problem, problem->x0(), o, cb);
      EXPECT_EQ(outside, 0) << to_string(m) << " log " << log;
      EXPECT_NEAR(r.values_best[0], 0.3, 1e-6) << to_string(m) << " log " << log << ": " << r.message;
      EXPECT_NEAR(r.x_best[0], log ? std::log(r.values_best[0]) / 2.0 : r.values_best[0] / 0.1, 1e-12);
    }
  }
}

}  // namespace
}  // namespace addsim
