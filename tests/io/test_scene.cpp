#include "addsim/io/scene.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "addsim/io/run_checks.h"
#include "addsim/solver/simulator.h"
#include "addsim/terms/spring_term.h"
#include "test_util.h"

namespace addsim {
namespace {

using test::input_error;

// A small valid scene that the malformed-scene tests break one key at a time.
const char* kBase = R"({
  "dt": 0.01, "steps": 3,
  "obstacles": [{"type": "plane", "name": "floor", "friction": 0.4}],
  "bodies": [{"type": "particles", "name": "dots", "positions": [[0, 0, 1], [1, 0, 1]], "mass": 0.5}],
  "handles": [{"name": "grip", "position": [0, 0, 2]}],
  "springs": [{"type": "distance", "anchors": [{"body": "dots", "point": 0}, {"handle": "grip"}], "stiffness": 10}]
})";

Scene load(const std::vector<std::string>& sets) { return load_scene_text(kBase, "scene.json", sets); }

// The message of loading kBase with `sets`; must name `source` and every fragment.
void expect_error(const std::vector<std::string>& sets, const std::vector<std::string>& fragments) {
  const std::string msg = input_error([&] { load(sets); });
  ASSERT_FALSE(msg.empty()) << "no error for " << ::testing::PrintToString(sets);
  EXPECT_EQ(msg.rfind("scene.json", 0), 0u) << msg;
  for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
}

TEST(Scene, EveryExampleSceneLoads) {
  const auto dir = test::source_dir() / "scenes";
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().string());
    // Files under data/ are made by scripts/install-deps.sh (e.g. data/bunny.obj from npm
    // "bunny"), not shipped: a scene that names a missing one is skipped.
    std::stringstream text;
    text << std::ifstream(e.path()).rdbuf();
    const std::string body = text.str();
    bool missing_data = false;
    for (size_t at = body.find("\"../data/"); at != std::string::npos; at = body.find("\"../data/", at + 1)) {
      const std::string rel = body.substr(at + 1, body.find('"', at + 1) - at - 1);
      missing_data = missing_data || !std::filesystem::exists(dir / rel);
    }
    if (missing_data) continue;
    const Scene s = load_scene_file(e.path());
    EXPECT_TRUE(s.model->finalized());
    EXPECT_GT(s.model->num_dofs(), 0);
    ++count;
  }
  EXPECT_GE(count, 4);
}

TEST(Scene, ExampleScenesHaveTheDocumentedShape) {
  const auto dir = test::source_dir() / "scenes";
  const Scene sheet = load_scene_file(dir / "mass_spring_sheet.json");
  EXPECT_EQ(sheet.model->num_dofs(), 75);
  EXPECT_EQ(sheet.model->handles().size(), 2u);
  EXPECT_EQ(sheet.bodies.at(0).type, "sheet");
  const Scene incline = load_scene_file(dir / "particle_incline.json");
  EXPECT_EQ(incline.model->num_dofs(), 3);
  EXPECT_NEAR(incline.gravity.norm(), 9.81, 1e-12);
  const Scene osc = load_scene_file(dir / "spring_oscillator.json");
  EXPECT_EQ(to_string(osc.model->scheme().integrator), std::string("bdf2"));
  EXPECT_NEAR(osc.model->scheme().h * osc.model->scheme().steps, 5.0, 1e-9);
}

TEST(Scene, ParameterTableOfTheSheetScene) {
  const Scene s = load_scene_file(test::source_dir() / "scenes" / "mass_spring_sheet.json");
  const ParameterTable& t = s.model->params();
  auto size_of = [&](const std::string& path) { return t.require(path).size; };
  EXPECT_EQ(size_of("contact.kn"), 1);
  EXPECT_EQ(size_of("contact.kd"), 1);
  EXPECT_FALSE(t.resolve("contact.kt"));  // absent: k_t = k_n h
  EXPECT_EQ(size_of("obstacles.0.friction"), 1);
  EXPECT_EQ(t.require("obstacles.floor.friction").offset, t.require("obstacles.0.friction").offset);
  EXPECT_EQ(size_of("bodies.0.positions"), 75);
  EXPECT_EQ(size_of("bodies.sheet.velocities"), 75);
  EXPECT_EQ(size_of("bodies.0.mass"), 25);
  EXPECT_EQ(size_of("bodies.sheet.stiffness"), 1);
  EXPECT_EQ(size_of("bodies.0.shear_stiffness"), 1);
  EXPECT_EQ(size_of("bodies.0.damping"), 1);
  EXPECT_EQ(size_of("handles.0.positions"), 61 * 3);
  EXPECT_EQ(size_of("handles.corner_b.positions"), 61 * 3);
  EXPECT_EQ(size_of("springs.1.stiffness"), 1);
  EXPECT_EQ(size_of("springs.1.damping"), 1);
  EXPECT_EQ(t.require("contact.kn").entry->kind, ParamKind::kContact);
  EXPECT_EQ(t.require("bodies.0.stiffness").entry->kind, ParamKind::kCoupling);
  EXPECT_EQ(t.require("handles.0.positions").entry->kind, ParamKind::kControl);
  EXPECT_DOUBLE_EQ(t.defaults()[t.require("bodies.0.mass.3").offset], 0.1 / 25);
  EXPECT_DOUBLE_EQ(t.defaults()[t.require("bodies.0.stiffness").offset], 1000.0);
  // A known entry with an index beyond it is named as such, not as an unknown parameter.
  auto message_of = [&](const std::string& path) {
    try {
      t.require(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message_of("handles.corner_b.positions.61").find("handles.corner_b.positions has 61 rows of 3"),
            std::string::npos);
  EXPECT_NE(message_of("handles.0.positions.60.3").find("has 61 rows of 3"), std::string::npos);
  EXPECT_NE(message_of("bodies.0.mass.25").find("bodies.0.mass has 25 rows"), std::string::npos);
  EXPECT_NE(message_of("contact.kt").find("unknown parameter 'contact.kt'"), std::string::npos);
  EXPECT_NE(message_of("bodies.0.mass.x").find("unknown parameter"), std::string::npos);
  // 5 × 5 sheet: 40 structural + 32 shear springs, plus the 2 handle springs.
  const SpringTerm* springs = nullptr;
  for (const auto& term : s.model->terms())
    if (auto* st = dynamic_cast<const SpringTerm*>(term.get())) springs = st;
  ASSERT_NE(springs, nullptr);
  EXPECT_EQ(springs->springs().size(), 74u);
}

TEST(Scene, SheetGeometryIsRowMajorWithRestLengths) {
  const Scene s = load_scene_text(R"({"steps": 1, "bodies": [{"type": "sheet", "origin": [1, 2, 3],
      "size": [0.6, 0.2], "resolution": [4, 3], "mass": 1.2, "stiffness": 50}]})", "sheet.json");
  const ParameterTable& t = s.model->params();
  const VecX& p = t.defaults();
  const int pos = t.require("bodies.0.positions").offset;
  // Particle index ix + nx·iy = 1 + 4·2 = 9 sits at origin + (0.2, 0.2, 0).
  EXPECT_NEAR(p[pos + 27], 1.2, 1e-15);
  EXPECT_NEAR(p[pos + 28], 2.2, 1e-15);
  EXPECT_NEAR(p[pos + 29], 3.0, 1e-15);
  EXPECT_DOUBLE_EQ(p[t.require("bodies.0.shear_stiffness").offset], 50.0);  // defaults to stiffness
  EXPECT_DOUBLE_EQ(p[t.require("bodies.0.mass.0").offset], 0.1);
}

TEST(Scene, SheetInitialStatesAndMassesPerParticle) {
  const std::string sheet = R"({"steps": 1, "bodies": [{"type": "sheet", "size": [1, 1], "resolution": [2, 2],
      "stiffness": 50, "mass": [0.1, 0.2, 0.3, 0.4], "velocities": [[0, 0, 1], [0, 0, 2], [0, 0, 3], [0, 0, 4]],
      "positions": [[0, 0, 0], [1, 0, 0], [0, 1, 0.5], [1, 1, 0]]}]})";
  const Scene s = load_scene_text(sheet, "sheet.json");
  const ParameterTable& t = s.model->params();
  const VecX& p = t.defaults();
  EXPECT_EQ(p[t.require("bodies.0.mass.2").offset], 0.3);
  EXPECT_EQ(p[t.require("bodies.0.velocities.3.2").offset], 4.0);
  EXPECT_EQ(p[t.require("bodies.0.positions.2.2").offset], 0.5);
  const std::string both = input_error([&] {
    load_scene_text(R"({"bodies": [{"type": "sheet", "size": [1, 1], "resolution": [2, 2], "stiffness": 1,
        "mass": 1, "velocity": [0, 0, 1], "velocities": [[0, 0, 1], [0, 0, 1], [0, 0, 1], [0, 0, 1]]}]})", "s.json");
  });
  EXPECT_EQ(both, "s.json: bodies.0.velocities: give either velocity or velocities");
  const std::string count = input_error([&] {
    load_scene_text(R"({"bodies": [{"type": "sheet", "size": [1, 1], "resolution": [2, 2], "stiffness": 1,
        "mass": [1, 2]}]})", "s.json");
  });
  EXPECT_NE(count.find("s.json: bodies.0.mass: needs one entry per particle (4) or one total"), std::string::npos) << count;
}

TEST(Scene, OverridesApplyBeforeValidation) {
  const Scene s = load({"contact.kt=12", "bodies.dots.mass=[1, 2]", "contact.model=tanh", "obstacles.0.friction=0.3"});
  const ParameterTable& t = s.model->params();
  EXPECT_DOUBLE_EQ(t.defaults()[t.require("contact.kt").offset], 12.0);
  EXPECT_DOUBLE_EQ(t.defaults()[t.require("bodies.0.mass.1").offset], 2.0);
  EXPECT_DOUBLE_EQ(t.defaults()[t.require("obstacles.floor.friction").offset], 0.3);
  EXPECT_EQ(s.contact_model, ContactModel::kTanh);
  EXPECT_EQ(s.json["contact"]["kt"], 12);
}

TEST(Scene, HandlesMoveLinearlyOrFollowPerStepPositions) {
  const Scene s = load({"handles.0.velocity=[1, 0, 0]"});
  const ParamRange r = s.model->params().require("handles.grip.positions.3");
  EXPECT_NEAR(s.model->params().defaults()[r.offset], 0.03, 1e-15);
  expect_error({R"(handles.0={"name": "grip", "positions": [[0,0,0],[0,0,1]]})"},
               {"handles.0.positions", "steps + 1 = 4"});
  expect_error({"handles.0.positions=[[0,0,0],[0,0,1],[0,0,2],[0,0,3]]"}, {"handles.0.positions", "either"});
}

// Messages name an unnamed obstacle by its key path, not as "obstacle ''".
TEST(Scene, UnnamedObstacleIsNamedByItsKeyPath) {
  const Scene scene = load_scene_text(R"({"dt": 0.01, "steps": 1, "contact": {"kn": 1e4},
      "obstacles": [{"type": "plane", "name": "wall", "point": [5, 0, 0], "normal": [-1, 0, 0]}, {"type": "plane"}],
      "bodies": [{"type": "particles", "name": "buried", "positions": [[0, 0, -0.05]], "mass": 1}]})", "s.json");
  Simulator sim(*scene.model, 1);
  const RunChecks c = check_run(scene, sim.run(scene.model->params().defaults()));
  ASSERT_EQ(c.penetrations.size(), 1u);
  EXPECT_EQ(c.penetrations[0].obstacle, "obstacles.1");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("starts inside obstacle 'obstacles.1'"), std::string::npos) << c.warnings[0];
}

TEST(SceneErrors, JsonSyntaxErrorNamesFileLineAndPath) {
  const std::string msg = input_error([] { load_scene_text("{\n  \"dt\": 0.01,\n  \"steps\": ,\n}", "scene.json"); });
  EXPECT_NE(msg.find("scene.json:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("steps"), std::string::npos) << msg;
}

TEST(SceneErrors, DuplicateKeyIsAnError) {
  const std::string msg = input_error([] { load_scene_text(R"({"dt": 0.1, "dt": 0.2})", "scene.json"); });
  EXPECT_NE(msg.find("dt: duplicate key"), std::string::npos) << msg;
}

TEST(SceneErrors, UnknownKeyTopLevelAndNested) {
  expect_error({"dtt=0.1"}, {"dtt: unknown key"});
  expect_error({"contact.kx=3"}, {"contact.kx: unknown key"});
  expect_error({"bodies.0.colour=\"red\""}, {"bodies.0.colour: unknown key"});
  expect_error({"springs.0.anchors.1.handel=0"}, {"springs.0.anchors.1"});
}

TEST(SceneErrors, WrongType) {
  expect_error({"dt=\"fast\""}, {"dt: expected a number"});
  expect_error({"steps=2.5"}, {"steps: expected an integer"});
  // Length errors say what was given, not just "a list".
  expect_error({"gravity=[0, 0]"}, {"gravity: expected a list of 3 numbers, got a list of 2 numbers"});
  expect_error({"bodies.0.positions.1=[0, 0, 1, 2]"},
               {"bodies.0.positions.1: expected a list of 3 numbers, got a list of 4 numbers"});
  expect_error({"springs.0.anchors=[{\"world\": [0, 0, 0]}, {\"world\": [0, 0, 1]}, {\"handle\": 0}]"},
               {"springs.0.anchors: expected a list of 2 anchors, got a list of 3 objects"});
  expect_error({"bodies.0.positions.1=[0, \"x\", 1]"}, {"bodies.0.positions.1.1: expected a number"});
  expect_error({"obstacles=3"}, {"obstacles: expected a list"});
  expect_error({"contact.model=quadratic"}, {"contact.model: must be one of"});
  expect_error({"bodies.0.type=\"cloud\""}, {"bodies.0.type: must be one of", "particles", "sheet"});
}

TEST(SceneErrors, OutOfRangeValue) {
  expect_error({"bodies.0.mass=-1"}, {"scene.json: bodies.0.mass: must be > 0, got -1"});
  expect_error({"dt=0"}, {"dt: must be > 0"});
  expect_error({"steps=0"}, {"steps: must be >= 1"});
  expect_error({"springs.0.stiffness=-5"}, {"springs.0.stiffness: must be >= 0"});
  expect_error({"obstacles.0.friction=-0.1"}, {"obstacles.0.friction: must be >= 0"});
  expect_error({"obstacles.0.normal=[0,0,0]"}, {"obstacles.0.normal: must be non-zero"});
  expect_error({"contact.kn=0"}, {"contact.kn: must be > 0"});
  expect_error({"springs.0.anchors.0.point=9"}, {"springs.0.anchors.0.point"});
  expect_error({"springs.0.anchors.1.handle=\"nope\""}, {"springs.0.anchors.1.handle: no handle named"});
  expect_error({"solver.threads=0"}, {"solver.threads: must be >= 1"});
  expect_error({"solver.threads=3"}, {"solver.threads: must be 1 or 2"});
}

// A mass above 0 (the documented range) but below the parameter table's bound 1e-300 is an
// error of the file and key at load, not of the first rollout without either.
TEST(SceneErrors, SubnormalMassNamesFileAndKey) {
  expect_error({"bodies.0.mass=1e-320"}, {"scene.json: bodies.0.mass.0: must be >= 1e-300 (below it 1/m overflows), got "});
  expect_error({"bodies.0.mass=[1e-320, 1]"}, {"scene.json: bodies.0.mass.0: must be >= 1e-300"});
  EXPECT_NO_THROW(load({"bodies.0.mass=1e-300"}));
}

// A name is optional; one given must be usable in key paths, one-line messages and CSV headers.
TEST(SceneErrors, EmptyOrControlCharacterNamesAreRejected) {
  expect_error({"bodies.0.name=\"\""}, {"scene.json: bodies.0.name: must not be empty"});
  expect_error({"bodies.0.name=\"ball\\u0000x\""},
               {"scene.json: bodies.0.name: must not contain a control character (byte 0 at position 4)"});
  expect_error({"obstacles.0.name=\"\\n\""}, {"obstacles.0.name: must not contain a control character (byte 10"});
  expect_error({"handles.0.name=\"\""}, {"handles.0.name: must not be empty"});
  expect_error({"springs.0.name=\"a\\tb\""}, {"springs.0.name: must not contain a control character (byte 9"});
  EXPECT_NO_THROW(load({"obstacles.0.name=\"the floor\""}));
}

TEST(SceneErrors, NonFiniteValue) {
  // Strict JSON has no NaN or Infinity; a number that overflows is the way in.
  const std::string msg = input_error([] { load_scene_text(R"({"bodies": [{"type": "particles",
      "positions": [[0, 0, 1e999]], "mass": 1}]})", "scene.json"); });
  EXPECT_NE(msg.find("scene.json:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bodies.0.positions.0.2"), std::string::npos) << msg;
  expect_error({"bodies.0.positions.0.2=1e999"}, {"bodies.0.positions.0.2"});
  expect_error({"dt=NaN"}, {"dt: expected a number"});
}

TEST(SceneErrors, MissingRequiredKey) {
  const std::string msg = input_error([] { load_scene_text(R"({"bodies": [{"type": "particles", "mass": 1}]})", "scene.json"); });
  EXPECT_NE(msg.find("scene.json: bodies.0.positions: required key is missing"), std::string::npos) << msg;
  expect_error({"springs.0={\"type\": \"distance\", \"anchors\": [{\"world\": [0,0,0]}, {\"body\": 0, \"point\": 1}]}"},
               {"springs.0.stiffness: required key is missing"});
}

TEST(SceneErrors, MissingFile) {
  const std::string msg = input_error([] { load_scene_file("/nonexistent/dir/scene.json"); });
  EXPECT_NE(msg.find("/nonexistent/dir/scene.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no such scene file"), std::string::npos) << msg;
}

TEST(SceneErrors, BadOverridePath) {
  const std::string msg = input_error([] { load({"bodies.5.mass=1"}); });
  EXPECT_NE(msg.find("bodies.5"), std::string::npos) << msg;
}

}  // namespace
}  // namespace addsim
