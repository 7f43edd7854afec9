#pragma once
/// Small programmatic scenes for the end-to-end gradient tests: a spring-particle chain
/// (no contact), a tetrahedral particle cluster thrown onto a frictional plane (bouncing, then sliding), and a 3×3 sheet
/// dragged over the floor by two handles with per-step controls. Parameters are
/// registered like a scene loader would (contact.kn, contact.kd, obstacles.0.friction,
/// springs.stiffness, springs.damping, handles.stiffness).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/objectives/objective.h"
#include "addsim/terms/contact_force.h"

namespace addsim::testing {

enum class SceneKind { kChain, kBouncingCluster, kDraggedSheet };
const char* to_string(SceneKind kind);

struct Scene {
  std::unique_ptr<Model> model;
  Objective objective;
  /// Parameter indices grouped by kind ("positions", "kn", "controls", ...).
  std::map<std::string, std::vector<int>> groups;
  /// Groups whose natural perturbation is relative to the value (stiffness, mass, ...).
  std::vector<std::string> relative_groups;
  bool has_contact = false;
};

/// Builds scene `kind` with `integrator`, `friction` model and `steps` time steps
/// (0: the scene's default).
Scene make_scene(SceneKind kind, Integrator integrator, ContactModel friction, int steps = 0);

}  // namespace addsim::testing
