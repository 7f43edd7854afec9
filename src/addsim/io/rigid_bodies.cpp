// Scene parsers of rigid bodies and joints (docs/scene-format.md, "rigid" bodies and `joints`).
#include <cmath>
#include <filesystem>
#include <limits>
#include <numbers>
#include <optional>

#include "addsim/io/scene_builder.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/rigid/rigid_mesh.h"
#include "addsim/rigid/so3.h"

namespace addsim {

using nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Number of rim points per end of a cylinder's default proxy.
constexpr int kCylinderRimPoints = 12;

// The shape object; for meshes also the vertices about the centroid (body frame). An
// "inertia" shape returns I_B (kg m²) in inertia_per_mass; the caller divides by the mass.
RigidShape parse_shape(const json& j, const std::string& path, const std::string& source,
                       std::vector<Vec3>& mesh_vertices) {
  ObjectReader r(j, path, source);
  const std::string type = r.choice("type", std::nullopt, {"sphere", "box", "cylinder", "capsule", "mesh", "inertia"});
  RigidShape shape;
  if (type == "inertia") {
    // [ixx, iyy, izz, ixy, ixz, iyz] about the centre of mass, body axes.
    const json& v = r.raw("inertia");
    if (!v.is_array() || v.size() != 6) r.fail("inertia", "expected [ixx, iyy, izz, ixy, ixz, iyz] (kg m²), got " + describe(v));
    double c[6];
    for (int k = 0; k < 6; ++k) c[k] = to_number(v[k], source, join_path(path, "inertia." + std::to_string(k)), Bound::kAny);
    Mat3 I;
    I << c[0], c[3], c[4], c[3], c[1], c[5], c[4], c[5], c[2];
    shape = RigidShape::custom(I, 0.0);
  } else if (type == "sphere") {
    shape = RigidShape::sphere(r.number("radius", std::nullopt, Bound::kPositive));
  } else if (type == "box") {
    const Vec3 size = r.vec3("size", std::nullopt);
    if (!(size.minCoeff() > 0.0)) r.fail("size", "side lengths must be > 0");
    shape = RigidShape::box(size);
  } else if (type == "cylinder" || type == "capsule") {
    const double radius = r.number("radius", std::nullopt, Bound::kPositive);
    const double length = r.number("length", std::nullopt, Bound::kPositive);
    shape = type == "cylinder" ? RigidShape::cylinder(radius, length) : RigidShape::capsule(radius, length);
  } else {
    std::filesystem::path file = r.string("file", std::nullopt);
    if (file.is_relative()) file = std::filesystem::path(source).parent_path() / file;
    const double scale = r.number("scale", 1.0, Bound::kPositive);
    SurfaceMesh mesh;
    MeshMassProperties mp;
    try {
      mesh = load_surface_mesh(file.string());
      for (Vec3& x : mesh.vertices) x *= scale;
      mp = mesh_mass_properties(mesh);
    } catch (const InputError& e) {
      r.fail("file", e.what());
    }
    shape = RigidShape::custom(mp.inertia_per_mass, mp.volume);
    for (const Vec3& x : mesh.vertices) mesh_vertices.push_back(x - mp.centroid);
  }
  r.finish();
  return shape;
}

// Default proxy of a shape: the sphere itself, box corners, capsule end spheres, cylinder
// rims or mesh vertices.
std::vector<RigidProxy> default_proxies(const RigidShape& shape, const std::vector<Vec3>& mesh_vertices) {
  switch (shape.kind) {
    case RigidShape::Kind::kSphere: return {RigidProxy::sphere(Vec3::Zero(), shape.radius)};
    case RigidShape::Kind::kBox: return {RigidProxy::box_corners(shape.size)};
    case RigidShape::Kind::kCapsule: {
      const Vec3 e(0.0, 0.0, 0.5 * shape.length);
      return {RigidProxy{{e, -e}, shape.radius}};
    }
    case RigidShape::Kind::kCylinder: {
      std::vector<Vec3> pts;
      for (int k = 0; k < kCylinderRimPoints; ++k) {
        const double phi = 2.0 * std::numbers::pi * k / kCylinderRimPoints;
        for (double z : {-0.5 * shape.length, 0.5 * shape.length})
          pts.emplace_back(shape.radius * std::cos(phi), shape.radius * std::sin(phi), z);
      }
      return {RigidProxy::points(std::move(pts))};
    }
    case RigidShape::Kind::kCustom: return {RigidProxy::points(mesh_vertices)};
  }
  return {};
}

// The `proxies` list, grouped by radius (one contact term per radius).
std::vector<RigidProxy> parse_proxies(ObjectReader& r, const RigidShape& shape, const std::vector<Vec3>& mesh_vertices) {
  if (!r.has("proxies")) return default_proxies(shape, mesh_vertices);
  const json& list = r.list("proxies");
  std::vector<RigidProxy> groups;
  auto add = [&](const std::vector<Vec3>& centers, double radius) {
    for (RigidProxy& g : groups)
      if (g.radius == radius) {
        g.centers_B.insert(g.centers_B.end(), centers.begin(), centers.end());
        return;
      }
    groups.push_back(RigidProxy{centers, radius});
  };
  for (std::size_t k = 0; k < list.size(); ++k) {
    ObjectReader p(list[k], join_path(r.path(), "proxies." + std::to_string(k)), r.source());
    const std::string type = p.choice("type", std::nullopt, {"sphere", "points", "box_corners", "mesh_vertices"});
    if (type == "sphere") {
      const Vec3 c = p.vec3("center", Vec3::Zero());
      add({c}, p.number("radius", std::nullopt, Bound::kPositive));
    } else if (type == "points") {
      add(p.vec3_list("points"), 0.0);
    } else if (type == "box_corners") {
      if (shape.kind != RigidShape::Kind::kBox) p.fail("type", "box_corners needs a box shape");
      add(RigidProxy::box_corners(shape.size).centers_B, 0.0);
    } else {
      if (shape.kind != RigidShape::Kind::kCustom) p.fail("type", "mesh_vertices needs a mesh shape");
      add(mesh_vertices, 0.0);
    }
    p.finish();
  }
  return groups;
}

}  // namespace

void parse_rigid_body(ObjectReader& r, int index, SceneBuilder& b) {
  const std::string name = r.string("name", "");
  std::vector<Vec3> mesh_vertices;
  RigidShape shape = parse_shape(r.raw("shape"), join_path(r.path(), "shape"), r.source(), mesh_vertices);
  if (r.has("mass") == r.has("density")) r.fail("mass", "give exactly one of mass (kg) and density (kg/m³)");
  const RigidMassSpec mass = r.has("mass") ? RigidMassSpec::from_mass(r.number("mass", std::nullopt, Bound::kPositive))
                                           : RigidMassSpec::from_density(r.number("density", std::nullopt, Bound::kPositive));
  if (shape.kind == RigidShape::Kind::kCustom && mesh_vertices.empty()) {
    // An "inertia" shape: Î_B = I_B / m needs the mass itself.
    if (!r.has("mass")) r.fail("density", "an \"inertia\" shape needs \"mass\" (it has no volume)");
    shape.inertia_per_mass /= mass.mass;
    try {
      shape.unit_inertia();
    } catch (const InputError& e) {
      fail_at(r.source(), join_path(r.path(), "shape.inertia"), e.what());
    }
  }
  RigidInit init;
  init.position = r.vec3("position", Vec3::Zero());
  init.orientation = r.vec3("orientation", Vec3::Zero());
  init.velocity = r.vec3("velocity", Vec3::Zero());
  init.angular_velocity = r.vec3("angular_velocity", Vec3::Zero());
  const bool kinematic = r.boolean("kinematic", false);
  if (kinematic) {
    // Poses per step: given, or p + v t and θ + θ̇ t (angular_velocity taken as θ̇).
    const TimeScheme& s = b.model->scheme();
    std::vector<Eigen::Matrix<double, 6, 1>> poses;
    if (r.has("poses")) {
      const json& list = r.raw("poses");
      if (!list.is_array() || static_cast<int>(list.size()) != s.steps + 1)
        r.fail("poses", "needs steps + 1 = " + std::to_string(s.steps + 1) + " rows, got " + describe(list));
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string rp = join_path(r.path(), "poses." + std::to_string(i));
        if (!list[i].is_array() || list[i].size() != 6) fail_at(r.source(), rp, "expected [x, y, z, θx, θy, θz]");
        Eigen::Matrix<double, 6, 1> row;
        for (int c = 0; c < 6; ++c) row[c] = to_number(list[i][c], r.source(), rp + "." + std::to_string(c), Bound::kAny);
        poses.push_back(row);
      }
    } else {
      for (int i = 0; i <= s.steps; ++i) {
        Eigen::Matrix<double, 6, 1> row;
        row << init.position + init.velocity * (i * s.h), init.orientation + init.angular_velocity * (i * s.h);
        poses.push_back(row);
      }
    }
    if (r.has("proxies")) r.fail("proxies", "kinematic rigid bodies have no contact proxies");
    try {
      add_kinematic_rigid_body(*b.model, name, shape, mass, poses);
    } catch (const InputError& e) {
      fail_at(r.source(), r.path(), e.what());
    }
    b.scene->bodies.push_back({name, "rigid", "bodies." + std::to_string(index)});
    b.points.push_back({});
    return;
  }
  std::vector<RigidProxy> proxies = parse_proxies(r, shape, mesh_vertices);
  RigidProxy first = proxies.empty() ? RigidProxy{} : proxies.front();
  int body = -1;
  try {
    body = add_rigid_body(*b.model, name, shape, mass, init, first, b.gravity, b.obstacles, b.contact);
  } catch (const InputError& e) {
    fail_at(r.source(), r.path(), e.what());
  }
  const RigidBody* rb = &rigid_body(*b.model, body);
  for (std::size_t k = 1; k < proxies.size() && !b.obstacles.empty(); ++k)
    b.model->add_term(std::make_unique<RigidContactTerm>(rb, proxies[k], b.obstacles, b.contact));
  b.scene->bodies.push_back({name, "rigid", "bodies." + std::to_string(index)});
  b.points.push_back({});
}

namespace {

// One end of a joint.
struct JointEnd {
  const RigidBody* rigid = nullptr;
  int particle_dof = -1;
  std::optional<EmbeddedPoint> embedded;  ///< a point embedded in an FEM tet
  int handle = -1;
  Vec3 point = Vec3::Zero();    ///< body frame (rigid) or world (world point), m
  Vec3 initial = Vec3::Zero();  ///< initial world position, m
  Mat3 R0 = Mat3::Identity();   ///< initial rotation of a rigid end
  Vec3 p0 = Vec3::Zero();       ///< initial centre of mass of a rigid end, m
  bool has_point = false;       ///< a rigid end's "point" was given
};

int resolve(const json& v, const std::vector<std::string>& names, const std::string& what, const std::string& source,
            const std::string& path) {
  if (v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() < static_cast<long long>(names.size()))
    return v.get<int>();
  if (v.is_string())
    for (std::size_t k = 0; k < names.size(); ++k)
      if (!names[k].empty() && names[k] == v.get<std::string>()) return static_cast<int>(k);
  fail_at(source, path, "no " + what + " " + describe(v));
}

JointEnd parse_end(const json& v, const std::string& path, SceneBuilder& b, const std::vector<Vec3>& handle_initial) {
  ObjectReader r(v, path, b.source);
  if (int(r.has("body")) + int(r.has("handle")) + int(r.has("world")) != 1)
    fail_at(b.source, path, "a joint anchor needs exactly one of \"body\", \"handle\", \"world\"");
  JointEnd e;
  const VecX p0 = b.model->params().defaults();
  if (r.has("body")) {
    std::vector<std::string> names;
    for (const SceneBody& sb : b.scene->bodies) names.push_back(sb.name);
    const int body = resolve(r.raw("body"), names, "body", b.source, join_path(path, "body"));
    if (has_embedded_keys(r)) {
      e.embedded = parse_embedded_point(r, body, b);
      e.initial = e.embedded->initial;
    } else if (b.model->bodies()[body]->kind() == BodyKind::kRigid) {
      e.rigid = &rigid_body(*b.model, body);
      e.has_point = r.has("point");
      e.point = r.vec3("point", Vec3::Zero());
      VecX q0, v0;
      q0.setZero(b.model->num_dofs());
      v0.setZero(b.model->num_dofs());
      e.rigid->initial_state(p0, q0, v0);
      e.R0 = e.rigid->rotation(q0);
      e.p0 = q0.segment<3>(e.rigid->dof());
      e.initial = e.p0 + e.R0 * e.point;
    } else {
      const BodyPoints& pts = b.points[body];
      const json& pv = r.raw("point");
      if (!pv.is_number_integer() || pv.get<long long>() < 0 ||
          pv.get<long long>() >= static_cast<long long>(pts.dofs.size()))
        r.fail("point", "expected a point index in [0, " + std::to_string(pts.dofs.size()) + "), got " + describe(pv));
      e.particle_dof = pts.dofs[pv.get<int>()];
      e.initial = pts.initial[pv.get<int>()];
    }
  } else if (r.has("handle")) {
    std::vector<std::string> names;
    for (const Handle& h : b.model->handles()) names.push_back(h.name);
    e.handle = resolve(r.raw("handle"), names, "handle", b.source, join_path(path, "handle"));
    e.initial = handle_initial[e.handle];
  } else {
    e.point = r.vec3("world", std::nullopt);
    e.initial = e.point;
  }
  r.finish();
  return e;
}

}  // namespace

void parse_joints(ObjectReader& top, SceneBuilder& b, const std::vector<Vec3>& handle_initial) {
  const json& list = top.list("joints");
  if (list.empty()) return;
  std::vector<RigidJoint> joints;
  std::vector<std::string> names;
  const TimeScheme& s = b.model->scheme();
  ParameterTable& params = b.model->params();
  for (std::size_t k = 0; k < list.size(); ++k) {
    ObjectReader r(list[k], "joints." + std::to_string(k), b.source);
    const std::string type =
        r.choice("type", std::nullopt, {"ball", "distance", "unilateral", "hinge", "motor", "motor_damping"});
    const std::string name = r.string("name", "");
    check_name(r, name, names);
    const std::string base = "joints." + std::to_string(k);
    const std::string alias = "joints." + (name.empty() ? std::to_string(k) : name);
    auto add1 = [&](const char* key, double value, ParamKind kind, double lower) {
      return params.add(base + "." + key, alias + "." + key, kind, VecX::Constant(1, value), 1, 1, lower, kInf);
    };
    const json& anchors = r.raw("anchors");
    if (!anchors.is_array() || anchors.size() != 2)
      r.fail("anchors", "expected a list of 2 anchors, got " + describe(anchors));
    const std::string apath = join_path(r.path(), "anchors");
    JointEnd ea = parse_end(anchors[0], apath + ".0", b, handle_initial);
    JointEnd eb = parse_end(anchors[1], apath + ".1", b, handle_initial);
    // The rigid anchor becomes a; a motor angle stays "second anchor relative to the first"
    // by flipping the axis when the anchors are swapped.
    const bool swapped = !ea.rigid;
    if (swapped) std::swap(ea, eb);
    if (!ea.rigid) r.fail("anchors", "at least one anchor must be on a rigid body");
    // A rigid anchor without "point" coupled to a particle, node, embedded, handle or world point
    // sits where that anchor starts, so the joint starts unstretched.
    if (!ea.has_point && !eb.rigid && type != "motor_damping") {
      ea.point = ea.R0.transpose() * (eb.initial - ea.p0);
      ea.initial = eb.initial;
    }
    RigidJoint j;
    j.label = base;
    j.body_a = ea.rigid;
    j.body_b = eb.rigid;
    j.particle_b = eb.particle_dof;
    if (eb.embedded) {
      j.tet_b = eb.embedded->dofs;
      j.bary_b = eb.embedded->weights;
    }
    j.handle_b = eb.handle;
    j.point_a = ea.point;
    j.point_b = eb.point;
    using K = RigidJoint::Kind;
    j.kind = type == "ball"         ? K::kZeroLength
             : type == "distance"   ? K::kDistance
             : type == "unilateral" ? K::kUnilateral
             : type == "hinge"      ? K::kHinge
             : type == "motor"      ? K::kMotor
                                    : K::kMotorDamping;
    if (j.kind == K::kMotorDamping) {
      j.damping_param = add1("damping", r.number("damping", std::nullopt, Bound::kNonNegative), ParamKind::kCoupling, 0.0);
    } else {
      j.stiffness_param = add1("stiffness", r.number("stiffness", std::nullopt, Bound::kNonNegative),
                               ParamKind::kCoupling, 0.0);
    }
    if (j.kind == K::kDistance || j.kind == K::kUnilateral)
      j.rest_length = r.number("rest_length", (ea.initial - eb.initial).norm(), Bound::kNonNegative);
    if (j.kind == K::kHinge || j.kind == K::kMotor) {
      // World axis at t = 0, expressed in both body frames.
      const Vec3 axis = r.vec3("axis", std::nullopt);
      if (!(axis.norm() > 0.0)) r.fail("axis", "must be non-zero");
      const Vec3 n = swapped ? Vec3(-axis.normalized()) : Vec3(axis.normalized());
      j.axis_a = ea.R0.transpose() * n;
      j.axis_b = eb.R0.transpose() * n;
      j.axis_stiffness_param = add1("axis_stiffness", r.number("axis_stiffness", std::nullopt, Bound::kNonNegative),
                                    ParamKind::kCoupling, 0.0);
      if (j.kind == K::kMotor) {
        // Reference direction ⊥ axis at t = 0; α = 0 is the initial relative pose.
        const Vec3 helper = std::abs(n.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
        const Vec3 ref = (helper - helper.dot(n) * n).normalized();
        j.ref_a = ea.R0.transpose() * ref;
        j.ref_b = eb.R0.transpose() * ref;
        j.motor_stiffness_param = add1("motor_stiffness", r.number("motor_stiffness", std::nullopt, Bound::kNonNegative),
                                       ParamKind::kCoupling, 0.0);
        if (r.has("target_angles")) {
          if (r.has("target_angle")) r.fail("target_angles", "give either target_angle or target_angles");
          const json& a = r.raw("target_angles");
          if (!a.is_array() || static_cast<int>(a.size()) != s.steps + 1)
            r.fail("target_angles", "needs steps + 1 = " + std::to_string(s.steps + 1) + " numbers, got " + describe(a));
          VecX values(s.steps + 1);
          for (int i = 0; i <= s.steps; ++i)
            values[i] = to_number(a[i], b.source, join_path(r.path(), "target_angles." + std::to_string(i)), Bound::kAny);
          j.target_param = params.add(base + ".target_angles", alias + ".target_angles", ParamKind::kControl, values,
                                      s.steps + 1, 1);
          j.per_step_target = true;
        } else {
          j.target_param = params.add(base + ".target_angle", alias + ".target_angle", ParamKind::kControl,
                                      VecX::Constant(1, r.number("target_angle", 0.0)), 1, 1);
        }
      }
    }
    const bool point_b = j.particle_b >= 0 || eb.embedded || j.handle_b >= 0;
    if (j.kind == K::kMotorDamping && point_b)
      r.fail("anchors", "motor damping couples a rigid body to a rigid body or the world");
    if ((j.kind == K::kHinge || j.kind == K::kMotor) && point_b)
      r.fail("anchors", "hinges and motors couple a rigid body to a rigid body or the world");
    r.finish();
    joints.push_back(j);
  }
  b.model->add_term(std::make_unique<RigidJointTerm>(std::move(joints), b.model));
}

}  // namespace addsim
