#!/usr/bin/env bash
# Runs a contact-model study (docs/validation/contact-models.md) and plots it.
# Usage: scripts/contact_study/run_study.sh BUILD_DIR SCENE OUT_DIR MODELS STEPS [PATH=VALUE ...]
#   e.g. scripts/contact_study/run_study.sh build scenes/cylinder_drop.json \
#          docs/validation/contact-models linear,tanh,hybrid,sqp 60,150
#        scripts/contact_study/run_study.sh build scenes/tori_drop.json \
#          docs/validation/contact-models/tori linear,tanh,hybrid auto
# The driver is the CMake target contact_study (benchmarks/contact_study.cpp).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1" scene="$2" out="$3" models="$4" steps="$5"
shift 5
cmake --build "$build" -j2 --target contact_study
mkdir -p "$out"
"$build/benchmarks/contact_study" "$scene" "$out" "$models" "$steps" "$@" | tee "$out/run.txt"
/usr/bin/python3 "$here/plot_study.py" "$out"
