// Syntax errors of every JSON input keep a position, a key path and a readable reason;
// runaway nesting is refused before it can overflow the stack; input files are read only
// when they are regular files below the size cap; `steps` overrides cut per-step lists.

#include "addsim/io/json_reader.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "addsim/core/input_file.h"
#include "addsim/io/json_path.h"
#include "addsim/io/scene.h"
#include "addsim/io/task.h"
#include "test_util.h"

namespace addsim {
namespace {

using nlohmann::json;
using test::input_error;

std::string parse_error(const std::string& text) {
  return input_error([&] { parse_json_text(text, "f.json"); });
}

TEST(JsonSyntax, CommentsAreNamed) {
  const std::string e = parse_error("{\n  // a comment\n  \"dt\": 0.01\n}");
  EXPECT_EQ(e.rfind("f.json:2:3: ", 0), 0u) << e;
  EXPECT_NE(e.find("JSON has no comments"), std::string::npos) << e;
  EXPECT_NE(parse_error("{\"dt\": 1 /* c */}").find("JSON has no comments"), std::string::npos);
  EXPECT_NE(parse_error("# c\n{}").find("JSON has no comments"), std::string::npos);
}

TEST(JsonSyntax, NanAndInfinityAreNamedWithTheirKeyPath) {
  for (const char* word : {"NaN", "Infinity", "-Infinity", "nan", "inf"}) {
    const std::string e = parse_error(std::string("{\"solver\": {\"tolerance\": ") + word + "}}");
    EXPECT_NE(e.find("solver.tolerance: JSON has no NaN or Infinity"), std::string::npos) << e;
    EXPECT_NE(e.find(word), std::string::npos) << e;
    EXPECT_EQ(e.rfind("f.json:1:", 0), 0u) << e;
  }
}

TEST(JsonSyntax, CommonMistakesAreExplained) {
  EXPECT_NE(parse_error("{\"a\": [1, 2,]}").find("a.2: trailing comma before ']'"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\": 1,\n}").find("f.json:2:1: "), std::string::npos) << parse_error("{\"a\": 1,\n}");
  EXPECT_NE(parse_error("{'a': 1}").find("double quotes"), std::string::npos);
  EXPECT_NE(parse_error("{a: 1}").find("object keys must be strings in double quotes, got a"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\": True}").find("lower case"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\": [1, 2").find("unexpected end"), std::string::npos);
  EXPECT_NE(parse_error("").find("unexpected end"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\": 1, \"a\": 2}").find("a: duplicate key"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\": 1e999}").find("a: number overflow"), std::string::npos);
  // A control character after "NaN" inside a string is not a NaN literal.
  EXPECT_EQ(parse_error("{\"name\": \"NaN\t\"}").find("NaN or Infinity"), std::string::npos);
  // Whatever the reason, the message is one line.
  for (const char* text : {"{\n\"a\": \"x\ny\"}", "{\"a\": tru}", "[1 2]", "{\"a\" 1}"}) {
    const std::string e = parse_error(text);
    EXPECT_FALSE(e.empty()) << text;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(JsonSyntax, NestingIsLimited) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(parse_json_text(nested(kMaxJsonDepth), "f.json"));
  const std::string e = parse_error(nested(kMaxJsonDepth + 1));
  EXPECT_NE(e.find("nested more than 64 levels"), std::string::npos) << e;
  EXPECT_EQ(e.rfind("f.json:1:65: ", 0), 0u) << e;
  // 200,000 levels (the issue's 400 KB scene that overflowed the stack): refused, no crash.
  EXPECT_NE(parse_error(nested(200000)).find("nested more than 64 levels"), std::string::npos);
  // Objects count too, and brackets inside strings do not.
  std::string objects;
  for (int k = 0; k < 100; ++k) objects += "{\"a\": ";
  objects += "1" + std::string(100, '}');
  EXPECT_NE(parse_error(objects).find("nested more than"), std::string::npos);
  EXPECT_NO_THROW(parse_json_text("{\"a\": \"" + std::string(1000, '[') + "\"}", "f.json"));
  // Overrides go through the same parser.
  json doc = json::object();
  EXPECT_NE(input_error([&] { apply_override(doc, "dt=" + nested(100)); }).find("nested more than"), std::string::npos);
}

// Messages say what a value is; a list by its length and the kind of its entries, so that a
// length error shows what was given next to what is needed.
TEST(JsonValues, DescribeGivesTheLengthOfAList) {
  EXPECT_EQ(describe(json::parse("[0, 0]")), "a list of 2 numbers");
  EXPECT_EQ(describe(json::parse("[0.5]")), "a list of 1 number");
  EXPECT_EQ(describe(json::parse("[[0, 0, 0], [1, 1, 1], [2, 2, 2]]")), "a list of 3 lists");
  EXPECT_EQ(describe(json::parse("[{}, {}]")), "a list of 2 objects");
  EXPECT_EQ(describe(json::parse("[1, \"a\", null]")), "a list of 3 entries");
  EXPECT_EQ(describe(json::parse("[]")), "an empty list");
  EXPECT_EQ(describe(json::parse("{}")), "an object");
  EXPECT_EQ(describe(json::parse("-1")), "-1");
  const std::string e = input_error([] { to_vec3(json::parse("[0, 0]"), "s.json", "gravity"); });
  EXPECT_EQ(e, "s.json: gravity: expected a list of 3 numbers, got a list of 2 numbers");
}

// Excel's "CSV UTF-8" writes a byte-order mark before the header; rows keep the file's line
// numbers across blank lines.
TEST(DataFiles, ByteOrderMarkIsSkippedAndRowsKeepTheirLines) {
  const NumericCsv c = parse_numeric_csv("\xEF\xBB\xBFstep,x,y,z\n0,1,2,3\n\n1,4,5,6\n", "d.csv");
  EXPECT_EQ(c.header, (std::vector<std::string>{"step", "x", "y", "z"}));
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.lines, (std::vector<int>{2, 4}));
  // A marker file with a BOM loads as a task's data.
  const std::filesystem::path dir = test::fresh_temp_dir("bom");
  std::ofstream(dir / "s.json") << R"({"dt": 0.01, "steps": 2, "bodies": [{"type": "particles", "name": "p",
      "positions": [[0, 0, 1]], "mass": 1}]})";
  std::ofstream(dir / "m.csv") << "\xEF\xBB\xBFstep,marker,x,y,z,visible\n1,0,0,0,1,1\n2,0,0,0,1,0\n";
  std::ofstream(dir / "t.json") << R"({"scene": "s.json", "parameters": ["bodies.p.velocities"], "objective":
      [{"type": "markers", "body": "p", "markers": [{"position": [0, 0, 1]}], "data": "m.csv"}]})";
  EXPECT_NO_THROW(load_task_file(dir / "t.json"));
}

TEST(InputFiles, OnlyRegularFilesBelowTheCap) {
  const auto dir = test::fresh_temp_dir("files");
  EXPECT_NE(input_error([] { read_input_file("/dev/zero", "scene file"); }).find("/dev/zero: is not a regular file"),
            std::string::npos);
  EXPECT_NE(input_error([&] { read_input_file(dir, "scene file"); }).find("is a directory"), std::string::npos);
  EXPECT_NE(input_error([&] { read_input_file(dir / "none.json", "task file"); }).find("no such task file"),
            std::string::npos);
  const auto fifo = dir / "fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(input_error([&] { read_input_file(fifo, "scene file"); }).find("not a regular file"), std::string::npos);
  std::ofstream(dir / "big.json") << std::string(2000, ' ') << "{}";
  EXPECT_NE(input_error([&] { read_input_file(dir / "big.json", "scene file", 1000); }).find("larger than the limit"),
            std::string::npos);
  EXPECT_EQ(read_input_file(dir / "big.json", "scene file").size(), 2002u);
  // A file of the generated data/ folder says which command makes it.
  EXPECT_NE(input_error([&] { read_input_file(dir / "data" / "bunny.obj", "mesh file"); }).find("install-deps.sh"),
            std::string::npos);
}

TEST(InputFiles, MemoryEstimatesAreCheckedAgainstTheBudget) {
  EXPECT_GT(memory_budget_bytes(), 0u);
  EXPECT_NO_THROW(check_memory(1e6, "x.json: steps", "a trajectory"));
  const std::string e = input_error([] { check_memory(1e30, "x.json: steps", "a trajectory"); });
  EXPECT_EQ(e.rfind("x.json: steps: a trajectory would need ", 0), 0u) << e;
  EXPECT_EQ(parse_byte_count("2G"), std::uint64_t{2} << 30);
  EXPECT_EQ(parse_byte_count("64K"), 65536u);
  EXPECT_EQ(parse_byte_count("x"), 0u);
}

TEST(SceneLimits, HugeRunsAreInputErrorsNamingTheKeyAndTheMemory) {
  const std::string scene = R"({"steps": 10, "bodies": [{"type": "particles", "positions": [[0, 0, 1]], "mass": 1}]})";
  std::string e = input_error([&] { load_scene_text(scene, "s.json", {"steps=1000000000"}); });
  EXPECT_EQ(e.rfind("s.json: steps: a trajectory of 1000000000 steps of 3 coordinates would need ", 0), 0u) << e;
  const std::string sheet =
      R"({"bodies": [{"type": "sheet", "size": [1, 1], "resolution": [10000, 10000], "mass": 1, "stiffness": 1}]})";
  e = input_error([&] { load_scene_text(sheet, "s.json"); });
  EXPECT_NE(e.find("s.json: bodies.0.resolution: a sheet of 10000 x 10000 particles would need "), std::string::npos)
      << e;
  const std::string box = R"({"bodies": [{"type": "fem", "mesh": {"generator": "box", "size": [1e6, 1e-6, 1e-6],
      "target_tets": 6}, "material": {"youngs_modulus": 1e5, "poisson_ratio": 0.3, "density": 100}}]})";
  e = input_error([&] { load_scene_text(box, "s.json"); });
  EXPECT_NE(e.find("s.json: bodies.0.mesh.generator: box mesh: 1e+08 x 1 x 1 cells"), std::string::npos) << e;
}

TEST(SceneSteps, StepsOverrideCutsPerStepLists) {
  json doc = json::parse(R"({"steps": 4, "handles": [{"positions": [[0,0,0],[0,0,1],[0,0,2],[0,0,3],[0,0,4]]}],
      "joints": [{"target_angles": [0, 1, 2, 3, 4]}, {"type": "ball"}], "bodies": [{"poses": [1, 2]}]})");
  const std::vector<std::string> notes = truncate_scene_steps(doc, 2);
  EXPECT_EQ(doc["steps"], 2);
  EXPECT_EQ(doc["handles"][0]["positions"].size(), 3u);
  EXPECT_EQ(doc["handles"][0]["positions"][2], json::array({0, 0, 2}));
  EXPECT_EQ(doc["joints"][0]["target_angles"], json::array({0, 1, 2}));
  EXPECT_EQ(doc["bodies"][0]["poses"].size(), 2u);  // already short: left alone
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "handles.0.positions: 5 entries cut to 3 for steps = 2");
}

TEST(SceneSteps, StepsOverrideCutsRobotMotorTargets) {
  json doc = json::parse(R"({"steps": 4, "bodies": [{"type": "urdf", "motors": {"targets":
      {"a.b": [0, 1, 2, 3, 4], "c": 0.5}}}]})");
  const std::vector<std::string> notes = truncate_scene_steps(doc, 2);
  EXPECT_EQ(doc["bodies"][0]["motors"]["targets"]["a.b"], json::array({0, 1, 2}));
  EXPECT_EQ(doc["bodies"][0]["motors"]["targets"]["c"], 0.5);  // one value for all steps: left alone
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "bodies.0.motors.targets.a.b: 5 entries cut to 3 for steps = 2");
}

TEST(SceneSteps, ShippedSceneWithHandlesRunsShortened) {
  const Scene s = load_scene_file(test::source_dir() / "scenes" / "mass_spring_sheet.json", {"steps=3"});
  EXPECT_EQ(s.model->scheme().steps, 3);
  EXPECT_FALSE(s.notices.empty());
}

}  // namespace
}  // namespace addsim
