#pragma once
/// Internal to io: what it takes to draw a run without re-building its scene, for meta.json
/// (docs/viewer.md "meta.json"): per body its drawable geometry, the obstacles, springs and
/// joints as pairs of point references, and the handles' positions per step.

#include <nlohmann/json.hpp>

#include "addsim/io/scene.h"
#include "addsim/rigid/rigid_mesh.h"

namespace addsim {

/// Geometry of scene body k: {"kind": "points" | "sheet" | "fem" | "rigid", ...} (docs/viewer.md).
/// Throws InputError if a rigid body's mesh file can no longer be read.
nlohmann::json body_geometry(const Scene& scene, std::size_t k);

/// Obstacles: [{"name", "type": "plane", "point": [3], "normal": [3] (unit)}].
nlohmann::json obstacle_geometry(const Scene& scene);

/// Springs of the scene (including sheet springs): [{"type", "a": ref, "b": ref}]; a point
/// reference is {"dofs": [...], "weights": [...]} (x = Σ w_m q[dofs[m] .. +3]), {"rigid":
/// body index, "point": [3] body frame}, {"handle": index} or {"world": [3]}.
nlohmann::json spring_geometry(const Scene& scene);

/// Rigid joints except motor damping (which has no points), same form as spring_geometry.
nlohmann::json joint_geometry(const Scene& scene);

/// Position (m) of every handle at every step: [handle][step][3], read from parameters p (|p|).
nlohmann::json handle_positions(const Scene& scene, const VecX& p);

/// A closed triangle mesh of a rigid shape as in body_geometry()["shape"], in its body frame
/// (m): boxes exactly, spheres, cylinders and capsules tessellated (`segments` around z), mesh
/// shapes as given.
SurfaceMesh rigid_display_mesh(const nlohmann::json& shape, int segments = 24);

}  // namespace addsim
