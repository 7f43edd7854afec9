#pragma once
/// Forces and partials of distance and unilateral springs between two particles, several
/// springs at a time (SpringTerm's particle pairs, e.g. a sheet's structural and shear
/// springs). The arithmetic is SpringTerm's scalar spring force (spring_term.cpp,
/// `spring_force`), operation for operation and in the same order, written over
/// structure-of-arrays lanes so that the compiler vectorises it over springs: the square
/// root and the nine divisions of a spring with partials then run four springs per AVX2
/// instruction. Element-wise IEEE operations without fused multiply–add give the scalar
/// path's numbers bit for bit (tests/terms: SpringTerm.PairKernel*).

namespace addsim::spring_pairs {

/// Springs per call; unused lanes are padded by the caller with any finite spring.
constexpr int kLanes = 8;

struct Input {
  double d[3][kLanes];  ///< x_a − x_b, m
  double w[3][kLanes];  ///< ẋ_a − ẋ_b, m/s
  double k[kLanes];     ///< stiffness, N/m
  double kd[kLanes];    ///< damping along the spring, N s/m (0: none)
  double rest[kLanes];  ///< rest length l₀, m
};

struct Output {
  double len[kLanes];     ///< ‖d‖ (the caller decides slack and collapsed springs from it)
  double r[3][kLanes];    ///< residual on end a, k (‖d‖ − l₀) u + k_d (u·w) u
  double kx[9][kLanes];   ///< ∂r_a/∂x_a, column-major (entry (i, j) at i + 3 j)
  double kv[6][kLanes];   ///< ∂r_a/∂ẋ_a = k_d uuᵀ, upper triangle (00, 01, 11, 02, 12, 22)
  double step[9][kLanes]; ///< with step weights: wq kx + wv kv (column-major), as Assembly sums it
};

/// Weights of a step block (Assembly::weights()); step blocks are formed when `active`.
struct StepWeights {
  bool active = false;
  double wq = 0.0, wv = 0.0;
};

/// Fills `out` for all kLanes lanes; kx and kv only when `partials`, step only when
/// `weights.active` (which needs `partials`; the weights must not both be zero). `clamp`: drop
/// the transverse stiffness of compressed springs (Assembly::clamp_compressed_springs).
/// `float_blocks` (with `weights.active`): step by a cheaper closed form that equals the exact
/// one to round-off but not bit for bit, and kx and kv left unset — for a Newton matrix
/// factorised in float (Assembly::float_step_blocks). len and r are the same bits either way.
void forces(const Input& in, Output& out, bool clamp, bool partials, const StepWeights& weights = {},
            bool float_blocks = false);

/// Index of entry (i, j) of a symmetric 3 × 3 matrix in Output::kv.
constexpr int upper_index(int i, int j) { return i <= j ? i + j * (j + 1) / 2 : j + i * (i + 1) / 2; }

}  // namespace addsim::spring_pairs
