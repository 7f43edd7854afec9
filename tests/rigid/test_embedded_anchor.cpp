// Anchors embedded in FEM tets (docs/scene-format.md, "A joint anchor is one of"): a point
// x = Σ_k b_k x_k of a tet's 4 nodes, located at scene build. Derivatives of rigid joints and
// springs with such an anchor through the harness, equality with a node anchor placed at the
// same node, input errors, a static force balance and adjoint gradients w.r.t. stiffnesses.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "addsim/check/derivative_check.h"
#include "addsim/core/error.h"
#include "addsim/fem/fem_builder.h"
#include "addsim/io/scene.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/mesh/tet_mesh.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/rigid/so3.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"
#include "addsim/terms/spring_term.h"

namespace addsim {
namespace {

const Term& find_term(const Model& m, std::string_view name) {
  for (const auto& t : m.terms())
    if (t->name() == name) return *t;
  throw InternalError("no term " + std::string(name));
}

// Residual of one term alone at (q, v = 0).
VecX term_residual(const Model& m, const Term& term, const VecX& q) {
  const VecX z = VecX::Zero(m.num_dofs());
  Assembly out(&m.pattern(), &m.stencils());
  out.reset(EvalMode::kResidual);
  term.evaluate(TermContext{q, z, z, m.params().defaults(), 1, m.scheme()}, out);
  return out.r;
}

// Initial node positions of FEM body `body` (index = node id).
std::vector<Vec3> initial_nodes(const Model& m, int body) {
  const FemBody& fem = fem_body(m, body);
  VecX q0 = VecX::Zero(m.num_dofs()), v0 = VecX::Zero(m.num_dofs());
  fem.initial_state(m.params().defaults(), q0, v0);
  std::vector<Vec3> x;
  for (int k = 0; k < fem.num_nodes(); ++k) x.push_back(q0.segment<3>(fem.dof(k)));
  return x;
}

std::string vec(const Vec3& x) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "[%.17g, %.17g, %.17g]", x.x(), x.y(), x.z());
  return buf;
}

// A soft box (0.2 m, 48 tets, rotated and moved) and a rigid box, with the given joints
// and springs (the contents of the two JSON lists).
std::string scene_text(const std::string& joints, const std::string& springs, const std::string& extra = "") {
  return R"({"dt": 0.01, "steps": 6, "gravity": [0, 0, -9.81],)" + extra + R"(
    "bodies": [
      {"type": "fem", "name": "block", "mesh": {"generator": "box", "size": [0.2, 0.2, 0.2], "target_tets": 48},
       "position": [0, 0, 1], "orientation": [0.1, -0.2, 0.3],
       "material": {"youngs_modulus": 5e4, "poisson_ratio": 0.3, "density": 200, "viscosity": 0.5}},
      {"type": "rigid", "name": "bar", "shape": {"type": "box", "size": [0.3, 0.1, 0.1]}, "mass": 0.7,
       "position": [0.05, 0.02, 0.75], "orientation": [0.2, 0.1, -0.4]}],
    "handles": [{"name": "h", "position": [0.3, 0.1, 1.3], "velocity": [0.5, 0, -0.2]}],
    "joints": [)" + joints + R"(],
    "springs": [)" + springs + "]}";
}

// Embedded points of the rotated block: interior (0.017, −0.023, 1.031), near the bottom.
const char* kInside = "[0.017, -0.023, 1.031]";
const char* kLow = "[-0.031, 0.012, 0.93]";

// Random state around the initial one: nodes moved by ~1 cm, the rigid pose by ~1 cm and
// `theta` rad, random velocities.
void random_state(const Model& m, double theta, unsigned seed, VecX& q, VecX& v) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd;
  auto rnd3 = [&](double s) { return Vec3(s * nd(rng), s * nd(rng), s * nd(rng)); };
  q = VecX::Zero(m.num_dofs());
  VecX v0 = VecX::Zero(m.num_dofs());
  for (const auto& b : m.bodies()) b->initial_state(m.params().defaults(), q, v0);
  v = VecX::Zero(m.num_dofs());
  for (int k = 0; k < m.num_dofs(); ++k) {
    q[k] += 0.01 * nd(rng);
    v[k] = nd(rng);
  }
  const RigidBody& rb = rigid_body(m, 1);
  q.segment<3>(rb.dof() + 3) = theta * rnd3(1.0).normalized();
}

TEST(EmbeddedAnchor, JointDerivativesRigidToEmbedded) {
  const std::string joints = std::string(R"(
      {"type": "ball", "anchors": [{"body": "bar", "point": [0.15, 0.02, -0.01]}, {"body": "block", "embedded": )") +
                             kInside + R"(}], "stiffness": 3e3},
      {"type": "distance", "anchors": [{"body": "block", "embedded": )" + kLow + R"(}, {"body": "bar"}],
       "stiffness": 2e3, "rest_length": 0.05},
      {"type": "unilateral", "anchors": [{"body": "bar", "point": [-0.1, 0, 0.02]},
       {"body": "block", "tet": 7, "barycentric": [0.1, 0.2, 0.3, 0.4]}], "stiffness": 1e3, "rest_length": 0.01})";
  const Scene s = load_scene_text(scene_text(joints, ""), "embedded.json");
  const Model& m = *s.model;
  const auto& term = dynamic_cast<const RigidJointTerm&>(find_term(m, "rigid_joints"));
  ASSERT_EQ(term.joints().size(), 3u);
  for (const RigidJoint& j : term.joints()) {
    EXPECT_GE(j.tet_b[0], 0) << j.label;
    double sum = 0.0;
    for (double b : j.bary_b) sum += b;
    EXPECT_NEAR(sum, 1.0, 1e-14) << j.label;
  }
  // Interior points: every barycentric coordinate is strictly positive.
  for (int k = 0; k < 2; ++k)
    for (double b : term.joints()[k].bary_b) EXPECT_GT(b, 1e-3) << term.joints()[k].label;
  for (double theta : {0.0, 1e-6, 1.1, 3.1}) {
    VecX q, v;
    random_state(m, theta, 11, q, v);
    // The cable is taut, so every joint acts.
    const RigidJoint& cable = term.joints()[2];
    const RigidBody& bar = rigid_body(m, 1);
    Vec3 xb = Vec3::Zero();
    for (int k = 0; k < 4; ++k) xb += cable.bary_b[k] * q.segment<3>(cable.tet_b[k]);
    const Vec3 xa = q.segment<3>(bar.dof()) + rotation_from_vector(q.segment<3>(bar.dof() + 3)) * cable.point_a;
    EXPECT_GT((xa - xb).norm(), cable.rest_length + 1e-3) << "theta = " << theta;
    DerivativeCheckOptions opt;
    opt.expect_dq = opt.expect_dp = true;
    const DerivativeCheckResult res =
        check_term_derivatives(m, term, q, v, VecX::Zero(m.num_dofs()), m.params().defaults(), 2, opt);
    EXPECT_TRUE(res.ok) << "theta = " << theta << "\n" << res.report;
    std::printf("[ joints theta %-6g ] %s", theta, res.report.c_str());
  }
}

TEST(EmbeddedAnchor, SpringDerivativesEmbeddedToWorldHandleParticleAndEmbedded) {
  const std::string springs = std::string(R"(
      {"type": "zero_length", "anchors": [{"body": "block", "embedded": )") + kInside + R"(}, {"world": [0.1, 0, 1.3]}],
       "stiffness": 400, "damping": 3},
      {"type": "distance", "anchors": [{"world": [-0.2, 0.1, 1.2]}, {"body": "block", "embedded": )" + kLow + R"(}],
       "stiffness": 300, "damping": 2},
      {"type": "unilateral", "anchors": [{"body": "block", "embedded": )" + kLow + R"(}, {"world": [0.3, 0.3, 1.4]}],
       "stiffness": 200, "damping": 1, "rest_length": 0.05},
      {"type": "distance", "anchors": [{"body": "block", "tet": 7, "barycentric": [0.1, 0.2, 0.3, 0.4]},
       {"body": "block", "embedded": )" + kInside + R"(}], "stiffness": 250, "damping": 1.5},
      {"type": "zero_length", "anchors": [{"handle": "h"}, {"body": "block", "embedded": )" + kLow + R"(}],
       "stiffness": 150, "damping": 0.5},
      {"type": "distance", "anchors": [{"body": "block", "point": 3}, {"body": "block", "embedded": )" + kInside + R"(}],
       "stiffness": 120, "damping": 0.7})";
  const Scene s = load_scene_text(scene_text("", springs), "embedded.json");
  const Model& m = *s.model;
  const auto& term = dynamic_cast<const SpringTerm&>(find_term(m, "springs"));
  // The embedded point is given in the block's initial placement (rotated and moved): its
  // barycentric image of the initial node positions is the given point.
  const Anchor& an = term.springs()[0].a;
  ASSERT_EQ(an.kind, Anchor::Kind::kEmbedded);
  VecX q0 = VecX::Zero(m.num_dofs()), v0 = q0;
  fem_body(m, 0).initial_state(m.params().defaults(), q0, v0);
  Vec3 x0 = Vec3::Zero();
  for (int k = 0; k < 4; ++k) x0 += an.weights[k] * q0.segment<3>(an.nodes[k]);
  EXPECT_LT((x0 - Vec3(0.017, -0.023, 1.031)).norm(), 1e-14);
  for (unsigned seed : {1u, 2u, 3u}) {
    VecX q, v;
    random_state(m, 0.3, seed, q, v);
    const VecX z = VecX::Zero(m.num_dofs());
    const TermContext ctx{q, v, z, m.params().defaults(), 3, m.scheme()};
    for (int k = 0; k < static_cast<int>(term.springs().size()); ++k)
      EXPECT_EQ(term.regime(ctx, k), SpringRegime::kActive) << "spring " << k << ", seed " << seed;
    DerivativeCheckOptions opt;
    opt.expect_dq = opt.expect_dv = opt.expect_dp = true;
    const DerivativeCheckResult res =
        check_term_derivatives(m, term, q, v, VecX::Zero(m.num_dofs()), m.params().defaults(), 3, opt);
    EXPECT_TRUE(res.ok) << "seed " << seed << "\n" << res.report;
    std::printf("[ springs seed %u ] %s", seed, res.report.c_str());
  }
}

// One anchor form against another: the trajectory of a scene whose node anchors are
// replaced by embedded anchors at the same node.
struct NodeAnchorForms {
  std::string node, embedded, barycentric;
};

NodeAnchorForms forms_at(const Model& m, int node) {
  const FemBody& fem = fem_body(m, 0);
  const std::vector<Vec3> x = initial_nodes(m, 0);
  int tet = -1, local = -1;
  for (int t = 0; t < fem.num_tets() && tet < 0; ++t)
    for (int k = 0; k < 4; ++k)
      if (fem.mesh().tets[t][k] == node) tet = t, local = k;
  std::string b = "[";
  for (int k = 0; k < 4; ++k) b += std::string(k ? ", " : "") + (k == local ? "1" : "0");
  b += "]";
  return {R"({"body": "block", "point": )" + std::to_string(node) + "}",
          R"({"body": "block", "embedded": )" + vec(x[node]) + "}",
          R"({"body": "block", "tet": )" + std::to_string(tet) + R"(, "barycentric": )" + b + "}"};
}

TEST(EmbeddedAnchor, AnchorAtANodeEqualsTheNodeAnchor) {
  // Node anchors first, to find the nodes: the top corner (max x + y + z) and another node.
  const Scene base = load_scene_text(scene_text("", ""), "probe.json");
  const std::vector<Vec3> x = initial_nodes(*base.model, 0);
  int top = 0;
  for (int k = 1; k < static_cast<int>(x.size()); ++k)
    if (x[k].z() > x[top].z()) top = k;
  const int other = (top + 5) % static_cast<int>(x.size());
  const NodeAnchorForms a = forms_at(*base.model, top);
  const NodeAnchorForms c = forms_at(*base.model, other);
  auto make = [&](const std::string& at_top, const std::string& at_other) {
    const std::string joints = R"({"type": "ball", "anchors": [{"body": "bar"}, )" + at_other +
                               R"(], "stiffness": 2e3})";
    const std::string springs = R"({"type": "distance", "anchors": [)" + at_top +
                                R"(, {"world": [0.05, 0.02, 1.3]}], "stiffness": 500, "damping": 2})";
    return scene_text(joints, springs, R"( "solver": {"tolerance": 1e-12},)");
  };
  auto run = [](const std::string& text) {
    const Scene s = load_scene_text(text, "node.json");
    Simulator sim(*s.model);
    Trajectory t = sim.run(s.model->params().defaults());
    EXPECT_TRUE(t.completed()) << t.failure;
    return t;
  };
  const Trajectory ref = run(make(a.node, c.node));
  double moved = 0.0;
  for (const VecX& q : ref.q) moved = std::max(moved, (q - ref.q.front()).lpNorm<Eigen::Infinity>());
  EXPECT_GT(moved, 1e-3) << "the scene must move";
  for (const auto& [top_form, other_form, what] :
       {std::tuple{a.embedded, c.embedded, "embedded"}, std::tuple{a.barycentric, c.barycentric, "barycentric"}}) {
    const Trajectory t = run(make(top_form, other_form));
    ASSERT_EQ(t.q.size(), ref.q.size());
    double diff = 0.0;
    for (std::size_t i = 0; i < t.q.size(); ++i) diff = std::max(diff, (t.q[i] - ref.q[i]).lpNorm<Eigen::Infinity>());
    EXPECT_LE(diff, 1e-12) << what;
    std::printf("[ node vs %s ] max |Δq| over %zu states = %.3g m\n", what, t.q.size(), diff);
  }
}

TEST(EmbeddedAnchor, BadInputNamesTheKeyPath) {
  auto error_of = [](const std::string& text) {
    try {
      load_scene_text(text, "bad.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto spring = [](const std::string& anchor) {
    return scene_text("", R"({"type": "zero_length", "anchors": [{"world": [0, 0, 2]}, )" + anchor +
                              R"(], "stiffness": 1})");
  };
  auto joint = [](const std::string& anchor) {
    return scene_text(R"({"type": "ball", "anchors": [{"body": "bar"}, )" + anchor + R"(], "stiffness": 1})", "");
  };
  struct Case {
    std::string text, needle;
  };
  const Case cases[] = {
      {joint(R"({"body": "block", "embedded": [0.5, 0, 1]})"), "bad.json: joints.0.anchors.1.embedded: the point"},
      {spring(R"({"body": "block", "embedded": [0, 0, 1.2]})"), "bad.json: springs.0.anchors.1.embedded: the point"},
      {spring(R"({"body": "block", "tet": 48, "barycentric": [1, 0, 0, 0]})"),
       "bad.json: springs.0.anchors.1.tet: expected a tet index in [0, 48)"},
      {spring(R"({"body": "block", "tet": -1, "barycentric": [1, 0, 0, 0]})"), "springs.0.anchors.1.tet"},
      {spring(R"({"body": "block", "tet": 2, "barycentric": [0.5, 0.5, 0.5, 0]})"),
       "bad.json: springs.0.anchors.1.barycentric: must sum to 1"},
      {joint(R"({"body": "block", "tet": 2, "barycentric": [1.1, 0.1, -0.2, 0]})"),
       "bad.json: joints.0.anchors.1.barycentric.2: must be >= 0"},
      {joint(R"({"body": "block", "tet": 2, "barycentric": [1, 0, 0]})"), "joints.0.anchors.1.barycentric: expected"},
      {joint(R"({"body": "block", "tet": 2, "barycentric": [1, 0, "x", 0]})"), "joints.0.anchors.1.barycentric.2"},
      {joint(R"({"body": "block", "tet": 2, "barycentric": [1, 0, 1e999, 0]})"), "joints.0.anchors.1.barycentric"},
      {joint(R"({"body": "block", "barycentric": [1, 0, 0, 0]})"), "joints.0.anchors.1.tet"},
      {joint(R"({"body": "block", "tet": 3})"), "joints.0.anchors.1.barycentric"},
      {joint(R"({"body": "block", "embedded": [0, 0, 1], "tet": 3, "barycentric": [1, 0, 0, 0]})"),
       "joints.0.anchors.1.embedded: give either"},
      {joint(R"({"body": "block", "embedded": [0, 0, 1], "point": 3})"), "joints.0.anchors.1.point: give either"},
      {joint(R"({"body": "block", "embedded": [0, 0]})"), "joints.0.anchors.1.embedded"},
      {spring(R"({"body": "bar", "embedded": [0, 0, 0.75]})"),
       "springs.0.anchors.1.embedded: embedded anchors need a \"fem\" body, but bodies.1 is \"rigid\""},
      {scene_text(R"({"type": "hinge", "axis": [0, 0, 1], "axis_stiffness": 1, "stiffness": 1,
                    "anchors": [{"body": "bar"}, {"body": "block", "embedded": [0, 0, 1]}]})", ""),
       "joints.0.anchors: hinges and motors"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.needle), std::string::npos) << "expected \"" << c.needle << "\", got \"" << e << "\"";
  }
}

TEST(EmbeddedAnchor, LocatePointIsExactAndDeterministicOnSharedFaces) {
  // One cube split into 6 tets around its main diagonal: every tet holds the diagonal.
  const TetMesh mesh = make_box_mesh(Vec3(0.2, 0.3, 0.4), Eigen::Vector3i(1, 1, 1));
  ASSERT_EQ(mesh.num_tets(), 6);
  auto check = [&](const Vec3& x, const char* what) {
    const TetLocation loc = locate_point(mesh.nodes, mesh.tets, x);
    ASSERT_GE(loc.tet, 0) << what;
    Vec3 back = Vec3::Zero();
    double sum = 0.0, lowest = 1.0;
    for (int k = 0; k < 4; ++k) {
      back += loc.barycentric[k] * mesh.nodes[mesh.tets[loc.tet][k]];
      sum += loc.barycentric[k];
      lowest = std::min(lowest, loc.barycentric[k]);
    }
    EXPECT_LT((back - x).norm(), 1e-15) << what;
    EXPECT_NEAR(sum, 1.0, 1e-15) << what;
    EXPECT_GE(lowest, -1e-10) << what;
    // The same query gives the same tet (no dependence on state or evaluation order).
    EXPECT_EQ(locate_point(mesh.nodes, mesh.tets, x).tet, loc.tet) << what;
  };
  const Vec3 size(0.2, 0.3, 0.4);
  Vec3 corner = mesh.nodes[0];
  for (const Vec3& n : mesh.nodes) corner = corner.cwiseMin(n);
  check(corner + 0.37 * size, "on the shared diagonal");
  check(corner + Vec3(0.05, 0.2, 0.1), "inside");
  check(corner, "at a node");
  check(corner + Vec3(0.1, 0.0, 0.2), "on a boundary face");
  // Just outside within the tolerance is found; clearly outside is not.
  check(corner + Vec3(0.1, -1e-13, 0.2), "1e-13 m outside");
  EXPECT_EQ(locate_point(mesh.nodes, mesh.tets, corner + Vec3(0.1, -1e-6, 0.2)).tet, -1);
}

// Φ = Σ_i |p_bar^i|² + Σ_i (z of node 0)²: the rigid body and the block over the run.
class HangObjective final : public ObjectiveFunction {
 public:
  double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const override {
    const int d = rigid_body(model, 1).dof();
    const int z = fem_body(model, 0).dof(0) + 2;
    double phi = 0.0;
    for (std::size_t i = 0; i < traj.q.size(); ++i) {
      const VecX& q = traj.q[i];
      phi += q.segment<3>(d).squaredNorm() + q[z] * q[z];
      if (grad) {
        grad->dphi_dq(static_cast<int>(i)).segment<3>(d) += 2.0 * q.segment<3>(d);
        grad->dphi_dq(static_cast<int>(i))[z] += 2.0 * q[z];
      }
    }
    return phi;
  }
};

TEST(EmbeddedAnchor, AdjointGradientOfStiffnessesMatchesFiniteDifferences) {
  const std::string joints = std::string(R"(
      {"type": "ball", "name": "ball", "anchors": [{"body": "bar", "point": [0.15, 0.02, -0.01]},
       {"body": "block", "embedded": )") + kLow + R"(}], "stiffness": 3e3},
      {"type": "distance", "name": "rod", "anchors": [{"body": "block", "embedded": )" + kInside +
                             R"(}, {"body": "bar", "point": [-0.12, 0, 0]}], "stiffness": 2e3})";
  const std::string springs = std::string(R"(
      {"type": "distance", "name": "hook", "anchors": [{"world": [0.0, 0.05, 1.35]}, {"body": "block", "embedded": )") +
                              kInside + R"(}], "stiffness": 800, "damping": 3})";
  const Scene s = load_scene_text(scene_text(joints, springs, R"( "solver": {"tolerance": 1e-12},)"), "grad.json");
  const Model& m = *s.model;
  const VecX p = m.params().defaults();
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const HangObjective phi;
  const GradientResult adj = gradient_adjoint(m, traj, phi);
  std::vector<int> check;
  for (const char* name : {"joints.ball.stiffness", "joints.rod.stiffness", "springs.hook.stiffness",
                           "springs.hook.damping"})
    check.push_back(m.params().require(name).offset);
  const DirectResult dir = gradient_direct(m, traj, phi, check);
  for (std::size_t c = 0; c < check.size(); ++c) {
    const double steps[] = {1e-3, 1e-4, 1e-5};
    const FdSweep fd = gradient_fd_sweep(sim, phi, p, check[c], steps);
    const double scale = std::max(1e-12, std::abs(fd.derivative));
    const std::string name = m.params().name_of(check[c]);
    EXPECT_GT(std::abs(adj.dphi_dp[check[c]]), 1e-9) << name;
    EXPECT_NEAR(adj.dphi_dp[check[c]], dir.dphi_dp[c], 1e-8 * scale) << name;
    EXPECT_NEAR(adj.dphi_dp[check[c]], fd.derivative, 1e-5 * scale) << name << "\n" << fd.report();
    std::printf("[ gradient %-22s ] adjoint %.10e  direct %.10e  central FD %.10e  rel. diff %.2e\n", name.c_str(),
                adj.dphi_dp[check[c]], dir.dphi_dp[c], fd.derivative,
                std::abs(adj.dphi_dp[check[c]] - fd.derivative) / scale);
  }
}

TEST(EmbeddedAnchor, HangingBodiesBalanceTheirWeightAtRest) {
  // A soft block hangs from a world point by a zero-length spring at a point embedded in it,
  // and a rigid bar hangs from a point embedded near the block's bottom by a ball joint.
  // BDF1 with large steps damps the motion to static equilibrium; linear viscosity and motor
  // damping to the world stop the free spins about the vertical (no force at rest).
  const std::string joints = std::string(R"({"type": "ball", "anchors": [{"body": "bar"},
      {"body": "block", "embedded": )") + kLow + R"(}], "stiffness": 5e3},
      {"type": "motor_damping", "anchors": [{"body": "bar"}, {"world": [0, 0, 0]}], "damping": 0.05})";
  const std::string springs = std::string(R"({"type": "zero_length", "anchors": [{"world": [0.017, -0.023, 1.06]},
      {"body": "block", "embedded": )") + kInside + R"(}], "stiffness": 2e3})";
  std::string text = scene_text(joints, springs, R"( "integrator": "bdf1", "solver": {"tolerance": 1e-12},)");
  text.replace(text.find(R"("material": {)"), 0, R"("viscosity_model": "linear", )");
  text.replace(text.find(R"("dt": 0.01, "steps": 6)"), 22, R"("dt": 0.1, "steps": 300)");
  const Scene s = load_scene_text(text, "hang.json");
  const Model& m = *s.model;
  Simulator sim(m);
  const Trajectory traj = sim.run(m.params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const VecX& q = traj.q.back();
  const double g = 9.81;
  const double m_block = fem_body(m, 0).total_mass(m.params().defaults());
  const double m_bar = rigid_body(m, 1).total_mass(m.params().defaults());
  const FemBody& fem = fem_body(m, 0);
  // Force on the block from the spring: minus the spring residual summed over its nodes.
  const VecX rs = term_residual(m, find_term(m, "springs"), q);
  Vec3 f_spring = Vec3::Zero();
  for (int k = 0; k < fem.num_nodes(); ++k) f_spring -= rs.segment<3>(fem.dof(k));
  // Force on the bar from the joint: minus the joint residual on its position rows.
  const VecX rj = term_residual(m, find_term(m, "rigid_joints"), q);
  const Vec3 f_joint = -rj.segment<3>(rigid_body(m, 1).dof());
  const Vec3 w_all(0, 0, (m_block + m_bar) * g), w_bar(0, 0, m_bar * g);
  const double e_spring = (f_spring - w_all).norm() / w_all.norm();
  const double e_joint = (f_joint - w_bar).norm() / w_bar.norm();
  std::printf("[ hang ] block %.6f kg, bar %.6f kg; spring force %.9f N vs weight %.9f N (rel. %.2e); "
              "joint force %.9f N vs %.9f N (rel. %.2e)\n",
              m_block, m_bar, f_spring.z(), w_all.z(), e_spring, f_joint.z(), w_bar.z(), e_joint);
  EXPECT_LT(e_spring, 1e-6);
  EXPECT_LT(e_joint, 1e-6);
  // The block has sagged and tilted: the anchors are not at their initial places.
  EXPECT_GT((q - traj.q.front()).lpNorm<Eigen::Infinity>(), 1e-3);
}

}  // namespace
}  // namespace addsim
