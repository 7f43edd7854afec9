#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "addsim/math/sparse_assembly.h"

namespace addsim {
namespace {

// DOFs of whole 3-DOF points p0, p1, ... (an FEM element's stencil).
std::vector<DofIndex> points(std::initializer_list<int> ids) {
  std::vector<DofIndex> dofs;
  for (int p : ids)
    for (int i = 0; i < 3; ++i) dofs.push_back(3 * p + i);
  return dofs;
}

// Two tets sharing a face, one spring between single DOFs of two points (columns 2 and 13
// then differ from their point's other columns), and an isolated point (diagonal only).
struct Fixture {
  StencilSet stencils;
  SparsePattern pattern;
  VecX values, x;
  Fixture() {
    stencils.add(points({0, 1, 2, 3}));
    stencils.add(points({1, 2, 3, 4}));
    stencils.add({2, 13});
    pattern = SparsePattern(18, stencils);
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    values.resize(pattern.nnz());
    for (double& v : values) v = u(rng);
    x.resize(18);
    for (double& v : x) v = u(rng);
    x[16] = 0.0;                  // a zero single column: skipped
    x.segment(9, 3).setZero();    // point 3, a column triple, all zero: skipped
  }
};

TEST(SparsePattern, ProductsMatchTheMatrixAndTheColumnByColumnOrderBitForBit) {
  Fixture f;
  const SparseMat A = f.pattern.make_matrix(f.values);
  VecX y = VecX::Constant(18, 0.5), z = VecX::Constant(18, 0.5);
  f.pattern.multiply_add(f.values, f.x, y);
  f.pattern.transpose_multiply_add(f.values, f.x, z);
  EXPECT_LT((y - (VecX::Constant(18, 0.5) + A * f.x)).norm(), 1e-14);
  EXPECT_LT((z - (VecX::Constant(18, 0.5) + A.transpose() * f.x)).norm(), 1e-14);
  // The grouped traversal adds each row's contributions in increasing column order, like
  // the plain column loop: equal to the bit.
  VecX y_plain = VecX::Constant(18, 0.5), z_plain = VecX::Constant(18, 0.5);
  const auto& outer = f.pattern.outer();
  const auto& inner = f.pattern.inner();
  for (int c = 0; c < 18; ++c) {
    double acc = 0.0;
    for (int k = outer[c]; k < outer[c + 1]; ++k) {
      if (f.x[c] != 0.0) y_plain[inner[k]] += f.values[k] * f.x[c];
      acc += f.values[k] * f.x[inner[k]];
    }
    z_plain[c] += acc;
  }
  EXPECT_EQ(y, y_plain);
  EXPECT_EQ(z, z_plain);
}

TEST(SparsePattern, AbsoluteProductMatchesThePlainColumnLoopBitForBit) {
  // |A| |x| as the round-off floor's |J||q| pass (solver/simulator.cpp) formed it column by
  // column: zeros of x are not skipped, and ±0, subnormal, infinite and NaN entries give the
  // same bits.
  Fixture f;
  f.values[3] = -0.0;
  f.values[7] = std::numeric_limits<double>::denorm_min();
  f.values[11] = -std::numeric_limits<double>::infinity();
  f.values[20] = std::numeric_limits<double>::quiet_NaN();
  f.values[f.pattern.nnz() - 2] = 1e308;
  f.x[4] = -0.0;
  f.x[5] = 1e300;
  f.x[10] = -3.0;  // point 3 was all zero: one non-zero column of the triple
  VecX y = VecX::Constant(18, 0.25);
  f.pattern.abs_multiply_add(f.values, f.x, y);
  VecX y_plain = VecX::Constant(18, 0.25);
  const auto& outer = f.pattern.outer();
  const auto& inner = f.pattern.inner();
  for (int c = 0; c < 18; ++c) {
    const double xc = std::abs(f.x[c]);
    for (int k = outer[c]; k < outer[c + 1]; ++k) y_plain[inner[k]] += std::abs(f.values[k]) * xc;
  }
  ASSERT_EQ(y.size(), y_plain.size());
  EXPECT_EQ(std::memcmp(y.data(), y_plain.data(), sizeof(double) * y.size()), 0);
  EXPECT_TRUE(std::isnan(y[inner[20]]));
}

TEST(SparsePattern, StencilsOfWholePointsHaveConsecutiveRowsAndEqualListsShareAnId) {
  Fixture f;
  EXPECT_EQ(f.stencils.add(points({1, 2, 3, 4})), 1);
  EXPECT_NE(f.pattern.point_map(0), nullptr);
  EXPECT_EQ(f.pattern.point_map(2), nullptr);  // {2, 13}: not whole points
  const int* m = f.pattern.map(0);
  const int* pm = f.pattern.point_map(0);
  for (int c = 0; c < 12; ++c)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 3; ++i) EXPECT_EQ(m[3 * k + i + c * 12], pm[k + c * 4] + i);
}

// Assembly::PointColumns adds a block column by column with the same values as add() of the
// assembled block (step mode, wq = 1), and add_residual_pair() gives r and r_abs of two add()
// calls, bit for bit.
TEST(SparsePattern, PointColumnsAndResidualPairEqualAddBitForBit) {
  Fixture f;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::Matrix<double, 12, 12> K;
  Eigen::Matrix<double, 12, 1> ra, rb;
  for (int i = 0; i < 144; ++i) K(i) = u(rng);
  for (int k = 0; k < 12; ++k) ra[k] = u(rng), rb[k] = u(rng);
  Assembly by_block(&f.pattern, &f.stencils), by_columns(&f.pattern, &f.stencils);
  for (Assembly* a : {&by_block, &by_columns}) {
    a->reset(EvalMode::kResidualAndStepJacobian, {1.0, 0.0, 0.0});
    a->jac = f.values;  // start from non-zero values, as a second element would find them
    a->r.setConstant(0.25);
    a->r_abs.setConstant(0.5);
  }
  by_block.add<12>(1, ra, &K, nullptr, nullptr);
  by_block.add<12>(1, rb, nullptr, nullptr, nullptr);
  by_columns.add_residual_pair<12>(1, ra, rb);
  const Assembly::PointColumns<4> cols = by_columns.point_columns<4>(1, by_columns.jac);
  ASSERT_TRUE(cols.valid());
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 3; ++j) {
      std::array<std::array<double, 4>, 3> col;
      for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 3; ++i) col[i][k] = K(3 * k + i, 3 * l + j);
      cols.add(l, j, col);
    }
  EXPECT_EQ(by_columns.jac, by_block.jac);
  EXPECT_EQ(by_columns.r, by_block.r);
  EXPECT_EQ(by_columns.r_abs, by_block.r_abs);
  EXPECT_FALSE(by_columns.point_columns<1>(2, by_columns.jac).valid());  // {2, 13}: not whole points
}

}  // namespace
}  // namespace addsim
