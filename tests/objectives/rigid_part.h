#pragma once
// Adds a rigid sphere to a model (kept in its own translation unit).

#include "addsim/model/model.h"

namespace addsim::test {

/// Adds a rigid sphere (radius 0.2 m, 2 kg) at `position` with rotation vector `theta`; returns its body index.
int add_test_rigid_sphere(Model& model, const Vec3& position, const Vec3& theta);

}  // namespace addsim::test
