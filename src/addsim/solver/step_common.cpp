#include "addsim/solver/step_common.h"

#include <string>

#include "addsim/core/error.h"

namespace addsim::step {

ActiveSetPoints collect_active_set_points(const Model& model, ContactModel kind, const char* name) {
  ActiveSetPoints out;
  for (const auto& t : model.terms()) {
    const auto* term = dynamic_cast<const PointContactTerm*>(t.get());
    if (!term || term->settings().model != kind) continue;
    for (const auto& o : term->obstacles())
      if (!dynamic_cast<const PlaneObstacle*>(o.get()))
        throw InputError(std::string(name) + " contact supports planar obstacles only (obstacle '" + o->name() + "')");
    for (int k = 0; k < term->num_points(); ++k) out.points.push_back({term, k, term->dofs()[k]});
  }
  for (const auto& t : model.terms()) {
    const auto* term = dynamic_cast<const RigidContactTerm*>(t.get());
    if (!term || term->settings().model != kind) continue;
    const DofIndex dof = term->body().dof();
    int b = 0;
    while (b < static_cast<int>(out.bodies.size()) && out.bodies[b].dof != dof) ++b;
    if (b == static_cast<int>(out.bodies.size())) out.bodies.push_back({dof, {}, -1});
    for (int k = 0; k < term->num_points(); ++k) {
      out.bodies[b].points.push_back(static_cast<int>(out.rigid_points.size()));
      out.rigid_points.push_back({term, k, b});
    }
  }
  return out;
}

}  // namespace addsim::step
