#include "addsim/io/output.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "addsim/io/npy.h"
#include "test_util.h"

namespace addsim {
namespace {

using nlohmann::json;

json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  return json::parse(in);
}

TEST(Output, WritesTheFourFilesOfACompletedRun) {
  const Scene scene = load_scene_file(test::source_dir() / "scenes" / "particle_incline.json", {"steps=10"});
  Simulator sim(*scene.model);
  const Trajectory traj = sim.run(scene.model->params().defaults());
  ASSERT_TRUE(traj.completed()) << traj.failure;
  const auto dir = test::fresh_temp_dir("out") / "nested";
  write_outputs(dir, scene, traj, sim.linear_solver_name());

  const json summary = read_json(dir / "summary.json");
  EXPECT_EQ(summary["scene"], "particle_incline");
  EXPECT_EQ(summary["steps_requested"], 10);
  EXPECT_EQ(summary["steps_completed"], 10);
  EXPECT_EQ(summary["completed"], true);
  EXPECT_EQ(summary["integrator"], "bdf2");
  EXPECT_EQ(summary["contact_model"], "linear");
  int iterations = 0;
  for (const StepReport& r : traj.reports) iterations += r.iterations;
  EXPECT_EQ(summary["newton_iterations_total"].get<int>(), iterations);
  ASSERT_EQ(summary["bodies"].size(), 1u);
  EXPECT_EQ(summary["bodies"][0]["name"], "block");
  EXPECT_DOUBLE_EQ(summary["bodies"][0]["mass"].get<double>(), 1.0);
  // Sliding along +x: the final velocity points along +x.
  EXPECT_GT(summary["bodies"][0]["final_center_of_mass_velocity"][0].get<double>(), 0.0);

  const json meta = read_json(dir / "meta.json");
  EXPECT_EQ(meta["num_dofs"], 3);
  EXPECT_EQ(meta["bodies"][0]["dof_labels"], json::array({"p0.x", "p0.y", "p0.z"}));

  std::ifstream csv(dir / "steps.csv");
  std::string line;
  int lines = 0;
  std::getline(csv, line);
  EXPECT_EQ(line,
            "step,time,newton_iterations,residual_norm,line_search_halvings,factorizations,krylov_iterations,wall_ms,"
            "accepted_at_floor,relative_residual,kinetic_energy,potential_energy,contact_points,min_gap,block.com_x,block.com_y,block.com_z,"
            "block.vcom_x,block.vcom_y,block.vcom_z");
  std::string last;
  while (std::getline(csv, line)) {
    ++lines;
    last = line;
  }
  EXPECT_EQ(lines, 10);
  // The last row's diagnostics: the state q^10 (one sliding particle in contact with the floor).
  std::vector<double> cells;
  std::stringstream row(last);
  for (std::string cell; std::getline(row, cell, ',');) cells.push_back(std::stod(cell));
  ASSERT_EQ(cells.size(), 20u);
  EXPECT_EQ(cells[8], 0.0);  // accepted on the tolerance, not at the round-off floor
  const VecX v10 = traj.velocity(scene.model->scheme(), 10);
  EXPECT_DOUBLE_EQ(cells[10], 0.5 * v10.squaredNorm());  // kinetic energy, m = 1 kg
  const Vec3 g(3.3552176060248105, 0, -9.218384609909762);
  EXPECT_GT(cells[11], -g.dot(traj.q[10]) - 1e-12);  // gravity plus the (non-negative) penalty energy
  EXPECT_EQ(cells[12], 1.0);                         // one contact point
  EXPECT_DOUBLE_EQ(cells[13], traj.q[10][2]);        // gap to the plane z = 0, negative
  EXPECT_LT(cells[13], 0.0);
  for (int a = 0; a < 3; ++a) {
    EXPECT_DOUBLE_EQ(cells[14 + a], traj.q[10][a]);
    EXPECT_DOUBLE_EQ(cells[17 + a], v10[a]);
  }
  // energies.csv has the same kinetic energy (one computation for both files).
  const Energies e = make_energies(scene, traj);
  EXPECT_DOUBLE_EQ(e.values[10][0], cells[10]);

  const NpyArray a = read_npy(dir / "trajectory.npy");
  EXPECT_EQ(a.rows, 11u);
  EXPECT_EQ(a.cols, 3u);
  EXPECT_EQ(a.values[30], traj.q.back()[0]);
}

TEST(Output, AFailedRunKeepsItsCompletedSteps) {
  const Scene scene = load_scene_file(test::source_dir() / "scenes" / "mass_spring_sheet.json",
                                      {"solver.max_iterations=1", "steps=60"});
  Simulator sim(*scene.model);
  const Trajectory traj = sim.run(scene.model->params().defaults());
  ASSERT_FALSE(traj.completed());
  const auto dir = test::fresh_temp_dir("failed");
  write_outputs(dir, scene, traj, sim.linear_solver_name());
  const json summary = read_json(dir / "summary.json");
  EXPECT_EQ(summary["completed"], false);
  EXPECT_TRUE(summary["failure"].is_string());
  EXPECT_EQ(summary["steps_completed"].get<int>() + 1, summary["failed_step"].get<int>());
  EXPECT_EQ(read_npy(dir / "trajectory.npy").rows, traj.q.size());
}

}  // namespace
}  // namespace addsim
