// Tracking objective terms (centre of mass of FEM and rigid bodies, line distance, markers,
// point clouds, upright, soft minimum) and the parameter selection: values and partials
// against central differences on a fixed trajectory (states and parameters perturbed
// directly, no simulation).

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"
#include "addsim/fem/fem_builder.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/objectives/center_of_mass.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/objectives/tracked_point.h"
#include "addsim/objectives/tracking_terms.h"
#include "addsim/sensitivity/parameter_selection.h"
#include "rigid_part.h"

namespace addsim {
namespace {

constexpr int kSteps = 6;

// Body 0: particles; body 1: an FEM box (2×1×1 cells, 12 tets); body 2: a rigid sphere.
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
    model.finalize();
    // A fixed trajectory: q⁰ plus seeded random offsets (rotations stay below π).
    std::mt19937 rng(5);
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

// Every ∂Φ/∂q^i and ∂Φ/∂p entry against central differences; requires non-zero partials as asked.
void check_partials(const Model& m, const Trajectory& traj, const ObjectiveFunction& obj, bool expect_dq,
                    bool expect_dp) {
  ObjectiveGradient g(m.num_dofs(), m.params().size(), kSteps);
  const double phi = obj.evaluate(m, traj, &g);
  EXPECT_DOUBLE_EQ(phi, obj.evaluate(m, traj, nullptr));
  EXPECT_TRUE(std::isfinite(phi));
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
    const double tj = t * std::max(1.0, std::abs(traj.p[j]));
    pert.p[j] = traj.p[j] + tj;
    const double plus = obj.evaluate(m, pert, nullptr);
    pert.p[j] = traj.p[j] - tj;
    const double minus = obj.evaluate(m, pert, nullptr);
    pert.p[j] = traj.p[j];
    const double fd = (plus - minus) / (2 * tj);
    EXPECT_NEAR(g.dphi_dp()[j], fd, 1e-7 * std::max(1.0, std::abs(fd))) << "dphi/dp " << m.params().name_of(j);
    dp_norm += g.dphi_dp()[j] * g.dphi_dp()[j];
  }
  EXPECT_EQ(dq_norm > 0.0, expect_dq);
  EXPECT_EQ(dp_norm > 0.0, expect_dp);
}

TEST(CenterOfMass, FemAndRigidVjpsMatchDifferences) {
  Fixture f;
  const Vec3 w(0.3, -1.2, 0.7);
  for (int b : {1, 2}) {
    const Body& body = *f.model.bodies()[b];
    VecX gq = VecX::Zero(f.model.num_dofs()), gp = VecX::Zero(f.model.params().size());
    const VecX& q = f.traj.q[3];
    center_of_mass_vjp(body, q, f.traj.p, w, gq, gp);
    for (int k = 0; k < q.size(); ++k) {
      VecX a = q, c = q;
      a[k] += 1e-6, c[k] -= 1e-6;
      const double fd = w.dot(body.center_of_mass(a, f.traj.p) - body.center_of_mass(c, f.traj.p)) / 2e-6;
      EXPECT_NEAR(gq[k], fd, 1e-8) << "body " << b << " dof " << k;
    }
    EXPECT_GT(gq.norm(), 0.0);
  }
}

TEST(TrackingTerms, CenterOfMassTargetOfEveryBodyKind) {
  Fixture f;
  Objective obj;
  obj.add(0.7, std::make_unique<CenterOfMassTarget>(1, Vec3(0.5, 0.2, -0.1)));
  obj.add(1.3, std::make_unique<CenterOfMassTarget>(2, Vec3(0.5, 0.2, -0.1), StepWindow::range(2, 4)));
  obj.add(0.3, std::make_unique<CenterOfMassCoordinate>(2, Vec3(1, 2, 0), StepWindow::final_step()));
  check_partials(f.model, f.traj, obj, true, false);
}

TEST(TrackingTerms, CenterOfMassLine) {
  Fixture f;
  Objective obj;
  obj.add(2.0, std::make_unique<CenterOfMassLine>(0, Vec3(0.1, 0.2, 0.3), Vec3(1, 1, 0), StepWindow::range(1, -1)));
  obj.add(1.0, std::make_unique<CenterOfMassLine>(1, Vec3(0.1, 0.2, 0.3), Vec3(0, 0, 2), StepWindow::range(0, 3)));
  check_partials(f.model, f.traj, obj, true, true);
}

TEST(TrackingTerms, MarkersInTetsParticlesAndRigidFrames) {
  Fixture f;
  std::vector<Marker> markers = {embed_marker(f.model, 1, f.traj.q0, Vec3(0.05, 0.02, 0.03)),
                                 tet_marker(f.model, 1, 3, {0.1, 0.2, 0.3, 0.4}), node_marker(f.model, 0, 2),
                                 rigid_marker(f.model, 2, Vec3(0.1, -0.05, 0.2))};
  EXPECT_EQ(markers[0].count, 4);
  EXPECT_NEAR((markers[0].position(f.traj.q0) - Vec3(0.05, 0.02, 0.03)).norm(), 0.0, 1e-12);
  std::vector<MarkerFrame> frames;
  for (int s : {2, 5, 6}) {
    MarkerFrame fr;
    fr.step = s;
    for (int m = 0; m < 4; ++m) fr.positions.emplace_back(0.1 * m, 0.05 * s, -0.2);
    fr.visible = {true, s != 5, true, true};
    frames.push_back(fr);
  }
  Objective obj;
  obj.add(1.5, std::make_unique<MarkerTrajectories>(markers, frames));
  check_partials(f.model, f.traj, obj, true, false);
  // An embedded rigid marker reproduces its world point.
  const Vec3 x(1.2, 0.4, 0.1);
  EXPECT_NEAR((embed_marker(f.model, 2, f.traj.q[3], x).position(f.traj.q[3]) - x).norm(), 0.0, 1e-12);
}

TEST(TrackingTerms, PointCloudToBoundarySurface) {
  Fixture f;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-0.3, 0.5);
  std::vector<PointCloudFrame> frames(2);
  frames[0].step = 3;
  frames[1].step = kSteps;
  for (auto& fr : frames)
    for (int k = 0; k < 12; ++k) fr.points.emplace_back(u(rng), u(rng), u(rng));
  Objective obj;
  obj.add(1.0, std::make_unique<PointCloudDistance>(1, frames));
  check_partials(f.model, f.traj, obj, true, false);
}

TEST(TrackingTerms, ClosestPointOnTriangleRegions) {
  const Vec3 a(0, 0, 0), b(1, 0, 0), c(0, 1, 0);
  EXPECT_NEAR((closest_point_on_triangle(Vec3(0.2, 0.2, 1), a, b, c) - Vec3(0.6, 0.2, 0.2)).norm(), 0, 1e-14);
  EXPECT_NEAR((closest_point_on_triangle(Vec3(-1, -1, 0), a, b, c) - Vec3(1, 0, 0)).norm(), 0, 1e-14);
  EXPECT_NEAR((closest_point_on_triangle(Vec3(2, -1, 0), a, b, c) - Vec3(0, 1, 0)).norm(), 0, 1e-14);
  EXPECT_NEAR((closest_point_on_triangle(Vec3(0.5, -1, 0), a, b, c) - Vec3(0.5, 0.5, 0)).norm(), 0, 1e-14);
  EXPECT_NEAR((closest_point_on_triangle(Vec3(1, 1, 0), a, b, c) - Vec3(0, 0.5, 0.5)).norm(), 0, 1e-14);
}

TEST(TrackingTerms, UprightAndPoseTargets) {
  Fixture f;
  const auto& fb = fem_body(f.model, 1);
  Objective obj;
  obj.add(1.0, std::make_unique<PointTargets>(std::vector<DofIndex>{fb.dof(0), fb.dof(5)},
                                              std::vector<Vec3>{Vec3(0, 0, 1), Vec3(1, 0, 1)}, StepWindow::at(4)));
  obj.add(0.5, std::make_unique<UprightAxis>(node_marker(f.model, 1, 0), node_marker(f.model, 1, 7), Vec3(0, 0, 1),
                                             StepWindow::range(2, -1)));
  obj.add(0.5, std::make_unique<UprightAxis>(rigid_marker(f.model, 2, Vec3::Zero()),
                                             rigid_marker(f.model, 2, Vec3(0, 0, 0.2)), Vec3(0, 1, 1),
                                             StepWindow::range(0, -1)));
  check_partials(f.model, f.traj, obj, true, false);
}

TEST(TrackingTerms, SoftMinDistanceOfCentreAndMarker) {
  Fixture f;
  Objective obj;
  obj.add(1.0, std::make_unique<SoftMinDistance>(0, Vec3(0.3, 0.4, 0.1), 20.0, StepWindow::range(1, -1)));
  obj.add(0.4, std::make_unique<SoftMinDistance>(rigid_marker(f.model, 2, Vec3(0.1, 0, 0)), Vec3(1, 0, 0), 5.0,
                                                 StepWindow::range(0, -1)));
  check_partials(f.model, f.traj, obj, true, true);
  // Large α approaches the hard minimum over the window.
  SoftMinDistance hard(0, Vec3(0.3, 0.4, 0.1), 1e6, StepWindow::range(1, -1));
  double dmin = 1e300;
  for (int i = 1; i <= kSteps; ++i)
    dmin = std::min(dmin, (f.model.bodies()[0]->center_of_mass(f.traj.q[i], f.traj.p) - Vec3(0.3, 0.4, 0.1)).squaredNorm());
  EXPECT_NEAR(hard.evaluate(f.model, f.traj, 1.0, nullptr), dmin, 1e-5);
}

// The area-weighted mean of an FEM body's boundary nodes (the paper's tracked point for
// throws) and a weighted particle mean as the point of every target term.
TrackedPoint boundary_mean(const Model& m, int body) {
  std::vector<int> nodes;
  std::vector<double> weights;
  boundary_area_weights(static_cast<const FemBody&>(*m.bodies()[body]), nodes, weights);
  return TrackedPoint::node_mean(body, nodes, weights);
}

TEST(TrackedPoint, BoundaryAreaWeightsOfABox) {
  Fixture f;
  const auto& fb = static_cast<const FemBody&>(*f.model.bodies()[1]);
  std::vector<int> nodes;
  std::vector<double> weights;
  boundary_area_weights(fb, nodes, weights);
  // A 0.4 × 0.2 × 0.2 box of 2 × 1 × 1 cells: every node is on the boundary, Σ w = the area.
  EXPECT_EQ(static_cast<int>(nodes.size()), fb.num_nodes());
  double sum = 0.0;
  for (double w : weights) sum += w;
  EXPECT_NEAR(sum, 2 * (0.4 * 0.2 + 0.4 * 0.2 + 0.2 * 0.2), 1e-12);
  // The area-weighted boundary mean of the symmetric rest box is its centre.
  const TrackedPoint c = boundary_mean(f.model, 1);
  VecX q0;
  VecX v0;
  f.model.initial_state(f.traj.p, q0, v0);
  EXPECT_LT((c.position(f.model, q0, f.traj.p, "test") - fb.center_of_mass(q0, f.traj.p)).norm(), 1e-12);
  // Off the rest shape it differs from the volume-weighted centre of mass.
  EXPECT_GT((c.position(f.model, f.traj.q[3], f.traj.p, "test") - fb.center_of_mass(f.traj.q[3], f.traj.p)).norm(), 1e-4);
}

TEST(TrackedPoint, NodeMeanInEveryTargetTermMatchesDifferences) {
  Fixture f;
  const TrackedPoint boundary = boundary_mean(f.model, 1);
  const TrackedPoint particles = TrackedPoint::node_mean(0, {2, 0}, {3.0, 1.0});
  Objective obj;
  obj.add(0.7, std::make_unique<CenterOfMassTarget>(boundary, Vec3(0.5, 0.2, -0.1), StepWindow::range(2, -1)));
  obj.add(1.1, std::make_unique<CenterOfMassTarget>(particles, Vec3(0.1, 0.2, 0.3)));
  obj.add(2.0, std::make_unique<CenterOfMassLine>(boundary, Vec3(0.1, 0.2, 0.3), Vec3(1, 1, 0), StepWindow::range(1, -1)));
  obj.add(0.3, std::make_unique<CenterOfMassCoordinate>(particles, Vec3(1, 2, 0), StepWindow::final_step()));
  obj.add(0.5, std::make_unique<SoftMinDistance>(boundary, Vec3(0.3, 0.4, 0.1), 20.0, StepWindow::range(1, -1)));
  // The weights are rest constants: ∂c/∂q only, ∂c/∂p = 0 (particle masses do not enter).
  check_partials(f.model, f.traj, obj, true, false);
  // The value: ¾ x_2 + ¼ x_0 for the particle mean.
  CenterOfMassTarget t(particles, Vec3::Zero());
  const VecX& q = f.traj.q.back();
  const Vec3 c = 0.75 * q.segment<3>(f.model.bodies()[0]->dof_offset() + 6) + 0.25 * q.segment<3>(f.model.bodies()[0]->dof_offset());
  EXPECT_NEAR(t.evaluate(f.model, f.traj, 1.0, nullptr), 0.5 * c.squaredNorm(), 1e-14);
}

TEST(TrackedPoint, RejectsBadNodeSets) {
  Fixture f;
  EXPECT_THROW(TrackedPoint::node_mean(1, {}, {}), InputError);
  EXPECT_THROW(TrackedPoint::node_mean(1, {0, 1}, {1.0}), InputError);
  EXPECT_THROW(TrackedPoint::node_mean(1, {0, 0}, {1.0, 1.0}), InputError);
  EXPECT_THROW(TrackedPoint::node_mean(1, {0, 1}, {1.0, -1.0}), InputError);
  EXPECT_THROW(TrackedPoint::node_mean(1, {0, 1}, {0.0, 0.0}), InputError);
  // A node outside the body and a rigid body are errors at evaluation, never a wrong read.
  CenterOfMassTarget outside(TrackedPoint::node_mean(1, {0, 999}, {1.0, 1.0}), Vec3::Zero());
  EXPECT_THROW(outside.evaluate(f.model, f.traj, 1.0, nullptr), InputError);
  CenterOfMassTarget rigid(TrackedPoint::node_mean(2, {0}, {1.0}), Vec3::Zero());
  EXPECT_THROW(rigid.evaluate(f.model, f.traj, 1.0, nullptr), InputError);
}

TEST(ParameterSelection, ResolvesPathsScalesAndBounds) {
  Fixture f;
  const ParameterTable& t = f.model.params();
  ParameterSelection sel(t, {{"bodies.1.velocity", false}, {"bodies.1.material.youngs_modulus", true, 1e3, 1e6}});
  ASSERT_EQ(sel.size(), 4);
  EXPECT_EQ(sel.indices()[3], t.require("bodies.1.material.youngs_modulus").offset);
  const VecX p = t.defaults();
  const VecX x = sel.to_scaled(p);
  EXPECT_NEAR(x[3], std::log(p[sel.indices()[3]]), 1e-15);
  EXPECT_LT((sel.from_scaled(p, x) - p).norm(), 1e-14 * p.norm());
  VecX g = VecX::Zero(p.size());
  g[sel.indices()[3]] = 2.0;
  g[sel.indices()[0]] = 3.0;
  const VecX gs = sel.scaled_gradient(p, g);
  EXPECT_DOUBLE_EQ(gs[3], 2.0 * p[sel.indices()[3]]);
  EXPECT_DOUBLE_EQ(gs[0], 3.0);
  EXPECT_EQ(sel.lower(3), 1e3);
  EXPECT_THROW(ParameterSelection(t, {{"bodies.1.nothing"}}), InputError);
  EXPECT_THROW(ParameterSelection(t, {{"bodies.1.velocity"}, {"bodies.1.velocity"}}), InputError);
  EXPECT_THROW(ParameterSelection(t, {{"bodies.1.velocity", true}}), InputError);
  VecX bad = p;
  bad[sel.indices()[3]] = 1e7;
  EXPECT_THROW(sel.check_bounds(bad), InputError);
}

// The message of the InputError that `call` throws ("" if it throws none).
template <class Call>
std::string input_error_of(Call call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A full vector of the wrong length (the Python binding passes user arrays straight through)
// is an InputError naming the expected and given lengths, never a read or write outside it;
// so is a vector of selected values of the wrong length.
TEST(ParameterSelection, RejectsVectorsOfTheWrongLength) {
  Fixture f;
  const ParameterTable& t = f.model.params();
  const ParameterSelection sel(t, {{"bodies.1.velocity"}, {"bodies.1.material.youngs_modulus", true, 1e3, 1e6}});
  const int np = t.size();
  ASSERT_EQ(sel.num_params(), np);
  const VecX p = t.defaults();
  const std::string expected_p = "expected |p| = " + std::to_string(np);
  for (const int n : {0, 2, np - 1, np + 1}) {
    const VecX wrong = VecX::Zero(n);
    const std::string given = "has " + std::to_string(n) + " entries, " + expected_p;
    EXPECT_NE(input_error_of([&] { sel.gather(wrong); }).find(": p " + given), std::string::npos) << n;
    EXPECT_NE(input_error_of([&] { sel.scatter(wrong, VecX::Zero(4)); }).find(": p " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.select(wrong); }).find(": dΦ/dp " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.scaled_gradient(p, wrong); }).find(": dΦ/dp " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.scaled_gradient(wrong, p); }).find(": p " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.to_scaled(wrong); }).find(": p " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.from_scaled(wrong, VecX::Zero(4)); }).find(": p " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.check_bounds(wrong); }).find(": p " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.chain_factor(3, wrong); }).find(": p " + given), std::string::npos);
  }
  for (const int n : {0, 3, 5}) {
    const std::string given = "has " + std::to_string(n) + " entries, expected 4";
    EXPECT_NE(input_error_of([&] { sel.scatter(p, VecX::Zero(n)); }).find(": values " + given), std::string::npos);
    EXPECT_NE(input_error_of([&] { sel.from_scaled(p, VecX::Zero(n)); }).find(": x " + given), std::string::npos);
  }
  // The right lengths still work.
  EXPECT_EQ(sel.gather(sel.scatter(p, VecX::Constant(4, 2e3))), VecX::Constant(4, 2e3));
  EXPECT_EQ(sel.select(p), sel.gather(p));
}

}  // namespace
}  // namespace addsim
