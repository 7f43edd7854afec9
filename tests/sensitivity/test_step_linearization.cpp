// StepLinearization's two forms of the history blocks: the adjoint's transposed products
// formed from (∂r/∂v)ᵀλ and (∂r/∂a)ᵀλ (History::kProducts) equal the products with the
// formed matrices dr^i/dq^{i-k}, dr^i/dv⁰ (History::kMatrices) at every step, for
// FEM with contact (BDF2, start-up steps reading v⁰), hybrid stick rows (points and a rigid
// body) and rigid chart switches; the step Jacobian is the same in both forms.

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "addsim/io/scene.h"
#include "addsim/sensitivity/step_linearization.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

// A free box spinning fast about its major axis, no gravity: |θ| passes 1.25π (chart switches).
std::string spin_scene(const char* integrator) {
  return std::string(R"({"dt": 0.01, "steps": 60, "integrator": ")") + integrator + R"(", "gravity": [0, 0, 0],
    "bodies": [{"type": "rigid", "name": "box", "shape": {"type": "box", "size": [0.3, 0.2, 0.1]},
                "mass": 2.0, "position": [0.1, 0.0, 0.0], "orientation": [0.2, -0.1, 0.3],
                "velocity": [0.1, 0.2, 0.0], "angular_velocity": [0.5, -0.3, 20.0]}]})";
}

struct Counts {
  int steps = 0, chart_steps = 0, stick_steps = 0, v0_steps = 0;
};

// Compares both forms at every step of one run with a random λ per step.
Counts compare_forms(const Model& m, const char* label) {
  Simulator sim(m);
  const Trajectory traj = sim.run(m.params().defaults());
  EXPECT_TRUE(traj.completed()) << label << ": " << traj.failure;
  const int K = m.scheme().window();
  StepLinearization matrices(m, StepLinearization::History::kMatrices);
  StepLinearization products(m, StepLinearization::History::kProducts);
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  VecX lambda(m.num_dofs()), expected(m.num_dofs());
  Counts c;
  const StateHistory hist = traj.history();
  for (int i = 1; i < static_cast<int>(traj.q.size()); ++i) {
    matrices.evaluate(traj, i);
    products.evaluate(traj, i);
    EXPECT_EQ(matrices.step_jacobian(), products.step_jacobian()) << label << " step " << i;
    for (int d = 0; d < lambda.size(); ++d) lambda[d] = u(rng);
    products.history_vjp(lambda);
    for (int k = 1; k <= K && i - k >= 0; ++k) {
      expected.setZero();
      m.pattern().transpose_multiply_add(matrices.history_jacobian(k), lambda, expected);
      EXPECT_GT(expected.norm(), 0.0) << label << " step " << i << " k " << k;
      EXPECT_LE((products.history_product(k) - expected).norm(), 1e-13 * expected.norm())
          << label << " step " << i << " k " << k;
      c.chart_steps += !hist.chart_jacobians(i, i - k).empty();
    }
    EXPECT_EQ(matrices.depends_on_v0(), products.depends_on_v0());
    if (matrices.depends_on_v0() && products.depends_on_v0()) {
      expected.setZero();
      m.pattern().transpose_multiply_add(matrices.v0_jacobian(), lambda, expected);
      EXPECT_LE((products.v0_product() - expected).norm(), 1e-13 * expected.norm()) << label << " step " << i;
      ++c.v0_steps;
    }
    const ContactState& r = traj.reports[i - 1].contact;
    c.stick_steps += !r.sticking.empty() || !r.bodies.empty();
    ++c.steps;
  }
  return c;
}

TEST(StepLinearization, HistoryProductsMatchMatricesForFemContact) {
  const Scene s = load_scene_file(test::scene_path("soft_ball_throw.json"), {"steps=40"});
  const Counts c = compare_forms(*s.model, "soft ball (BDF2)");
  EXPECT_GT(c.v0_steps, 0) << "no start-up step reads v⁰";
}

TEST(StepLinearization, HistoryProductsMatchMatricesWithStickRows) {
  const Scene ball = load_scene_file(test::scene_path("soft_ball_throw.json"), {"contact.model=hybrid", "steps=60"});
  EXPECT_GT(compare_forms(*ball.model, "soft ball hybrid").stick_steps, 0) << "no step with point stick rows";
  const Scene cube =
      load_scene_file(test::scene_path("rigid_cube_incline.json"),
                      {"contact.model=hybrid", "dt=0.005", "steps=120", "contact.kn=1e4", "contact.kd=20",
                       "obstacles.0.friction=0.8", "bodies.0.velocity=[-0.3,0.05,0.1]"});
  EXPECT_GT(compare_forms(*cube.model, "rigid cube hybrid").stick_steps, 0) << "no step with rigid stick rows";
}

TEST(StepLinearization, HistoryProductsMatchMatricesAcrossChartSwitches) {
  for (const char* integrator : {"bdf1", "bdf2"}) {
    const Scene s = load_scene_text(spin_scene(integrator), "spin.json");
    const Counts c = compare_forms(*s.model, integrator);
    EXPECT_GT(c.chart_steps, 0) << integrator << ": no history block crosses a chart switch";
  }
}

}  // namespace
}  // namespace addsim
