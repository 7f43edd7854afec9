#include "addsim/io/json_path.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace addsim {
namespace {

using nlohmann::json;
using test::input_error;

json sample() {
  return json::parse(R"({"dt": 0.01, "contact": {"kn": 1000},
    "bodies": [{"name": "sheet", "mass": 0.2, "positions": [[0, 0, 0], [1, 0, 0]]}, {"name": "ball", "mass": 1}]})");
}

TEST(JsonPath, SetsNestedPathsByIndexAndName) {
  json j = sample();
  set_json_path(j, "contact.kn", 2000);
  set_json_path(j, "bodies.0.positions.1", json::array({0, 0, 1}));
  set_json_path(j, "bodies.ball.mass", 3.5);
  set_json_path(j, "bodies.sheet.positions.0.2", 0.25);
  EXPECT_EQ(j["contact"]["kn"], 2000);
  EXPECT_EQ(j["bodies"][0]["positions"][1], json::array({0, 0, 1}));
  EXPECT_EQ(j["bodies"][1]["mass"], 3.5);
  EXPECT_EQ(j["bodies"][0]["positions"][0][2], 0.25);
}

TEST(JsonPath, CreatesMissingKeysAndObjects) {
  json j = sample();
  set_json_path(j, "contact.kt", 10);
  set_json_path(j, "solver.max_iterations", 3);
  EXPECT_EQ(j["contact"]["kt"], 10);
  EXPECT_EQ(j["solver"]["max_iterations"], 3);
}

TEST(JsonPath, BadPathsNameThePath) {
  json j = sample();
  EXPECT_NE(input_error([&] { set_json_path(j, "bodies.7.mass", 1); }).find("bodies.7"), std::string::npos);
  EXPECT_NE(input_error([&] { set_json_path(j, "bodies.cloth.mass", 1); }).find("bodies.cloth"), std::string::npos);
  EXPECT_NE(input_error([&] { set_json_path(j, "dt.x", 1); }).find("dt"), std::string::npos);
  EXPECT_NE(input_error([&] { set_json_path(j, "contact..kn", 1); }).find("contact..kn"), std::string::npos);
}

TEST(JsonPath, OverrideValuesParseAsJsonOrBareWords) {
  json j = sample();
  apply_override(j, "contact.model=\"tanh\"");
  EXPECT_EQ(j["contact"]["model"], "tanh");
  apply_override(j, "contact.model=linear");
  EXPECT_EQ(j["contact"]["model"], "linear");
  apply_override(j, "gravity=[0,0,-9.81]");
  EXPECT_EQ(j["gravity"], json::array({0, 0, -9.81}));
  apply_override(j, "dt=1e-3");
  EXPECT_EQ(j["dt"], 1e-3);
  EXPECT_NE(input_error([&] { apply_override(j, "dt"); }).find("PATH=JSON"), std::string::npos);
  EXPECT_NE(input_error([&] { apply_override(j, "gravity=[0,0"); }).find("gravity"), std::string::npos);
  // A number that overflows a double is an error naming the path, not an infinity.
  EXPECT_NE(input_error([&] { apply_override(j, "dt=1e999"); }).find("dt"), std::string::npos);
}

}  // namespace
}  // namespace addsim
