#pragma once
/// Internal to io: the state shared by the scene parser and the per-type body parsers.
/// A body type is one entry of the table returned by body_parsers() (type name → parse
/// function); new types (fem, rigid) add an entry and their own .cpp file.

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "addsim/io/json_reader.h"
#include "addsim/io/scene.h"
#include "addsim/terms/contact_term.h"
#include "addsim/terms/obstacle.h"
#include "addsim/terms/spring_term.h"

namespace addsim {

/// Per scene body: the points that springs can attach to and contact can touch.
struct BodyPoints {
  std::vector<DofIndex> dofs;  ///< global DOF of the x coordinate of each point
  std::vector<Vec3> initial;   ///< initial position of each point, m
};

/// A point embedded in a tet of an FEM body (an anchor): x = Σ_m weights[m] x_{dofs[m]}.
struct EmbeddedPoint {
  std::array<DofIndex, 4> dofs{};   ///< global DOF of the x coordinate of each tet node
  std::array<double, 4> weights{};  ///< barycentric coordinates b_m (Σ b_m = 1)
  Vec3 initial = Vec3::Zero();      ///< initial position, m
};

/// Everything a body parser may read or add to while a scene is being built.
struct SceneBuilder {
  Scene* scene = nullptr;
  Model* model = nullptr;
  std::string source;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);                    ///< m/s²
  ContactSettings contact;                                 ///< parameter indices of k_n, k_d, k_t
  std::vector<std::shared_ptr<const Obstacle>> obstacles;  ///< all scene obstacles
  std::vector<BodyPoints> points;                          ///< parallel to model->bodies()
  std::vector<Spring> springs;                             ///< collected for the one SpringTerm

  /// Adds a particle body with its inertia, gravity and (if any obstacles) contact terms.
  int add_particle_body(const std::string& name, const std::string& type, const std::vector<Vec3>& positions,
                        const std::vector<Vec3>& velocities, const std::vector<double>& masses);
};

/// Checks the `name` of a list entry (body, obstacle, handle, spring, joint) that `reader`
/// read: a name is optional, but one given must be usable as a key path segment and in one-line
/// messages and CSV headers — not empty, no '.', not a number, no control character (NUL, tab,
/// newline) — and unique among `seen`, to which it is added. InputError at `name` otherwise.
void check_name(ObjectReader& reader, const std::string& name, std::vector<std::string>& seen);

/// Parses the body object `reader` (at "bodies.<index>") into the builder.
using BodyParser = std::function<void(ObjectReader& reader, int index, SceneBuilder& builder)>;

/// Body type name → parser.
const std::map<std::string, BodyParser>& body_parsers();

/// Parsers of the particle-based types (particle_bodies.cpp).
void parse_particles_body(ObjectReader& reader, int index, SceneBuilder& builder);
void parse_sheet_body(ObjectReader& reader, int index, SceneBuilder& builder);
/// Parser of "rigid" bodies (rigid_bodies.cpp).
void parse_rigid_body(ObjectReader& reader, int index, SceneBuilder& builder);
/// Parses the top-level `joints` list (rigid couplings, rigid_bodies.cpp) into one RigidJointTerm.
void parse_joints(ObjectReader& top, SceneBuilder& builder, const std::vector<Vec3>& handle_initial);
/// Parser of "urdf" robots (urdf_bodies.cpp, docs/robots.md): one model body per group of links
/// welded by fixed joints, hinge / motor joints between them.
void parse_urdf_body(ObjectReader& reader, int index, SceneBuilder& builder);
/// Parser of the FEM soft-body type (fem_bodies.cpp, docs/scene-format.md).
void parse_fem_body(ObjectReader& reader, int index, SceneBuilder& builder);
/// True if the anchor object uses an embedded form ("embedded", "tet" or "barycentric").
bool has_embedded_keys(ObjectReader& anchor);
/// Parses the embedded forms of an anchor on body `body` (fem_bodies.cpp, docs/scene-format.md):
/// {"embedded": [x, y, z]}, a point in the body's initial placement located in its tets, or
/// {"tet": e, "barycentric": [b0, b1, b2, b3]}. InputError naming the key path otherwise.
EmbeddedPoint parse_embedded_point(ObjectReader& anchor, int body, const SceneBuilder& builder);

}  // namespace addsim
