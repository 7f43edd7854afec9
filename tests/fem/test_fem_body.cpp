// FemBody: rest quantities, input errors, the rigid initial motion and its exact
// derivatives (vjp and jvp against central differences), mass and momentum diagnostics.

#include <gtest/gtest.h>

#include <random>

#include <Eigen/Dense>

#include "addsim/core/error.h"
#include "fem_test_util.h"

namespace addsim {
namespace {

TetMesh unit_tet() {
  TetMesh m;
  m.nodes = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(0, 0, 1)};
  m.tets = {{0, 1, 2, 3}};
  return m;
}

TEST(FemBody, RestQuantities) {
  const FemBody b("t", "bodies.0", 0, unit_tet(), FemParamIndices{});
  EXPECT_DOUBLE_EQ(b.rest_volume(0), 1.0 / 6.0);
  EXPECT_TRUE(b.dm_inv(0).isApprox(Mat3::Identity()));
  Mat43 g;
  g << -1, -1, -1, 1, 0, 0, 0, 1, 0, 0, 0, 1;
  EXPECT_TRUE(b.shape_gradients(0).isApprox(g));
  EXPECT_TRUE(b.rest_center().isApprox(Vec3(0.25, 0.25, 0.25)));
  EXPECT_EQ(b.surface_nodes().size(), 4u);
  EXPECT_EQ(b.dof_labels()[5], "n1.z");
  EXPECT_EQ(b.element_dofs(0)[4], 4);
}

TEST(FemBody, RejectsInvertedAndDegenerateRestElements) {
  TetMesh m = make_box_mesh(Vec3::Ones(), Eigen::Vector3i(2, 1, 1), BoxSplit::kSix);
  std::swap(m.tets[7][1], m.tets[7][2]);
  try {
    FemBody b("cube", "bodies.3", 0, m, FemParamIndices{});
    FAIL() << "inverted element accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bodies.3"), std::string::npos) << what;
    EXPECT_NE(what.find("element 7"), std::string::npos) << what;
    EXPECT_NE(what.find("inverted"), std::string::npos) << what;
  }
  TetMesh flat = unit_tet();
  flat.nodes[3] = Vec3(0.3, 0.3, 0.0);
  EXPECT_THROW(FemBody("flat", "bodies.0", 0, flat, FemParamIndices{}), InputError);
  Model model;
  FemMaterial bad;
  bad.poisson_ratio = 0.5;
  try {
    add_fem_body(model, "soft", unit_tet(), bad, {});
    FAIL() << "nu = 0.5 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bodies.0.material.poisson_ratio"), std::string::npos) << e.what();
  }
}

TEST(FemBody, ParametersAreRegistered) {
  Model model;
  add_fem_body(model, "jelly", unit_tet(), FemMaterial{}, FemInit{});
  const ParameterTable& t = model.params();
  EXPECT_EQ(t.require("bodies.0.position").size, 3);
  EXPECT_EQ(t.require("bodies.jelly.angular_velocity").entry->kind, ParamKind::kInitialCondition);
  EXPECT_EQ(t.require("bodies.0.material.youngs_modulus").entry->kind, ParamKind::kMaterial);
  EXPECT_EQ(t.require("bodies.jelly.material.viscosity").size, 1);
  VecX p = t.defaults();
  p[t.require("bodies.0.material.poisson_ratio").offset] = 0.5;
  EXPECT_THROW(t.check(p), InputError);
  p = t.defaults();
  p[t.require("bodies.0.material.density").offset] = 0.0;
  EXPECT_THROW(t.check(p), InputError);
}

class InitialState : public ::testing::TestWithParam<Vec3> {};

TEST_P(InitialState, RigidMotionAndExactDerivatives) {
  const TetMesh mesh = make_box_mesh(Vec3(0.3, 0.2, 0.1), Eigen::Vector3i(2, 2, 1), BoxSplit::kFive, Vec3(1, 2, 3));
  Model model;
  FemInit init;
  init.position = Vec3(0.1, -0.2, 0.4);
  init.orientation = GetParam();
  init.velocity = Vec3(0.3, 0.1, -0.2);
  init.angular_velocity = Vec3(1.0, -2.0, 0.5);
  add_fem_body(model, "b", mesh, FemMaterial{}, init);
  const auto& body = fem_body(model, 0);
  const VecX p = model.params().defaults();
  const int n = model.num_dofs();
  VecX q0, v0;
  model.initial_state(p, q0, v0);

  // A rigid motion: centroid at c, distances kept, velocities of a rigid body.
  EXPECT_LT((body.center_of_mass(q0, p) - *init.position).norm(), 1e-12);
  for (int k = 1; k < body.num_nodes(); ++k) {
    EXPECT_NEAR((q0.segment<3>(body.dof(k)) - q0.segment<3>(body.dof(0))).norm(),
                (mesh.nodes[k] - mesh.nodes[0]).norm(), 1e-12);
    const Vec3 expected = init.velocity + init.angular_velocity.cross(q0.segment<3>(body.dof(k)) - *init.position);
    EXPECT_LT((v0.segment<3>(body.dof(k)) - expected).norm(), 1e-12);
  }

  // jvp columns and vjp rows against central differences of the initial state.
  std::mt19937 rng(7);
  const VecX gq = test::random_vector(rng, n, 1.0), gv = test::random_vector(rng, n, 1.0);
  VecX grad = VecX::Zero(p.size());
  body.initial_state_vjp(p, gq, gv, grad);
  const int np = static_cast<int>(p.size());
  double max_fd = 0.0;
  for (int j = 0; j < np; ++j) {
    const double h = 1e-6;
    VecX pp = p, pm = p;
    pp[j] += h;
    pm[j] -= h;
    VecX qp, vp, qm, vm;
    model.initial_state(pp, qp, vp);
    model.initial_state(pm, qm, vm);
    const VecX dq_fd = (qp - qm) / (2 * h), dv_fd = (vp - vm) / (2 * h);
    VecX dq = VecX::Zero(n), dv = VecX::Zero(n);
    body.initial_state_jvp(p, j, dq, dv);
    EXPECT_LT((dq - dq_fd).lpNorm<Eigen::Infinity>(), 1e-8) << model.params().name_of(j);
    EXPECT_LT((dv - dv_fd).lpNorm<Eigen::Infinity>(), 1e-8) << model.params().name_of(j);
    const double g_fd = gq.dot(dq_fd) + gv.dot(dv_fd);
    EXPECT_NEAR(grad[j], g_fd, 1e-8 * std::max(1.0, std::abs(g_fd))) << model.params().name_of(j);
    max_fd = std::max(max_fd, std::abs(g_fd));
  }
  EXPECT_GT(max_fd, 0.1);  // not vacuous
}

INSTANTIATE_TEST_SUITE_P(Orientations, InitialState,
                         ::testing::Values(Vec3(0, 0, 0), Vec3(1e-9, -2e-9, 0), Vec3(0.05, -0.1, 0.12),
                                           Vec3(0.15, 0.1, -0.05), Vec3(1.0, -2.0, 0.5), Vec3(0, 3.0, 0.1)));

TEST(FemBody, MassMomentumAndEnergy) {
  for (MassMatrixKind kind : {MassMatrixKind::kConsistent, MassMatrixKind::kLumped}) {
    const TetMesh mesh = make_box_mesh(Vec3(0.4, 0.2, 0.1), Eigen::Vector3i(4, 2, 1), BoxSplit::kSix);
    Model model;
    FemInit init;
    init.position = Vec3::Zero();
    init.velocity = Vec3(1.0, 2.0, -1.0);
    FemOptions opt;
    opt.mass = kind;
    FemMaterial mat;
    mat.density = 100.0;
    add_fem_body(model, "b", mesh, mat, init, opt);
    const auto& body = fem_body(model, 0);
    VecX p = model.params().defaults();
    VecX q0, v0;
    model.initial_state(p, q0, v0);
    const double M = body.total_mass(p);
    EXPECT_NEAR(M, 100.0 * 0.4 * 0.2 * 0.1, 1e-12);
    EXPECT_NEAR(body.kinetic_energy(q0, v0, p), 0.5 * M * init.velocity.squaredNorm(), 1e-12);
    EXPECT_LT((body.linear_momentum(v0, p) - M * init.velocity).norm(), 1e-12);
    // Pure spin about the centroid: 2 T = ω · L, and L = I ω about a principal axis.
    const int pw = model.params().require("bodies.0.angular_velocity").offset;
    const int pv = model.params().require("bodies.0.velocity").offset;
    p.segment<3>(pv).setZero();
    p.segment<3>(pw) = Vec3(0.0, 0.0, 3.0);
    model.initial_state(p, q0, v0);
    const Vec3 L = body.angular_momentum(q0, v0, p);
    EXPECT_NEAR(2.0 * body.kinetic_energy(q0, v0, p), Vec3(0, 0, 3.0).dot(L), 1e-12);
    const double Izz = M * (0.4 * 0.4 + 0.2 * 0.2) / 12.0;
    if (kind == MassMatrixKind::kConsistent) {
      EXPECT_NEAR(L[2], 3.0 * Izz, 1e-12);
    }
  }
}

}  // namespace
}  // namespace addsim
