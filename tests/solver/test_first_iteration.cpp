// The first Newton iterations of a step (docs/solver.md, "Soft-feet quadruped: fresh LUs for a
// step's first iterations"): solver.fresh_factorization_iterations factorises the step
// Jacobian of a step's first n iterations instead of trying GMRES on the kept LU first. It
// changes which linear solver path computes each direction, not the equations: the converged
// trajectory agrees with the default one within what the Newton tolerance allows, a run that
// factorises in every iteration is the run without reuse bit for bit, and the key is validated.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "addsim/core/error.h"
#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"
#include "../support/source_dir.h"

namespace addsim {
namespace first_iteration_test {

// The first `steps` steps of the Table 2 soft-feet quadruped (four 27-node FEM feet, every
// bottom node a contact point) with its tasks' smooth contact (tanh friction, k_t = 100 N s/m,
// a 2 mm normal blend) and extra scene overrides.
Trajectory soft_feet_run(int steps, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"contact.model=\"tanh\"", "contact.kt=100.0", "contact.smoothing=0.002",
                                       "steps=" + std::to_string(steps)});
  const Scene scene = load_scene_file(test::scene_path("quadruped_soft_feet.json"), overrides);
  Simulator sim(*scene.model);
  return sim.run(scene.model->params().defaults());
}

int summed(const Trajectory& t, int StepReport::*counter) {
  int n = 0;
  for (const StepReport& r : t.reports) n += r.*counter;
  return n;
}

double largest_difference(const Trajectory& a, const Trajectory& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.q.size(); ++i) worst = std::max(worst, (a.q[i] - b.q[i]).lpNorm<Eigen::Infinity>());
  return worst;
}

TEST(FirstIteration, FreshFactorizationsConvergeToTheSameStates) {
  // 48 steps: the trot's first touch-downs and lift-offs of all four feet.
  const Trajectory kept = soft_feet_run(48, {"solver.fresh_factorization_iterations=0"});
  const Trajectory fresh = soft_feet_run(48, {"solver.fresh_factorization_iterations=3"});
  ASSERT_TRUE(kept.completed()) << kept.failure;
  ASSERT_TRUE(fresh.completed()) << fresh.failure;
  // The option is active: GMRES iterations on kept LUs that failed and factorised anyway are
  // gone (the counts are deterministic).
  EXPECT_LT(summed(fresh, &StepReport::krylov_iterations), summed(kept, &StepReport::krylov_iterations));
  // Every step's first iteration factorised.
  for (const StepReport& r : fresh.reports) EXPECT_GE(r.factorizations, 1) << "step " << r.step;
  // The same roots: both runs end every step at ‖r‖ below ≈ 1e-7 N against joint and contact
  // stiffnesses of ≥ 1e5 N/m (≈ 1e-12 m per step); the gait amplifies it over the steps.
  ASSERT_EQ(kept.q.size(), fresh.q.size());
  EXPECT_LT(largest_difference(kept, fresh), 1e-8);
}

TEST(FirstIteration, FreshFactorizationInEveryIterationIsTheRunWithoutReuse) {
  // With n at the iteration cap every undamped Newton direction is a direct solve on its own
  // LU, as with solver.reuse_factorization = false: the same numbers, bit for bit, up to the
  // first step with a damped direction (which tries GMRES on the undamped matrix's fresh LU;
  // here step 7, the first touch-down: 16 iterations, one damped).
  const Trajectory no_reuse = soft_feet_run(24, {"solver.reuse_factorization=false"});
  const Trajectory fresh = soft_feet_run(24, {"solver.fresh_factorization_iterations=50"});
  ASSERT_TRUE(no_reuse.completed()) << no_reuse.failure;
  ASSERT_TRUE(fresh.completed()) << fresh.failure;
  ASSERT_EQ(no_reuse.q.size(), fresh.q.size());
  std::size_t same = 0;  // steps before the first damped direction
  while (same < fresh.reports.size() && fresh.reports[same].damped_iterations == 0) ++same;
  ASSERT_GE(same, 6u);
  for (std::size_t i = 0; i < same; ++i) {
    EXPECT_EQ(fresh.reports[i].krylov_iterations, 0) << "step " << i + 1;
    EXPECT_EQ(fresh.reports[i].iterations, no_reuse.reports[i].iterations) << "step " << i + 1;
    EXPECT_TRUE((no_reuse.q[i + 1].array() == fresh.q[i + 1].array()).all()) << "state " << i + 1;
  }
}

TEST(FirstIteration, FreshFactorizationIterationsIsValidated) {
  for (const char* bad : {"-1", "1.5", "true", "\"two\""}) {
    try {
      soft_feet_run(2, {std::string("solver.fresh_factorization_iterations=") + bad});
      FAIL() << bad << " was accepted as solver.fresh_factorization_iterations";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("solver.fresh_factorization_iterations"), std::string::npos) << e.what();
    }
  }
}

}  // namespace first_iteration_test
}  // namespace addsim
