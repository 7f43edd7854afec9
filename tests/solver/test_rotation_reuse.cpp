// ReusedFactorization with rotation groups: the Jacobian of a body with isotropic terms
// satisfies A(R x) = Q A(x) Qᵀ (Q = diag(R, …, R)), so an LU made at x, applied as
// Q LU⁻¹ Qᵀ, solves the system of the rotated body in one GMRES iteration, where the plain
// old LU needs many or is given up. The test body is a spring network whose edge blocks
// k d dᵀ (stiffness along the edge direction d) and c [d]× (a nonsymmetric, rotation-covariant
// coupling) rotate with it, plus a mass term; a second, unrotated group checks that each group
// gets its own rotation.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <Eigen/Geometry>

#include "addsim/solver/linear_solver.h"
#include "addsim/solver/reused_factorization.h"

namespace addsim {
namespace {

struct Network {
  StencilSet stencils;
  SparsePattern pattern;
  std::vector<std::pair<int, int>> edges;  // point pairs
  int points = 0;
};

// Points on an m × m × m grid (two bodies of m³ points each, DOFs 3k … 3k+2 per point),
// each point joined to its grid neighbours and its face diagonal (so that the network is
// rigid in every direction).
Network make_network(int m) {
  Network net;
  const int per_body = m * m * m;
  net.points = 2 * per_body;
  for (int body = 0; body < 2; ++body) {
    auto id = [&](int i, int j, int k) { return body * per_body + i + m * (j + m * k); };
    for (int k = 0; k < m; ++k)
      for (int j = 0; j < m; ++j)
        for (int i = 0; i < m; ++i) {
          if (i + 1 < m) net.edges.push_back({id(i, j, k), id(i + 1, j, k)});
          if (j + 1 < m) net.edges.push_back({id(i, j, k), id(i, j + 1, k)});
          if (k + 1 < m) net.edges.push_back({id(i, j, k), id(i, j, k + 1)});
          if (i + 1 < m && j + 1 < m) net.edges.push_back({id(i, j, k), id(i + 1, j + 1, k)});
          if (j + 1 < m && k + 1 < m) net.edges.push_back({id(i, j, k), id(i, j + 1, k + 1)});
        }
  }
  for (const auto& [a, b] : net.edges)
    net.stencils.add({3 * a, 3 * a + 1, 3 * a + 2, 3 * b, 3 * b + 1, 3 * b + 2});
  net.pattern = SparsePattern(3 * net.points, net.stencils);
  return net;
}

Mat3 cross_matrix(const Vec3& d) {
  Mat3 c;
  c << 0.0, -d.z(), d.y(), d.z(), 0.0, -d.x(), -d.y(), d.x(), 0.0;
  return c;
}

// Jacobian values at configuration x: mass on the diagonal, per edge the stiffness block
// k d dᵀ (+ a small isotropic part) and the coupling c [d]× between the two points.
VecX network_values(const Network& net, const VecX& x) {
  VecX values = VecX::Zero(net.pattern.nnz());
  for (int d = 0; d < net.pattern.size(); ++d) values[net.pattern.diagonal_index(d)] += 2.0;
  for (int s = 0; s < net.stencils.count(); ++s) {
    const auto [a, b] = net.edges[s];
    const Vec3 dir = (x.segment<3>(3 * b) - x.segment<3>(3 * a)).normalized();
    const Mat3 K = 50.0 * dir * dir.transpose() + 0.5 * Mat3::Identity();
    const Mat3 C = 3.0 * cross_matrix(dir);
    Eigen::Matrix<double, 6, 6> local;
    local << K, -K + C, -K - C, K;
    const int* map = net.pattern.map(s);
    for (int c = 0; c < 6; ++c)
      for (int r = 0; r < 6; ++r) values[map[r + 6 * c]] += local(r, c);
  }
  return values;
}

double relative_residual(const Network& net, const VecX& values, const VecX& b, const VecX& x, bool transpose) {
  VecX y = VecX::Zero(b.size());
  if (transpose)
    net.pattern.transpose_multiply_add(values, x, y);
  else
    net.pattern.multiply_add(values, x, y);
  return (b - y).norm() / b.norm();
}

TEST(RotationReuse, RotatedBodySolvesInOneIterationOnTheOldLu) {
  if (!have_umfpack()) GTEST_SKIP() << "needs UMFPACK (flop counts)";
  const int m = 5;
  const Network net = make_network(m);
  const int n = net.pattern.size();
  const int per_body = net.points / 2;
  // Rest configuration: body 0 on the grid, body 1 the same grid shifted by 2 m in x.
  VecX x0(n);
  for (int p = 0; p < net.points; ++p) {
    const int local = p % per_body;
    x0.segment<3>(3 * p) = 0.1 * Vec3(local % m, (local / m) % m, local / (m * m));
    if (p >= per_body) x0[3 * p] += 2.0;
  }
  // Body 0 rotated by 0.8 rad about a skew axis (about its centroid) and translated;
  // body 1 unchanged.
  const Mat3 rotation = Eigen::AngleAxisd(0.8, Vec3(1.0, 2.0, -0.5).normalized()).toRotationMatrix();
  const Vec3 c0 = x0.head(3 * per_body).reshaped(3, per_body).rowwise().mean();
  VecX x1 = x0;
  for (int p = 0; p < per_body; ++p)
    x1.segment<3>(3 * p) = rotation * (x0.segment<3>(3 * p) - c0) + c0 + Vec3(0.3, -0.1, 0.2);
  const VecX values0 = network_values(net, x0), values1 = network_values(net, x1);

  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  VecX b(n);
  for (int i = 0; i < n; ++i) b[i] = normal(rng);
  const auto direct = make_linear_solver(LinearSolverKind::kUmfpack, &net.pattern);
  ASSERT_TRUE(direct->factorize(values1));

  for (bool transpose : {false, true}) {
    for (bool compensate : {true, false}) {
      ReusedFactorization reused(&net.pattern, make_linear_solver(LinearSolverKind::kUmfpack, &net.pattern));
      if (compensate) reused.set_rotation_groups({{0, per_body}, {3 * per_body, per_body}});
      VecX x;
      reused.set_configuration(x0);
      ASSERT_TRUE(reused.solve(values0, b, x, transpose));  // factorises at x0
      ASSERT_EQ(reused.stats().factorizations, 1);
      reused.set_configuration(x1);
      ASSERT_TRUE(reused.solve(values1, b, x, transpose));
      VecX x_direct;
      direct->solve(b, x_direct, transpose);
      EXPECT_LT(relative_residual(net, values1, b, x, transpose), 1e-11);
      EXPECT_LT((x - x_direct).norm(), 1e-9 * x_direct.norm());
      if (compensate) {
        // A(R x) = Q A(x) Qᵀ holds exactly for body 0, and body 1 did not move: one
        // iteration (two for the round-off of the rotation), no refactorisation.
        EXPECT_EQ(reused.stats().factorizations, 1) << "transpose " << transpose;
        EXPECT_LE(reused.stats().krylov_iterations, 2) << "transpose " << transpose;
      } else {
        // The plain old LU of the unrotated body is a poor preconditioner here.
        EXPECT_TRUE(reused.stats().factorizations == 2 || reused.stats().krylov_iterations > 6)
            << "transpose " << transpose << ": " << reused.stats().krylov_iterations << " iterations";
      }
    }
  }
}

TEST(RotationReuse, IdentityWithoutGroupsOrMotion) {
  if (!have_umfpack()) GTEST_SKIP() << "needs UMFPACK (flop counts)";
  // Registered groups that did not move, or a configuration never set, leave the
  // preconditioner the plain LU: the second solve of the same system takes one iteration.
  const Network net = make_network(3);
  const int n = net.pattern.size();
  VecX x0 = VecX::LinSpaced(n, 0.0, 1.0);
  const VecX values = network_values(net, x0);
  const VecX b = VecX::Ones(n);
  ReusedFactorization reused(&net.pattern, make_linear_solver(LinearSolverKind::kUmfpack, &net.pattern));
  reused.set_rotation_groups({{0, net.points}});
  VecX x;
  ASSERT_TRUE(reused.solve(values, b, x));  // no configuration set yet: no reference
  reused.set_configuration(x0);
  ASSERT_TRUE(reused.solve(values, b, x));
  EXPECT_EQ(reused.stats().factorizations, 1);
  EXPECT_LE(reused.stats().krylov_iterations, 1);
  EXPECT_LT(relative_residual(net, values, b, x, false), 1e-12);
}

}  // namespace
}  // namespace addsim
