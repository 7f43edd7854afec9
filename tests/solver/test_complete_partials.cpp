// Assembly::reset_step_partials (docs/solver.md, "Sheet flip, tenth round"): the step Jacobian
// added to a residual-only evaluation at the same state gives r, r_abs and jac bit for bit as
// one evaluation with the step Jacobian, for every term of shipped scenes — terms whose
// residual goes through Assembly's scatters (springs, particles, contact, rigid bodies and
// joints) and terms that write r themselves (FEM stress).

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

bool same_bits(const VecX& a, const VecX& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

// All terms of `model` at (q, v, a) of step `step` into `out`.
void evaluate_all(const Model& model, const TermContext& ctx, Assembly& out) {
  for (const auto& t : model.terms()) t->evaluate(ctx, out);
}

class CompletePartials : public ::testing::TestWithParam<const char*> {};

TEST_P(CompletePartials, MatchOneEvaluationWithTheStepJacobianBitForBit) {
  const Scene scene = load_scene_file(test::scene_path(GetParam()), {"steps=6"});
  const Model& model = *scene.model;
  Simulator sim(model);
  const VecX p = model.params().defaults();
  const Trajectory traj = sim.run(p);
  ASSERT_EQ(traj.q.size(), 7u) << GetParam();
  const double h = model.scheme().h;
  // A state of the run with rates off the BDF ones (q moved, velocities and accelerations of
  // the last steps scaled), so that contacts, springs and joints are loaded as in a Newton
  // iteration rather than at a converged step.
  const VecX q = traj.q[6] + 0.3 * (traj.q[6] - traj.q[5]);
  const VecX v = 1.7 * (traj.q[6] - traj.q[5]) / h;
  const VecX a = (traj.q[6] - 2.0 * traj.q[5] + traj.q[4]) / (h * h) - 0.5 * v;
  const TermContext ctx{q, v, a, p, 6, model.scheme()};
  const JacobianWeights w{1.0, 1.5 / h, 2.25 / (h * h)};
  for (const bool clamp : {false, true}) {
    Assembly full(&model.pattern(), &model.stencils());
    full.clamp_compressed_springs = clamp;
    full.reset(EvalMode::kResidualAndStepJacobian, w);
    evaluate_all(model, ctx, full);

    Assembly completed(&model.pattern(), &model.stencils());
    completed.clamp_compressed_springs = clamp;
    completed.reset(EvalMode::kResidual);
    evaluate_all(model, ctx, completed);
    const VecX r_before = completed.r;
    completed.reset_step_partials(w);
    EXPECT_TRUE(completed.completing());
    evaluate_all(model, ctx, completed);
    completed.finish_step_partials();
    EXPECT_FALSE(completed.completing());
    EXPECT_EQ(completed.mode(), EvalMode::kResidualAndStepJacobian);

    EXPECT_TRUE(same_bits(completed.r, r_before)) << GetParam();
    EXPECT_TRUE(same_bits(completed.r, full.r)) << GetParam() << " clamp " << clamp;
    EXPECT_TRUE(same_bits(completed.r_abs, full.r_abs)) << GetParam() << " clamp " << clamp;
    EXPECT_TRUE(same_bits(completed.jac, full.jac)) << GetParam() << " clamp " << clamp;
    EXPECT_GT(full.jac.cwiseAbs().maxCoeff(), 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(ShippedScenes, CompletePartials,
                         ::testing::Values("sheet_flip.json", "mass_spring_sheet.json", "cube_drag.json",
                                           "quadruped_short.json", "soft_feet.json", "chain.json"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(0, name.find('.'));
                           return name;
                         });

TEST(CompletePartials, NeedsAResidualOnlyEvaluation) {
  const Scene scene = load_scene_file(test::scene_path("sheet_flip.json"), {"steps=1"});
  const Model& model = *scene.model;
  Assembly out(&model.pattern(), &model.stencils());
  out.reset(EvalMode::kResidualAndStepJacobian, {1.0, 0.0, 0.0});
  EXPECT_THROW(out.reset_step_partials({1.0, 0.0, 0.0}), std::exception);
  out.reset(EvalMode::kResidual);
  EXPECT_THROW(out.finish_step_partials(), std::exception);
  out.reset_step_partials({1.0, 0.0, 0.0});
  // A reset ends a completion left unfinished (the set-aside residual is dropped).
  out.reset(EvalMode::kResidual);
  EXPECT_FALSE(out.completing());
}

}  // namespace
}  // namespace addsim
