// Two-thread evaluation (solver.threads = 2, Simulator::evaluate): the helper thread
// assembles the upper items (Simulator::helper_share) of every FEM element loop into its own Assembly. The split
// evaluation must equal the one-thread sum in every mode, whole trajectories must agree to
// the Newton tolerance (the helper also factorises step Jacobians ahead, and runs stay
// reproducible bit for bit), and a failing task must surface its exception in the caller.

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "addsim/objectives/objective_terms.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/solver/simulator.h"
#include "addsim/solver/worker_thread.h"
#include "addsim/terms/contact_term.h"
#include "fem_test_util.h"

namespace addsim {
namespace {

// A viscous soft box thrown with spin onto a frictional floor (contact, viscosity,
// elasticity, consistent mass and gravity: every FEM term and a non-split contact term).
std::unique_ptr<Model> make_sliding_box() {
  auto m = std::make_unique<Model>();
  m->scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.005, 40);
  ContactSettings contact;
  contact.kn_param = m->params().add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, 1e3), 1, 1, 0.0);
  contact.kd_param = m->params().add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, 0.0), 1, 1, 0.0);
  const int fr = m->params().add("obstacles.0.friction", "", ParamKind::kContact, VecX::Constant(1, 0.4), 1, 1, 0.0);
  std::vector<std::shared_ptr<const Obstacle>> obstacles{
      std::make_shared<PlaneObstacle>("floor", fr, Vec3::Zero(), Vec3(0, 0, 1))};
  const FemMaterial mat{.youngs_modulus = 2e4, .poisson_ratio = 0.3, .density = 150, .viscosity = 0.02};
  const FemInit init{.position = Vec3(0, 0, 0.06), .velocity = Vec3(1.0, 0, -0.5), .angular_velocity = Vec3(0, 3, 0)};
  const FemOptions opt{.gravity = Vec3(0, 0, -9.81)};
  add_fem_body(*m, "box", make_box_mesh(Vec3(0.1, 0.08, 0.06), Eigen::Vector3i(4, 3, 3)), mat, init, opt, obstacles,
               contact);
  m->finalize();
  return m;
}

TEST(FemThreads, SplitEvaluationEqualsOneThreadInEveryMode) {
  const auto model = make_sliding_box();
  const VecX p = model->params().defaults();
  Simulator one(*model, 1), two(*model, 2);
  // A state in contact and deformed: step 12 of a one-thread run.
  const Trajectory t = one.run(p);
  ASSERT_TRUE(t.completed()) << t.failure;
  const int i = 12;
  const VecX v = t.velocity(model->scheme(), i), a = t.acceleration(model->scheme(), i);
  const TermContext ctx{t.q[i], v, a, p, i, model->scheme()};
  const JacobianWeights w = bdf_weights(model->scheme(), i, 0);
  for (EvalMode mode : {EvalMode::kResidual, EvalMode::kResidualAndJacobians, EvalMode::kResidualAndStepJacobian}) {
    Assembly a1(&model->pattern(), &model->stencils()), a2(&model->pattern(), &model->stencils());
    a1.reset(mode, w);
    a2.reset(mode, w);
    one.evaluate(ctx, a1);
    two.evaluate(ctx, a2);
    auto close = [](const VecX& x, const VecX& y) { return (x - y).norm() <= 1e-13 * std::max(1.0, x.norm()); };
    EXPECT_TRUE(close(a1.r, a2.r));
    EXPECT_TRUE(close(a1.r_abs, a2.r_abs));
    if (mode == EvalMode::kResidualAndJacobians) {
      EXPECT_GT(a1.kq.norm(), 0.0);
      EXPECT_TRUE(close(a1.kq, a2.kq));
      EXPECT_TRUE(close(a1.kv, a2.kv));
      EXPECT_TRUE(close(a1.ka, a2.ka));
    }
    if (mode == EvalMode::kResidualAndStepJacobian) {
      EXPECT_GT(a1.jac.norm(), 0.0);
      EXPECT_TRUE(close(a1.jac, a2.jac));
    }
  }
}

TEST(FemThreads, TrajectoryMatchesOneThreadToTheNewtonTolerance) {
  const auto model = make_sliding_box();
  const VecX p = model->params().defaults();
  Simulator one(*model, 1), two(*model, 2);
  const Trajectory t1 = one.run(p), t2 = two.run(p);
  ASSERT_TRUE(t1.completed()) << t1.failure;
  ASSERT_TRUE(t2.completed()) << t2.failure;
  // The box reaches the floor (penalty contact: its lowest node dips below z = 0).
  double lowest = 1.0;
  for (const VecX& q : t1.q) lowest = std::min(lowest, q.reshaped(3, q.size() / 3).row(2).minCoeff());
  EXPECT_LT(lowest, 0.0);
  // With two threads the helper also factorised Jacobians ahead, adopted at later steps.
  long background = 0;
  for (const StepReport& r : t2.reports) background += r.background_factorizations;
  EXPECT_GT(background, 0);
  for (const StepReport& r : t1.reports) EXPECT_EQ(r.background_factorizations, 0);
  // Both converge every step to ‖r‖ < 1e-10 N; the states agree far below the box's size.
  for (size_t i = 0; i < t1.q.size(); ++i) EXPECT_LT((t1.q[i] - t2.q[i]).norm(), 1e-9) << "step " << i;
  // The same run twice with two threads is reproducible bit for bit.
  Simulator again(*model, 2);
  const Trajectory t3 = again.run(p);
  for (size_t i = 0; i < t2.q.size(); ++i) EXPECT_EQ(t2.q[i], t3.q[i]) << "step " << i;
}

// The adjoint on two threads (a helper linearising ahead and factorising the fresh-LU steps'
// Jacobians with UMFPACK, sensitivity/adjoint.cpp) gives the one-thread gradient bit for bit,
// on a two-thread forward run whose steps also adopted LUs factorised ahead.
TEST(FemThreads, AdjointOnTwoThreadsEqualsOneThread) {
  auto model = make_sliding_box();
  const VecX p = model->params().defaults();
  Simulator two(*model, 2);
  const Trajectory t = two.run(p);
  ASSERT_TRUE(t.completed()) << t.failure;
  int fresh = 0;
  for (std::size_t i = 1; i < t.reports.size(); ++i)
    fresh += t.reports[i].factorizations + t.reports[i].background_factorizations > 0;
  EXPECT_GT(fresh, 0);
  Objective objective;
  objective.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3(0.2, 0.0, 0.05)));
  model->solver_mut().threads = 1;
  const GradientResult g1 = gradient_adjoint(*model, t, objective);
  model->solver_mut().threads = 2;
  const GradientResult g2 = gradient_adjoint(*model, t, objective);
  EXPECT_GT(g1.dphi_dp.norm(), 0.0);
  EXPECT_EQ(g1.dphi_dp, g2.dphi_dp);
  EXPECT_EQ(g1.factorizations, g2.factorizations);
  EXPECT_EQ(g1.krylov_iterations, g2.krylov_iterations);
  EXPECT_GE(g1.factorizations, fresh);
}

TEST(FemThreads, WorkerRethrowsAndStaysUsable) {
  WorkerThread worker;
  worker.start([] { throw std::runtime_error("element 7 failed"); });
  EXPECT_THROW(
      {
        try {
          worker.wait();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "element 7 failed");
          throw;
        }
      },
      std::runtime_error);
  int value = 0;
  worker.start([&] { value = 42; });
  EXPECT_THROW(worker.start([] {}), InternalError);  // one task at a time
  while (!worker.finished()) std::this_thread::yield();
  worker.wait();
  EXPECT_EQ(value, 42);
}

TEST(FemThreads, OnlyOneOrTwoThreads) {
  const auto model = make_sliding_box();
  EXPECT_THROW(Simulator(*model, 3), InternalError);
}

}  // namespace
}  // namespace addsim
