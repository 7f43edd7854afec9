#pragma once
/// The headers every test binary precompiles once (tests/CMakeLists.txt, ADDSIM_TEST_PCH):
/// GoogleTest, Eigen, nlohmann json and the standard headers the test sources and the addsim
/// headers they include use most. Parsing these is most of a test source's compile time
/// (docs/testing.md, "Build time"), so one precompiled header serves all test binaries.
/// Only third-party and standard headers belong here: a test still includes what it uses, and
/// compiles unchanged when the precompiled header is switched off.

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>
