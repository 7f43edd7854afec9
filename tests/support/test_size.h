#pragma once
/// Test instance size (docs/testing.md). With ADDSIM_TEST_REDUCED set to anything but "" or
/// "0" (scripts/run-sanitizers.sh --test sets it), the slowest tests run a smaller instance
/// of the same check (fewer steps, a coarser mesh, fewer sampled parameter directions) with
/// the same assertions; unset, every test runs its full Release size.

#include <cstdlib>
#include <cstring>

namespace addsim::test {

/// True when ADDSIM_TEST_REDUCED asks for the reduced test sizes of docs/testing.md.
inline bool reduced() {
  const char* env = std::getenv("ADDSIM_TEST_REDUCED");
  return env && *env && std::strcmp(env, "0") != 0;
}

/// `full` normally, `small` under ADDSIM_TEST_REDUCED.
template <class T>
T sized(T full, T small) {
  return reduced() ? small : full;
}

}  // namespace addsim::test
