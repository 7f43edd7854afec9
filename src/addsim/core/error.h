#pragma once
/// Error types. User-facing problems (bad scene, bad value) throw InputError with a
/// message naming the entity, key path and value; broken internal invariants throw
/// InternalError. Numerical trouble inside a time step is not an exception: it is a
/// StepReport with a failure reason (see solver/step_report.h).

#include <stdexcept>
#include <string>

namespace addsim {

/// Bad user input: malformed scene or task, unknown key, out-of-range value.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

/// A broken internal invariant (a bug in addsim, not in the input).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

/// A simulation that could not be completed (a step failed); carries the step.
class SimulationError : public std::runtime_error {
 public:
  SimulationError(const std::string& what, int step) : std::runtime_error(what), step_(step) {}
  int step() const { return step_; }

 private:
  int step_;
};

/// Always-on invariant check; throws InternalError naming the condition.
#define ADDSIM_CHECK(cond, msg)                                                       \
  do {                                                                                \
    if (!(cond)) throw ::addsim::InternalError(std::string("internal check failed: ") + \
                                               #cond + ": " + (msg));                 \
  } while (0)

}  // namespace addsim
