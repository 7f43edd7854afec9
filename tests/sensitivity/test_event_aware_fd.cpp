// Event-aware finite differences (docs/gradients.md §4): the contact signature of a rollout,
// the choice between central, one-sided and no difference when a perturbed rollout changes
// the contact branch, and that a deliberately wrong adjoint is still caught by that choice.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/contact_signature.h"
#include "addsim/sensitivity/finite_difference.h"
#include "scenes.h"

namespace addsim::testing {
namespace {

// Samples of Φ(x) = a x + ½ c x² + k max(x − x₀, 0) + k max(−x − x₁, 0) at x = ±t: a kink
// (a contact event) at x₀ > 0 on the + side and at −x₁ < 0 on the − side. A side whose
// perturbation crosses its kink changes its signature in one step; Φ'(0) = a.
FdSweep kinked_sweep(double a, double c, double k, double x0, double x1) {
  auto phi = [&](double x) { return a * x + 0.5 * c * x * x + k * std::max(x - x0, 0.0) + k * std::max(-x - x1, 0.0); };
  FdSweep sweep;
  for (double t : {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8}) {
    FdSample s;
    s.step = t;
    s.central = (phi(t) - phi(-t)) / (2.0 * t);
    s.forward = (phi(t) - phi(0.0)) / t;
    s.backward = (phi(0.0) - phi(-t)) / t;
    s.events_plus = t > x0 ? 1 : 0;
    s.events_minus = t > x1 ? 1 : 0;
    sweep.samples.push_back(s);
  }
  return sweep;
}

constexpr double kA = 0.37, kC = 0.8, kKink = 0.2;
constexpr double kTol = 1e-4;  // the contact-rich central tolerance

TEST(EventAwareFd, CentralDifferenceOnlyWhereNeitherSideChangesItsBranch) {
  // The + side's kink at 3e-6: steps ≥ 1e-5 straddle it, 1e-6 … 1e-8 stay central.
  FdSweep sweep = kinked_sweep(kA, kC, kKink, 3e-6, 1.0);
  ASSERT_TRUE(choose_fd_value(sweep));
  EXPECT_EQ(sweep.kind, FdKind::kCentral);
  EXPECT_LE(sweep.step, 1e-6);
  EXPECT_NEAR(sweep.derivative, kA, 1e-9);
  // The plain sweep would take the straddling central values at the large steps (≈ a + k/2).
  EXPECT_GT(std::abs(sweep.samples[0].central - kA), 0.09);
  EXPECT_TRUE(check_derivative(kA, sweep, 0.0, kTol).pass);
  const FdCheck wrong = check_derivative(1.01 * kA, sweep, 0.0, kTol);
  EXPECT_TRUE(wrong.compared);
  EXPECT_FALSE(wrong.pass) << wrong.rel_error;
}

TEST(EventAwareFd, OneSidedDifferenceWhenOneSideAlwaysChanges) {
  // The + side crosses its kink at every step (x₀ = 1e-12): backward differences only.
  FdSweep sweep = kinked_sweep(kA, kC, kKink, 1e-12, 1.0);
  ASSERT_TRUE(choose_fd_value(sweep));
  EXPECT_EQ(sweep.kind, FdKind::kBackward);
  // First order: error ½ c t.
  EXPECT_NEAR(sweep.derivative, kA, 0.5 * kC * sweep.step * 1.01);
  const FdCheck right = check_derivative(kA, sweep, 0.0, kTol);
  EXPECT_TRUE(right.compared);
  EXPECT_TRUE(right.pass) << right.rel_error;
  EXPECT_EQ(right.tolerance, kOneSidedToleranceFactor * kTol);
  // A 1 % error stays far beyond the looser one-sided tolerance (1e-3).
  EXPECT_FALSE(check_derivative(1.01 * kA, sweep, 0.0, kTol).pass);
  EXPECT_FALSE(check_derivative(0.995 * kA, sweep, 0.0, kTol).pass);
  EXPECT_NE(sweep.report().find("usable: backward"), std::string::npos) << sweep.report();

  // Mirrored: the − side always changes, forward differences.
  FdSweep mirrored = kinked_sweep(kA, kC, kKink, 1.0, 1e-12);
  ASSERT_TRUE(choose_fd_value(mirrored));
  EXPECT_EQ(mirrored.kind, FdKind::kForward);
  EXPECT_TRUE(check_derivative(kA, mirrored, 0.0, kTol).pass);
  EXPECT_FALSE(check_derivative(1.01 * kA, mirrored, 0.0, kTol).pass);
}

TEST(EventAwareFd, StraddlingAtEveryStepIsReportedNotCompared) {
  FdSweep sweep = kinked_sweep(kA, kC, kKink, 1e-12, 1e-12);
  EXPECT_FALSE(choose_fd_value(sweep));
  EXPECT_EQ(sweep.kind, FdKind::kStraddling);
  const FdCheck check = check_derivative(kA, sweep, 0.0, kTol);
  EXPECT_FALSE(check.compared);
  EXPECT_TRUE(check.pass);
  EXPECT_STREQ(to_string(sweep.kind), "straddling");
  EXPECT_EQ(sweep.report().find("chosen"), std::string::npos) << sweep.report();
}

TEST(EventAwareFd, UncheckedSamplesBehaveLikeThePlainSweep) {
  FdSweep sweep = kinked_sweep(kA, kC, 0.0, 1.0, 1.0);
  for (FdSample& s : sweep.samples) s.events_plus = s.events_minus = -1;
  ASSERT_TRUE(choose_fd_value(sweep));
  EXPECT_EQ(sweep.kind, FdKind::kCentral);
  EXPECT_NEAR(sweep.derivative, kA, 1e-9);
}

TEST(ContactSignature, SameRolloutSameSignaturePerturbedRolloutDiffers) {
  const Scene s = make_scene(SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kLinear);
  const Model& m = *s.model;
  Simulator sim(m);
  const VecX p = m.params().defaults();
  const Trajectory a = sim.run(p);
  ASSERT_TRUE(a.completed()) << a.failure;
  const ContactSignature sa = contact_signature(m, a);
  ASSERT_EQ(static_cast<int>(sa.codes.size()), m.scheme().steps);
  EXPECT_GT(sa.contact_steps(), 0);
  EXPECT_LT(sa.contact_steps(), m.scheme().steps);  // thrown from above: in flight first
  EXPECT_FALSE(sa.pairs.empty());
  EXPECT_TRUE(compare(sa, contact_signature(m, sim.run(p))).same());

  // Thrown 2 cm higher: the first touchdown moves.
  VecX q = p;
  for (int j : s.groups.at("positions"))
    if (j % 3 == 2) q[j] += 0.02;
  const Trajectory b = sim.run(q);
  ASSERT_TRUE(b.completed()) << b.failure;
  const SignatureDifference d = compare(sa, contact_signature(m, b));
  EXPECT_GT(d.steps, 0);
  EXPECT_GE(d.first_step, 1);
  EXPECT_NE(d.first.find("point_contact dof"), std::string::npos) << d.first;
}

// Hybrid contact: the held codes are the stick labels the forward steps recorded.
TEST(ContactSignature, HybridLabelsAreHeldCodes) {
  const Scene s = make_scene(SceneKind::kDraggedSheet, Integrator::kBdf2, ContactModel::kHybrid);
  const Model& m = *s.model;
  Simulator sim(m);
  const Trajectory traj = sim.run(m.params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const ContactSignature sig = contact_signature(m, traj);
  size_t recorded = 0, held = 0;
  for (size_t i = 0; i < sig.codes.size(); ++i) {
    recorded += traj.reports[i].contact.sticking.size();
    held += std::count(sig.codes[i].begin(), sig.codes[i].end(), ContactCode::kHeld);
  }
  EXPECT_GT(recorded, 0u);
  EXPECT_EQ(held, recorded);
}

// The bouncing cluster (bouncing, then sliding) per parameter group along a seeded random
// direction: the event-aware sweep over 1e-3 … 1e-8 accepts the adjoint and rejects it
// scaled by 1.01 for every group it compares, so skipping switched samples hides no error.
TEST(EventAwareFd, WrongAdjointIsCaughtOnAContactRichRollout) {
  for (ContactModel friction : {ContactModel::kLinear, ContactModel::kTanh}) {
    const Scene s = make_scene(SceneKind::kBouncingCluster, Integrator::kBdf2, friction);
    const Model& m = *s.model;
    Simulator sim(m);
    const VecX p = m.params().defaults();
    const Trajectory traj = sim.run(p);
    ASSERT_TRUE(traj.completed()) << traj.failure;
    const GradientResult adj = gradient_adjoint(m, traj, s.objective);
    const std::vector<double> steps = {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8};
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0.2, 1.0);
    int compared = 0, switched_samples = 0;
    for (const auto& [group, indices] : s.groups) {
      const bool relative =
          std::find(s.relative_groups.begin(), s.relative_groups.end(), group) != s.relative_groups.end();
      VecX d = VecX::Zero(p.size());
      for (int j : indices) d[j] = (rng() % 2 ? 1.0 : -1.0) * u(rng) * (relative ? std::abs(p[j]) : 1.0);
      const FdSweep fd = directional_derivative_fd_sweep_events(sim, s.objective, p, d, steps);
      for (const FdSample& smp : fd.samples) switched_samples += smp.usable() != FdKind::kCentral ? 1 : 0;
      const double analytic = adj.dphi_dp.dot(d);
      const double floor = 1e-8 * adj.dphi_dp.norm() * d.norm();
      const FdCheck right = check_derivative(analytic, fd, floor, kTol);
      const FdCheck wrong = check_derivative(1.01 * analytic, fd, floor, kTol);
      std::printf("[ %s ] %-12s %-10s adjoint % .10e  fd % .10e  rel %.2e  (x1.01: %.2e)\n", to_string(friction),
                  group.c_str(), to_string(fd.kind), analytic, fd.derivative, right.rel_error, wrong.rel_error);
      EXPECT_TRUE(right.pass) << group << "\n" << fd.report();
      if (!right.compared) continue;
      ++compared;
      EXPECT_FALSE(wrong.pass) << group << ": a 1 % error passed\n" << fd.report();
    }
    EXPECT_GE(compared, static_cast<int>(s.groups.size()) - 1) << to_string(friction);
    std::printf("[ %s ] samples with a changed contact signature: %d\n", to_string(friction), switched_samples);
  }
}

// A rollout whose first touchdown lands at g = −1e-11: lifting the cluster by any step of the
// sweep removes that contact (the + side changes its signature at every step), lowering it
// keeps it. The sweep must fall back to backward differences, which accept the adjoint and
// reject it scaled by 1.01.
TEST(EventAwareFd, OneSidedDifferenceOnATouchdownAtGapZero) {
  const Scene s = make_scene(SceneKind::kBouncingCluster, Integrator::kBdf2, ContactModel::kLinear);
  const Model& m = *s.model;
  Simulator sim(m);
  const VecX p0 = m.params().defaults();
  const Trajectory t0 = sim.run(p0);
  ASSERT_TRUE(t0.completed()) << t0.failure;
  const ContactSignature sig = contact_signature(m, t0);
  int first = 0;
  while (first < static_cast<int>(sig.codes.size()) &&
         std::all_of(sig.codes[first].begin(), sig.codes[first].end(),
                     [](ContactCode c) { return c == ContactCode::kSeparated; }))
    ++first;
  ASSERT_LT(first, static_cast<int>(sig.codes.size()));
  const int step = first + 1;
  // Lowest point of that step in free flight (the floor is z = 0; the recorded q^step already
  // feels the implicit contact force): lifted by 1 m the cluster still flies at that step, and
  // a uniform lift translates a free flight. The only body's DOFs start at 0: entry c of
  // particle k of the positions is DOF 3k + c.
  const std::vector<int>& positions = s.groups.at("positions");
  VecX lift = VecX::Zero(p0.size());
  for (int e = 2; e < static_cast<int>(positions.size()); e += 3) lift[positions[e]] = 1.0;
  const Trajectory high = sim.run(p0 + lift);
  ASSERT_TRUE(high.completed()) << high.failure;
  double lowest = std::numeric_limits<double>::infinity();
  for (int e = 2; e < static_cast<int>(positions.size()); e += 3) lowest = std::min(lowest, high.q[step][e] - 1.0);
  ASSERT_LT(lowest, 0.0);
  const VecX p = p0 + (-lowest - 1e-11) * lift;

  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const GradientResult adj = gradient_adjoint(m, traj, s.objective);
  const std::vector<double> steps = {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8};
  const FdSweep fd = directional_derivative_fd_sweep_events(sim, s.objective, p, lift, steps);
  for (const FdSample& smp : fd.samples) EXPECT_GT(smp.events_plus, 0) << fd.report();
  ASSERT_EQ(fd.kind, FdKind::kBackward) << fd.report();
  const double analytic = adj.dphi_dp.dot(lift);
  const double floor = 1e-8 * adj.dphi_dp.norm() * lift.norm();
  const FdCheck right = check_derivative(analytic, fd, floor, kTol);
  const FdCheck wrong = check_derivative(1.01 * analytic, fd, floor, kTol);
  std::printf("touchdown at g = -1e-11 in step %d: adjoint % .10e  backward % .10e (t = %.0e)  rel %.2e"
              "  (x1.01: %.2e)\n",
              step, analytic, fd.derivative, fd.step, right.rel_error, wrong.rel_error);
  std::printf("%s", fd.report().c_str());
  EXPECT_TRUE(right.pass) << fd.report();
  EXPECT_TRUE(wrong.compared);
  EXPECT_FALSE(wrong.pass) << fd.report();
}

}  // namespace
}  // namespace addsim::testing
