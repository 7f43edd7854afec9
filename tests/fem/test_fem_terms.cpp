// Every FEM term through the derivative harness (∂r/∂q, ∂r/∂v, ∂r/∂a and ∂r/∂p for E, ν,
// ρ, ν_visc against central differences), at small and large deformation, for both
// Neo-Hookean variants, both mass matrices and both viscosity models. expect_* flags
// make the blocks that must be non-zero fail if they vanish.

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "addsim/check/derivative_check.h"
#include "addsim/fem/rotation_vector.h"
#include "fem_test_util.h"

namespace addsim {
namespace {

struct Case {
  NeoHookeanVariant variant;
  MassMatrixKind mass;
  ViscosityModel viscosity;
  double deformation;  // size of the non-rigid part of the state
};

std::string describe(const Case& c) {
  return std::string(c.variant == NeoHookeanVariant::kAdd ? "add" : "standard") + "/" +
         (c.mass == MassMatrixKind::kConsistent ? "consistent" : "lumped") + "/" +
         (c.viscosity == ViscosityModel::kRotationInvariant ? "rot-inv" : "linear") + "/def=" +
         std::to_string(c.deformation);
}

class FemTermDerivatives : public ::testing::TestWithParam<Case> {};

TEST_P(FemTermDerivatives, MatchCentralDifferences) {
  const Case c = GetParam();
  const TetMesh mesh = make_box_mesh(Vec3(0.2, 0.1, 0.1), Eigen::Vector3i(2, 1, 1), BoxSplit::kFive);
  FemMaterial mat;
  mat.youngs_modulus = 2.0e4;
  mat.poisson_ratio = 0.35;
  mat.density = 150.0;
  mat.viscosity = 0.5;
  FemOptions opt;
  opt.elasticity = c.variant;
  opt.mass = c.mass;
  opt.viscosity = c.viscosity;
  opt.gravity = Vec3(0.0, 0.0, -9.81);
  const auto model = test::make_fem_model(mesh, mat, opt);
  const auto& body = fem_body(*model, 0);
  const VecX p = model->params().defaults();
  const int n = model->num_dofs();

  // State: a rotated and stretched/sheared configuration plus random node noise.
  std::mt19937 rng(1234);
  Mat3 A;
  A << 1.0 + 0.5 * c.deformation, 0.3 * c.deformation, 0.0, -0.2 * c.deformation, 1.0 - 0.3 * c.deformation,
      0.1 * c.deformation, 0.0, 0.25 * c.deformation, 1.0 + 0.2 * c.deformation;
  Mat3 R, Jl;
  rotation_and_jacobian(Vec3(0.3, -0.7, 0.4), R, Jl);
  VecX q(n);
  for (int k = 0; k < body.num_nodes(); ++k) q.segment<3>(body.dof(k)) = R * A * mesh.nodes[k] + Vec3(0.1, 0.2, 0.3);
  q += test::random_vector(rng, n, 0.05 * c.deformation * 0.1);
  const VecX v = test::random_vector(rng, n, 0.5);
  const VecX a = test::random_vector(rng, n, 3.0);
  const TermContext ctx{q, v, a, p, 1, model->scheme()};
  for (const auto& term : model->terms()) ASSERT_TRUE(term->admissible(ctx, nullptr)) << term->name();

  int checked = 0;
  for (const auto& term : model->terms()) {
    DerivativeCheckOptions o;
    const std::string name(term->name());
    if (name == "fem_inertia") {
      o.expect_da = o.expect_dp = true;
    } else if (name == "fem_gravity") {
      o.expect_dp = true;
    } else if (name == "fem_elasticity") {
      o.expect_dq = o.expect_dp = true;
    } else if (name == "fem_viscosity") {
      o.expect_dv = o.expect_dp = true;
      o.expect_dq = c.viscosity == ViscosityModel::kRotationInvariant;
    } else {
      FAIL() << "unexpected term " << name;
    }
    const auto res = check_term_derivatives(*model, *term, q, v, a, p, 1, o);
    EXPECT_TRUE(res.ok) << describe(c) << " " << name << "\n" << res.report;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, FemTermDerivatives,
    ::testing::Values(Case{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kRotationInvariant, 0.01},
                      Case{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kRotationInvariant, 1.0},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kLumped, ViscosityModel::kRotationInvariant, 0.01},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kLumped, ViscosityModel::kRotationInvariant, 1.0},
                      Case{NeoHookeanVariant::kAdd, MassMatrixKind::kLumped, ViscosityModel::kLinear, 1.0},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kConsistent, ViscosityModel::kLinear, 0.01}));

TEST(FemElasticTerm, InvertedElementIsInadmissibleAndFinite) {
  const TetMesh mesh = make_box_mesh(Vec3(0.2, 0.1, 0.1), Eigen::Vector3i(2, 1, 1), BoxSplit::kSix);
  const auto model = test::make_fem_model(mesh, FemMaterial{}, FemOptions{});
  const auto& body = fem_body(*model, 0);
  const VecX p = model->params().defaults();
  VecX q(model->num_dofs()), v = VecX::Zero(model->num_dofs());
  for (int k = 0; k < body.num_nodes(); ++k) q.segment<3>(body.dof(k)) = mesh.nodes[k];
  // Push one corner node through the opposite face of its tets.
  q[body.dof(0)] += 0.25;
  const TermContext ctx{q, v, v, p, 1, model->scheme()};
  bool found = false;
  for (const auto& term : model->terms()) {
    std::string why;
    if (term->name() != "fem_elasticity") continue;
    found = true;
    EXPECT_FALSE(term->admissible(ctx, &why));
    EXPECT_NE(why.find("bodies.0"), std::string::npos) << why;
    EXPECT_NE(why.find("element"), std::string::npos) << why;
    EXPECT_NE(why.find("inverted"), std::string::npos) << why;
    Assembly out(&model->pattern(), &model->stencils());
    out.reset(EvalMode::kResidualAndJacobians);
    term->evaluate(ctx, out);
    EXPECT_TRUE(out.r.allFinite());
    EXPECT_TRUE(out.kq.allFinite());
    EXPECT_EQ(term->energy(ctx), std::numeric_limits<double>::infinity());
  }
  EXPECT_TRUE(found);
}

// Lamé parameters against the textbook values and their derivatives against differences.
TEST(FemKernels, LameParameters) {
  const LameParameters l = lame_parameters(2.0e4, 0.3);
  EXPECT_NEAR(l.mu, 2.0e4 / 2.6, 1e-9);
  EXPECT_NEAR(l.lambda, 2.0e4 * 0.3 / (1.3 * 0.4), 1e-9);
  const double h = 1e-6;
  const LameParameters lp = lame_parameters(2.0e4, 0.3 + h), lm = lame_parameters(2.0e4, 0.3 - h);
  EXPECT_NEAR(l.dlambda_dnu, (lp.lambda - lm.lambda) / (2 * h), 1e-4 * std::abs(l.dlambda_dnu));
  EXPECT_NEAR(l.dmu_dnu, (lp.mu - lm.mu) / (2 * h), 1e-4 * std::abs(l.dmu_dnu));
}

// The energy is the potential of the stress: P = ∂W/∂F, both variants.
TEST(FemKernels, StressIsEnergyGradient) {
  Mat3 F;
  F << 1.2, 0.1, -0.2, 0.05, 0.9, 0.1, 0.0, -0.15, 1.1;
  for (NeoHookeanVariant variant : {NeoHookeanVariant::kAdd, NeoHookeanVariant::kStandard}) {
    NeoHookeanResult r;
    ASSERT_TRUE(neo_hookean(F, 7.0e3, 1.1e4, variant, false, r));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const double h = 1e-6;
        Mat3 Fp = F, Fm = F;
        Fp(i, j) += h;
        Fm(i, j) -= h;
        NeoHookeanResult rp, rm;
        neo_hookean(Fp, 7.0e3, 1.1e4, variant, false, rp);
        neo_hookean(Fm, 7.0e3, 1.1e4, variant, false, rm);
        EXPECT_NEAR(r.P(i, j), (rp.energy_density - rm.energy_density) / (2 * h), 1e-5 * 1e4);
      }
    NeoHookeanResult rest;
    ASSERT_TRUE(neo_hookean(Mat3::Identity(), 7.0e3, 1.1e4, variant, false, rest));
    EXPECT_LT(rest.P.norm(), 1e-9);
    EXPECT_NEAR(rest.energy_density, 0.0, 1e-9);
  }
}

// The closed-form element stiffnesses equal Gᵀ (dP/dF) G and Gᵀ (dP/dḞ) G built from the
// 9 × 9 kernel tangents (themselves checked against finite differences by the term tests).
TEST(FemKernels, ClosedFormStiffnessesMatchTangentSandwiches) {
  Mat3 F, Fdot;
  F << 1.2, 0.1, -0.2, 0.05, 0.9, 0.1, 0.0, -0.15, 1.1;
  Fdot << 0.3, -0.7, 0.2, 0.1, -0.4, 0.9, 0.5, 0.25, -0.6;
  Mat43 grad;
  grad << -1.0, -0.8, -1.3, 1.0, 0.1, 0.2, 0.0, 0.7, 0.1, 0.0, 0.0, 1.0;
  const Mat9x12 G = deformation_gradient_operator(grad);
  for (NeoHookeanVariant variant : {NeoHookeanVariant::kAdd, NeoHookeanVariant::kStandard}) {
    NeoHookeanResult nh;
    ASSERT_TRUE(neo_hookean(F, 7.0e3, 1.1e4, variant, true, nh));
    const Mat12 reference = sandwich(G, nh.dP_dF);
    EXPECT_LT((neo_hookean_stiffness(nh, grad, 7.0e3) - reference).norm(), 1e-12 * reference.norm());
    const Vec12 r_ref = G.transpose() * Eigen::Map<const Vec9>(nh.P.data());
    EXPECT_LT((element_forces(nh.P, grad) - r_ref).norm(), 1e-12 * r_ref.norm());
  }
  for (ViscosityModel model : {ViscosityModel::kRotationInvariant, ViscosityModel::kLinear}) {
    ViscousResult vr;
    viscous_stress(F, Fdot, 0.37, model, true, vr);
    Mat12 Kq, Kv;
    viscous_stiffness(F, Fdot, grad, 0.37, model, Kq, Kv);
    const Mat12 kv_ref = sandwich(G, vr.dP_dFdot), kq_ref = sandwich(G, vr.dP_dF);
    EXPECT_LT((Kv - kv_ref).norm(), 1e-12 * kv_ref.norm());
    EXPECT_LE((Kq - kq_ref).norm(), 1e-12 * kq_ref.norm());
  }
}

}  // namespace
}  // namespace addsim
