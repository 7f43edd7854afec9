// Scene parser of "urdf" bodies: a robot from a URDF file (parsed by urdfdom) as rigid
// bodies coupled by hinge / motor joints (docs/robots.md, docs/scene-format.md).
//
// Mapping: links joined by fixed joints form one rigid body (masses, centres of mass and
// inertia tensors merged exactly); the body frame is the group's root link frame moved to
// the group's centre of mass. Revolute and continuous joints become RigidJoint hinges (or
// motors when actuated) with the URDF joint angle as the motor angle α, prismatic joints
// sliders with the URDF joint position as the slide σ; URDF limits become unilateral
// angle / slide limits.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <numbers>
#include <set>
#include <sstream>

#include <console_bridge/console.h>
#include <urdf_parser/urdf_parser.h>

#include "addsim/io/scene_builder.h"
#include "addsim/rigid/rigid_builder.h"
#include "addsim/rigid/rigid_joints.h"
#include "addsim/rigid/rigid_mesh.h"
#include "addsim/rigid/so3.h"

namespace addsim {

using nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Rim points per end of a URDF cylinder's contact proxy (as for scene cylinders).
constexpr int kCylinderRimPoints = 12;

// Defaults of the penalty couplings (docs/robots.md): the ball part of a hinge (N/m) and
// the axis alignment (N m).
constexpr double kDefaultJointStiffness = 1e5;
constexpr double kDefaultAxisStiffness = 1e4;
// Default stiffness of the joint-limit penalty (N m/rad): the KR5's shoulder carries about
// 75 N m of gravity torque, which overshoots a limit by 7.5 mrad.
constexpr double kDefaultLimitStiffness = 1e4;
// Default stiffness of a prismatic joint's limit penalty (N/m).
constexpr double kDefaultSlideLimitStiffness = 1e5;

// urdfdom reports why it rejects a file only through console_bridge's log; this handler
// keeps the first error so that the InputError can name it (one line).
class CaptureErrors final : public console_bridge::OutputHandler {
 public:
  void log(const std::string& text, console_bridge::LogLevel level, const char*, int) override {
    if (level >= console_bridge::CONSOLE_BRIDGE_LOG_ERROR && first_.empty()) first_ = text;
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// Parses URDF text; on failure returns null and sets `why` to urdfdom's first error.
urdf::ModelInterfaceSharedPtr parse_urdf_text(const std::string& text, std::string& why) {
  // console_bridge's handler is process-global.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  CaptureErrors capture;
  console_bridge::useOutputHandler(&capture);
  urdf::ModelInterfaceSharedPtr model;
  try {
    model = urdf::parseURDF(text);
  } catch (const std::exception& e) {
    why = e.what();
  }
  console_bridge::restorePreviousOutputHandler();
  if (!model && why.empty()) why = capture.first().empty() ? "not a valid URDF document" : capture.first();
  for (char& c : why)
    if (c == '\n') c = ' ';
  return model;
}

// A rigid transform x ↦ R x + p.
struct Frame {
  Mat3 R = Mat3::Identity();
  Vec3 p = Vec3::Zero();
  Frame operator*(const Frame& o) const { return {R * o.R, R * o.p + p}; }
  Vec3 operator*(const Vec3& x) const { return R * x + p; }
};

Frame to_frame(const urdf::Pose& pose) {
  Frame f;
  const urdf::Rotation& q = pose.rotation;
  f.R = Eigen::Quaterniond(q.w, q.x, q.y, q.z).normalized().toRotationMatrix();
  f.p = Vec3(pose.position.x, pose.position.y, pose.position.z);
  return f;
}

Vec3 to_vec3(const urdf::Vector3& v) { return {v.x, v.y, v.z}; }

// A unit vector perpendicular to the unit vector n.
Vec3 perpendicular(const Vec3& n) {
  const Vec3 helper = std::abs(n.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
  return (helper - helper.dot(n) * n).normalized();
}

// Rotation vector of R (angle in [0, π]).
Vec3 rotation_vector(const Mat3& R) {
  const Eigen::AngleAxisd aa(R);
  return aa.angle() * aa.axis();
}

// Model names must not contain '.', which separates key-path components.
std::string sanitize(std::string name) {
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

// A group of links welded by fixed joints: one rigid body.
struct LinkGroup {
  std::string root;               // link whose frame orients the body
  std::vector<std::string> links;
  double mass = 0.0;              // kg
  Vec3 com_L = Vec3::Zero();      // centre of mass in the root link frame, m
  Mat3 inertia_L = Mat3::Zero();  // about com_L, root link axes, kg m²
  int body = -1;                  // model body index, −1: welded to the world
};

// The parsed URDF and what the loader derives from it; fail() names the robot's key path.
struct RobotParser {
  ObjectReader& r;
  std::string file;
  urdf::ModelInterfaceSharedPtr urdf;
  std::map<std::string, int> group_of;           // link → group
  std::map<std::string, Frame> link_in_group;    // link frame in its group's root link frame
  std::map<std::string, Frame> link_world;       // link frame in the world at t = 0
  std::vector<LinkGroup> groups;
  std::vector<urdf::JointConstSharedPtr> joints; // movable joints, tree order

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    r.fail(key, file + ": " + message);
  }

  // Groups by a depth-first walk from the root; movable joints start new groups.
  void build_groups(const urdf::LinkConstSharedPtr& link, int group, const Frame& in_group) {
    group_of[link->name] = group;
    link_in_group[link->name] = in_group;
    groups[group].links.push_back(link->name);
    for (const urdf::JointSharedPtr& j : link->child_joints) {
      const urdf::LinkConstSharedPtr child = urdf->getLink(j->child_link_name);
      const Frame origin = to_frame(j->parent_to_joint_origin_transform);
      switch (j->type) {
        case urdf::Joint::FIXED: build_groups(child, group, in_group * origin); break;
        case urdf::Joint::REVOLUTE:
        case urdf::Joint::CONTINUOUS:
        case urdf::Joint::PRISMATIC: {
          if (to_vec3(j->axis).norm() == 0.0) fail("file", "joint '" + j->name + "' has a zero axis");
          joints.push_back(j);
          groups.push_back({child->name, {}, 0.0, Vec3::Zero(), Mat3::Zero(), -1});
          build_groups(child, static_cast<int>(groups.size()) - 1, Frame{});
          break;
        }
        default: {
          const char* type = j->type == urdf::Joint::FLOATING ? "floating"
                             : j->type == urdf::Joint::PLANAR ? "planar"
                                                              : "unknown";
          fail("file", "joint '" + j->name + "' has type " + type +
                           " (supported: revolute, continuous, prismatic, fixed; docs/robots.md)");
        }
      }
    }
  }

  // A link's mass (kg), centre-of-mass frame in the link frame and inertia (kg m², in that
  // frame): from <inertial>, else — when `mesh_density` (kg/m³) > 0 — from its first
  // collision (else visual) mesh as a uniform solid; mass 0 if neither.
  struct LinkInertia {
    double mass = 0.0;
    Frame frame;
    Mat3 inertia = Mat3::Zero();
  };
  LinkInertia link_inertia(const std::string& name, double mesh_density) const {
    const urdf::LinkConstSharedPtr link = urdf->getLink(name);
    LinkInertia out;
    if (const urdf::InertialSharedPtr& in = link->inertial) {
      if (!(in->mass > 0.0) || !std::isfinite(in->mass))
        fail("file", "link '" + name + "' has mass " + std::to_string(in->mass) + " (must be > 0)");
      out.mass = in->mass;
      out.frame = to_frame(in->origin);
      out.inertia << in->ixx, in->ixy, in->ixz, in->ixy, in->iyy, in->iyz, in->ixz, in->iyz, in->izz;
      return out;
    }
    if (!(mesh_density > 0.0)) return out;
    const urdf::Mesh* mesh = nullptr;
    urdf::Pose origin;
    for (const auto& c : link->collision_array)
      if (!mesh && c && c->geometry && c->geometry->type == urdf::Geometry::MESH) {
        mesh = static_cast<const urdf::Mesh*>(c->geometry.get());
        origin = c->origin;
      }
    for (const auto& v : link->visual_array)
      if (!mesh && v && v->geometry && v->geometry->type == urdf::Geometry::MESH) {
        mesh = static_cast<const urdf::Mesh*>(v->geometry.get());
        origin = v->origin;
      }
    if (!mesh) return out;
    const std::string path = resolve_mesh(mesh->filename);
    MeshMassProperties mp;
    try {
      SurfaceMesh m = load_surface_mesh(path);
      for (Vec3& x : m.vertices) x = x.cwiseProduct(to_vec3(mesh->scale));
      mp = mesh_mass_properties(m);
    } catch (const InputError& e) {
      fail("mesh_density", "link '" + name + "' has no <inertial> and its mesh " + mesh->filename + " gives none: " + e.what());
    }
    out.mass = mesh_density * mp.volume;
    out.frame = to_frame(origin);
    out.frame.p = out.frame * mp.centroid;  // centroid frame: mesh axes, at the centroid
    out.inertia = out.mass * mp.inertia_per_mass;
    return out;
  }

  // A mesh file name of the URDF: "package://<pkg>/<rest>" looks for <rest> next to the URDF
  // file and up to three folders above it, "file://<path>" is a path, anything else is
  // relative to the URDF file.
  std::string resolve_mesh(const std::string& name) const {
    const std::filesystem::path dir = std::filesystem::path(file).parent_path();
    const std::string package = "package://", local = "file://";
    if (name.rfind(local, 0) == 0) return name.substr(local.size());
    if (name.rfind(package, 0) != 0) return (dir / name).string();
    const std::string rest = name.substr(package.size());
    const auto slash = rest.find('/');
    const std::filesystem::path rel = slash == std::string::npos ? rest : rest.substr(slash + 1);
    std::filesystem::path up = dir;
    for (int k = 0; k < 4; ++k, up = up.parent_path()) {
      std::error_code ec;
      if (std::filesystem::exists(up / rel, ec)) return (up / rel).string();
    }
    return (dir / rel).string();
  }

  // Mass, centre of mass and inertia of each group (parallel-axis theorem, exact).
  void merge_inertia(double mesh_density) {
    for (LinkGroup& g : groups) {
      std::vector<std::pair<Frame, LinkInertia>> parts;
      for (const std::string& name : g.links) {
        const LinkInertia li = link_inertia(name, mesh_density);
        if (li.mass == 0.0) continue;
        parts.push_back({link_in_group[name] * li.frame, li});
        g.com_L += li.mass * parts.back().first.p;
        g.mass += li.mass;
      }
      if (g.mass == 0.0) continue;
      g.com_L /= g.mass;
      for (const auto& [f, li] : parts) {
        const Vec3 d = f.p - g.com_L;
        g.inertia_L += f.R * li.inertia * f.R.transpose() + li.mass * (d.squaredNorm() * Mat3::Identity() - d * d.transpose());
      }
    }
  }

  // World frames of all links at t = 0 for the root pose and initial joint angles.
  void forward_kinematics(const urdf::LinkConstSharedPtr& link, const Frame& world,
                          const std::map<std::string, double>& angles) {
    link_world[link->name] = world;
    for (const urdf::JointSharedPtr& j : link->child_joints) {
      Frame f = world * to_frame(j->parent_to_joint_origin_transform);
      if (j->type != urdf::Joint::FIXED) {
        const auto it = angles.find(j->name);
        const double q = it == angles.end() ? 0.0 : it->second;
        const Vec3 axis = to_vec3(j->axis).normalized();
        if (j->type == urdf::Joint::PRISMATIC)
          f.p += f.R * axis * q;  // slide along the axis (m)
        else
          f.R = f.R * Eigen::AngleAxisd(q, axis).toRotationMatrix();
      }
      forward_kinematics(urdf->getLink(j->child_link_name), f, angles);
    }
  }

  // Contact proxies of a group's collision spheres, boxes and cylinders, in its body frame
  // (meshes are not proxies: docs/robots.md). Spheres of one radius share a proxy.
  std::vector<RigidProxy> proxies(const LinkGroup& g) const {
    std::vector<RigidProxy> out;
    std::vector<Vec3> points;
    for (const std::string& name : g.links)
      for (const urdf::CollisionSharedPtr& c : urdf->getLink(name)->collision_array) {
        if (!c || !c->geometry) continue;
        Frame f = link_in_group.at(name) * to_frame(c->origin);
        f.p -= g.com_L;
        if (c->geometry->type == urdf::Geometry::SPHERE) {
          const double radius = static_cast<const urdf::Sphere&>(*c->geometry).radius;
          bool added = false;
          for (RigidProxy& pr : out)
            if (pr.radius == radius) {
              pr.centers_B.push_back(f.p);
              added = true;
            }
          if (!added) out.push_back(RigidProxy::sphere(f.p, radius));
        } else if (c->geometry->type == urdf::Geometry::BOX) {
          for (const Vec3& x : RigidProxy::box_corners(to_vec3(static_cast<const urdf::Box&>(*c->geometry).dim)).centers_B)
            points.push_back(f * x);
        } else if (c->geometry->type == urdf::Geometry::CYLINDER) {
          const auto& cyl = static_cast<const urdf::Cylinder&>(*c->geometry);
          for (int k = 0; k < kCylinderRimPoints; ++k) {
            const double phi = 2.0 * std::numbers::pi * k / kCylinderRimPoints;
            for (double z : {-0.5 * cyl.length, 0.5 * cyl.length})
              points.push_back(f * Vec3(cyl.radius * std::cos(phi), cyl.radius * std::sin(phi), z));
          }
        }
      }
    if (!points.empty()) out.insert(out.begin(), RigidProxy::points(std::move(points)));
    return out;
  }
};

// Names of the movable joints, listed in errors about `initial_angles` and `motors`.
std::string joint_list(const std::vector<urdf::JointConstSharedPtr>& joints) {
  std::string s;
  for (const auto& j : joints) s += (s.empty() ? "" : ", ") + j->name;
  return s;
}

// A per-joint value `key` of `reader` for `joints`: one number for all, or {joint: number}
// (unlisted joints take `fallback`, or are an error without one). Absent: every joint takes
// `fallback` (an error without one when `joints` is not empty). `who` describes the joints
// that take it, for the error about a listed joint that is not one of them.
void per_joint(ObjectReader& reader, const char* key, const std::vector<std::string>& joints,
               std::optional<double> fallback, Bound bound, const std::string& who, std::map<std::string, double>& out) {
  if (!reader.has(key)) {
    if (!fallback && !joints.empty()) reader.fail(key, "is required for the actuated joint '" + joints.front() + "'");
    for (const std::string& j : joints) out[j] = fallback.value_or(0.0);
    return;
  }
  const json& v = reader.raw(key);
  const std::string kp = join_path(reader.path(), key);
  if (!v.is_object()) {
    const double x = to_number(v, reader.source(), kp, bound);
    for (const std::string& j : joints) out[j] = x;
    return;
  }
  for (const auto& [joint, value] : v.items()) {
    if (std::find(joints.begin(), joints.end(), joint) == joints.end())
      fail_at(reader.source(), join_path(kp, joint), "not " + who);
    out[joint] = to_number(value, reader.source(), join_path(kp, joint), bound);
  }
  for (const std::string& j : joints)
    if (!out.count(j)) {
      if (!fallback) fail_at(reader.source(), kp, "has no value for the actuated joint '" + j + "'");
      out[j] = *fallback;
    }
}

// A JSON pointer segment (RFC 6901): "~" → "~0", "/" → "~1".
std::string pointer_segment(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

}  // namespace

void parse_urdf_body(ObjectReader& r, int index, SceneBuilder& b) {
  RobotParser rp{r, "", nullptr, {}, {}, {}, {}, {}};
  const std::string name = r.string("name", "");
  const std::string robot = name.empty() ? "urdf" + std::to_string(index) : name;  // body name prefix

  // The file, relative to the scene file.
  std::filesystem::path path = r.string("file", std::nullopt);
  if (path.is_relative()) path = std::filesystem::path(b.source).parent_path() / path;
  rp.file = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) r.fail("file", rp.file + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) r.fail("file", rp.file + ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  std::string why;
  rp.urdf = parse_urdf_text(text.str(), why);
  if (!rp.urdf) r.fail("file", rp.file + ": urdfdom rejects it: " + why);
  const urdf::LinkConstSharedPtr root = rp.urdf->getRoot();
  if (!root) r.fail("file", rp.file + ": no root link");

  // Links → groups → inertia.
  rp.groups.push_back({root->name, {}, 0.0, Vec3::Zero(), Mat3::Zero(), -1});
  rp.build_groups(root, 0, Frame{});
  rp.merge_inertia(r.number("mesh_density", 0.0, Bound::kNonNegative));

  const std::string base_kind = r.choice("base", "fixed", {"fixed", "floating", "kinematic"});
  Frame root_world;
  root_world.p = r.vec3("position", Vec3::Zero());
  root_world.R = rotation_from_vector(r.vec3("orientation", Vec3::Zero()));

  // Initial joint angles (rad) by joint name; default 0 (the URDF's zero pose).
  std::map<std::string, double> angles;
  std::set<std::string> movable;
  for (const auto& j : rp.joints) movable.insert(j->name);
  if (r.has("initial_angles")) {
    const json& a = r.raw("initial_angles");
    const std::string ap = join_path(r.path(), "initial_angles");
    if (!a.is_object()) fail_at(b.source, ap, "expected an object {joint name: angle (rad)}, got " + describe(a));
    for (const auto& [joint, value] : a.items()) {
      if (!movable.count(joint))
        fail_at(b.source, join_path(ap, joint), "no movable joint of that name in " + rp.file + " (" + joint_list(rp.joints) + ")");
      angles[joint] = to_number(value, b.source, join_path(ap, joint), Bound::kAny);
    }
  }
  rp.forward_kinematics(root, root_world, angles);

  // Coupling stiffnesses per movable joint: one number for all or {joint: number}.
  std::vector<std::string> movable_names, revolute_names, prismatic_names;
  for (const auto& j : rp.joints) {
    movable_names.push_back(j->name);
    if (j->type == urdf::Joint::REVOLUTE) revolute_names.push_back(j->name);
    if (j->type == urdf::Joint::PRISMATIC) prismatic_names.push_back(j->name);
  }
  std::map<std::string, double> joint_k, axis_k;
  {
    const json given = r.has("joints") ? r.raw("joints") : json::object();
    ObjectReader jr(given, join_path(r.path(), "joints"), b.source);
    const std::string who = "a movable joint of " + rp.file + " (" + joint_list(rp.joints) + ")";
    per_joint(jr, "stiffness", movable_names, kDefaultJointStiffness, Bound::kPositive, who, joint_k);
    per_joint(jr, "axis_stiffness", movable_names, kDefaultAxisStiffness, Bound::kPositive, who, axis_k);
    jr.finish();
  }

  // Motors: which joints, gains, per-step targets.
  const TimeScheme& s = b.model->scheme();
  std::map<std::string, VecX> targets;  // joint → steps + 1 target angles
  // Gains per actuated joint: k_m (N m; prismatic: N/m) and motor damping k_md (N m s).
  std::map<std::string, double> motor_k, motor_d;
  if (r.has("motors")) {
    ObjectReader mr(r.raw("motors"), join_path(r.path(), "motors"), b.source);
    std::vector<std::string> actuated;
    if (mr.has("joints")) {
      const json& list = mr.list("joints");
      for (std::size_t k = 0; k < list.size(); ++k) {
        const std::string jp = join_path(mr.path(), "joints." + std::to_string(k));
        if (!list[k].is_string() || !movable.count(list[k].get<std::string>()))
          fail_at(b.source, jp, "expected the name of a movable joint of " + rp.file + " (" + joint_list(rp.joints) + "), got " + describe(list[k]));
        actuated.push_back(list[k].get<std::string>());
      }
    } else {
      for (const auto& j : rp.joints) actuated.push_back(j->name);
    }
    std::vector<std::string> revolute, prismatic;
    for (const std::string& j : actuated)
      (rp.urdf->getJoint(j)->type == urdf::Joint::PRISMATIC ? prismatic : revolute).push_back(j);
    auto gains = [&](const char* key, const std::vector<std::string>& joints, std::optional<double> fallback,
                     Bound bound, std::map<std::string, double>& out) {
      per_joint(mr, key, joints, fallback, bound, "an actuated joint of " + rp.file + " that takes this gain", out);
    };
    gains("stiffness", revolute, std::nullopt, Bound::kPositive, motor_k);
    gains("slide_stiffness", prismatic, std::nullopt, Bound::kPositive, motor_k);
    gains("damping", revolute, 0.0, Bound::kNonNegative, motor_d);
    for (const std::string& j : actuated) {
      const auto it = angles.find(j);
      targets[j] = VecX::Constant(s.steps + 1, it == angles.end() ? 0.0 : it->second);
    }
    if (mr.has("targets")) {
      const json& t = mr.raw("targets");
      const std::string tp = join_path(mr.path(), "targets");
      if (!t.is_object()) fail_at(b.source, tp, "expected an object {joint name: angle or steps + 1 angles (rad)}, got " + describe(t));
      for (const auto& [joint, value] : t.items()) {
        const std::string vp = join_path(tp, joint);
        if (!targets.count(joint)) fail_at(b.source, vp, "not an actuated joint of " + rp.file);
        if (value.is_array()) {
          if (static_cast<int>(value.size()) != s.steps + 1)
            fail_at(b.source, vp, "needs steps + 1 = " + std::to_string(s.steps + 1) + " angles, got " + describe(value));
          for (int i = 0; i <= s.steps; ++i) targets[joint][i] = to_number(value[i], b.source, vp + "." + std::to_string(i), Bound::kAny);
        } else {
          targets[joint].setConstant(to_number(value, b.source, vp, Bound::kAny));
        }
      }
    }
    mr.finish();
  }
  const bool collision = r.boolean("collision", true);
  // Joint limits: a unilateral penalty per revolute joint (docs/robots.md), or off.
  // Their stiffnesses: one number for all, or {joint: number}.
  std::map<std::string, double> limit_k;
  bool limits = true;
  {
    const json given = r.has("limits") ? r.raw("limits") : json(true);
    if (given.is_boolean()) limits = given.get<bool>();
    const json object = given.is_boolean() ? json::object() : given;
    ObjectReader lr(object, join_path(r.path(), "limits"), b.source);
    per_joint(lr, "stiffness", revolute_names, kDefaultLimitStiffness, Bound::kPositive,
              "a revolute joint of " + rp.file, limit_k);
    per_joint(lr, "slide_stiffness", prismatic_names, kDefaultSlideLimitStiffness, Bound::kPositive,
              "a prismatic joint of " + rp.file, limit_k);
    lr.finish();
  }

  // The links' initial states and masses come from the URDF and the joint angles: their
  // parameter entries have no scene key (Scene::param_keys).
  const std::size_t link_entries_begin = b.model->params().entries().size();
  // One rigid body per group with mass; the root group is welded to the world ("fixed"),
  // free ("floating") or follows per-step poses ("kinematic").
  for (std::size_t g = 0; g < rp.groups.size(); ++g) {
    LinkGroup& grp = rp.groups[g];
    const bool world = g == 0 && base_kind == "fixed";
    if (world) continue;
    if (grp.mass == 0.0) {
      const std::string what = g == 0 ? "root link '" + grp.root + "' (base \"" + base_kind + "\")"
                                      : "link '" + grp.root + "'";
      r.fail("file", rp.file + ": " + what + " and the links fixed to it have no <inertial> (mass) and no mesh " +
                         "inertia (mesh_density); only a fixed base may be massless");
    }
    const Frame& W = rp.link_world.at(grp.root);
    const std::string body_name = sanitize(robot + "/" + grp.root);
    const RigidShape shape = RigidShape::custom(grp.inertia_L / grp.mass, 0.0);
    RigidInit init;
    init.position = W * grp.com_L;
    init.orientation = rotation_vector(W.R);
    try {
      if (g == 0 && base_kind == "kinematic") {
        Eigen::Matrix<double, 6, 1> pose;
        pose << init.position, init.orientation;
        grp.body = add_kinematic_rigid_body(*b.model, body_name, shape, RigidMassSpec::from_mass(grp.mass),
                                            std::vector<Eigen::Matrix<double, 6, 1>>(s.steps + 1, pose));
      } else {
        std::vector<RigidProxy> proxies = collision ? rp.proxies(grp) : std::vector<RigidProxy>{};
        const RigidProxy first = proxies.empty() ? RigidProxy{} : proxies.front();
        grp.body = add_rigid_body(*b.model, body_name, shape, RigidMassSpec::from_mass(grp.mass), init, first,
                                  b.gravity, b.obstacles, b.contact);
        for (std::size_t k = 1; k < proxies.size() && !b.obstacles.empty(); ++k)
          b.model->add_term(std::make_unique<RigidContactTerm>(&rigid_body(*b.model, grp.body), proxies[k],
                                                               b.obstacles, b.contact));
      }
    } catch (const InputError& e) {
      r.fail("file", rp.file + ": link '" + grp.root + "': " + e.what());
    }
    b.scene->bodies.push_back({body_name, "urdf", "bodies." + std::to_string(grp.body)});
    b.points.push_back({});
  }

  for (std::size_t k = link_entries_begin; k < b.model->params().entries().size(); ++k)
    b.scene->param_keys[b.model->params().entries()[k].path] = "";
  if (rp.groups.size() == 1 && base_kind == "fixed")
    r.fail("file", rp.file + ": a fixed-base robot needs at least one revolute or continuous joint");

  // Joints: a = parent, b = child, α = the URDF joint angle of the child relative to the
  // parent. A parent welded to the world becomes the world anchor with a = child and the
  // axis flipped, which keeps α the URDF angle (as parse_joints does for swapped anchors).
  ParameterTable& params = b.model->params();
  const std::string robot_path = "robots." + std::to_string(index);
  const std::string robot_alias = "robots." + (name.empty() ? std::to_string(index) : name);
  const std::string body_pointer = "/bodies/" + std::to_string(index);
  std::vector<RigidJoint> joints;
  for (std::size_t k = 0; k < rp.joints.size(); ++k) {
    const urdf::JointConstSharedPtr& uj = rp.joints[k];
    const LinkGroup& parent = rp.groups[rp.group_of.at(uj->parent_link_name)];
    const LinkGroup& child = rp.groups[rp.group_of.at(uj->child_link_name)];
    const std::string jbase = robot_path + ".joints." + std::to_string(k);
    const std::string jalias = robot_alias + ".joints." + sanitize(uj->name);
    // Each entry's scene key (Scene::param_keys): "/bodies/<index>/<group>/<key>/<joint name>".
    const std::string jname = pointer_segment(uj->name);
    auto key_of = [&](const std::string& entry, const std::string& group, const std::string& key) {
      b.scene->param_keys[entry] = body_pointer + "/" + group + "/" + key + "/" + jname;
    };
    auto add1 = [&](const char* key, double value, const char* group, const char* scene_key) {
      key_of(jbase + "." + key, group, scene_key);
      return params.add(jbase + "." + key, jalias + "." + key, ParamKind::kCoupling, VecX::Constant(1, value), 1, 1, 0.0, kInf);
    };
    // Joint frame in the parent group's root link frame, shifted to its body frame.
    const Frame joint_P = rp.link_in_group.at(uj->parent_link_name) * to_frame(uj->parent_to_joint_origin_transform);
    const Vec3 axis_J = to_vec3(uj->axis).normalized();
    const Vec3 ref_J = perpendicular(axis_J);
    Vec3 point_p = joint_P.p - parent.com_L, axis_p = joint_P.R * axis_J, ref_p = joint_P.R * ref_J;
    const Vec3 point_c = -child.com_L;
    const bool world = parent.body < 0;
    if (world) {
      // Parent welded to the world: its anchor, axis and reference in world coordinates.
      const Frame& W = rp.link_world.at(parent.root);
      point_p = W * joint_P.p;
      axis_p = W.R * axis_p;
      ref_p = W.R * ref_p;
    }
    RigidJoint j;
    j.label = rp.file + ": joint '" + uj->name + "'";
    const bool prismatic = uj->type == urdf::Joint::PRISMATIC;
    const bool actuated = targets.count(uj->name) > 0;
    j.kind = prismatic ? RigidJoint::Kind::kPrismatic : actuated ? RigidJoint::Kind::kMotor : RigidJoint::Kind::kHinge;
    if (world) {
      j.body_a = &rigid_body(*b.model, child.body);
      j.point_a = point_c;
      j.axis_a = -axis_J;
      j.ref_a = ref_J;
      j.point_b = point_p;
      j.axis_b = -axis_p;
      j.ref_b = ref_p;
    } else {
      j.body_a = &rigid_body(*b.model, parent.body);
      j.body_b = &rigid_body(*b.model, child.body);
      j.point_a = point_p;
      j.axis_a = axis_p;
      j.ref_a = ref_p;
      j.point_b = point_c;
      j.axis_b = axis_J;
      j.ref_b = ref_J;
    }
    j.stiffness_param = add1("stiffness", joint_k.at(uj->name), "joints", "stiffness");
    j.axis_stiffness_param = add1("axis_stiffness", axis_k.at(uj->name), "joints", "axis_stiffness");
    if (actuated) {
      // Targets: angles (rad) of revolute joints, slides (m) of prismatic ones.
      const char* key = prismatic ? "target_positions" : "target_angles";
      j.motor_stiffness_param = add1("motor_stiffness", motor_k.at(uj->name), "motors", prismatic ? "slide_stiffness" : "stiffness");
      key_of(jbase + "." + key, "motors", "targets");
      j.target_param = params.add(jbase + "." + key, jalias + "." + key, ParamKind::kControl, targets.at(uj->name),
                                  s.steps + 1, 1);
      j.per_step_target = true;
    }
    joints.push_back(j);
    // Limits of revolute joints; a side outside (−π, π) cannot be told apart from a wrapped
    // angle by α = atan2(·) and is left open, as is a joint with lower ≥ upper.
    if (limits && prismatic && uj->limits && uj->limits->lower < uj->limits->upper) {
      RigidJoint l = j;
      l.kind = RigidJoint::Kind::kSlideLimit;
      l.axis_stiffness_param = l.motor_stiffness_param = l.target_param = -1;
      l.per_step_target = false;
      l.lower = uj->limits->lower;
      l.upper = uj->limits->upper;
      l.stiffness_param = add1("limit_stiffness", limit_k.at(uj->name), "limits", "slide_stiffness");
      joints.push_back(l);
    }
    if (limits && uj->type == urdf::Joint::REVOLUTE && uj->limits && uj->limits->lower < uj->limits->upper) {
      RigidJoint l = j;
      l.kind = RigidJoint::Kind::kAngleLimit;
      l.axis_stiffness_param = l.motor_stiffness_param = l.target_param = -1;
      l.per_step_target = false;
      l.lower = uj->limits->lower > -std::numbers::pi ? uj->limits->lower : -kInf;
      l.upper = uj->limits->upper < std::numbers::pi ? uj->limits->upper : kInf;
      if (std::isfinite(l.lower) || std::isfinite(l.upper)) {
        l.stiffness_param = add1("limit_stiffness", limit_k.at(uj->name), "limits", "stiffness");
        joints.push_back(l);
      }
    }
    if (j.kind == RigidJoint::Kind::kMotor && motor_d.at(uj->name) > 0.0) {  // angular: revolute motors only
      RigidJoint d = j;
      d.kind = RigidJoint::Kind::kMotorDamping;
      d.stiffness_param = d.axis_stiffness_param = d.motor_stiffness_param = d.target_param = -1;
      d.per_step_target = false;
      d.damping_param = add1("damping", motor_d.at(uj->name), "motors", "damping");
      joints.push_back(d);
    }
  }
  r.finish();
  if (!joints.empty()) b.model->add_term(std::make_unique<RigidJointTerm>(std::move(joints), b.model));
}

}  // namespace addsim
