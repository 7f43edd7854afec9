#pragma once
/// The shipped cube drag (kinematic plate on strings, paper §6.4) cut to 12 steps with the
/// plate moving along +x and the plate's poses as the listed parameters: the short instance
/// the Jacobian tests differentiate.

#include "addsim/io/task.h"
#include "source_dir.h"

namespace addsim::test {

inline Task short_cube_drag_task() {
  return load_task_file(source_dir() / "tasks" / "cube_drag.json",
                        {"scene.steps=12", "scene.bodies.0.velocity=[0.3, 0, 0]",
                         R"(parameters=["bodies.effector.poses"])"});
}

}  // namespace addsim::test
