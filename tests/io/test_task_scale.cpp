// The task key `parameters[k].scale` (and a stage's own `stages[j].parameters[k].scale`):
// parsed into the selection, inherited by stages, and rejected with the file and key path
// when it is not a number > 0 or misspelt; and `optimize.lbfgsb.first_step_phi`,
// `restart_iterations` and `restart_factor`.

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "addsim/io/task.h"
#include "test_util.h"

namespace addsim {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json base_task() {
  return {{"scene", "particle.json"},
          {"parameters",
           {{{"path", "bodies.0.velocities.0.0"}, {"scale", 30}}, "bodies.0.velocities.0.1",
            {{"path", "bodies.0.mass"}, {"log", true}, {"lower", 0.1}, {"upper", 10}, {"scale", 0.5}}}},
          {"objective", {{{"type", "com_target"}, {"body", 0}, {"target", {1.0, 0.5, 0.2}}}}}};
}

fs::path scene_dir() {
  const fs::path dir = test::fresh_temp_dir("task");
  std::ofstream(dir / "particle.json")
      << R"({"dt": 0.01, "steps": 10, "bodies": [{"type": "particles", "positions": [[0, 0, 0]], "mass": 1}]})";
  return dir;
}

TEST(TaskParameterScale, ScalesAreParsedAndStagesInheritOrOverrideThem) {
  const fs::path dir = scene_dir();
  json t = base_task();
  t["stages"] = {{{"name", "a"}},
                 {{"name", "b"}, {"parameters", {{{"path", "bodies.0.velocities.0.0"}, {"scale", 2}}, "bodies.0.mass"}}}};
  const Task task = load_task_text(t.dump(), dir / "task.json");
  ASSERT_EQ(task.selection.size(), 3);
  EXPECT_EQ(task.selection.scale(0), 30.0);
  EXPECT_EQ(task.selection.scale(1), 1.0);  // a plain path: no scale
  EXPECT_EQ(task.selection.scale(2), 0.5);
  EXPECT_TRUE(task.selection.log_scale(2));
  ASSERT_EQ(task.stages.size(), 2u);
  ASSERT_EQ(task.stages[0].specs.size(), 3u);
  EXPECT_EQ(task.stages[0].specs[0].scale, 30.0);
  ASSERT_EQ(task.stages[1].specs.size(), 2u);
  EXPECT_EQ(task.stages[1].specs[0].scale, 2.0);  // the stage's own
  EXPECT_EQ(task.stages[1].specs[1].scale, 0.5);  // inherited from the task
  // --set reaches the key like any other.
  const Task set = load_task_text(t.dump(), dir / "task.json", {"parameters.0.scale=4"});
  EXPECT_EQ(set.selection.scale(0), 4.0);
}

TEST(TaskParameterScale, BadScalesNameTheFileAndKeyPath) {
  const fs::path dir = scene_dir();
  struct Case {
    json task;
    std::string path;
  };
  std::vector<Case> cases;
  for (const json& bad : {json(0), json(-3), json("30"), json(nullptr), json::array({30})}) {
    json t = base_task();
    t["parameters"][0]["scale"] = bad;
    cases.push_back({t, "parameters.0.scale"});
    t = base_task();
    t["stages"] = {{{"parameters", {{{"path", "bodies.0.mass"}, {"scale", bad}}}}}};
    cases.push_back({t, "stages.0.parameters.0.scale"});
  }
  json t = base_task();
  t["parameters"][2]["scales"] = 2;
  cases.push_back({t, "parameters.2.scales"});
  for (const Case& c : cases) {
    const std::string msg = test::input_error([&] { load_task_text(c.task.dump(), dir / "bad task.json"); });
    EXPECT_NE(msg.find("bad task.json"), std::string::npos) << c.task.dump() << ": " << msg;
    EXPECT_NE(msg.find(c.path), std::string::npos) << c.task.dump() << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(TaskParameterScale, LbfgsbFirstStepPhiIsParsedPerStage) {
  const fs::path dir = scene_dir();
  json t = base_task();
  t["optimize"] = {{"method", "lbfgsb"}, {"lbfgsb", {{"first_step", 0.1}, {"first_step_phi", true}}}};
  t["stages"] = {{{"name", "a"}}, {{"name", "b"}, {"optimize", {{"lbfgsb", {{"first_step_phi", false}}}}}}};
  const Task task = load_task_text(t.dump(), dir / "task.json");
  EXPECT_TRUE(task.optimize.lbfgs_first_step_phi);
  ASSERT_EQ(task.stages.size(), 2u);
  EXPECT_TRUE(task.stages[0].options.lbfgs_first_step_phi);
  EXPECT_FALSE(task.stages[1].options.lbfgs_first_step_phi);
  EXPECT_EQ(task.stages[1].options.lbfgs_first_step, 0.1);
  t["stages"][1]["optimize"]["lbfgsb"]["first_step_phi"] = 1;
  const std::string msg = test::input_error([&] { load_task_text(t.dump(), dir / "task.json"); });
  EXPECT_NE(msg.find("stages.1.optimize.lbfgsb.first_step_phi"), std::string::npos) << msg;
}

TEST(TaskParameterScale, LbfgsbRestartRuleIsParsedPerStageAndChecked) {
  const fs::path dir = scene_dir();
  json t = base_task();
  t["optimize"] = {{"method", "lbfgsb"}, {"lbfgsb", {{"restart_iterations", 8}, {"restart_factor", 1.5}}}};
  t["stages"] = {{{"name", "a"}}, {{"name", "b"}, {"optimize", {{"lbfgsb", {{"restart_iterations", 0}}}}}}};
  const Task task = load_task_text(t.dump(), dir / "task.json");
  EXPECT_EQ(task.optimize.lbfgs_restart_iterations, 8);
  EXPECT_EQ(task.optimize.lbfgs_restart_factor, 1.5);
  ASSERT_EQ(task.stages.size(), 2u);
  EXPECT_EQ(task.stages[0].options.lbfgs_restart_iterations, 8);
  EXPECT_EQ(task.stages[1].options.lbfgs_restart_iterations, 0);
  EXPECT_EQ(task.stages[1].options.lbfgs_restart_factor, 1.5);
  EXPECT_EQ(OptimizerOptions{}.lbfgs_restart_iterations, 0);  // off unless a task opts in
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"restart_iterations", -1}, {"restart_iterations", 2.5}, {"restart_factor", 1.0}, {"restart_factor", "2"}}) {
    json bad = t;
    bad["stages"][1]["optimize"]["lbfgsb"] = {{key, value}};
    const std::string msg = test::input_error([&] { load_task_text(bad.dump(), dir / "task.json"); });
    EXPECT_NE(msg.find("stages.1.optimize.lbfgsb." + key), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace addsim
