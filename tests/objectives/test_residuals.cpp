// Least-squares forms of the sum-of-squares objective terms: ½‖ρ‖² equals Φ, and the
// tangent dρ = Σ_i ∂ρ/∂q^i dq^i + ∂ρ/∂p dp matches central differences along a seeded random
// direction of a fixed trajectory (states and parameters perturbed directly, no simulation).

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"
#include "addsim/fem/fem_builder.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/objectives/tracked_point.h"
#include "addsim/objectives/tracking_terms.h"
#include "rigid_part.h"

namespace addsim {
namespace {

constexpr int kSteps = 6;

// Body 0: particles; body 1: an FEM box (12 tets); body 2: a rigid sphere; one handle.
struct Fixture {
  Model model;
  Trajectory traj;
  Fixture() {
    model.scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.01, kSteps);
    model.add_particles("a", {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0.5)}, std::vector<Vec3>(3, Vec3::Zero()),
                        {0.3, 0.7, 1.1});
    FemMaterial mat;
    add_fem_body(model, "soft", make_box_mesh(Vec3(0.4, 0.2, 0.2), Eigen::Vector3i(2, 1, 1)), mat, {});
    test::add_test_rigid_sphere(model, Vec3(1.0, 0.5, 0.3), Vec3(0.3, -0.2, 0.5));
    std::vector<Vec3> path;
    for (int i = 0; i <= kSteps; ++i) path.emplace_back(0.1 * i, std::sin(0.3 * i), 0.2);
    model.add_handle("hand", path);
    model.finalize();
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    traj.p = model.params().defaults();
    model.initial_state(traj.p, traj.q0, traj.v0);
    for (int i = 0; i <= kSteps; ++i) {
      VecX q = traj.q0;
      for (int k = 0; k < q.size(); ++k) q[k] += i == 0 ? 0.0 : 0.05 * u(rng);
      traj.q.push_back(q);
    }
  }
};

// ½‖ρ‖² = Φ and dρ against central differences along a random tangent; dρ must be non-zero.
void check_residuals(const Model& m, const Trajectory& traj, const Objective& obj) {
  ASSERT_EQ(obj.first_non_least_squares_term(), -1);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<VecX> dq(traj.q.size(), VecX::Zero(m.num_dofs()));
  for (VecX& d : dq)
    for (int k = 0; k < d.size(); ++k) d[k] = u(rng);
  VecX dp = VecX::Zero(m.params().size());
  for (int k = 0; k < dp.size(); ++k) dp[k] = u(rng);
  const TrajectoryTangent tangent{&dq, &dp};
  VecX rho, drho;
  obj.residuals(m, traj, rho, &tangent, &drho);
  ASSERT_EQ(rho.size(), drho.size());
  EXPECT_NEAR(0.5 * rho.squaredNorm(), obj.evaluate(m, traj, nullptr), 1e-12 * std::max(1.0, rho.squaredNorm()));
  const double t = 1e-6;
  auto moved = [&](double s) {
    Trajectory x = traj;
    for (size_t i = 0; i < x.q.size(); ++i) x.q[i] += s * dq[i];
    x.p += s * dp;
    VecX r;
    obj.residuals(m, x, r, nullptr, nullptr);
    return r;
  };
  const VecX fd = (moved(t) - moved(-t)) / (2 * t);
  ASSERT_EQ(fd.size(), drho.size());
  for (Eigen::Index k = 0; k < fd.size(); ++k)
    EXPECT_NEAR(drho[k], fd[k], 1e-7 * std::max(1.0, std::abs(fd[k]))) << "residual " << k;
  EXPECT_GT(drho.norm(), 0.0);
}

TEST(Residuals, CenterOfMassTargetAndLineOfEveryBodyKind) {
  Fixture f;
  Objective obj;
  obj.add(0.7, std::make_unique<CenterOfMassTarget>(1, Vec3(0.5, 0.2, -0.1)));
  obj.add(1.3, std::make_unique<CenterOfMassTarget>(2, Vec3(0.5, 0.2, -0.1), StepWindow::range(2, 4)));
  obj.add(0.4, std::make_unique<CenterOfMassTarget>(0, Vec3(0.1, 0.2, 0.3), StepWindow::range(0, -1)));
  obj.add(2.0, std::make_unique<CenterOfMassLine>(0, Vec3(0.1, 0.2, 0.3), Vec3(1, 1, 0), StepWindow::range(1, -1)));
  obj.add(1.0, std::make_unique<CenterOfMassLine>(2, Vec3(0.1, 0.2, 0.3), Vec3(0, 0, 2), StepWindow::range(0, 3)));
  check_residuals(f.model, f.traj, obj);
}

TEST(Residuals, TrackedNodeMeans) {
  Fixture f;
  std::vector<int> nodes;
  std::vector<double> weights;
  boundary_area_weights(static_cast<const FemBody&>(*f.model.bodies()[1]), nodes, weights);
  const TrackedPoint boundary = TrackedPoint::node_mean(1, nodes, weights);
  Objective obj;
  obj.add(0.7, std::make_unique<CenterOfMassTarget>(boundary, Vec3(0.5, 0.2, -0.1), StepWindow::range(2, -1)));
  obj.add(0.4, std::make_unique<CenterOfMassTarget>(TrackedPoint::node_mean(0, {1, 2}, {1.0, 2.0}), Vec3(0.1, 0.2, 0.3)));
  obj.add(2.0, std::make_unique<CenterOfMassLine>(boundary, Vec3(0.1, 0.2, 0.3), Vec3(1, 1, 0), StepWindow::range(1, -1)));
  check_residuals(f.model, f.traj, obj);
}

TEST(Residuals, MarkersInTetsParticlesAndRigidFrames) {
  Fixture f;
  std::vector<Marker> markers = {embed_marker(f.model, 1, f.traj.q0, Vec3(0.05, 0.02, 0.03)),
                                 tet_marker(f.model, 1, 3, {0.1, 0.2, 0.3, 0.4}), node_marker(f.model, 0, 2),
                                 rigid_marker(f.model, 2, Vec3(0.1, -0.05, 0.2))};
  std::vector<MarkerFrame> frames;
  for (int s : {2, 5, 6}) {
    MarkerFrame fr;
    fr.step = s;
    for (int m = 0; m < 4; ++m) fr.positions.emplace_back(0.1 * m, 0.05 * s, -0.2);
    fr.visible = {true, s != 5, true, s != 2};
    frames.push_back(fr);
  }
  Objective obj;
  obj.add(1.5, std::make_unique<MarkerTrajectories>(markers, frames));
  check_residuals(f.model, f.traj, obj);
  VecX rho;
  obj.residuals(f.model, f.traj, rho, nullptr, nullptr);
  EXPECT_EQ(rho.size(), 3 * 10);  // 12 pairs, two invisible
}

TEST(Residuals, PointCloudPoseUprightAndControlSmoothness) {
  Fixture f;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-0.3, 0.5);
  std::vector<PointCloudFrame> frames(2);
  frames[0].step = 3;
  frames[1].step = kSteps;
  for (auto& fr : frames)
    for (int k = 0; k < 12; ++k) fr.points.emplace_back(u(rng), u(rng), u(rng));
  const auto& fb = fem_body(f.model, 1);
  Objective obj;
  obj.add(1.0, std::make_unique<PointCloudDistance>(1, frames));
  obj.add(1.0, std::make_unique<PointTargets>(std::vector<DofIndex>{fb.dof(0), fb.dof(5)},
                                              std::vector<Vec3>{Vec3(0, 0, 1), Vec3(1, 0, 1)}, StepWindow::range(3, 4)));
  obj.add(0.5, std::make_unique<UprightAxis>(node_marker(f.model, 1, 0), node_marker(f.model, 1, 7), Vec3(0, 0, 1),
                                             StepWindow::range(2, -1)));
  obj.add(0.5, std::make_unique<UprightAxis>(rigid_marker(f.model, 2, Vec3::Zero()),
                                             rigid_marker(f.model, 2, Vec3(0, 0, 0.2)), Vec3(0, 1, 1),
                                             StepWindow::range(0, -1)));
  obj.add(0.3, std::make_unique<ControlSmoothness>(0));
  check_residuals(f.model, f.traj, obj);
}

// The list form (robot motor targets, kinematic poses: any per-step controls, each with its own
// column count) has the same residual form as the handle form; rows [1, 4] only.
TEST(Residuals, ControlSmoothnessOverAListOfControls) {
  Fixture f;
  const int base = f.model.handles()[0].positions_param;
  std::vector<ControlRows> controls{{base, kSteps + 1, 3, "handles.0.positions"}, {base, 3, 7, "a 3 x 7 view"}};
  Objective obj;
  obj.add(0.7, std::make_unique<ControlSmoothness>(controls, StepWindow::range(0, -1)));
  check_residuals(f.model, f.traj, obj);
  Objective rows;
  rows.add(1.0, std::make_unique<ControlSmoothness>(controls, StepWindow::range(1, 2)));
  check_residuals(f.model, f.traj, rows);
  VecX rho;
  obj.residuals(f.model, f.traj, rho, nullptr, nullptr);
  EXPECT_EQ(rho.size(), 3 * kSteps + 7 * 2);
}

TEST(Residuals, TermsWithoutLeastSquaresFormAreNamed) {
  Fixture f;
  Objective obj;
  obj.add(1.0, std::make_unique<CenterOfMassTarget>(0, Vec3::Zero()));
  obj.add(1.0, std::make_unique<CenterOfMassCoordinate>(0, Vec3(1, 0, 0), StepWindow::final_step()));
  EXPECT_EQ(obj.first_non_least_squares_term(), 1);
  VecX rho;
  EXPECT_THROW(obj.residuals(f.model, f.traj, rho, nullptr, nullptr), InternalError);
}

}  // namespace
}  // namespace addsim
