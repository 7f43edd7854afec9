#!/usr/bin/env bash
# Builds the whole test suite with AddressSanitizer + UndefinedBehaviorSanitizer in a second
# build folder (build-sanitize, -O1 -g, -fno-sanitize-recover=all: the first finding aborts
# the test) and runs it (without the fuzz smoke tests, label "fuzz"; no benchmarks and no Python
# module: the module would need libasan preloaded into python). LeakSanitizer reports leaks
# inside libgmsh 4.8 (no addsim frames); scripts/lsan-gmsh.supp suppresses exactly those.
# Optional, not part of .ci/run: a cold build did not fit the CI budget (docs/fuzzing.md).
# Usage: bash scripts/run-sanitizers.sh [ctest arguments, e.g. -R BadInputs]
# ADDSIM_SANITIZE_TARGETS="addsim test_io" builds only those targets (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
start=$(date +%s)
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=None -DPython3_EXECUTABLE=/usr/bin/python3 "${launcher[@]}" \
  -DADDSIM_BUILD_BENCHMARKS=OFF -DADDSIM_BUILD_PYTHON=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
targets=()
for t in ${ADDSIM_SANITIZE_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build-sanitize -j"${ADDSIM_SANITIZE_JOBS:-2}" "${targets[@]}"
built=$(date +%s)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan-gmsh.supp:print_suppressions=0"
status=0
(cd build-sanitize && ctest -j"${ADDSIM_SANITIZE_JOBS:-2}" --timeout 3600 --output-on-failure -LE fuzz "$@") || status=$?
echo "run-sanitizers.sh: build $((built - start)) s, tests $(($(date +%s) - built)) s, ctest exit $status"
exit $status
