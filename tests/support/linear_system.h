#pragma once
/// Helpers for the linear-solver tests: ‖b − A x‖/‖b‖ for a matrix given as values on a
/// SparsePattern (A or Aᵀ), and a standard-normal right-hand side.

#include <random>

#include "addsim/core/types.h"
#include "addsim/math/sparse_assembly.h"

namespace addsim::test {

inline double relative_residual(const SparsePattern& pattern, int n, const VecX& values, const VecX& b, const VecX& x,
                                bool transpose) {
  VecX y = VecX::Zero(n);
  if (transpose)
    pattern.transpose_multiply_add(values, x, y);
  else
    pattern.multiply_add(values, x, y);
  return (b - y).norm() / b.norm();
}

inline VecX random_rhs(int n, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  VecX b(n);
  for (int i = 0; i < n; ++i) b[i] = normal(rng);
  return b;
}

}  // namespace addsim::test
