#pragma once
/// Builder functions a scene loader calls to add rigid bodies to a Model (before
/// Model::finalize()): the body with its parameters, and its inertia, gravity and contact
/// terms.

#include <memory>
#include <string>
#include <vector>

#include "addsim/model/model.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/rigid/rigid_contact.h"

namespace addsim {

/// Adds a RigidBody (registering bodies.<i>.position, .orientation, .velocity,
/// .angular_velocity and .mass, aliases bodies.<name>.*), its RigidInertiaTerm, a
/// RigidGravityTerm when gravity (m/s²) is non-zero and a RigidContactTerm when the proxy
/// and the obstacle list are non-empty. Returns the body index. Throws InputError for bad
/// shapes, masses, proxies or non-finite initial values.
int add_rigid_body(Model& model, const std::string& name, const RigidShape& shape, const RigidMassSpec& mass,
                   const RigidInit& init, RigidProxy proxy, const Vec3& gravity,
                   std::vector<std::shared_ptr<const Obstacle>> obstacles, const ContactSettings& contact);

/// The rigid body with index `index` of `model`; throws InputError if it is not rigid.
const RigidBody& rigid_body(const Model& model, int index);

}  // namespace addsim
