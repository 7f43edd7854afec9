// Every FEM term through the derivative harness (∂r/∂q, ∂r/∂v, ∂r/∂a and ∂r/∂p for E, ν,
// ρ, ν_visc against central differences), at small and large deformation, for both
// Neo-Hookean variants, both mass matrices and both viscosity models. The stress term
// (elasticity and viscosity in one element loop) is checked with both parts, with
// elasticity alone (ViscosityModel::kNone, or ν_visc = 0) and with viscosity alone (E = 0
// in p, which makes the Neo-Hookean stress vanish). expect_* flags make the blocks that
// must be non-zero fail if they vanish.

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "addsim/check/derivative_check.h"
#include "addsim/fem/rotation_vector.h"
#include "fem_test_util.h"

namespace addsim {
namespace {

// Which parts of the stress term are active.
enum class Parts { kBoth, kElasticOnly, kElasticZeroViscosity, kViscousOnly };

struct Case {
  NeoHookeanVariant variant;
  MassMatrixKind mass;
  ViscosityModel viscosity;
  double deformation;  // size of the non-rigid part of the state
  Parts parts = Parts::kBoth;
};

std::string describe(const Case& c) {
  const char* parts[] = {"both", "elastic", "elastic/nu_visc=0", "viscous"};
  const char* visc = c.viscosity == ViscosityModel::kRotationInvariant ? "rot-inv"
                     : c.viscosity == ViscosityModel::kLinear          ? "linear"
                                                                       : "none";
  return std::string(c.variant == NeoHookeanVariant::kAdd ? "add" : "standard") + "/" +
         (c.mass == MassMatrixKind::kConsistent ? "consistent" : "lumped") + "/" + visc + "/def=" +
         std::to_string(c.deformation) + "/" + parts[static_cast<int>(c.parts)];
}

// A small soft box with gravity, the material and options of `c`.
std::unique_ptr<Model> make_case_model(const Case& c) {
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
  return test::make_fem_model(mesh, mat, opt);
}

// Default parameters with the parts of `c` switched off: E = 0 zeroes the Neo-Hookean
// stress (μ = λ = 0), ν_visc = 0 the viscous one.
VecX case_params(const Model& model, const Case& c) {
  VecX p = model.params().defaults();
  const FemParamIndices& idx = fem_body(model, 0).params();
  if (c.parts == Parts::kViscousOnly) p[idx.youngs_modulus] = 0.0;
  if (c.parts == Parts::kElasticZeroViscosity) p[idx.viscosity] = 0.0;
  return p;
}

// A rotated and stretched/sheared configuration plus random node noise, random v and a.
struct State {
  VecX q, v, a;
};
State make_state(const Model& model, double deformation) {
  const auto& body = fem_body(model, 0);
  const int n = model.num_dofs();
  std::mt19937 rng(1234);
  Mat3 A;
  A << 1.0 + 0.5 * deformation, 0.3 * deformation, 0.0, -0.2 * deformation, 1.0 - 0.3 * deformation,
      0.1 * deformation, 0.0, 0.25 * deformation, 1.0 + 0.2 * deformation;
  Mat3 R, Jl;
  rotation_and_jacobian(Vec3(0.3, -0.7, 0.4), R, Jl);
  State s;
  s.q.resize(n);
  for (int k = 0; k < body.num_nodes(); ++k)
    s.q.segment<3>(body.dof(k)) = R * A * body.mesh().nodes[k] + Vec3(0.1, 0.2, 0.3);
  s.q += test::random_vector(rng, n, 0.05 * deformation * 0.1);
  s.v = test::random_vector(rng, n, 0.5);
  s.a = test::random_vector(rng, n, 3.0);
  return s;
}

const Term* find_term(const Model& model, std::string_view name) {
  for (const auto& t : model.terms())
    if (t->name() == name) return t.get();
  return nullptr;
}

class FemTermDerivatives : public ::testing::TestWithParam<Case> {};

TEST_P(FemTermDerivatives, MatchCentralDifferences) {
  const Case c = GetParam();
  const auto model = make_case_model(c);
  const VecX p = case_params(*model, c);
  const State s = make_state(*model, c.deformation);
  const TermContext ctx{s.q, s.v, s.a, p, 1, model->scheme()};
  for (const auto& term : model->terms()) ASSERT_TRUE(term->admissible(ctx, nullptr)) << term->name();

  const bool elastic = c.parts != Parts::kViscousOnly;
  const bool viscous = c.parts == Parts::kBoth || c.parts == Parts::kViscousOnly;
  int checked = 0;
  for (const auto& term : model->terms()) {
    DerivativeCheckOptions o;
    const std::string name(term->name());
    if (name == "fem_inertia") {
      o.expect_da = o.expect_dp = true;
    } else if (name == "fem_gravity") {
      o.expect_dp = true;
    } else if (name == "fem_stress") {
      o.expect_dp = true;
      o.expect_dq = elastic || (viscous && c.viscosity == ViscosityModel::kRotationInvariant);
      o.expect_dv = viscous;
    } else {
      FAIL() << "unexpected term " << name;
    }
    const auto res = check_term_derivatives(*model, *term, s.q, s.v, s.a, p, 1, o);
    EXPECT_TRUE(res.ok) << describe(c) << " " << name << "\n" << res.report;
    // A part that is switched off contributes nothing: no ∂r/∂v without viscosity.
    if (name == "fem_stress" && !viscous) {
      EXPECT_EQ(res.dv.analytic_scale, 0.0) << describe(c);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, FemTermDerivatives,
    ::testing::Values(Case{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kRotationInvariant, 0.01},
                      Case{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kRotationInvariant, 1.0},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kLumped, ViscosityModel::kRotationInvariant, 0.01},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kLumped, ViscosityModel::kRotationInvariant, 1.0},
                      Case{NeoHookeanVariant::kAdd, MassMatrixKind::kLumped, ViscosityModel::kLinear, 1.0},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kConsistent, ViscosityModel::kLinear, 0.01},
                      Case{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kNone, 1.0,
                           Parts::kElasticOnly},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kLumped, ViscosityModel::kRotationInvariant,
                           1.0, Parts::kElasticZeroViscosity},
                      Case{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kRotationInvariant, 1.0,
                           Parts::kViscousOnly},
                      Case{NeoHookeanVariant::kStandard, MassMatrixKind::kLumped, ViscosityModel::kLinear, 0.01,
                           Parts::kViscousOnly}));

// One evaluation of the stress term into an Assembly of `mode`.
Assembly evaluate_term(const Model& model, const Term& term, const TermContext& ctx, EvalMode mode,
                       const JacobianWeights& w = {1.0, 0.0, 0.0}) {
  Assembly out(&model.pattern(), &model.stencils());
  out.reset(mode, w);
  term.evaluate(ctx, out);
  return out;
}

// The fused term is the sum of its parts: with both active, r, the partials and the step
// Jacobian equal those with E = 0 (viscous part) plus those with ν_visc = 0 (elastic part),
// and r_abs the sum of the parts' r_abs, as if they were two terms.
TEST(FemStressTerm, EqualsSumOfElasticAndViscousParts) {
  for (ViscosityModel vm : {ViscosityModel::kRotationInvariant, ViscosityModel::kLinear}) {
    const Case both{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, vm, 1.0};
    const auto model = make_case_model(both);
    const Term* stress = find_term(*model, "fem_stress");
    ASSERT_NE(stress, nullptr);
    const State s = make_state(*model, 1.0);
    Case el = both, vi = both;
    el.parts = Parts::kElasticZeroViscosity;
    vi.parts = Parts::kViscousOnly;
    const VecX p = case_params(*model, both), p_el = case_params(*model, el), p_vi = case_params(*model, vi);
    const TermContext ctx{s.q, s.v, s.a, p, 1, model->scheme()};
    const TermContext ctx_el{s.q, s.v, s.a, p_el, 1, model->scheme()};
    const TermContext ctx_vi{s.q, s.v, s.a, p_vi, 1, model->scheme()};
    auto close = [](const VecX& x, const VecX& y) { return (x - y).norm() <= 1e-13 * std::max(1.0, y.norm()); };

    const Assembly full = evaluate_term(*model, *stress, ctx, EvalMode::kResidualAndJacobians);
    const Assembly e = evaluate_term(*model, *stress, ctx_el, EvalMode::kResidualAndJacobians);
    const Assembly v = evaluate_term(*model, *stress, ctx_vi, EvalMode::kResidualAndJacobians);
    EXPECT_GT(e.kq.norm(), 0.0);
    EXPECT_GT(v.kv.norm(), 0.0);
    EXPECT_EQ(e.kv.norm(), 0.0);
    EXPECT_TRUE(close(full.r, e.r + v.r));
    EXPECT_TRUE(close(full.r_abs, e.r_abs + v.r_abs));
    EXPECT_TRUE(close(full.kq, e.kq + v.kq));
    EXPECT_TRUE(close(full.kv, e.kv + v.kv));
    EXPECT_EQ(full.ka.norm(), 0.0);

    // Step mode forms wq ∂r/∂q + wv ∂r/∂v of the same partials (the term folds wv/wq into
    // one block; wq = 0 takes the two-block path).
    for (const JacobianWeights& w : {JacobianWeights{1.0, 150.0, 2.25e4}, JacobianWeights{0.5, 150.0, 2.25e4},
                                     JacobianWeights{0.0, 150.0, 2.25e4}}) {
      const Assembly step = evaluate_term(*model, *stress, ctx, EvalMode::kResidualAndStepJacobian, w);
      EXPECT_TRUE(close(step.jac, w.wq * full.kq + w.wv * full.kv)) << w.wq;
      EXPECT_TRUE(close(step.r, full.r));
      EXPECT_TRUE(close(step.r_abs, full.r_abs));
    }
  }
}

// At ν_visc = 0 the viscous part adds exactly nothing: every output equals that of a body
// without viscosity, bit for bit, in every mode and for both parameter-derivative forms.
TEST(FemStressTerm, ZeroViscosityAddsExactlyNothing) {
  Case none{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kNone, 1.0};
  Case zero{NeoHookeanVariant::kAdd, MassMatrixKind::kConsistent, ViscosityModel::kRotationInvariant, 1.0,
            Parts::kElasticZeroViscosity};
  const auto m_none = make_case_model(none), m_zero = make_case_model(zero);
  const Term* t_none = find_term(*m_none, "fem_stress");
  const Term* t_zero = find_term(*m_zero, "fem_stress");
  ASSERT_TRUE(t_none && t_zero);
  const State s = make_state(*m_none, 1.0);
  const VecX p_none = case_params(*m_none, none), p_zero = case_params(*m_zero, zero);
  const TermContext c_none{s.q, s.v, s.a, p_none, 1, m_none->scheme()};
  const TermContext c_zero{s.q, s.v, s.a, p_zero, 1, m_zero->scheme()};
  const JacobianWeights w{1.0, 150.0, 2.25e4};
  for (EvalMode mode : {EvalMode::kResidual, EvalMode::kResidualAndJacobians, EvalMode::kResidualAndStepJacobian}) {
    const Assembly a = evaluate_term(*m_none, *t_none, c_none, mode, w);
    const Assembly b = evaluate_term(*m_zero, *t_zero, c_zero, mode, w);
    EXPECT_EQ(a.r, b.r);
    EXPECT_EQ(a.r_abs, b.r_abs);
    EXPECT_EQ(a.kq, b.kq);
    EXPECT_EQ(a.kv, b.kv);
    EXPECT_EQ(a.jac, b.jac);
  }
  // Parameter columns of E and ν agree; the ν_visc column is the viscous stress at unit
  // viscosity (non-zero for the rotation-invariant body, absent without viscosity).
  const int n = m_none->num_dofs();
  const FemParamIndices& idx = fem_body(*m_none, 0).params();
  for (int j : {idx.youngs_modulus, idx.poisson_ratio, idx.viscosity}) {
    VecX col_none = VecX::Zero(n), col_zero = VecX::Zero(n);
    ParamSink s_none = ParamSink::column(&m_none->stencils(), j, &col_none);
    ParamSink s_zero = ParamSink::column(&m_zero->stencils(), j, &col_zero);
    t_none->param_derivatives(c_none, s_none);
    t_zero->param_derivatives(c_zero, s_zero);
    if (j == idx.viscosity) {
      EXPECT_EQ(col_none.norm(), 0.0);
      EXPECT_GT(col_zero.norm(), 0.0);
    } else {
      EXPECT_EQ(col_none, col_zero);
    }
  }
}

TEST(FemStressTerm, InvertedElementIsInadmissibleAndFinite) {
  const TetMesh mesh = make_box_mesh(Vec3(0.2, 0.1, 0.1), Eigen::Vector3i(2, 1, 1), BoxSplit::kSix);
  // With viscosity: the viscous part of an inverted element is still added.
  const auto model = test::make_fem_model(mesh, FemMaterial{.viscosity = 0.3}, FemOptions{});
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
    if (term->name() != "fem_stress") continue;
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
    EXPECT_TRUE(out.kv.allFinite());
    EXPECT_GT(out.kv.norm(), 0.0);
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
    // The energy-only kernel gives the same bits, and refuses an inverted F.
    double w = 0.0;
    ASSERT_TRUE(neo_hookean_energy(F, 7.0e3, 1.1e4, variant, w));
    EXPECT_EQ(w, r.energy_density);
    EXPECT_FALSE(neo_hookean_energy(Mat3(-F), 7.0e3, 1.1e4, variant, w));
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
    // add_to_kq: Kq += the viscous ∂r/∂q (scaled), Kv as without it.
    Mat12 base = sandwich(G, Mat9::Identity()), Kq_sum = base, Kv_sum;
    viscous_stiffness(F, Fdot, grad, 0.37, model, Kq_sum, Kv_sum, 2.0, true);
    EXPECT_LE((Kq_sum - (base + 2.0 * kq_ref)).norm(), 1e-12 * (base.norm() + kq_ref.norm()));
    EXPECT_LT((Kv_sum - 2.0 * kv_ref).norm(), 1e-12 * kv_ref.norm());
    // The combined step block: K += (Kq + c Kv) · scale.
    Mat12 K_comb = base;
    viscous_stiffness_combined_add(F, Fdot, grad, 0.37, model, 150.0, K_comb, 2.0);
    const Mat12 comb_ref = base + 2.0 * (kq_ref + 150.0 * kv_ref);
    EXPECT_LE((K_comb - comb_ref).norm(), 1e-12 * comb_ref.norm());
  }
}

// A random, positively oriented tet for the bitwise kernel comparisons: its shape gradients
// (rows 1–3 are Dm⁻¹'s rows, row 0 minus their sum), a deformation gradient near I, a rate,
// and random material constants.
struct RandomTet {
  Mat43 grad;
  Mat3 F, Fdot;
  double mu, lambda, V, visc, c;  // Lamé parameters, rest volume, viscosity, viscous c
};
RandomTet random_tet(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Mat3 Dm;
  RandomTet t;
  for (int i = 0; i < 9; ++i) {
    Dm(i) = 0.1 * u(rng);
    t.F(i) = 0.3 * u(rng);
    t.Fdot(i) = 2.0 * u(rng);
  }
  Dm += 0.1 * Mat3::Identity();
  t.F += Mat3::Identity();
  if (Dm.determinant() <= 0.0) Dm.col(0) *= -1.0;
  t.grad.bottomRows<3>() = Dm.inverse();
  t.grad.row(0) = -t.grad.bottomRows<3>().colwise().sum();
  t.mu = 7.0e3 * (1.0 + 0.5 * u(rng));
  t.lambda = 1.1e4;
  t.V = 1e-4 * (1.5 + u(rng));
  t.visc = 0.0125 * (1.5 + u(rng));
  t.c = 150.0 * (1.5 + u(rng));
  return t;
}

// StressBlockColumns hands out, column by column, exactly (bit for bit) the 12 × 12 blocks
// of the stiffness kernels: the step block of neo_hookean_stiffness() followed by
// viscous_stiffness_combined_add(), and the partials of neo_hookean_stiffness() followed by
// viscous_stiffness(…, add_to_kq = true); elastic alone, viscous alone (an inverted element)
// and both, on random elements.
TEST(FemKernels, StressBlockColumnsEqualStiffnessKernelsBitwise) {
  std::mt19937 rng(20261206);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto set_column = [](Mat12& K, int l, int j, const StressBlockColumns::Column& col) {
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 3; ++i) K(3 * k + i, 3 * l + j) = col[i][k];
  };
  const auto expect_bitwise = [](const Mat12& K, const Mat12& reference, const std::string& what) {
    for (int i = 0; i < 144; ++i)
      ASSERT_EQ(K(i), reference(i)) << what << ", entry " << i << ", difference " << (K(i) - reference(i));
  };
  for (int trial = 0; trial < 200; ++trial) {
    const RandomTet tet = random_tet(rng);
    const Mat3 &F = tet.F, &Fdot = tet.Fdot;
    const Mat43& grad = tet.grad;
    const NeoHookeanVariant variant = trial % 2 ? NeoHookeanVariant::kAdd : NeoHookeanVariant::kStandard;
    const double mu = tet.mu, lambda = tet.lambda, V = tet.V, visc = tet.visc, c = tet.c;
    NeoHookeanResult nh;
    ASSERT_TRUE(neo_hookean(F, mu, lambda, variant, false, nh));
    for (int parts = 0; parts < 3; ++parts) {
      const bool elastic = parts != 1, viscous = parts != 0;
      const std::string what = "trial " + std::to_string(trial) + ", parts " + std::to_string(parts);
      const Mat12 K_el = elastic ? neo_hookean_stiffness(nh, grad, mu, V) : Mat12(Mat12::Zero());
      // Step block.
      Mat12 reference = K_el;
      if (viscous)
        viscous_stiffness_combined_add(F, Fdot, grad, visc, ViscosityModel::kRotationInvariant, c, reference, V);
      StressBlockColumns block;
      if (elastic) block.set_elastic(nh, grad, mu, V);
      if (viscous) block.set_viscous_step(F, Fdot, grad, visc, c, V);
      Mat12 K = Mat12::Constant(std::numeric_limits<double>::quiet_NaN());
      int next = 0;
      block.for_each_column([&](int l, int j, const StressBlockColumns::Column& col) {
        EXPECT_EQ(3 * l + j, next++);
        set_column(K, l, j, col);
      });
      EXPECT_EQ(next, 12);
      expect_bitwise(K, reference, what + ", step block");
      if (!viscous) continue;
      // Partials.
      Mat12 Kq_ref = K_el, Kv_ref;
      viscous_stiffness(F, Fdot, grad, visc, ViscosityModel::kRotationInvariant, Kq_ref, Kv_ref, V, true);
      StressBlockColumns partials;
      if (elastic) partials.set_elastic(nh, grad, mu, V);
      partials.set_viscous_partials(F, Fdot, grad, visc, V);
      Mat12 Kq = Mat12::Constant(std::numeric_limits<double>::quiet_NaN()), Kv = Kq;
      next = 0;
      partials.for_each_column_pair(
          [&](int l, int j, const StressBlockColumns::Column& cq, const StressBlockColumns::Column& cv) {
            EXPECT_EQ(3 * l + j, next++);
            set_column(Kq, l, j, cq);
            set_column(Kv, l, j, cv);
          });
      EXPECT_EQ(next, 12);
      expect_bitwise(Kq, Kq_ref, what + ", dr/dq");
      expect_bitwise(Kv, Kv_ref, what + ", dr/dv");
    }
  }
}

// FemBody::shape_gram(e) is G Gᵀ formed as `grad * grad.transpose()`, and the viscous block
// setters that take it hand out the same columns, bit for bit, as those that form it
// (FemStressTerm passes the body's stored G Gᵀ instead of forming it per element and call).
TEST(FemKernels, ShapeGramSettersEqualFormingSettersBitwise) {
  const TetMesh mesh = make_box_mesh(Vec3(0.3, 0.2, 0.25), Eigen::Vector3i(2, 2, 2), BoxSplit::kSix);
  const FemBody body("foot", "bodies.0", 0, mesh, FemParamIndices{});
  std::mt19937 rng(20261207);
  const auto same_columns = [](const StressBlockColumns& a, const StressBlockColumns& b, bool pairs,
                               const std::string& what) {
    std::vector<double> va, vb;
    const auto push = [](std::vector<double>& v, const StressBlockColumns::Column& col) {
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 4; ++k) v.push_back(col[i][k]);
    };
    if (pairs) {
      a.for_each_column_pair([&](int, int, const auto& cq, const auto& cv) { push(va, cq), push(va, cv); });
      b.for_each_column_pair([&](int, int, const auto& cq, const auto& cv) { push(vb, cq), push(vb, cv); });
    } else {
      a.for_each_column([&](int, int, const auto& col) { push(va, col); });
      b.for_each_column([&](int, int, const auto& col) { push(vb, col); });
    }
    ASSERT_EQ(va.size(), vb.size());
    for (size_t i = 0; i < va.size(); ++i) ASSERT_EQ(va[i], vb[i]) << what << ", value " << i;
  };
  for (int e = 0; e < body.num_tets(); ++e) {
    const Mat43& grad = body.shape_gradients(e);
    const Eigen::Matrix4d gg = grad * grad.transpose();
    for (int i = 0; i < 16; ++i) ASSERT_EQ(body.shape_gram(e)(i), gg(i)) << "tet " << e << ", entry " << i;
    const RandomTet tet = random_tet(rng);
    const std::string what = "tet " + std::to_string(e);
    StressBlockColumns forming, given;
    forming.set_viscous_step(tet.F, tet.Fdot, grad, tet.visc, tet.c, tet.V);
    given.set_viscous_step(tet.F, tet.Fdot, grad, body.shape_gram(e), tet.visc, tet.c, tet.V);
    same_columns(forming, given, false, what + ", step block");
    StressBlockColumns forming_p, given_p;
    forming_p.set_viscous_partials(tet.F, tet.Fdot, grad, tet.visc, tet.V);
    given_p.set_viscous_partials(tet.F, tet.Fdot, grad, body.shape_gram(e), tet.visc, tet.V);
    same_columns(forming_p, given_p, true, what + ", partials");
    // Ė as viscous_stress() leaves it (FemStressTerm passes it instead of forming it again).
    ViscousResult vr;
    viscous_stress(tet.F, tet.Fdot, tet.visc, ViscosityModel::kRotationInvariant, false, vr);
    StressBlockColumns given_e, given_ep;
    given_e.set_viscous_step(tet.F, tet.Fdot, grad, body.shape_gram(e), vr.Edot, tet.visc, tet.c, tet.V);
    same_columns(forming, given_e, false, what + ", step block with Ė given");
    given_ep.set_viscous_partials(tet.F, tet.Fdot, grad, body.shape_gram(e), vr.Edot, tet.visc, tet.V);
    same_columns(forming_p, given_ep, true, what + ", partials with Ė given");
  }
}

// The FEM element kernels that are compiled for AVX2 and the baseline (target_clones:
// neo_hookean_stress's core, viscous_stress, FemBody::deformation_gradient; the block setters
// and scatters are checked against the matrix kernels above) give the numbers of the same
// expressions compiled here for the baseline, bit for bit: on a machine with AVX2 this
// compares the AVX2 clone with baseline code (no FMA, no regrouped sums in either).
TEST(FemKernels, AvxClonesEqualBaselineExpressionsBitwise) {
  const TetMesh mesh = make_box_mesh(Vec3(0.3, 0.2, 0.25), Eigen::Vector3i(2, 2, 2), BoxSplit::kSix);
  const FemBody body("foot", "bodies.0", 0, mesh, FemParamIndices{});
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX q(3 * body.num_nodes());
  for (int k = 0; k < body.num_nodes(); ++k) q.segment<3>(3 * k) = mesh.nodes[k] + 0.02 * Vec3(u(rng), u(rng), u(rng));
  for (int e = 0; e < body.num_tets(); ++e) {
    const Mat3 F_here = body.element_positions(q, e) * body.shape_gradients(e);
    const Mat3 F = body.deformation_gradient(q, e);
    for (int i = 0; i < 9; ++i) ASSERT_EQ(F(i), F_here(i)) << "tet " << e << ", F entry " << i;
  }
  for (int trial = 0; trial < 100; ++trial) {
    const RandomTet tet = random_tet(rng);
    const Mat3& F = tet.F;
    for (NeoHookeanVariant variant : {NeoHookeanVariant::kAdd, NeoHookeanVariant::kStandard}) {
      NeoHookeanResult nh;
      const double J = F.determinant();
      ASSERT_EQ(neo_hookean_stress(F, tet.mu, tet.lambda, variant, nh), J > 0.0);
      if (!(J > 0.0)) continue;
      const Mat3 H = F.inverse().transpose();
      const bool add = variant == NeoHookeanVariant::kAdd;
      const double a = add ? 0.5 * tet.lambda * (J * J - 1.0) : tet.lambda * std::log(J);
      const double c = add ? tet.lambda * J * J : tet.lambda;
      const Mat3 P = tet.mu * (F - H) + a * H;
      EXPECT_EQ(nh.a, a);
      EXPECT_EQ(nh.c, c);
      for (int i = 0; i < 9; ++i) {
        ASSERT_EQ(nh.H(i), H(i)) << "trial " << trial << ", H entry " << i;
        ASSERT_EQ(nh.P(i), P(i)) << "trial " << trial << ", P entry " << i;
      }
    }
    ViscousResult vr;
    viscous_stress(F, tet.Fdot, tet.visc, ViscosityModel::kRotationInvariant, false, vr);
    const Mat3 A = F.transpose() * tet.Fdot;
    const Mat3 Edot = 0.5 * (A + A.transpose());
    const Mat3 P = kAddViscosityScale * tet.visc * F * Edot;
    for (int i = 0; i < 9; ++i) {
      ASSERT_EQ(vr.Edot(i), Edot(i)) << "trial " << trial << ", Ė entry " << i;
      ASSERT_EQ(vr.P(i), P(i)) << "trial " << trial << ", viscous P entry " << i;
    }
  }
}

// StressBlockColumns::scatter_step / scatter_partials (the AVX2 clone on machines that have
// AVX2, else the baseline) add the same numbers as the kernels' blocks, bit for bit: a point
// map onto a dense column-major 12 × 12 array (row 3k of column c at 12 c + 3k).
TEST(FemKernels, StressBlockScatterClonesEqualStiffnessKernelsBitwise) {
  std::mt19937 rng(20261207);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  int dense_map[48];
  for (int c = 0; c < 12; ++c)
    for (int k = 0; k < 4; ++k) dense_map[k + 4 * c] = 12 * c + 3 * k;
  for (int trial = 0; trial < 100; ++trial) {
    const RandomTet tet = random_tet(rng);
    const Mat3 &F = tet.F, &Fdot = tet.Fdot;
    const Mat43& grad = tet.grad;
    const NeoHookeanVariant variant = trial % 2 ? NeoHookeanVariant::kAdd : NeoHookeanVariant::kStandard;
    const double mu = tet.mu, lambda = tet.lambda, V = tet.V, visc = tet.visc, c = tet.c;
    NeoHookeanResult nh;
    ASSERT_TRUE(neo_hookean_stress(F, mu, lambda, variant, nh));
    // Start values as a second element would find them.
    Mat12 start;
    for (int i = 0; i < 144; ++i) start(i) = u(rng);
    const Mat12 K_el = neo_hookean_stiffness(nh, grad, mu, V);
    Mat12 step_ref = K_el;
    viscous_stiffness_combined_add(F, Fdot, grad, visc, ViscosityModel::kRotationInvariant, c, step_ref, V);
    step_ref = start + step_ref;
    StressBlockColumns block;
    block.set_elastic(nh, grad, mu, V);
    block.set_viscous_step(F, Fdot, grad, visc, c, V);
    Mat12 K = start;
    block.scatter_step(Assembly::PointColumns<4>(dense_map, K.data()));
    for (int i = 0; i < 144; ++i) ASSERT_EQ(K(i), step_ref(i)) << "trial " << trial << ", step entry " << i;
    Mat12 Kq_ref = K_el, Kv_ref;
    viscous_stiffness(F, Fdot, grad, visc, ViscosityModel::kRotationInvariant, Kq_ref, Kv_ref, V, true);
    Kq_ref = start + Kq_ref;
    Kv_ref = start + Kv_ref;
    StressBlockColumns partials;
    partials.set_elastic(nh, grad, mu, V);
    partials.set_viscous_partials(F, Fdot, grad, visc, V);
    Mat12 Kq = start, Kv = start;
    partials.scatter_partials(Assembly::PointColumns<4>(dense_map, Kq.data()),
                              Assembly::PointColumns<4>(dense_map, Kv.data()));
    for (int i = 0; i < 144; ++i) {
      ASSERT_EQ(Kq(i), Kq_ref(i)) << "trial " << trial << ", dr/dq entry " << i;
      ASSERT_EQ(Kv(i), Kv_ref(i)) << "trial " << trial << ", dr/dv entry " << i;
    }
  }
}

// neo_hookean_stress() gives neo_hookean()'s P, H, a and c to the bit, and rejects J ≤ 0.
TEST(FemKernels, NeoHookeanStressEqualsNeoHookeanBitwise) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 100; ++trial) {
    Mat3 F = Mat3::Identity();
    for (int i = 0; i < 9; ++i) F(i) += 0.3 * u(rng);
    for (NeoHookeanVariant variant : {NeoHookeanVariant::kAdd, NeoHookeanVariant::kStandard}) {
      NeoHookeanResult full, lean;
      const bool ok = neo_hookean(F, 7e3, 1.1e4, variant, false, full);
      ASSERT_EQ(neo_hookean_stress(F, 7e3, 1.1e4, variant, lean), ok);
      if (!ok) continue;
      EXPECT_EQ(lean.P, full.P);
      EXPECT_EQ(lean.H, full.H);
      EXPECT_EQ(lean.a, full.a);
      EXPECT_EQ(lean.c, full.c);
    }
  }
  NeoHookeanResult out;
  EXPECT_FALSE(neo_hookean_stress(-Mat3::Identity(), 7e3, 1.1e4, NeoHookeanVariant::kAdd, out));
}

// scatter_step / scatter_partials (the multiversioned column loops) add the same bits as
// Assembly::PointColumns::add column by column for every combination of parts (both, elastic
// alone, viscous alone), onto random start values, with the row triples of a column packed back
// to back and with a permuted map; nothing outside the block is touched. Written for the
// masked AVX2 row-triple update tried in docs/solver.md ("the stress blocks' scatter, gathered
// or masked": not kept), kept as the scatter's check for the parts the other tests do not cover.
TEST(FemKernels, ColumnScatterEqualsPointColumnsAddForEveryPartBitwise) {
  std::mt19937 rng(77);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  int packed_map[48], permuted_map[48];
  for (int c = 0; c < 12; ++c)
    for (int k = 0; k < 4; ++k) {
      packed_map[k + 4 * c] = 12 * c + 3 * k;
      permuted_map[k + 4 * c] = 12 * ((5 * c + 7) % 12) + 3 * ((k + c) % 4);
    }
  for (int trial = 0; trial < 60; ++trial) {
    const RandomTet tet = random_tet(rng);
    NeoHookeanResult nh;
    ASSERT_TRUE(neo_hookean_stress(tet.F, tet.mu, tet.lambda, NeoHookeanVariant::kAdd, nh));
    for (const int* map : {packed_map, permuted_map})
      for (int parts = 0; parts < 3; ++parts) {  // both, elastic alone, viscous alone
        const bool elastic = parts != 2, viscous = parts != 1;
        StressBlockColumns step, partials;
        if (elastic) {
          step.set_elastic(nh, tet.grad, tet.mu, tet.V);
          partials.set_elastic(nh, tet.grad, tet.mu, tet.V);
        }
        if (viscous) step.set_viscous_step(tet.F, tet.Fdot, tet.grad, tet.visc, tet.c, tet.V);
        partials.set_viscous_partials(tet.F, tet.Fdot, tet.grad, tet.visc, tet.V);
        // 145 values: one past the block, which no update may touch.
        std::vector<double> start(145);
        for (double& x : start) x = u(rng);
        std::vector<double> got = start, want = start;
        step.scatter_step(Assembly::PointColumns<4>(map, got.data()));
        const Assembly::PointColumns<4> ref(map, want.data());
        step.for_each_column([&](int l, int j, const StressBlockColumns::Column& col) { ref.add(l, j, col); });
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(double) * got.size())) << "step, trial " << trial;
        std::vector<double> got_q = start, got_v = start, want_q = start, want_v = start;
        partials.scatter_partials(Assembly::PointColumns<4>(map, got_q.data()),
                                  Assembly::PointColumns<4>(map, got_v.data()));
        const Assembly::PointColumns<4> ref_q(map, want_q.data()), ref_v(map, want_v.data());
        partials.for_each_column_pair(
            [&](int l, int j, const StressBlockColumns::Column& cq, const StressBlockColumns::Column& cv) {
              ref_q.add(l, j, cq);
              ref_v.add(l, j, cv);
            });
        ASSERT_EQ(0, std::memcmp(got_q.data(), want_q.data(), sizeof(double) * got_q.size())) << "dr/dq, trial " << trial;
        ASSERT_EQ(0, std::memcmp(got_v.data(), want_v.data(), sizeof(double) * got_v.size())) << "dr/dv, trial " << trial;
      }
  }
}

}  // namespace
}  // namespace addsim
