#pragma once
// Shared helpers of the FEM tests: small models and seeded random states.

#include <memory>
#include <random>

#include "addsim/fem/fem_builder.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/model/model.h"

namespace addsim::test {

// A model holding one soft body of `mesh`, finalised.
inline std::unique_ptr<Model> make_fem_model(const TetMesh& mesh, const FemMaterial& mat, const FemOptions& opt,
                                             const FemInit& init = {}, double h = 0.01, int steps = 10,
                                             Integrator integrator = Integrator::kBdf2) {
  auto model = std::make_unique<Model>();
  model->scheme_mut() = TimeScheme::make(integrator, h, steps);
  add_fem_body(*model, "soft", mesh, mat, init, opt);
  model->finalize();
  return model;
}

// Uniform random vector in [−scale, scale]^n from a seeded engine.
inline VecX random_vector(std::mt19937& rng, int n, double scale) {
  std::uniform_real_distribution<double> u(-scale, scale);
  VecX x(n);
  for (int i = 0; i < n; ++i) x[i] = u(rng);
  return x;
}

}  // namespace addsim::test
