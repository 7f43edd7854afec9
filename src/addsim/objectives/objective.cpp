#include "addsim/objectives/objective.h"

#include <string>

#include "addsim/core/error.h"

namespace addsim {

std::pair<int, int> StepWindow::resolve(int n, std::string_view who) const {
  const int a = first < 0 ? n + 1 + first : first;
  const int b = last < 0 ? n + 1 + last : last;
  if (a < 0 || b > n || a > b)
    throw InputError(std::string(who) + ": step window [" + std::to_string(first) + ", " + std::to_string(last) +
                     "] is empty or outside steps [0, " + std::to_string(n) + "]");
  return {a, b};
}

void Objective::add(double weight, std::unique_ptr<ObjectiveTerm> term) {
  ADDSIM_CHECK(term != nullptr, "objective term must not be null");
  terms_.emplace_back(weight, std::move(term));
}

double Objective::evaluate(const Model& model, const Trajectory& traj, ObjectiveGradient* grad) const {
  double phi = 0.0;
  for (const auto& [w, t] : terms_) phi += w * t->evaluate(model, traj, w, grad);
  return phi;
}

std::vector<double> Objective::term_values(const Model& model, const Trajectory& traj) const {
  std::vector<double> values;
  values.reserve(terms_.size());
  for (const auto& [w, t] : terms_) values.push_back(t->evaluate(model, traj, 1.0, nullptr));
  return values;
}

}  // namespace addsim
