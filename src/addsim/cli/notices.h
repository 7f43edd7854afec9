#pragma once
/// Notices of a loaded scene on stderr ("addsim: note: <file>: <notice>"), e.g. the per-step
/// lists a "steps" override cut.

#include <cstdio>

#include "addsim/io/scene.h"

namespace addsim::cli {

inline void print_notices(const Scene& scene) {
  for (const std::string& n : scene.notices) std::fprintf(stderr, "addsim: note: %s: %s\n", scene.source.c_str(), n.c_str());
}

}  // namespace addsim::cli
