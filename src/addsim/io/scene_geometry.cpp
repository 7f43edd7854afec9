#include "addsim/io/scene_geometry.h"

#include <cmath>
#include <filesystem>
#include <numbers>

#include "addsim/core/error.h"
#include "addsim/fem/fem_view.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/rigid/rigid_mesh.h"
#include "addsim/terms/obstacle.h"
#include "addsim/terms/spring_term.h"

namespace addsim {

using nlohmann::json;

namespace {

json vec(const Vec3& x) { return json::array({x.x(), x.y(), x.z()}); }

// Index of `body` in the model's body list.
int body_index(const Model& model, const Body* body) {
  for (std::size_t k = 0; k < model.bodies().size(); ++k)
    if (model.bodies()[k].get() == body) return static_cast<int>(k);
  ADDSIM_CHECK(false, "scene_geometry: a term refers to a body outside the model");
  return -1;
}

json anchor_ref(const Anchor& a) {
  switch (a.kind) {
    case Anchor::Kind::kParticle:
    case Anchor::Kind::kEmbedded: {
      json dofs = json::array(), weights = json::array();
      for (int m = 0; m < a.num_nodes(); ++m) {
        dofs.push_back(a.node_dof(m));
        weights.push_back(a.node_weight(m));
      }
      return {{"dofs", dofs}, {"weights", weights}};
    }
    case Anchor::Kind::kHandle: return {{"handle", a.handle}};
    case Anchor::Kind::kWorld: return {{"world", vec(a.world)}};
  }
  return {};
}

// The rigid shape as given in the scene, plus the mesh (body frame, about the centroid) of a
// "mesh" shape, loaded again from its file exactly as rigid_bodies.cpp does.
json rigid_shape(const Scene& scene, std::size_t k) {
  const json& spec = scene.json.at("bodies").at(k).at("shape");
  json shape = spec;
  if (spec.value("type", "") == "mesh") {
    std::filesystem::path file = spec.at("file").get<std::string>();
    if (file.is_relative()) file = std::filesystem::path(scene.source).parent_path() / file;
    SurfaceMesh mesh = load_surface_mesh(file.string());
    const double scale = spec.value("scale", 1.0);
    for (Vec3& x : mesh.vertices) x *= scale;
    const Vec3 centroid = mesh_mass_properties(mesh).centroid;
    json vertices = json::array(), triangles = json::array();
    for (const Vec3& x : mesh.vertices) vertices.push_back(vec(x - centroid));
    for (const auto& t : mesh.triangles) triangles.push_back(t);
    shape["vertices"] = vertices;
    shape["triangles"] = triangles;
  }
  return shape;
}

}  // namespace

json body_geometry(const Scene& scene, std::size_t k) {
  const Model& model = *scene.model;
  const Body& body = *model.bodies()[k];
  json g;
  if (const auto fem = fem_mesh_view(body)) {
    g["kind"] = "fem";
    g["num_nodes"] = fem->num_nodes;
    g["surface_triangles"] = *fem->surface_faces;
    g["tets"] = *fem->tets;
  } else if (body.kind() == BodyKind::kParticles) {
    const auto& pb = static_cast<const ParticleBody&>(body);
    g["count"] = pb.count();
    g["kind"] = "points";
    if (scene.bodies[k].type == "sheet") {
      // Particles are row-major on an nx × ny grid (particle_bodies.cpp): two triangles per cell.
      const json& res = scene.json.at("bodies").at(k).at("resolution");
      const int nx = res.at(0).get<int>(), ny = res.at(1).get<int>();
      json triangles = json::array();
      for (int iy = 0; iy + 1 < ny; ++iy)
        for (int ix = 0; ix + 1 < nx; ++ix) {
          const int i = ix + nx * iy;
          triangles.push_back({i, i + 1, i + nx + 1});
          triangles.push_back({i, i + nx + 1, i + nx});
        }
      g["kind"] = "sheet";
      g["grid"] = {nx, ny};
      g["triangles"] = triangles;
    }
  } else if (body.kind() == BodyKind::kRigid) {
    const auto& rb = static_cast<const RigidBody&>(body);
    g["kind"] = "rigid";
    g["kinematic"] = rb.kinematic();
    // A robot link (docs/robots.md) has no scene "shape" of its own (scene body k is not the
    // scene's bodies[k]); it is shown as the sphere of its inertia, tr Î = 6/5 r² for a solid ball.
    if (scene.bodies[k].type == "urdf")
      g["shape"] = {{"type", "sphere"}, {"radius", std::sqrt(5.0 * rb.unit_inertia().trace() / 6.0)}};
    else
      g["shape"] = rigid_shape(scene, k);
    json proxies = json::array();
    for (const auto& term : model.terms())
      if (const auto* c = dynamic_cast<const RigidContactTerm*>(term.get()); c && &c->body() == &rb) {
        json centers = json::array();
        for (const Vec3& x : c->proxy().centers_B) centers.push_back(vec(x));
        proxies.push_back({{"centers", centers}, {"radius", c->proxy().radius}});
      }
    g["proxies"] = proxies;
  }
  return g;
}

json obstacle_geometry(const Scene& scene) {
  json list = json::array();
  const json& obstacles = scene.json.contains("obstacles") ? scene.json.at("obstacles") : json::array();
  for (std::size_t k = 0; k < obstacles.size(); ++k) {
    // The scene is validated: every obstacle is a plane with these defaults (scene.cpp).
    const json& o = obstacles[k];
    Vec3 point = Vec3::Zero(), normal = Vec3::UnitZ();
    if (o.contains("point")) point = Vec3(o["point"][0].get<double>(), o["point"][1].get<double>(), o["point"][2].get<double>());
    if (o.contains("normal"))
      normal = Vec3(o["normal"][0].get<double>(), o["normal"][1].get<double>(), o["normal"][2].get<double>());
    list.push_back({{"name", o.value("name", "obstacles." + std::to_string(k))},
                    {"type", "plane"},
                    {"point", vec(point)},
                    {"normal", vec(normal.normalized())}});
  }
  return list;
}

json spring_geometry(const Scene& scene) {
  json list = json::array();
  for (const auto& term : scene.model->terms())
    if (const auto* s = dynamic_cast<const SpringTerm*>(term.get()))
      for (const Spring& spring : s->springs())
        list.push_back({{"type", to_string(spring.kind)}, {"a", anchor_ref(spring.a)}, {"b", anchor_ref(spring.b)}});
  return list;
}

json joint_geometry(const Scene& scene) {
  const Model& model = *scene.model;
  json list = json::array();
  using K = RigidJoint::Kind;
  for (const auto& term : model.terms()) {
    const auto* jt = dynamic_cast<const RigidJointTerm*>(term.get());
    if (!jt) continue;
    for (const RigidJoint& j : jt->joints()) {
      if (j.kind == K::kMotorDamping) continue;
      const char* type = j.kind == K::kZeroLength ? "ball"
                         : j.kind == K::kHinge    ? "hinge"
                         : j.kind == K::kDistance ? "distance"
                         : j.kind == K::kUnilateral ? "unilateral"
                                                    : "motor";
      const json a = {{"rigid", body_index(model, j.body_a)}, {"point", vec(j.point_a)}};
      json b;
      if (j.body_b) {
        b = {{"rigid", body_index(model, j.body_b)}, {"point", vec(j.point_b)}};
      } else if (j.particle_b >= 0) {
        b = {{"dofs", {j.particle_b}}, {"weights", {1.0}}};
      } else if (j.tet_b[0] >= 0) {
        b = {{"dofs", j.tet_b}, {"weights", j.bary_b}};
      } else if (j.handle_b >= 0) {
        b = {{"handle", j.handle_b}};
      } else {
        b = {{"world", vec(j.point_b)}};
      }
      list.push_back({{"type", type}, {"a", a}, {"b", b}});
    }
  }
  return list;
}

json handle_positions(const Scene& scene, const VecX& p) {
  const Model& model = *scene.model;
  json list = json::array();
  for (const Handle& h : model.handles()) {
    json rows = json::array();
    for (int i = 0; i <= model.scheme().steps; ++i) {
      const int at = h.positions_param + 3 * i;
      rows.push_back({p[at], p[at + 1], p[at + 2]});
    }
    list.push_back(rows);
  }
  return list;
}

SurfaceMesh rigid_display_mesh(const json& shape, int segments) {
  SurfaceMesh m;
  const std::string type = shape.at("type").get<std::string>();
  auto vertex = [&](double x, double y, double z) {
    m.vertices.emplace_back(x, y, z);
    return static_cast<int>(m.vertices.size()) - 1;
  };
  if (type == "box") {
    const double hx = 0.5 * shape.at("size")[0].get<double>(), hy = 0.5 * shape.at("size")[1].get<double>(),
                 hz = 0.5 * shape.at("size")[2].get<double>();
    for (int k = 0; k < 8; ++k) vertex(k & 1 ? hx : -hx, k & 2 ? hy : -hy, k & 4 ? hz : -hz);
    // Two counter-clockwise (outward) triangles per face.
    const int quads[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
    for (const auto& q : quads) {
      m.triangles.push_back({q[0], q[1], q[2]});
      m.triangles.push_back({q[0], q[2], q[3]});
    }
    return m;
  }
  if (type == "mesh") {
    for (const json& v : shape.at("vertices")) vertex(v[0].get<double>(), v[1].get<double>(), v[2].get<double>());
    for (const json& t : shape.at("triangles")) m.triangles.push_back({t[0].get<int>(), t[1].get<int>(), t[2].get<int>()});
    return m;
  }
  // Surfaces of revolution about z: rings of (radius, z) from the bottom pole to the top pole.
  const double r = shape.at("radius").get<double>();
  const double half = type == "sphere" ? 0.0 : 0.5 * shape.at("length").get<double>();
  std::vector<std::pair<double, double>> rings;
  if (type == "cylinder") {
    rings = {{r, -half}, {r, half}};
  } else {
    const int arc = std::max(2, segments / 4);  // rings per quarter circle of a cap
    for (int k = -arc + 1; k <= 0; ++k) {
      const double a = 0.5 * std::numbers::pi * k / arc;
      rings.emplace_back(r * std::cos(a), -half + r * std::sin(a));
    }
    for (int k = 0; k < arc; ++k) {
      const double a = 0.5 * std::numbers::pi * k / arc;
      rings.emplace_back(r * std::cos(a), half + r * std::sin(a));
    }
  }
  const double bottom = type == "cylinder" ? -half : -half - r, top = type == "cylinder" ? half : half + r;
  const int south = vertex(0.0, 0.0, bottom);
  std::vector<int> first;
  for (const auto& [rr, z] : rings) {
    first.push_back(static_cast<int>(m.vertices.size()));
    for (int s = 0; s < segments; ++s) {
      const double phi = 2.0 * std::numbers::pi * s / segments;
      vertex(rr * std::cos(phi), rr * std::sin(phi), z);
    }
  }
  const int north = vertex(0.0, 0.0, top);
  for (int s = 0; s < segments; ++s) {
    const int s1 = (s + 1) % segments;
    m.triangles.push_back({south, first.front() + s1, first.front() + s});
    for (std::size_t k = 0; k + 1 < first.size(); ++k) {
      m.triangles.push_back({first[k] + s, first[k] + s1, first[k + 1] + s1});
      m.triangles.push_back({first[k] + s, first[k + 1] + s1, first[k + 1] + s});
    }
    m.triangles.push_back({north, first.back() + s, first.back() + s1});
  }
  return m;
}

}  // namespace addsim
