#pragma once
/// Step-Jacobian solver that exploits near-symmetry: the Jacobian J of soft bodies is
/// symmetric except for friction, damping of moving contacts and rigid-body inertia, so
/// the supernodal Cholesky factor of its symmetric part S = (J + Jᵀ)/2 is an excellent
/// preconditioner. Solves with J (or Jᵀ) by preconditioned BiCGSTAB to a relative residual
/// of 1e-13, which in practice takes 1–3 iterations (docs/solver.md). Falls back to the
/// exact LU (UMFPACK) when S is not positive definite or BiCGSTAB does not converge, so the
/// result is always a solution to round-off. Needs CHOLMOD (GPL, with UMFPACK).

#include <memory>

#include "addsim/solver/linear_solver.h"

namespace addsim {

/// Creates the CHOLMOD-preconditioned BiCGSTAB solver for `pattern`, or nullptr if this
/// build has no CHOLMOD.
std::unique_ptr<LinearSolver> make_cholmod_bicgstab(const SparsePattern* pattern);

}  // namespace addsim
