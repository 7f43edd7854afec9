#pragma once
/// Builds a soft body into a Model: the FemBody, its parameters (initial rigid motion and
/// material) and its terms (inertia, gravity, stress = elasticity + viscosity, contact). This is
/// what a scene loader calls for every "fem" body.

#include <memory>
#include <string>
#include <vector>

#include "addsim/fem/fem_body.h"
#include "addsim/fem/fem_terms.h"
#include "addsim/model/model.h"
#include "addsim/terms/contact_term.h"

namespace addsim {

/// Model choices of a soft body.
struct FemOptions {
  NeoHookeanVariant elasticity = NeoHookeanVariant::kAdd;        ///< energy (paper authors' code by default)
  ViscosityModel viscosity = ViscosityModel::kRotationInvariant;  ///< paper eq. rotInvViscStress
  MassMatrixKind mass = MassMatrixKind::kConsistent;
  Vec3 gravity = Vec3::Zero();  ///< m/s²; zero adds no gravity term
};

/// Throws InputError naming `key_prefix` + ".material.<field>" if a material value is
/// out of range: E > 0, ν ∈ (−1, 0.5), ρ > 0, viscosity ≥ 0, all finite.
void validate_material(const FemMaterial& material, const std::string& key_prefix);

/// Adds a soft body of `mesh` to `model` (before finalize) and returns its body index i.
/// Registers the parameters "bodies.<i>.position|orientation|velocity|angular_velocity"
/// (kInitialCondition, 3 each) and "bodies.<i>.material.youngs_modulus|poisson_ratio|
/// density|viscosity" (kMaterial, bounded; aliases use "bodies.<name>" when `name` is
/// non-empty), then the terms: inertia, gravity (if non-zero), the stress (elasticity and,
/// unless kNone, viscosity in one FemStressTerm) and, if `obstacles` is non-empty, a PointContactTerm over the boundary-
/// surface nodes only (one penalty point per vertex, no area weighting, as the paper
/// authors' code). Throws InputError for bad meshes or materials.
int add_fem_body(Model& model, const std::string& name, const TetMesh& mesh, const FemMaterial& material,
                 const FemInit& init, const FemOptions& options = {},
                 std::vector<std::shared_ptr<const Obstacle>> obstacles = {}, const ContactSettings& contact = {});

/// The FemBody of body index `body` in `model`; throws InputError if it is not a soft body.
const FemBody& fem_body(const Model& model, int body);

}  // namespace addsim
