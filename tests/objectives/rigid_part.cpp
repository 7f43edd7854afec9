#include "rigid_part.h"

#include "addsim/rigid/rigid_builder.h"

namespace addsim::test {

int add_test_rigid_sphere(Model& model, const Vec3& position, const Vec3& theta) {
  RigidInit init;
  init.position = position;
  init.orientation = theta;
  return add_rigid_body(model, "ball", RigidShape::sphere(0.2), RigidMassSpec::from_mass(2.0), init, RigidProxy{},
                        Vec3::Zero(), {}, {});
}

}  // namespace addsim::test
