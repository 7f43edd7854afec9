// Opt-in options of the plain Newton step solver that change the iteration path, not the
// root (docs/solver.md, "Newton iterations per step on the Table 2 scenes", "Stick
// predictor", "Chord tail", "Sheet flip, sixth round", "a contact correction of the Newton
// direction"): the converged
// trajectory agrees with the default one to within what the Newton tolerance allows, and
// the scene keys are validated.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/solver/contact_correction.h"
#include "addsim/solver/simulator.h"
#include "addsim/solver/worker_thread.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

// The first `steps` steps of scenes/<file> with extra scene overrides.
Trajectory first_steps(const char* file, int steps, std::vector<std::string> overrides) {
  overrides.push_back("steps=" + std::to_string(steps));
  const Scene scene = load_scene_file(test::scene_path(file), overrides);
  Simulator sim(*scene.model);
  return sim.run(scene.model->params().defaults());
}

// The Table 2 sheet flip (75 DOF, stiff springs, contact).
// At the default Newton tolerances (the scene loosens them to 1e-6, docs/solver.md "Sheet flip,
// third round"): the comparisons below bound the states' differences by what 1e-10 N implies.
Trajectory sheet_flip(int steps, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"solver.tolerance=1e-10", "solver.relative_tolerance=1e-8"});
  return first_steps("sheet_flip.json", steps, std::move(overrides));
}

// The Table 2 quadruped walk (13 rigid bodies, feet touching down and coming to rest under
// c_f = 0.8).
Trajectory quadruped_walk(int steps, std::vector<std::string> overrides) {
  return first_steps("quadruped_walk.json", steps, std::move(overrides));
}

// Largest difference of any coordinate of any state of two runs of the same scene.
double largest_state_difference(const Trajectory& a, const Trajectory& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.q.size(); ++i) worst = std::max(worst, (a.q[i] - b.q[i]).lpNorm<Eigen::Infinity>());
  return worst;
}

// A StepReport counter summed over the run's steps (iterations, corrected contact points, …).
int report_sum(const Trajectory& t, int StepReport::*counter) {
  int n = 0;
  for (const StepReport& r : t.reports) n += r.*counter;
  return n;
}

int total_iterations(const Trajectory& t) { return report_sum(t, &StepReport::iterations); }

TEST(NewtonOptions, ClampedFirstIterationConvergesToTheSameStates) {
  // 40 steps: the sheet is lifted, falls back and lies in contact, with compressed springs.
  const Trajectory exact = sheet_flip(40, {"solver.clamped_first_iteration=false"});
  const Trajectory clamped = sheet_flip(40, {"solver.clamped_first_iteration=true"});
  ASSERT_TRUE(exact.completed()) << exact.failure;
  ASSERT_TRUE(clamped.completed()) << clamped.failure;
  // The option is active: another path (iteration counts are deterministic).
  EXPECT_NE(total_iterations(exact), total_iterations(clamped));
  // The same roots: ‖r‖ < 1e-10 N against spring stiffnesses of 1e3 N/m bounds each step's
  // state error by ≈ 1e-13 m; the steps' sensitivity can amplify it over 40 steps.
  ASSERT_EQ(exact.q.size(), clamped.q.size());
  EXPECT_LT(largest_state_difference(exact, clamped), 1e-9);
  for (const StepReport& r : clamped.reports) EXPECT_FALSE(r.accepted_at_floor()) << "step " << r.step;
}

int total_halvings(const Trajectory& t) {
  int n = 0;
  for (const StepReport& r : t.reports) n += r.line_search_halvings;
  return n;
}

TEST(NewtonOptions, StickPredictorConvergesToTheSameStates) {
  // 90 steps: six trot half-cycles, each with feet touching down and sticking.
  const Trajectory exact = quadruped_walk(90, {"solver.stick_predictor_ratio=0"});
  const Trajectory predicted = quadruped_walk(90, {"solver.stick_predictor_ratio=10"});
  ASSERT_TRUE(exact.completed()) << exact.failure;
  ASSERT_TRUE(predicted.completed()) << predicted.failure;
  // The option is active: another path (iteration counts are deterministic).
  EXPECT_NE(total_iterations(exact), total_iterations(predicted));
  EXPECT_NE(total_halvings(exact), total_halvings(predicted));
  // The same roots: ‖r‖ < 1e-10 N against joint and contact stiffnesses of 1e5 N/m bounds each
  // step's state error by ≈ 1e-15 m; the walk's sensitivity amplifies it over the steps.
  ASSERT_EQ(exact.q.size(), predicted.q.size());
  EXPECT_LT(largest_state_difference(exact, predicted), 1e-8);
  for (const StepReport& r : predicted.reports) EXPECT_FALSE(r.accepted_at_floor()) << "step " << r.step;
}

TEST(NewtonOptions, StickPredictorIsValidated) {
  for (const char* bad : {"0.5", "-1", "true", "\"10\""}) {
    try {
      quadruped_walk(2, {std::string("solver.stick_predictor_ratio=") + bad});
      FAIL() << bad << " was accepted as solver.stick_predictor_ratio";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("solver.stick_predictor_ratio"), std::string::npos) << e.what();
    }
  }
}

TEST(NewtonOptions, ClampedFirstIterationIsValidated) {
  try {
    sheet_flip(2, {"solver.clamped_first_iteration=1"});
    FAIL() << "a number was accepted as solver.clamped_first_iteration";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("solver.clamped_first_iteration"), std::string::npos) << e.what();
  }
}

int total_factorizations(const Trajectory& t) {
  int n = 0;
  for (const StepReport& r : t.reports) n += r.factorizations;
  return n;
}

TEST(NewtonOptions, ChordContractionConvergesToTheSameStates) {
  const Trajectory newton = sheet_flip(40, {"solver.chord_contraction=0"});
  const Trajectory chord = sheet_flip(40, {"solver.chord_contraction=0.1"});
  ASSERT_TRUE(newton.completed()) << newton.failure;
  ASSERT_TRUE(chord.completed()) << chord.failure;
  // The option is active: chord steps replace factorisations.
  int chord_steps = 0;
  for (const StepReport& r : chord.reports) chord_steps += r.chord_iterations;
  for (const StepReport& r : newton.reports) EXPECT_EQ(r.chord_iterations, 0) << "step " << r.step;
  EXPECT_GT(chord_steps, 0);
  EXPECT_LT(total_factorizations(chord), total_factorizations(newton));
  // The same roots, as for the clamped first iteration above.
  ASSERT_EQ(newton.q.size(), chord.q.size());
  EXPECT_LT(largest_state_difference(newton, chord), 1e-9);
  for (const StepReport& r : chord.reports) EXPECT_FALSE(r.accepted_at_floor()) << "step " << r.step;
}

TEST(NewtonOptions, ChordContractionIsValidated) {
  for (const char* bad : {"1", "2.5", "-0.1", "true"}) {
    try {
      sheet_flip(2, {std::string("solver.chord_contraction=") + bad});
      FAIL() << bad << " was accepted as solver.chord_contraction";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("solver.chord_contraction"), std::string::npos) << e.what();
    }
  }
}

TEST(NewtonOptions, ChordAccelerationConvergesToTheSameStates) {
  const Trajectory newton = sheet_flip(40, {"solver.chord_contraction=0"});
  const Trajectory plain = sheet_flip(40, {"solver.chord_contraction=0.1", "solver.chord_acceleration=0"});
  const Trajectory mixed = sheet_flip(40, {"solver.chord_contraction=0.1", "solver.chord_acceleration=2"});
  ASSERT_TRUE(plain.completed()) << plain.failure;
  ASSERT_TRUE(mixed.completed()) << mixed.failure;
  // The option is active: Anderson mixing takes the chord tails in fewer steps.
  EXPECT_LT(total_iterations(mixed), total_iterations(plain));
  // The same roots as plain Newton and the plain chord tail.
  ASSERT_EQ(newton.q.size(), mixed.q.size());
  EXPECT_LT(largest_state_difference(newton, mixed), 1e-9);
  EXPECT_LT(largest_state_difference(plain, mixed), 1e-9);
  for (const StepReport& r : mixed.reports) EXPECT_FALSE(r.accepted_at_floor()) << "step " << r.step;
}

TEST(NewtonOptions, ChordAccelerationWithoutChordStepsChangesNothing) {
  const Trajectory off = sheet_flip(10, {"solver.chord_contraction=0", "solver.chord_acceleration=0"});
  const Trajectory on = sheet_flip(10, {"solver.chord_contraction=0", "solver.chord_acceleration=2"});
  ASSERT_TRUE(off.completed()) << off.failure;
  ASSERT_TRUE(on.completed()) << on.failure;
  ASSERT_EQ(off.q.size(), on.q.size());
  for (size_t i = 0; i < off.q.size(); ++i) EXPECT_TRUE(off.q[i] == on.q[i]) << "state " << i;
}

TEST(NewtonOptions, ChordAccelerationIsValidated) {
  for (const char* bad : {"-1", "9", "1.5", "true"}) {
    try {
      sheet_flip(2, {std::string("solver.chord_acceleration=") + bad});
      FAIL() << bad << " was accepted as solver.chord_acceleration";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("solver.chord_acceleration"), std::string::npos) << e.what();
    }
  }
}

// The Table 2 soft-feet quadruped (four 27-node FEM feet, every bottom node a contact point)
// with its tasks' smooth contact: tanh friction, k_t = 100 N s/m, a 2 mm normal blend.
Trajectory soft_feet_tanh(int steps, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(),
                   {"contact.model=\"tanh\"", "contact.kt=100.0", "contact.smoothing=0.002"});
  return first_steps("quadruped_soft_feet.json", steps, std::move(overrides));
}

int total_corrected_points(const Trajectory& t) { return report_sum(t, &StepReport::corrected_contact_points); }

TEST(NewtonOptions, ContactCorrectionConvergesToTheSameStates) {
  // 48 steps: the trot's first touch-downs and lift-offs of all four feet.
  const Trajectory exact = soft_feet_tanh(48, {"solver.contact_correction=false"});
  const Trajectory corrected = soft_feet_tanh(48, {"solver.contact_correction=true"});
  ASSERT_TRUE(exact.completed()) << exact.failure;
  ASSERT_TRUE(corrected.completed()) << corrected.failure;
  // The option is active and shortens the path (iteration counts are deterministic).
  EXPECT_EQ(total_corrected_points(exact), 0);
  EXPECT_GT(total_corrected_points(corrected), 0);
  EXPECT_LT(total_iterations(corrected), total_iterations(exact));
  // The same roots: every step of both runs ends at ‖r‖ below ≈ 1e-7 N (its round-off floor)
  // against contact and joint stiffnesses of ≥ 1e5 N/m, ≈ 1e-12 m per step; the gait's
  // sensitivity amplifies the difference over the steps.
  ASSERT_EQ(exact.q.size(), corrected.q.size());
  EXPECT_LT(largest_state_difference(exact, corrected), 1e-8);
}

TEST(NewtonOptions, ContactCorrectionLeavesOtherContactModelsAlone) {
  // The scene's own linear contact: the correction applies to tanh friction only, so the run
  // is bit-identical with and without the key.
  const Trajectory off = first_steps("quadruped_soft_feet.json", 12, {"solver.contact_correction=false"});
  const Trajectory on = first_steps("quadruped_soft_feet.json", 12, {"solver.contact_correction=true"});
  ASSERT_TRUE(off.completed()) << off.failure;
  ASSERT_TRUE(on.completed()) << on.failure;
  EXPECT_EQ(total_corrected_points(on), 0);
  ASSERT_EQ(off.q.size(), on.q.size());
  for (std::size_t i = 0; i < off.q.size(); ++i) EXPECT_TRUE((off.q[i].array() == on.q[i].array()).all()) << "state " << i;
}

TEST(NewtonOptions, ContactCorrectionOnTwoThreadsGivesOneThreadsBits) {
  // The soft feet's four contact groups split two and two between the threads: each group's
  // correction reads q, v, the Jacobian and its own points' rows of Δq and writes only those
  // rows, so Δq + δ is the same bits with a worker thread as without.
  const std::vector<std::string> tanh = {"contact.model=\"tanh\"", "contact.kt=100.0", "contact.smoothing=0.002",
                                         "steps=20"};
  const Scene scene = load_scene_file(test::scene_path("quadruped_soft_feet.json"), tanh);
  const Model& model = *scene.model;
  Simulator sim(model);
  const Trajectory t = sim.run(model.params().defaults());
  ASSERT_TRUE(t.completed()) << t.failure;
  const ContactCorrection correction(model);
  ASSERT_EQ(correction.num_groups(), 4);
  EXPECT_EQ(correction.split(), 2);
  WorkerThread worker;
  const double h = model.scheme().h;
  const JacobianWeights w{1.0, 1.5 / h, 0.0};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  VecX jac(model.pattern().nnz());
  for (Eigen::Index k = 0; k < jac.size(); ++k) jac[k] = 1e3 * unit(rng);
  for (int i = 0; i < model.num_dofs(); ++i) jac[model.pattern().diagonal_index(i)] += 1e6;
  int corrected_total = 0;
  for (int step : {4, 10, 16, 20}) {
    const VecX& q = t.q[step];
    const VecX v = (t.q[step] - t.q[step - 1]) / h;
    VecX dq(q.size());
    for (Eigen::Index k = 0; k < dq.size(); ++k) dq[k] = 1e-3 * unit(rng);
    VecX one = dq, two = dq;
    const int n1 = correction.correct(q, v, model.params().defaults(), h, w, jac, 1e3, one, nullptr);
    const int n2 = correction.correct(q, v, model.params().defaults(), h, w, jac, 1e3, two, &worker);
    EXPECT_EQ(n1, n2) << "step " << step;
    EXPECT_EQ(std::memcmp(one.data(), two.data(), sizeof(double) * one.size()), 0) << "step " << step;
    corrected_total += n1;
  }
  EXPECT_GT(corrected_total, 0);  // the comparison covered corrected points
}

TEST(NewtonOptions, ContactCorrectionIsValidated) {
  for (const char* bad : {"1", "\"yes\""}) {
    try {
      soft_feet_tanh(2, {std::string("solver.contact_correction=") + bad});
      FAIL() << bad << " was accepted as solver.contact_correction";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("solver.contact_correction"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace addsim
