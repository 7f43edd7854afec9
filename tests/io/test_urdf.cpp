// URDF robots (io/urdf_bodies.cpp, docs/robots.md): masses and inertias of the KR5, WAM and
// DRC-Hubo shipped by Debian's dart-doc against the files (read here with urdfdom directly
// and an independent forward kinematics), the KR5 swinging like the same chain written by
// hand as a scene JSON, the KR5 holding its pose with motors on, exact merging of fixed
// joints, and bad inputs.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <Eigen/Geometry>
#include <gtest/gtest.h>
#include <urdf_parser/urdf_parser.h>

#include "addsim/io/scene.h"
#include "addsim/objectives/objective_terms.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/finite_difference.h"
#include "addsim/rigid/rigid_body.h"
#include "addsim/solver/simulator.h"
#include "test_util.h"

namespace addsim {
namespace {

using test::fresh_temp_dir;
using test::input_error;
using test::source_dir;

// data/robots/<rel> (scripts/fetch-robots.sh), else dart-doc's folder; "" if neither exists.
std::string robot_file(const std::string& rel) {
  for (const std::filesystem::path& dir : {source_dir() / "data" / "robots", std::filesystem::path("/usr/share/doc/dart/data/urdf")})
    if (std::filesystem::exists(dir / rel)) return (dir / rel).string();
  return "";
}

#define REQUIRE_ROBOT(var, rel)                                                                          \
  const std::string var = robot_file(rel);                                                              \
  if (var.empty())                                                                                      \
    GTEST_SKIP() << "robot data " << rel << " absent: run scripts/fetch-robots.sh (copies Debian's dart-doc " \
                                            "URDFs into data/robots/)"

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

// A scene with one robot; `extra` is spliced into the robot's object, `top` into the scene.
std::string robot_scene(const std::string& file, const std::string& extra, const std::string& top = "") {
  return R"({"dt": 0.005, "steps": 4, )" + top + R"("bodies": [{"type": "urdf", "name": "robot", "file": )" +
         json_string(file) + extra + "}]}";
}

struct Pose {
  Mat3 R = Mat3::Identity();
  Vec3 p = Vec3::Zero();
};

Pose to_pose(const urdf::Pose& u) {
  Pose f;
  f.R = Eigen::Quaterniond(u.rotation.w, u.rotation.x, u.rotation.y, u.rotation.z).toRotationMatrix();
  f.p = Vec3(u.position.x, u.position.y, u.position.z);
  return f;
}

Pose compose(const Pose& a, const Pose& b) { return {a.R * b.R, a.R * b.p + a.p}; }

// World pose of every link at zero joint angles with the root link at the origin: the chain
// of joint origins from the root, walked up from each link.
std::map<std::string, Pose> zero_pose_frames(const urdf::ModelInterface& m) {
  std::map<std::string, Pose> out;
  for (const auto& [name, link] : m.links_) {
    Pose f;
    for (urdf::LinkConstSharedPtr l = link; l->getParent(); l = l->getParent())
      f = compose(to_pose(l->parent_joint->parent_to_joint_origin_transform), f);
    out[name] = f;
  }
  return out;
}

struct LinkMass {
  double mass;
  Vec3 com_W;  // centre of mass at the zero pose, m
  Mat3 I_W;    // inertia about it, world axes, kg m²
};

std::map<std::string, LinkMass> file_masses(const std::string& file) {
  const urdf::ModelInterfaceSharedPtr m = urdf::parseURDFFile(file);
  EXPECT_TRUE(m);
  std::map<std::string, LinkMass> out;
  const auto frames = zero_pose_frames(*m);
  for (const auto& [name, link] : m->links_) {
    if (!link->inertial) continue;
    const urdf::Inertial& in = *link->inertial;
    const Pose f = compose(frames.at(name), to_pose(in.origin));
    Mat3 I;
    I << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
    out[name] = {in.mass, f.p, f.R * I * f.R.transpose()};
  }
  return out;
}

// Every link with mass is a body whose mass, centre and world inertia match the file. The
// robots weld only a massless root ("world") to one massive link, which gives the root body.
void expect_masses_match(const std::string& file, int expect_links) {
  const urdf::ModelInterfaceSharedPtr m = urdf::parseURDFFile(file);
  ASSERT_TRUE(m);
  const auto links = file_masses(file);
  ASSERT_EQ(static_cast<int>(links.size()), expect_links);
  const Scene scene = load_scene_text(robot_scene(file, R"(, "base": "floating")"), "robot.json");
  const Model& model = *scene.model;
  const VecX p = model.params().defaults();
  VecX q0 = VecX::Zero(model.num_dofs()), v0 = VecX::Zero(model.num_dofs());
  for (const auto& b : model.bodies()) b->initial_state(p, q0, v0);
  ASSERT_EQ(static_cast<int>(model.bodies().size()), expect_links);
  double file_total = 0.0, model_total = 0.0;
  for (const auto& [name, lm] : links) file_total += lm.mass;
  for (const auto& b : model.bodies()) model_total += b->total_mass(p);
  EXPECT_NEAR(model_total, file_total, 1e-12 * file_total);
  for (const auto& b : model.bodies()) {
    const auto& rb = static_cast<const RigidBody&>(*b);
    std::string link = rb.name().substr(std::string("robot/").size());
    if (!links.count(link)) {
      const urdf::LinkConstSharedPtr root = m->getLink(link);
      ASSERT_TRUE(root && !root->inertial && root->child_joints.size() == 1 &&
                  root->child_joints[0]->type == urdf::Joint::FIXED)
          << rb.name();
      link = root->child_joints[0]->child_link_name;
    }
    const LinkMass& lm = links.at(link);
    EXPECT_NEAR(rb.mass(p), lm.mass, 1e-14 * lm.mass) << rb.name();
    EXPECT_LT((q0.segment<3>(rb.dof()) - lm.com_W).norm(), 1e-12) << rb.name();
    const Mat3 R = rb.rotation(q0);
    const Mat3 I_W = R * rb.inertia_B(p) * R.transpose();
    EXPECT_LT((I_W - lm.I_W).norm(), 1e-12 * lm.I_W.norm() + 1e-15) << rb.name() << "\n" << I_W << "\nvs\n" << lm.I_W;
  }
}

TEST(Urdf, Kr5MassesAndInertiasMatchTheFile) {
  REQUIRE_ROBOT(file, "KR5/KR5 sixx R650.urdf");
  expect_masses_match(file, 7);
}

TEST(Urdf, WamMassesAndInertiasMatchTheFile) {
  REQUIRE_ROBOT(file, "wam/wam.urdf");
  expect_masses_match(file, 8);
}

TEST(Urdf, DrcHuboMassesAndInertiasMatchTheFile) {
  REQUIRE_ROBOT(file, "drchubo/drchubo.urdf");
  expect_masses_match(file, 52);
}

// The KR5 chain written by hand: one "rigid" body per link with its inertia at the zero pose,
// hinges at the joint origins along the world joint axes. Body axes are the link axes
// (`link_axes`, as the URDF loader chooses) or the world axes: the exponential coordinates
// θ then differ, and so does the BDF discretisation of the rotations (by O(h²)).
std::string kr5_by_hand(const std::string& file, const std::string& dt, int steps, const std::string& joints,
                        bool link_axes) {
  const urdf::ModelInterfaceSharedPtr m = urdf::parseURDFFile(file);
  const auto links = file_masses(file);
  const auto frames = zero_pose_frames(*m);
  auto axes = [&](const std::string& link) { return link_axes ? frames.at(link).R : Mat3(Mat3::Identity()); };
  std::ostringstream s;
  s.precision(17);
  s << R"({"dt": )" << dt << R"(, "steps": )" << steps << R"(, "bodies": [)";
  std::vector<std::string> order;
  bool first = true;
  for (const auto& [name, lm] : links) {
    const urdf::LinkConstSharedPtr link = m->getLink(name);
    if (link->parent_joint->type == urdf::Joint::FIXED) continue;  // base_link, welded to the world
    const Mat3 R = axes(name);
    const Mat3 I = R.transpose() * lm.I_W * R;
    const Eigen::AngleAxisd aa(R);
    const Vec3 theta = aa.angle() * aa.axis();
    s << (first ? "" : ",") << R"({"type": "rigid", "name": ")" << name << R"(", "mass": )" << lm.mass
      << R"(, "position": [)" << lm.com_W.x() << "," << lm.com_W.y() << "," << lm.com_W.z() << R"(], "orientation": [)"
      << theta.x() << "," << theta.y() << "," << theta.z() << R"(], "shape": {"type": "inertia", "inertia": [)"
      << I(0, 0) << "," << I(1, 1) << "," << I(2, 2) << "," << I(0, 1) << "," << I(0, 2) << "," << I(1, 2) << "]}}";
    first = false;
    order.push_back(name);
  }
  s << R"(], "joints": [)";
  first = true;
  for (const std::string& name : order) {
    const urdf::JointConstSharedPtr j = m->getLink(name)->parent_joint;
    const Pose J = compose(frames.at(j->parent_link_name), to_pose(j->parent_to_joint_origin_transform));
    const Vec3 axis = J.R * Vec3(j->axis.x, j->axis.y, j->axis.z);
    const bool world = m->getLink(j->parent_link_name)->parent_joint->type == urdf::Joint::FIXED;
    const Vec3 pc = axes(name).transpose() * (J.p - links.at(name).com_W);
    s << (first ? "" : ",") << R"({"type": "hinge", )" << joints << R"(, "axis": [)" << axis.x() << "," << axis.y()
      << "," << axis.z() << R"(], "anchors": [)";
    if (world) {
      s << R"({"world": [)" << J.p.x() << "," << J.p.y() << "," << J.p.z() << "]}";
    } else {
      const Vec3 pp = axes(j->parent_link_name).transpose() * (J.p - links.at(j->parent_link_name).com_W);
      s << R"({"body": ")" << j->parent_link_name << R"(", "point": [)" << pp.x() << "," << pp.y() << "," << pp.z()
        << "]}";
    }
    s << R"(, {"body": ")" << name << R"(", "point": [)" << pc.x() << "," << pc.y() << "," << pc.z() << "]}]}";
    first = false;
  }
  s << "]}";
  return s.str();
}

// Centre of mass of the body named `name` at every step.
std::vector<Vec3> com_path(const Scene& scene, const Trajectory& traj, const std::string& name) {
  for (std::size_t k = 0; k < scene.bodies.size(); ++k)
    if (scene.bodies[k].name == name) {
      std::vector<Vec3> out;
      for (const VecX& q : traj.q) out.push_back(scene.model->bodies()[k]->center_of_mass(q, traj.p));
      return out;
    }
  ADD_FAILURE() << "no body " << name;
  return {};
}

TEST(Urdf, Kr5SwingsLikeTheSameChainBuiltByHand) {
  REQUIRE_ROBOT(file, "KR5/KR5 sixx R650.urdf");
  const double dt = 1.0 / 256.0;  // exact in decimal and binary: both scenes get the same h
  std::ostringstream dts;
  dts.precision(17);
  dts << dt;
  const int steps = 120;  // 0.5 s
  const std::string joints = R"("stiffness": 100000, "axis_stiffness": 10000)";
  const Scene urdf_scene = load_scene_text(R"({"dt": )" + dts.str() + R"(, "steps": )" + std::to_string(steps) +
                                               R"(, "bodies": [{"type": "urdf", "name": "kr5", "file": )" +
                                               json_string(file) + R"(, "joints": {)" + joints + "}}]}",
                                           "kr5.json");
  Simulator sim_u(*urdf_scene.model);
  const Trajectory tu = sim_u.run(urdf_scene.model->params().defaults());
  ASSERT_TRUE(tu.failure.empty()) << tu.failure;
  for (const bool link_axes : {true, false}) {
    const Scene hand = load_scene_text(kr5_by_hand(file, dts.str(), steps, joints, link_axes), "kr5_by_hand.json");
    ASSERT_EQ(urdf_scene.model->num_dofs(), hand.model->num_dofs());
    Simulator sim_h(*hand.model);
    const Trajectory th = sim_h.run(hand.model->params().defaults());
    ASSERT_TRUE(th.failure.empty()) << th.failure;
    double max_diff = 0.0, max_motion = 0.0;
    for (const std::string link : {"shoulder", "bicep", "elbow", "forearm", "wrist", "palm"}) {
      const auto a = com_path(urdf_scene, tu, "kr5/" + link);
      const auto b = com_path(hand, th, link);
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        max_diff = std::max(max_diff, (a[i] - b[i]).norm());
        max_motion = std::max(max_motion, (a[i] - a[0]).norm());
      }
    }
    // It swings (the palm travels about 1 m in 0.5 s). With the same body axes both chains
    // are the same discrete system and agree to the Newton tolerance; with world axes they
    // differ by the O(h²) discretisation of θ (measured 2.5e-5 m at h = 1/256 s).
    EXPECT_GT(max_motion, 0.5);
    EXPECT_LT(max_diff, link_axes ? 1e-8 : 1e-4) << "max motion " << max_motion;
    std::printf("[ KR5 by hand, %s axes ] max centre difference %.3e m over a motion of %.3f m\n",
                link_axes ? "link" : "world", max_diff, max_motion);
  }
}

TEST(Urdf, Kr5HoldsItsPoseWithMotorsOn) {
  REQUIRE_ROBOT(file, "KR5/KR5 sixx R650.urdf");
  const Scene scene = load_scene_text(
      R"({"dt": 0.01, "steps": 100, "bodies": [{"type": "urdf", "name": "kr5", "file": )" + json_string(file) +
          R"(, "initial_angles": {"shoulder_pitch": 0.3, "elbow_pitch": -0.6},
             "joints": {"stiffness": 1e7, "axis_stiffness": 1e5},
             "motors": {"stiffness": 1e5, "damping": 10}}]})",
      "kr5_hold.json");
  Simulator sim(*scene.model);
  const Trajectory t = sim.run(scene.model->params().defaults());
  ASSERT_TRUE(t.failure.empty()) << t.failure;
  const auto palm = com_path(scene, t, "kr5/palm");
  double drift = 0.0;
  for (const Vec3& x : palm) drift = std::max(drift, (x - palm.front()).norm());
  EXPECT_LT(drift, 2e-3) << "palm drift over 1 s, m";
  // Without motors the same arm falls (0.3 s).
  const Scene limp = load_scene_text(
      R"({"dt": 0.01, "steps": 30, "bodies": [{"type": "urdf", "name": "kr5", "file": )" + json_string(file) +
          R"(, "initial_angles": {"shoulder_pitch": 0.3, "elbow_pitch": -0.6},
             "joints": {"stiffness": 1e7, "axis_stiffness": 1e5}}]})",
      "kr5_limp.json");
  Simulator sim_limp(*limp.model);
  const Trajectory tl = sim_limp.run(limp.model->params().defaults());
  ASSERT_TRUE(tl.failure.empty()) << tl.failure;
  const auto fall = com_path(limp, tl, "kr5/palm");
  EXPECT_GT((fall.back() - fall.front()).norm(), 0.05);
  std::printf("[ KR5 hold ] palm drift over 1 s %.3e m, fall without motors in 0.3 s %.3f m\n", drift,
              (fall.back() - fall.front()).norm());
}

TEST(Urdf, MotorTargetsArePerStepControlsAtTheUrdfAngle) {
  REQUIRE_ROBOT(file, "KR5/KR5 sixx R650.urdf");
  const Scene scene = load_scene_text(
      robot_scene(file, R"(, "initial_angles": {"elbow_roll": 0.4}, "motors": {"stiffness": 100, "joints": ["elbow_roll", "wrist_pitch"],
                  "targets": {"wrist_pitch": [0, 0.1, 0.2, 0.3, 0.4]}})"),
      "robot.json");
  const ParameterTable& params = scene.model->params();
  const ParamRange roll = params.require("robots.robot.joints.elbow_roll.target_angles");
  EXPECT_EQ(roll.size, 5);
  EXPECT_EQ(roll.entry->kind, ParamKind::kControl);
  EXPECT_DOUBLE_EQ(params.defaults()[roll.offset + 3], 0.4);  // holds the initial angle
  const ParamRange pitch = params.require("robots.0.joints.4.target_angles");
  EXPECT_DOUBLE_EQ(params.defaults()[pitch.offset + 2], 0.2);
  EXPECT_FALSE(params.resolve("robots.robot.joints.shoulder_yaw.target_angles"));  // not actuated
  // Per-joint gains: {joint: value}; damping defaults to 0 (no damping joint) for unlisted ones.
  const Scene gains = load_scene_text(
      robot_scene(file, R"(, "motors": {"joints": ["elbow_roll", "wrist_pitch"], "stiffness": {"elbow_roll": 30, "wrist_pitch": 7},
                  "damping": {"wrist_pitch": 0.5}})"),
      "robot.json");
  const ParameterTable& gp = gains.model->params();
  EXPECT_DOUBLE_EQ(gp.defaults()[gp.require("robots.robot.joints.elbow_roll.motor_stiffness").offset], 30.0);
  EXPECT_DOUBLE_EQ(gp.defaults()[gp.require("robots.robot.joints.wrist_pitch.motor_stiffness").offset], 7.0);
  EXPECT_DOUBLE_EQ(gp.defaults()[gp.require("robots.robot.joints.wrist_pitch.damping").offset], 0.5);
  EXPECT_FALSE(gp.resolve("robots.robot.joints.elbow_roll.damping"));
  // Without gravity, motors whose targets are the initial URDF angles hold the arm exactly
  // at rest (a motor angle of the opposite sign would drive the elbow roll to −0.4 rad).
  const Scene rest = load_scene_text(
      robot_scene(file, R"(, "initial_angles": {"elbow_roll": 0.4, "wrist_pitch": -0.7}, "motors": {"stiffness": 100})",
                  R"("gravity": [0, 0, 0], )"),
      "robot.json");
  Simulator sim(*rest.model);
  const Trajectory t = sim.run(rest.model->params().defaults());
  ASSERT_TRUE(t.failure.empty()) << t.failure;
  EXPECT_LT((t.q.back() - t.q.front()).norm(), 1e-9);
}

// dΦ/dp through a robot: Φ = x + z of the palm's centre after 10 steps, w.r.t. motor targets
// of a world-anchored joint (a = child, axis flipped) and of a joint between two links, a
// limit stiffness (the shoulder pitch starts beyond its limit) and a joint stiffness:
// adjoint = direct = central differences.
TEST(Urdf, Kr5GradientsAgreeAdjointDirectFd) {
  REQUIRE_ROBOT(file, "KR5/KR5 sixx R650.urdf");
  const Scene scene = load_scene_text(
      R"({"dt": 0.01, "steps": 10, "bodies": [{"type": "urdf", "name": "kr5", "file": )" + json_string(file) +
          R"(, "orientation": [1.5707963267948966, 0, 0], "initial_angles": {"shoulder_pitch": 2.4, "elbow_pitch": -0.6},
             "joints": {"stiffness": 1e6, "axis_stiffness": 1e4}, "limits": {"stiffness": 300},
             "motors": {"stiffness": 200, "damping": 2, "targets": {"shoulder_yaw": [0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2]}}}]})",
      "kr5.json");
  const Model& m = *scene.model;
  Simulator sim(m);
  const VecX p = m.params().defaults();
  const Trajectory traj = sim.run(p);
  ASSERT_TRUE(traj.completed()) << traj.failure;
  int palm = -1;
  for (std::size_t k = 0; k < scene.bodies.size(); ++k)
    if (scene.bodies[k].name == "kr5/palm") palm = static_cast<int>(k);
  ASSERT_GE(palm, 0);
  VecX w = VecX::Zero(m.num_dofs());
  const int d = static_cast<const RigidBody&>(*m.bodies()[palm]).dof();
  w[d] = 1.0;
  w[d + 2] = 1.0;
  Objective phi;
  phi.add(1.0, std::make_unique<LinearState>(w, -1));
  const ParameterTable& t = m.params();
  const std::vector<int> check = {t.require("robots.kr5.joints.shoulder_yaw.target_angles").offset + 4,
                                  t.require("robots.kr5.joints.wrist_pitch.target_angles").offset + 7,
                                  t.require("robots.kr5.joints.shoulder_pitch.limit_stiffness").offset,
                                  t.require("robots.kr5.joints.elbow_pitch.damping").offset,
                                  t.require("robots.kr5.joints.elbow_roll.stiffness").offset};
  const GradientResult adj = gradient_adjoint(m, traj, phi);
  const DirectResult dir = gradient_direct(m, traj, phi, check);
  for (std::size_t c = 0; c < check.size(); ++c) {
    const double steps[] = {1e-4, 1e-5, 1e-6};
    const FdSweep fd = gradient_fd_sweep(sim, phi, p, check[c], steps);
    const double scale = std::max(1e-9, std::abs(fd.derivative));
    std::printf("[ KR5 gradient %-46s ] adjoint %.10e  direct %.10e  central FD %.10e\n", t.name_of(check[c]).c_str(),
                adj.dphi_dp[check[c]], dir.dphi_dp[c], fd.derivative);
    EXPECT_GT(std::abs(adj.dphi_dp[check[c]]), 1e-12) << t.name_of(check[c]);
    EXPECT_NEAR(adj.dphi_dp[check[c]], dir.dphi_dp[c], 1e-7 * scale) << t.name_of(check[c]);
    EXPECT_NEAR(adj.dphi_dp[check[c]], fd.derivative, 1e-4 * scale) << t.name_of(check[c]) << "\n" << fd.report();
  }
}

// A three-link robot written here: a massive base, a link welded to it by a fixed joint,
// and an arm on a revolute joint. `joint_type` and `arm_inertial` vary for bad inputs.
std::string small_urdf(const std::string& joint_type = "revolute", bool arm_inertial = true) {
  std::string arm = arm_inertial ? R"(<inertial><origin xyz="0.1 0 0" rpy="0 0 0.3"/><mass value="2"/>
      <inertia ixx="0.01" ixy="0.001" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>)"
                                 : R"(<visual><geometry><mesh filename="arm.stl"/></geometry></visual>)";
  return R"(<robot name="small">
  <link name="base"><inertial><origin xyz="0 0 0.05"/><mass value="3"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial>
    <collision><origin xyz="0 0 0"/><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <link name="plate"><inertial><origin xyz="0.2 0 0" rpy="0.5 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.04" iyz="0" izz="0.05"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="weld" type="fixed"><parent link="base"/><child link="plate"/><origin xyz="0 0.1 0" rpy="0 0 1.5707963267948966"/></joint>
  <link name="arm">)" + arm + R"(</link>
  <joint name="hinge" type=")" + joint_type + R"("><parent link="plate"/><child link="arm"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>)";
}

std::string write(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

TEST(Urdf, FixedJointsMergeMassCentreAndInertiaExactly) {
  const auto dir = fresh_temp_dir("urdf");
  const std::string file = write(dir, "small.urdf", small_urdf());
  const Scene scene = load_scene_text(robot_scene(file, R"(, "base": "floating")"), "robot.json");
  const Model& model = *scene.model;
  ASSERT_EQ(model.bodies().size(), 2u);
  const VecX p = model.params().defaults();
  VecX q0 = VecX::Zero(model.num_dofs()), v0 = q0;
  for (const auto& b : model.bodies()) b->initial_state(p, q0, v0);
  const auto& base = static_cast<const RigidBody&>(*model.bodies()[0]);
  // Hand-computed: plate frame = Rz(π/2) at (0, 0.1, 0); its centre (0.2, 0, 0) → (0, 0.3, 0).
  const Mat3 Rz = Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ()).toRotationMatrix();
  const Mat3 Rp = Rz * Eigen::AngleAxisd(0.5, Vec3::UnitX()).toRotationMatrix();
  const Vec3 c_base(0, 0, 0.05), c_plate(0, 0.3, 0);
  const Vec3 com = (3.0 * c_base + 1.0 * c_plate) / 4.0;
  auto shift = [&](double m, const Vec3& c) {
    const Vec3 d = c - com;
    return Mat3(m * (d.squaredNorm() * Mat3::Identity() - d * d.transpose()));
  };
  const Mat3 I = Vec3(0.1, 0.2, 0.3).asDiagonal().toDenseMatrix() + shift(3.0, c_base) +
                 Rp * Vec3(0.01, 0.04, 0.05).asDiagonal().toDenseMatrix() * Rp.transpose() + shift(1.0, c_plate);
  EXPECT_DOUBLE_EQ(base.mass(p), 4.0);
  EXPECT_LT((q0.segment<3>(base.dof()) - com).norm(), 1e-15);
  EXPECT_LT((base.inertia_B(p) - I).norm(), 1e-14);
  EXPECT_LT(q0.segment<3>(base.dof() + 3).norm(), 1e-15);  // body axes = base link axes
}

// Gravity along −y swings the small robot's arm about its z hinge from 0.1 rad towards π;
// the URDF limit [−1, 1] stops it near 1 rad, and without limits it swings through.
TEST(Urdf, JointLimitsStopTheArm) {
  const auto dir = fresh_temp_dir("urdf");
  const std::string file = write(dir, "small.urdf", small_urdf());
  double swing[2];
  for (const bool limits : {true, false}) {
    const std::string extra = R"(, "initial_angles": {"hinge": 0.1}, "limits": )" + std::string(limits ? "{}" : "false");
    const Scene scene = load_scene_text(R"({"dt": 0.01, "steps": 150, "gravity": [0, -9.81, 0], "bodies": [{"type": "urdf", "name": "robot", "file": )" +
                                            json_string(file) + extra + "}]}",
                                        "robot.json");
    Simulator sim(*scene.model);
    const Trajectory t = sim.run(scene.model->params().defaults());
    ASSERT_TRUE(t.failure.empty()) << t.failure;
    const auto& arm = static_cast<const RigidBody&>(*scene.model->bodies()[0]);
    double max_angle = 0.0;
    for (const VecX& q : t.q) {
      const Vec3 x = arm.rotation(q) * Vec3::UnitX();  // the arm link's x axis, +y at angle 0
      max_angle = std::max(max_angle, std::atan2(-x.x(), x.y()));
    }
    swing[limits] = max_angle;
  }
  EXPECT_GT(swing[1], 1.0);
  EXPECT_LT(swing[1], 1.1);
  EXPECT_GT(swing[0], 2.0);
}

// The small robot's arm on a vertical prismatic joint falls under gravity onto its limit
// −1 m: it arrives at √(2 g) ≈ 4.4 m/s and the 1e5 N/m penalty (2 kg) stops it within
// v √(m/k) ≈ 2 cm, while without limits it falls g t²/2 = 11 m in 1.5 s. A drive whose
// targets are the initial slide 0.3 m holds it there at the static deflection m g / k_m.
TEST(Urdf, PrismaticJointStopsAtItsLimitOrFollowsItsDrive) {
  const auto dir = fresh_temp_dir("urdf");
  const std::string file = write(dir, "slider.urdf", small_urdf("prismatic"));
  // Lowest and final slide of the arm's centre relative to its start (m).
  auto slides = [&](const std::string& extra) {
    const Scene scene = load_scene_text(R"({"dt": 0.01, "steps": 150, "bodies": [{"type": "urdf", "name": "robot", "file": )" +
                                            json_string(file) + extra + "}]}",
                                        "robot.json");
    Simulator sim(*scene.model);
    const Trajectory t = sim.run(scene.model->params().defaults());
    EXPECT_TRUE(t.failure.empty()) << t.failure;
    const int d = static_cast<const RigidBody&>(*scene.model->bodies()[0]).dof();
    double lowest = 0.0;
    for (const VecX& q : t.q) lowest = std::min(lowest, q[d + 2] - t.q.front()[d + 2]);
    return std::pair{lowest, t.q.back()[d + 2] - t.q.front()[d + 2]};
  };
  const auto [lowest, final_limited] = slides("");
  EXPECT_LT(lowest, -1.0);
  EXPECT_GT(lowest, -1.03);
  EXPECT_GT(final_limited, -1.03);
  EXPECT_LT(slides(R"(, "limits": false)").second, -10.0);
  EXPECT_NEAR(slides(R"(, "initial_angles": {"hinge": 0.3}, "motors": {"stiffness": 1, "slide_stiffness": 1e5, "damping": 1})").second,
              -2.0 * 9.81 / 1e5, 1e-5);
}

// A link without <inertial> gets its mass and inertia from its mesh with `mesh_density`:
// a 0.2 × 0.1 × 0.05 m box OBJ (corner at the origin), placed by the visual origin
// (xyz 0.1 0 0, yaw 0.4), at 800 kg/m³ → 0.8 kg, the box's inertia turned by the yaw.
TEST(Urdf, MeshInertiaForLinksWithoutInertial) {
  const auto dir = fresh_temp_dir("urdf");
  write(dir, "arm.obj", R"(v 0 0 0
v 0.2 0 0
v 0.2 0.1 0
v 0 0.1 0
v 0 0 0.05
v 0.2 0 0.05
v 0.2 0.1 0.05
v 0 0.1 0.05
f 1 3 2
f 1 4 3
f 5 6 7
f 5 7 8
f 1 2 6
f 1 6 5
f 4 8 7
f 4 7 3
f 1 5 8
f 1 8 4
f 2 3 7
f 2 7 6
)");
  std::string text = small_urdf("revolute", false);
  const std::string from = R"(<visual><geometry><mesh filename="arm.stl"/></geometry></visual>)";
  text.replace(text.find(from), from.size(),
               R"(<visual><origin xyz="0.1 0 0" rpy="0 0 0.4"/><geometry><mesh filename="arm.obj"/></geometry></visual>)");
  const std::string file = write(dir, "mesh_arm.urdf", text);
  const Scene scene = load_scene_text(robot_scene(file, R"(, "mesh_density": 800)"), "robot.json");
  const Model& m = *scene.model;
  ASSERT_EQ(m.bodies().size(), 1u);
  const auto& arm = static_cast<const RigidBody&>(*m.bodies()[0]);
  const VecX p = m.params().defaults();
  VecX q0 = VecX::Zero(m.num_dofs()), v0 = q0;
  arm.initial_state(p, q0, v0);
  EXPECT_NEAR(arm.mass(p), 0.8, 1e-12);
  const Mat3 Rz = Eigen::AngleAxisd(0.4, Vec3::UnitZ()).toRotationMatrix();
  const double mass = 0.8, a = 0.2, b = 0.1, c = 0.05;
  const Mat3 I_box = Vec3(mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12).asDiagonal();
  EXPECT_LT((arm.inertia_B(p) - Rz * I_box * Rz.transpose()).norm(), 1e-12 * I_box.norm());
  // The arm link frame sits at the joint origin: world (0, 0.4, 0) with the plate's yaw π/2.
  const Mat3 R_link = Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ()).toRotationMatrix();
  const Vec3 com = Vec3(0, 0.4, 0) + R_link * (Vec3(0.1, 0, 0) + Rz * Vec3(0.1, 0.05, 0.025));
  EXPECT_LT((q0.segment<3>(arm.dof()) - com).norm(), 1e-12);
  // Without the density it is an error; a missing mesh file names the link.
  EXPECT_NE(input_error([&] { load_scene_text(robot_scene(file, ""), "robot.json"); }).find("no mesh inertia"),
            std::string::npos);
  std::filesystem::remove(dir / "arm.obj");
  const std::string missing = input_error([&] { load_scene_text(robot_scene(file, R"(, "mesh_density": 800)"), "robot.json"); });
  EXPECT_NE(missing.find("bodies.0.mesh_density: " + file + ": link 'arm' has no <inertial> and its mesh arm.obj"),
            std::string::npos)
      << missing;
}

// "base": "kinematic": the root link group is a kinematic body whose per-step poses are
// controls; the arm, hinged to it, follows a base moving along x.
TEST(Urdf, KinematicBaseFollowsItsPoseControls) {
  const auto dir = fresh_temp_dir("urdf");
  const std::string file = write(dir, "small.urdf", small_urdf());
  const Scene scene = load_scene_text(robot_scene(file, R"(, "base": "kinematic")", R"("gravity": [0, 0, 0], )"),
                                      "robot.json");
  const Model& m = *scene.model;
  ASSERT_EQ(m.bodies().size(), 2u);
  const auto& base = static_cast<const RigidBody&>(*m.bodies()[0]);
  ASSERT_TRUE(base.kinematic());
  const ParamRange poses = m.params().require("bodies.robot/base.poses");
  EXPECT_EQ(poses.entry->rows, 5);
  EXPECT_EQ(poses.entry->cols, 6);
  VecX p = m.params().defaults();
  for (int i = 0; i <= 4; ++i) p[poses.offset + 6 * i] += 0.01 * i;  // 2 m/s along x
  Simulator sim(m);
  const Trajectory t = sim.run(p);
  ASSERT_TRUE(t.failure.empty()) << t.failure;
  EXPECT_NEAR(t.q.back()[base.dof()] - t.q.front()[base.dof()], 0.04, 1e-12);
  const int arm = static_cast<const RigidBody&>(*m.bodies()[1]).dof();
  EXPECT_GT(t.q.back()[arm] - t.q.front()[arm], 0.02);
}

TEST(Urdf, CollisionShapesBecomeContactProxies) {
  const auto dir = fresh_temp_dir("urdf");
  const std::string file = write(dir, "small.urdf", small_urdf());
  // Base on the floor: box corners (8 points) and the plate's sphere carry it.
  const Scene scene = load_scene_text(
      robot_scene(file, R"(, "base": "floating", "position": [0, 0, 0.051])",
                  R"("obstacles": [{"type": "plane"}], "contact": {"kn": 1e5, "kd": 100}, )"),
      "robot.json");
  int contact_terms = 0;
  for (const auto& t : scene.model->terms()) contact_terms += t->name() == "rigid_contact";
  EXPECT_EQ(contact_terms, 2);  // points of the box, the sphere
  const Scene none = load_scene_text(
      robot_scene(file, R"(, "base": "floating", "collision": false)", R"("obstacles": [{"type": "plane"}], )"),
      "robot.json");
  contact_terms = 0;
  for (const auto& t : none.model->terms()) contact_terms += t->name() == "rigid_contact";
  EXPECT_EQ(contact_terms, 0);
}

TEST(Urdf, PerJointStiffnessesAndTheSceneKeyOfEveryJointParameter) {
  const auto dir = fresh_temp_dir("urdf");
  const std::string file = write(dir, "small.urdf", small_urdf());
  const Scene scene = load_scene_text(
      robot_scene(file, R"(, "base": "floating", "joints": {"stiffness": {"hinge": 2e5}, "axis_stiffness": 7e3},
                  "limits": {"stiffness": {"hinge": 3e3}}, "motors": {"stiffness": 40, "damping": {"hinge": 0.5},
                  "targets": {"hinge": [0, 0.1, 0.2, 0.3, 0.4]}})"),
      "robot.json");
  const ParameterTable& params = scene.model->params();
  auto value = [&](const std::string& path) { return params.defaults()[params.require(path).offset]; };
  EXPECT_EQ(value("robots.robot.joints.hinge.stiffness"), 2e5);
  EXPECT_EQ(value("robots.robot.joints.hinge.axis_stiffness"), 7e3);
  EXPECT_EQ(value("robots.robot.joints.hinge.limit_stiffness"), 3e3);
  EXPECT_EQ(value("robots.robot.joints.hinge.damping"), 0.5);
  EXPECT_EQ(value("robots.robot.joints.hinge.target_angles.3"), 0.3);
  const std::map<std::string, std::string> expected = {
      {"robots.0.joints.0.stiffness", "/bodies/0/joints/stiffness/hinge"},
      {"robots.0.joints.0.axis_stiffness", "/bodies/0/joints/axis_stiffness/hinge"},
      {"robots.0.joints.0.motor_stiffness", "/bodies/0/motors/stiffness/hinge"},
      {"robots.0.joints.0.target_angles", "/bodies/0/motors/targets/hinge"},
      {"robots.0.joints.0.limit_stiffness", "/bodies/0/limits/stiffness/hinge"},
      {"robots.0.joints.0.damping", "/bodies/0/motors/damping/hinge"}};
  for (const auto& [path, pointer] : expected) {
    ASSERT_TRUE(scene.param_keys.count(path)) << path;
    EXPECT_EQ(scene.param_keys.at(path), pointer);
  }
  // The links' initial states come from the URDF: no scene key.
  EXPECT_EQ(scene.param_keys.at("bodies.0.velocity"), "");
  EXPECT_EQ(scene.param_keys.at("bodies.1.mass"), "");
  const std::string e = input_error([&] {
    load_scene_text(robot_scene(file, R"(, "joints": {"stiffness": {"weld": 1}})"), "robot.json");
  });
  EXPECT_NE(e.find("robot.json: bodies.0.joints.stiffness.weld: not a movable joint of "), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(Urdf, BadInputsNameTheFileAndKeyPath) {
  const auto dir = fresh_temp_dir("urdf");
  const std::string good = write(dir, "small.urdf", small_urdf());
  auto error = [&](const std::string& extra, const std::string& file) {
    return input_error([&] { load_scene_text(robot_scene(file, extra), "robot.json"); });
  };
  auto expect_one_line = [](const std::string& msg, const std::string& what) {
    EXPECT_NE(msg.find("robot.json: bodies.0"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  };
  expect_one_line(error("", (dir / "missing.urdf").string()), "bodies.0.file: " + (dir / "missing.urdf").string() + ": no such file");
  expect_one_line(error("", write(dir, "bad.urdf", "<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/><child link='zz'/></joint></robot>")),
                  "urdfdom rejects it");
  expect_one_line(error("", write(dir, "garbage.urdf", "this is not xml")), "urdfdom rejects it");
  expect_one_line(error("", write(dir, "planar.urdf", small_urdf("planar"))), "joint 'hinge' has type planar");
  expect_one_line(error(R"(, "motors": {"stiffness": 10})", write(dir, "prismatic.urdf", small_urdf("prismatic"))),
                  "bodies.0.motors.slide_stiffness: is required for the actuated joint 'hinge'");
  expect_one_line(error(R"(, "motors": {"stiffness": {"weld": 3}})", good),
                  "bodies.0.motors.stiffness.weld: not an actuated joint");
  expect_one_line(error(R"(, "motors": {"stiffness": {}})", good),
                  "bodies.0.motors.stiffness: has no value for the actuated joint 'hinge'");
  expect_one_line(error("", write(dir, "floating.urdf", small_urdf("floating"))), "joint 'hinge' has type floating");
  expect_one_line(error("", write(dir, "mesh_only.urdf", small_urdf("revolute", false))),
                  "link 'arm' and the links fixed to it have no <inertial>");
  expect_one_line(error(R"(, "initial_angles": {"nope": 1})", good), "bodies.0.initial_angles.nope: no movable joint");
  expect_one_line(error(R"(, "motors": {"stiffness": 10, "targets": {"hinge": [1, 2]}})", good),
                  "bodies.0.motors.targets.hinge: needs steps + 1 = 5 angles");
  expect_one_line(error(R"(, "motors": {"damping": 1})", good), "bodies.0.motors.stiffness");
  expect_one_line(error(R"(, "base": "welded")", good), "bodies.0.base");
  expect_one_line(error(R"(, "wheels": 4)", good), "bodies.0.wheels");
  const std::string after = input_error([&] {
    load_scene_text(R"({"bodies": [{"type": "urdf", "base": "floating", "file": )" + json_string(good) +
                        R"(}, {"type": "rigid", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1}]})",
                    "robot.json");
  });
  EXPECT_NE(after.find("robot.json: bodies.1.type: \"rigid\" bodies must be listed before the \"urdf\" robots"),
            std::string::npos)
      << after;
}

}  // namespace
}  // namespace addsim
