#include <cmath>
#include <filesystem>
#include <sstream>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"
#include "addsim/fem/fem_builder.h"
#include "addsim/io/scene_builder.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/mesh/mesh_io.h"

namespace addsim {

using nlohmann::json;

namespace {

// Largest element count a generator may be asked for (a guard against typos such as 1e7).
constexpr int kMaxTargetTets = 2000000;

// Slack of given barycentric coordinates: each ≥ −tol, |Σ b − 1| ≤ tol.
constexpr double kBarycentricTolerance = 1e-9;

// Runs a mesher or loader and prefixes its InputError with the scene file and key path.
template <class F>
TetMesh with_key(const ObjectReader& r, const std::string& key, F&& make) {
  try {
    return make();
  } catch (const InputError& e) {
    r.fail(key, e.what());
  }
}

// `mesh` as a generator object: {"generator": ..., dimensions, "target_tets": N}.
TetMesh generate_mesh(const json& spec, const std::string& path, const std::string& source) {
  ObjectReader g(spec, path, source);
  const std::string kind =
      g.choice("generator", std::nullopt, {"sphere", "cylinder", "box", "torus", "three_tori", "surface"});
  const int target = g.integer("target_tets", std::nullopt, 1);
  if (target > kMaxTargetTets)
    g.fail("target_tets", "must be at most " + std::to_string(kMaxTargetTets) + ", got " + std::to_string(target));
  check_memory(estimated_fem_bytes(target), source + ": " + join_path(path, "target_tets"),
               "an FEM body of " + std::to_string(target) + " tetrahedra");
  TetMesh mesh;
  if (kind == "box") {
    const Vec3 size = g.vec3("size", std::nullopt);
    if (!(size.minCoeff() > 0.0)) g.fail("size", "every side must be > 0");
    const std::string split = g.choice("split", "six", {"five", "six"});
    g.finish();
    mesh = with_key(g, "generator", [&] {
      return make_box_mesh_target(size, target, split == "five" ? BoxSplit::kFive : BoxSplit::kSix);
    });
    return mesh;
  }
  if (!gmsh_available())
    g.fail("generator", "\"" + kind + "\" needs gmsh, but this addsim was built without it (ADDSIM_WITH_GMSH)");
  if (kind == "surface") {
    // A closed .obj/.stl surface, relative to the scene file's directory, filled with tets.
    std::filesystem::path file(g.string("file", std::nullopt));
    if (file.is_relative()) file = std::filesystem::path(source).parent_path() / file;
    g.finish();
    mesh = with_key(g, "file", [&] { return make_mesh_from_surface(file.string(), target); });
  } else if (kind == "sphere") {
    const double radius = g.number("radius", std::nullopt, Bound::kPositive);
    g.finish();
    mesh = with_key(g, "generator", [&] { return make_sphere_mesh(radius, target); });
  } else if (kind == "cylinder") {
    const double radius = g.number("radius", std::nullopt, Bound::kPositive);
    const double height = g.number("height", std::nullopt, Bound::kPositive);
    g.finish();
    mesh = with_key(g, "generator", [&] { return make_cylinder_mesh(radius, height, target); });
  } else {
    const double major = g.number("major_radius", std::nullopt, Bound::kPositive);
    const double minor = g.number("minor_radius", std::nullopt, Bound::kPositive);
    if (!(minor < major)) g.fail("minor_radius", "must be smaller than major_radius");
    g.finish();
    mesh = with_key(g, "generator", [&] {
      return kind == "torus" ? make_torus_mesh(major, minor, target) : make_three_tori_mesh(major, minor, target);
    });
  }
  return mesh;
}

// `mesh` as a file path, relative to the scene file's directory.
TetMesh load_mesh_file(ObjectReader& r, const std::string& file) {
  if (file.empty()) r.fail("mesh", "expected a mesh file path or a generator object, got \"\"");
  std::filesystem::path p(file);
  if (p.is_relative()) p = std::filesystem::path(r.source()).parent_path() / p;
  TetMesh mesh = with_key(r, "mesh", [&] { return load_tet_mesh(p.string()); });
  check_memory(estimated_fem_bytes(static_cast<double>(mesh.tets.size())), r.source() + ": " + join_path(r.path(), "mesh"),
               p.string() + " with " + std::to_string(mesh.tets.size()) + " tetrahedra");
  return mesh;
}

}  // namespace

void parse_fem_body(ObjectReader& r, int index, SceneBuilder& b) {
  const std::string name = r.string("name", "");
  const std::string base = "bodies." + std::to_string(index);

  // Rest mesh: a file or a generator.
  const json& spec = r.raw("mesh");
  TetMesh mesh;
  if (spec.is_string())
    mesh = load_mesh_file(r, spec.get<std::string>());
  else if (spec.is_object())
    mesh = generate_mesh(spec, join_path(r.path(), "mesh"), r.source());
  else
    r.fail("mesh", "expected a mesh file path or a generator object, got " + describe(spec));

  // Initial rigid motion (docs/fem.md): position of the rest centroid, rotation vector, velocities.
  FemInit init;
  if (r.has("position")) init.position = r.vec3("position", std::nullopt);
  init.orientation = r.vec3("orientation", Vec3::Zero());
  init.velocity = r.vec3("velocity", Vec3::Zero());
  init.angular_velocity = r.vec3("angular_velocity", Vec3::Zero());

  // Material; ranges are checked here so that errors name the scene key path.
  static const json kEmpty = json::object();
  ObjectReader m(r.has("material") ? r.raw("material") : kEmpty, join_path(r.path(), "material"), r.source());
  FemMaterial material;
  material.youngs_modulus = m.number("youngs_modulus", material.youngs_modulus, Bound::kPositive);
  material.poisson_ratio = m.number("poisson_ratio", material.poisson_ratio);
  if (!(material.poisson_ratio > -1.0 && material.poisson_ratio < 0.5))
    m.fail("poisson_ratio", "must lie in (-1, 0.5), got " + describe(m.raw("poisson_ratio")));
  material.density = m.number("density", material.density, Bound::kPositive);
  material.viscosity = m.number("viscosity", material.viscosity, Bound::kNonNegative);
  m.finish();

  // Model options.
  FemOptions options;
  options.elasticity = r.choice("elasticity", "add", {"add", "standard"}) == "standard" ? NeoHookeanVariant::kStandard
                                                                                       : NeoHookeanVariant::kAdd;
  options.viscosity = r.choice("viscosity_model", "rotation_invariant", {"rotation_invariant", "linear"}) == "linear"
                          ? ViscosityModel::kLinear
                          : ViscosityModel::kRotationInvariant;
  options.mass = r.choice("mass", "consistent", {"consistent", "lumped"}) == "lumped" ? MassMatrixKind::kLumped
                                                                                      : MassMatrixKind::kConsistent;
  options.gravity = b.gravity;

  // Build; the FEM layer's errors (degenerate or inverted rest tets) name the body.
  int body = -1;
  try {
    body = add_fem_body(*b.model, name, mesh, material, init, options, b.obstacles, b.contact);
  } catch (const InputError& e) {
    fail_at(b.source, r.path(), e.what());
  }
  ADDSIM_CHECK(body == index, "FEM body index matches its scene index");
  b.scene->bodies.push_back({name, "fem", base});

  // Every node is a body point (springs may anchor to it); initial positions from p's defaults.
  const FemBody& fem = fem_body(*b.model, body);
  VecX q0 = VecX::Zero(b.model->num_dofs()), v0 = VecX::Zero(b.model->num_dofs());
  fem.initial_state(b.model->params().defaults(), q0, v0);
  BodyPoints pts;
  pts.dofs.reserve(fem.num_nodes());
  pts.initial.reserve(fem.num_nodes());
  for (int k = 0; k < fem.num_nodes(); ++k) {
    pts.dofs.push_back(fem.dof(k));
    pts.initial.push_back(q0.segment<3>(fem.dof(k)));
  }
  b.points.push_back(std::move(pts));
}

bool has_embedded_keys(ObjectReader& r) { return r.has("embedded") || r.has("tet") || r.has("barycentric"); }

EmbeddedPoint parse_embedded_point(ObjectReader& r, int body, const SceneBuilder& b) {
  const std::string key = r.has("embedded") ? "embedded" : r.has("tet") ? "tet" : "barycentric";
  const Body& target = *b.model->bodies()[body];
  if (target.kind() != BodyKind::kFem)
    r.fail(key, "embedded anchors need a \"fem\" body, but " + b.scene->bodies[body].path + " is \"" +
                    b.scene->bodies[body].type + "\"");
  if (r.has("point")) r.fail("point", "give either a node \"point\" or an embedded point, not both");
  const FemBody& fem = fem_body(*b.model, body);
  const BodyPoints& pts = b.points[body];  // initial node positions
  const auto& tets = fem.mesh().tets;
  EmbeddedPoint e;
  int tet = -1;
  if (r.has("embedded")) {
    // A point of the body's initial placement (the frame of its nodes at t = 0), located in
    // the tet that contains it; the barycentric coordinates make it a material point.
    if (r.has("tet") || r.has("barycentric"))
      r.fail("embedded", "give either \"embedded\" or \"tet\" and \"barycentric\", not both");
    const Vec3 x = r.vec3("embedded", std::nullopt);
    const TetLocation loc = locate_point(pts.initial, tets, x);
    if (loc.tet < 0) {
      std::ostringstream msg;
      msg << "the point [" << x.x() << ", " << x.y() << ", " << x.z() << "] lies outside every tet of "
          << b.scene->bodies[body].path << " (in its initial placement)";
      r.fail("embedded", msg.str());
    }
    tet = loc.tet;
    e.weights = loc.barycentric;
  } else {
    if (!r.has("tet")) r.fail("tet", "an anchor with \"barycentric\" needs \"tet\"");
    if (!r.has("barycentric")) r.fail("barycentric", "an anchor with \"tet\" needs \"barycentric\"");
    const json& tv = r.raw("tet");
    if (!tv.is_number_integer() || tv.get<long long>() < 0 || tv.get<long long>() >= fem.num_tets())
      r.fail("tet", "expected a tet index in [0, " + std::to_string(fem.num_tets()) + "), got " + describe(tv));
    tet = tv.get<int>();
    const json& bv = r.raw("barycentric");
    const std::string bpath = join_path(r.path(), "barycentric");
    if (!bv.is_array() || bv.size() != 4) r.fail("barycentric", "expected [b0, b1, b2, b3], got " + describe(bv));
    double sum = 0.0;
    for (int m = 0; m < 4; ++m) {
      e.weights[m] = to_number(bv[m], r.source(), bpath + "." + std::to_string(m), Bound::kAny);
      if (e.weights[m] < -kBarycentricTolerance)
        fail_at(r.source(), bpath + "." + std::to_string(m), "must be >= 0 (the point must lie in the tet), got " +
                                                              describe(bv[m]));
      sum += e.weights[m];
    }
    if (std::abs(sum - 1.0) > kBarycentricTolerance)
      r.fail("barycentric", "must sum to 1 (within 1e-9), got " + describe(json(sum)));
  }
  for (int m = 0; m < 4; ++m) {
    e.dofs[m] = fem.dof(tets[tet][m]);
    e.initial += e.weights[m] * pts.initial[tets[tet][m]];
  }
  return e;
}

}  // namespace addsim
