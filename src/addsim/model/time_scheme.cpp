#include "addsim/model/time_scheme.h"

namespace addsim {

TimeScheme TimeScheme::make(Integrator integrator, double h, int steps) {
  TimeScheme s;
  s.integrator = integrator;
  s.h = h;
  s.steps = steps;
  s.cv = integrator == Integrator::kBdf1 ? std::vector<double>{1.0, -1.0} : std::vector<double>{1.5, -2.0, 0.5};
  // a^i is the BDF derivative of the BDF velocities: ca = cv ∗ cv.
  s.ca.assign(2 * s.cv.size() - 1, 0.0);
  for (size_t i = 0; i < s.cv.size(); ++i)
    for (size_t j = 0; j < s.cv.size(); ++j) s.ca[i + j] += s.cv[i] * s.cv[j];
  return s;
}

const char* to_string(Integrator integrator) { return integrator == Integrator::kBdf1 ? "bdf1" : "bdf2"; }

}  // namespace addsim
