#!/usr/bin/env bash
# Builds and runs the contact-model study (docs/validation/contact-models.md), then plots.
# Usage: scripts/contact_study/run_study.sh [build_dir] [out_dir] [steps]
# The build dir must hold the addsim libraries (cmake --build <dir> --target addsim_fem addsim_solver).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build}"
out="${2:-$root/docs/validation/contact-models}"
steps="${3:-500}"
mkdir -p "$out"
lib="$build/src/addsim"
g++ -std=c++20 -O2 -DNDEBUG -I"$root/src" -I/usr/include/eigen3 "$here/contact_study.cpp" -o "$build/contact_study" \
  "$lib/fem/libaddsim_fem.a" "$lib/mesh/libaddsim_mesh.a" "$lib/solver/libaddsim_solver.a" \
  "$lib/integrators/libaddsim_integrators.a" "$lib/terms/libaddsim_terms.a" "$lib/model/libaddsim_model.a" \
  "$lib/math/libaddsim_math.a" -lumfpack -lcholmod -lgmsh
"$build/contact_study" "$out" "$steps" | tee "$out/run.txt"
/usr/bin/python3 "$here/plot_study.py" "$out"
