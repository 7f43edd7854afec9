#pragma once
/// Scenes of the whole-rollout gradcheck matrix built through the library's builders:
/// a soft (FEM) box-ball thrown onto a frictional floor or in free flight (add_fem_body),
/// a rigid sphere thrown onto the floor or in free flight (add_rigid_body), a rigid cube
/// sliding down an incline, and a chain of three boxes hanging from hinge joints. Each
/// comes with an objective whose derivative is non-zero for every parameter group it lists.
/// FEM and rigid builders live in separate files.

#include "scenes.h"

namespace addsim::testing {

enum class MatrixScene { kSoftBall, kSoftBallFlight, kRigidSphere, kRigidSphereFlight, kRigidCubeIncline, kHingeChain };
const char* to_string(MatrixScene kind);

/// Builds `kind` with `integrator`, `friction` and `steps` steps (0: the scene's default).
Scene make_matrix_scene(MatrixScene kind, Integrator integrator, ContactModel friction, int steps = 0);

/// FEM scenes (gradcheck_scenes_fem.cpp). The ball is a 0.1 m box of `cells`³ cubes, six
/// tets each (2: 27 nodes, 48 tets; 1: 8 nodes, 6 tets).
Scene make_soft_ball(bool contact, Integrator integrator, ContactModel friction, int steps, int cells = 2);
/// Rigid scenes (gradcheck_scenes_rigid.cpp).
Scene make_rigid_sphere(bool contact, Integrator integrator, ContactModel friction, int steps);
Scene make_rigid_cube_incline(Integrator integrator, ContactModel friction, int steps);
Scene make_hinge_chain(Integrator integrator, int steps);

}  // namespace addsim::testing
