// Gradients through the hybrid contact model (paper §4.3): the direct and adjoint passes
// differentiate each step's constrained residual (stick rows replaced by T̄ (q^i − q^{i−1}))
// with the labels recorded in the trajectory. Adjoint vs direct ≤ 1e-9 relative; vs central
// finite differences ≤ 1e-4, on a particle that slides, stops and sticks on an incline and a
// soft ball thrown onto a frictional floor (slip, then stick).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <memory>
#include <vector>

#include "addsim/fem/fem_builder.h"
#include "addsim/io/scene.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/solver/simulator.h"
#include "../support/particle_fixture.h"
#include "../support/source_dir.h"
#include "../support/test_size.h"

namespace addsim {
namespace {

// Φ = Σ_k w_k q^n_k + ½ Σ_k (q^{n/2}_k)²: final and mid-run positions (m, m²).
class PositionObjective final : public ObjectiveFunction {
 public:
  double evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const override {
    const int n = static_cast<int>(traj.q.size()) - 1;
    const int mid = n / 2;
    VecX w(model.num_dofs());
    for (int k = 0; k < w.size(); ++k) w[k] = 1.0 + 0.1 * (k % 3) + 0.01 * k;
    double phi = w.dot(traj.q[n]) + 0.5 * traj.q[mid].squaredNorm();
    if (grad) {
      grad->dphi_dq(n) += w;
      grad->dphi_dq(mid) += traj.q[mid];
    }
    return phi;
  }
};

struct Counts {
  int stick_steps = 0;  ///< steps with at least one sticking point
  int slip_steps = 0;   ///< steps with a touching point that does not stick
  int released_steps = 0;  ///< steps with a point released from its stick constraint
};

Counts count_regimes(const Trajectory& t) {
  Counts c;
  for (const StepReport& r : t.reports) {
    c.stick_steps += !r.contact.sticking.empty() || !r.contact.rigid_sticking.empty();
    // Rigid points are not listed in `touching`: a rigid step slides when its labels changed
    // (stuck, then released) and no point sticks at the end.
    c.slip_steps += r.contact.touching.size() > r.contact.sticking.size() ||
                    (r.contact.label_changes > 0 && r.contact.sticking.empty() && r.contact.rigid_sticking.empty());
    c.released_steps += !r.contact.sliding.empty() || !r.contact.rigid_sliding.empty();
  }
  return c;
}

// Adjoint vs direct over all parameters, then central differences for `fd_params` (under
// ADDSIM_TEST_REDUCED every third of them, from the first: docs/testing.md).
// expect_stick: the run must end some step with a sticking point (false for a slide whose
// corners stick in each label check but are always released).
void check_gradients(const Model& m, const std::vector<int>& fd_params, const char* label, bool expect_stick = true) {
  const PositionObjective obj;
  const VecX p = m.params().defaults();
  Simulator sim(m);
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const Counts c = count_regimes(traj);
  if (expect_stick) {
    EXPECT_GT(c.stick_steps, 0) << label << ": no sticking steps";
  }
  EXPECT_GT(c.slip_steps, 0) << label << ": no sliding steps";
  std::printf("[ %s ] steps with sticking: %d, with sliding contacts: %d, with released points: %d\n", label,
              c.stick_steps, c.slip_steps, c.released_steps);

  const GradientResult adj = gradient_adjoint(m, traj, obj);
  std::vector<int> all(m.params().size());
  for (int j = 0; j < m.params().size(); ++j) all[j] = j;
  const DirectResult dir = gradient_direct(m, traj, obj, all);
  ASSERT_TRUE(adj.dphi_dp.allFinite());
  const double e_dir = (adj.dphi_dp - dir.dphi_dp).norm() / dir.dphi_dp.norm();
  EXPECT_LT(e_dir, 1e-9) << label;
  std::printf("[ %s ] adjoint vs direct: %.3e\n", label, e_dir);

  const std::vector<double> steps{1e-5, 1e-6, 1e-7};
  for (size_t k = 0; k < fd_params.size(); k += test::sized<size_t>(1, 3)) {
    const int j = fd_params[k];
    const FdSweep fd = gradient_fd_sweep(sim, obj, p, j, steps);
    const double floor = 1e-8 * adj.dphi_dp.norm();
    const double err = std::abs(adj.dphi_dp[j] - fd.derivative) / std::max(std::abs(fd.derivative), floor);
    EXPECT_LT(err, 1e-4) << label << " " << m.params().name_of(j) << "\n" << fd.report();
    std::printf("[ %s ] %-36s adjoint % .10e  fd % .10e  rel %.2e\n", label, m.params().name_of(j).c_str(),
                adj.dphi_dp[j], fd.derivative, err);
  }
}

TEST(HybridGradients, ParticleSlidesThenSticksOnIncline) {
  const double theta = 20.0 * M_PI / 180.0, g = 9.81, kn = 1e4, m = 1.0;
  for (Integrator integ : {Integrator::kBdf1, Integrator::kBdf2}) {
    testing::ParticleFixture f(integ, 0.01, 80);
    const double depth = m * g * std::cos(theta) / kn;
    // Two particles sent down the slope at different speeds: both decelerate (μ = 0.8) and stop.
    f.particles({Vec3(0, 0, -depth), Vec3(0, 0.5, -depth)}, {Vec3(1.0, 0.1, 0), Vec3(0.6, -0.2, 0)}, {m, 0.7});
    f.contact_params(ContactModel::kHybrid, kn, 2.0);
    f.plane(Vec3::Zero(), Vec3(0, 0, 1), 0.8);
    f.standard_terms(Vec3(g * std::sin(theta), 0, -g * std::cos(theta)));
    f.model->finalize();
    std::vector<int> fd;
    for (int j = 0; j < f.model->params().size(); ++j) fd.push_back(j);
    check_gradients(*f.model, fd, integ == Integrator::kBdf1 ? "particles BDF1" : "particles BDF2");
  }
}

// 60 steps; under ADDSIM_TEST_REDUCED (docs/testing.md) 30, still landing, sliding and sticking.
TEST(HybridGradients, SoftBallThrow) {
  auto m = std::make_unique<Model>();
  m->scheme_mut() = TimeScheme::make(Integrator::kBdf1, 0.01, test::sized(60, 30));
  auto& P = m->params();
  ContactSettings cs;
  cs.model = ContactModel::kHybrid;
  cs.kn_param = P.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, 1e3), 1, 1, 0.0);
  cs.kd_param = P.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, 1.0), 1, 1, 0.0);
  const int pf = P.add("obstacles.0.friction", "", ParamKind::kContact, VecX::Constant(1, 0.6), 1, 1, 0.0);
  std::vector<std::shared_ptr<const Obstacle>> obstacles{
      std::make_shared<PlaneObstacle>("floor", pf, Vec3::Zero(), Vec3(0, 0, 1))};
  const TetMesh mesh = gmsh_available() ? make_sphere_mesh(0.1, 30)
                                        : make_box_mesh(Vec3(0.15, 0.15, 0.15), Eigen::Vector3i(1, 1, 1));
  FemMaterial mat;
  mat.youngs_modulus = 2e4;
  mat.poisson_ratio = 0.3;
  mat.density = 150.0;
  mat.viscosity = 5.0;
  FemInit init;
  init.position = Vec3(0, 0, 0.13);
  init.velocity = Vec3(1.0, 0.2, 0.5);
  FemOptions opt;
  opt.gravity = Vec3(0, 0, -9.81);
  add_fem_body(*m, "ball", mesh, mat, init, opt, obstacles, cs);
  m->finalize();
  std::vector<int> fd;
  for (int j = 0; j < m->params().size(); ++j) {
    const std::string name = m->params().name_of(j);
    if (name == "bodies.0.velocity.0.0" || name == "bodies.0.velocity.0.2" || name.find("friction") != std::string::npos ||
        name.find("contact.kn") != std::string::npos || name.find("youngs") != std::string::npos)
      fd.push_back(j);
  }
  check_gradients(*m, fd, "soft ball");
}

// Rigid cube on the 20° incline (hybrid, μ = 0.8): thrown across the slope it slides on the
// penalty friction, stops and its corners stick (rigid stick projector, docs/contact.md).
// Short run, h = 5 ms: 120 steps (60 under ADDSIM_TEST_REDUCED, still ending in stick).
TEST(HybridGradients, RigidCubeSlidesThenSticksOnIncline) {
  const Scene scene =
      load_scene_file(test::scene_path("rigid_cube_incline.json"),
                      {"contact.model=hybrid", "dt=0.005", "steps=" + std::to_string(test::sized(120, 60)),
                       "contact.kn=1e4", "contact.kd=20",
                       "obstacles.0.friction=0.8", "bodies.0.velocity=[-0.3,0.05,0.1]"});
  const Model& m = *scene.model;
  std::vector<int> fd;
  for (int j = 0; j < m.params().size(); ++j) fd.push_back(j);
  check_gradients(m, fd, "rigid cube mu=0.8");
}

// Just inside the cone (μ = 0.4 > tan 20° = 0.364), sent down the slope: the corners are
// released onto the Coulomb sliding force (rigid/rigid_slip.h), the cube decelerates and
// sticks. Checks the sliding force's exact derivatives on a rigid body.
// A rigid cube thrown down the incline with c_f = 0.4 (hybrid): its corners are released to
// the Coulomb sliding force, decelerate, and (without smoothing) stick. `extra` adds scene
// overrides. Adjoint vs direct over all parameters, then central differences for all. `steps`:
// the corners are released from step 41 on.
void check_released_cube(const std::vector<std::string>& extra, const char* label, bool expect_stick,
                         int steps = 80) {
  std::vector<std::string> overrides = {"contact.model=hybrid", "dt=0.005", "steps=" + std::to_string(steps),
                                        "contact.kn=1e4",
                                        "contact.kd=20", "obstacles.0.friction=0.4",
                                        "bodies.0.velocity=[0.094,0.02,-0.0342]"};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  const Scene scene = load_scene_file(test::scene_path("rigid_cube_incline.json"), overrides);
  const Model& m = *scene.model;
  Simulator sim(m);
  const Trajectory traj = sim.run(m.params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  EXPECT_GT(count_regimes(traj).released_steps, 0) << label << ": no Coulomb-released rigid points";
  std::vector<int> fd;
  for (int j = 0; j < m.params().size(); ++j) fd.push_back(j);
  check_gradients(m, fd, label, expect_stick);
}

TEST(HybridGradients, RigidCubeDeceleratesOnCoulombReleaseAndSticks) {
  check_released_cube({}, "rigid cube mu=0.4", true);
}

// The same with the C¹ smoothed normal penalty (contact.smoothing): the released corners'
// Coulomb force and its derivatives follow the smoothed normal force, including ∂/∂w (the
// column rigid_slip_correction_param_derivatives adds for contact.smoothing). Within these 80
// steps the corners slide throughout (no step ends sticking). Under ADDSIM_TEST_REDUCED
// (docs/testing.md) 60 steps: 20 of them with released corners.
TEST(HybridGradients, RigidCubeReleasedCornersWithSmoothedNormalPenalty) {
  check_released_cube({"contact.smoothing=0.002"}, "rigid cube mu=0.4, w=2mm", false, test::sized(80, 60));
}

}  // namespace
}  // namespace addsim
