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

/// Adds a kinematic RigidBody whose pose (p_WB, θ) at step i is row i of the control
/// bodies.<i>.poses ((steps+1) × 6; m, rad), with its RigidPoseTerm and a mass parameter
/// (for reports). Kinematic bodies have no inertia, gravity or contact terms; joints act on
/// the bodies they couple to them. Call after the model's time scheme is set. Returns the index.
int add_kinematic_rigid_body(Model& model, const std::string& name, const RigidShape& shape,
                             const RigidMassSpec& mass, const std::vector<Eigen::Matrix<double, 6, 1>>& poses);

/// The rigid body with index `index` of `model`; throws InputError if it is not rigid.
const RigidBody& rigid_body(const Model& model, int index);

}  // namespace addsim
