// MarkerEmbedder (the grid lookup that task loading uses to embed markers given by position)
// against embed_marker's scan over every tet: the same tet and the same weights, bit for bit,
// for points inside tets, on vertices, edges and faces shared by several tets, and outside the
// mesh (where the scan's extrapolating choice is kept), plus its errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <utility>

#include "addsim/core/error.h"
#include "addsim/fem/fem_body.h"
#include "addsim/fem/fem_builder.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/objectives/markers.h"
#include "rigid_part.h"

namespace addsim {
namespace {

// Body 0: an FEM box of 4×3×2 cells (144 tets) whose nodes are moved off the lattice by a
// seeded offset, so no two tets share a bounding box; body 1: particles; body 2: a rigid sphere.
struct EmbedFixture {
  Model model;
  VecX q, v;
  const FemBody* box = nullptr;
  EmbedFixture() {
    model.scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.01, 4);
    add_fem_body(model, "box", make_box_mesh(Vec3(0.4, 0.3, 0.2), Eigen::Vector3i(4, 3, 2)), FemMaterial{}, {});
    model.add_particles("a", {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0.5)}, std::vector<Vec3>(3, Vec3::Zero()),
                        {0.3, 0.7, 1.1});
    test::add_test_rigid_sphere(model, Vec3(1.0, 0.5, 0.3), Vec3(0.3, -0.2, 0.5));
    model.finalize();
    model.initial_state(model.params().defaults(), q, v);
    box = static_cast<const FemBody*>(model.bodies()[0].get());
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int k = 0; k < box->dof_count(); ++k) q[box->dof_offset() + k] += 0.01 * u(rng);
  }
  Vec3 node(int k) const { return q.segment<3>(box->dof(k)); }
};

// The same body, points, weights and rigid frame, compared as bits (EXPECT_EQ on doubles).
void expect_same_marker(const Marker& a, const Marker& b, const Vec3& x) {
  SCOPED_TRACE(::testing::Message() << "x = " << x.transpose());
  EXPECT_EQ(a.body, b.body);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.dofs, b.dofs);
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.rigid_dof, b.rigid_dof);
  EXPECT_EQ(a.local, b.local);
}

TEST(MarkerEmbedder, FindsTheScansTetAndWeightsOnVerticesEdgesFacesAndInside) {
  EmbedFixture f;
  MarkerEmbedder embedder(f.model, f.q);
  const auto& tets = f.box->mesh().tets;
  std::vector<Vec3> points;
  std::set<std::pair<int, int>> edges;
  for (const auto& t : tets) {
    Vec3 centre = Vec3::Zero();
    for (int a = 0; a < 4; ++a) {
      centre += 0.25 * f.node(t[a]);
      for (int b = a + 1; b < 4; ++b) edges.emplace(std::min(t[a], t[b]), std::max(t[a], t[b]));
      // The centroid of the face opposite vertex a: shared with the neighbouring tet inside.
      Vec3 face = Vec3::Zero();
      for (int c = 0; c < 4; ++c)
        if (c != a) face += f.node(t[c]) / 3.0;
      points.push_back(face);
    }
    points.push_back(centre);
  }
  for (const auto& [a, b] : edges) points.push_back(0.5 * (f.node(a) + f.node(b)));
  for (int k = 0; k < f.box->num_nodes(); ++k) points.push_back(f.node(k));
  for (const Vec3& x : points) {
    const Marker m = embedder.embed(0, x);
    expect_same_marker(m, embed_marker(f.model, 0, f.q, x), x);
    EXPECT_NEAR((m.position(f.q) - x).norm(), 0.0, 1e-12);
  }
}

TEST(MarkerEmbedder, KeepsTheScansExtrapolatingChoiceOutsideTheMesh) {
  EmbedFixture f;
  MarkerEmbedder embedder(f.model, f.q);
  // Points in and around the box: inside tets, in the gaps of its perturbed surface, and
  // beyond it on every side (the grid's box, and far outside it).
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  int outside = 0;
  for (int i = 0; i < 400; ++i) {
    const Vec3 x(u(rng), u(rng), u(rng));
    const Marker m = embedder.embed(0, x);
    expect_same_marker(m, embed_marker(f.model, 0, f.q, x), x);
    outside += *std::min_element(m.weights.begin(), m.weights.end()) < 0.0;
  }
  EXPECT_GT(outside, 100);
  for (const Vec3& x : {Vec3(5.0, 0.0, 0.0), Vec3(0.0, -7.0, 2.0), Vec3(0.2000001, 0.15, 0.1)})
    expect_same_marker(embedder.embed(0, x), embed_marker(f.model, 0, f.q, x), x);
}

TEST(MarkerEmbedder, ParticleAndRigidBodiesAndErrorsAsEmbedMarker) {
  EmbedFixture f;
  MarkerEmbedder embedder(f.model, f.q);
  const Vec3 x(0.9, 0.1, 0.2);
  expect_same_marker(embedder.embed(1, x), embed_marker(f.model, 1, f.q, x), x);
  expect_same_marker(embedder.embed(2, x), embed_marker(f.model, 2, f.q, x), x);
  EXPECT_THROW(embedder.embed(3, x), InputError);
  EXPECT_THROW(embedder.embed(-1, x), InputError);
  // A point with no finite coordinates: the scan finds no tet and reports it; so does the grid.
  const Vec3 nan = Vec3::Constant(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THROW(embed_marker(f.model, 0, f.q, nan), InputError);
  EXPECT_THROW(embedder.embed(0, nan), InputError);
}

}  // namespace
}  // namespace addsim
