#!/usr/bin/env bash
# The AddressSanitizer + UndefinedBehaviorSanitizer build (docs/fuzzing.md): ONE clang++-14
# folder, build-sanitize, holds the whole test suite and the libFuzzer harnesses of fuzz/.
# The library is compiled once with -fsanitize=address,undefined -fno-sanitize-recover=all (the
# first finding aborts the process), without NDEBUG (addsim's and Eigen's asserts on); only the
# readers the harnesses fuzz (io/, mesh/, the OBJ reader) get libFuzzer's coverage
# instrumentation (fuzz/CMakeLists.txt), which doubled the tests' run time. The tests link
# GoogleTest's main, the harnesses libFuzzer's. No benchmarks and no Python module: the
# benchmarks time the Release build, and the module would need libasan preloaded into python.
# LeakSanitizer reports leaks inside libgmsh 4.8 (no addsim frames); scripts/lsan-gmsh.supp
# suppresses exactly those. scripts/run-tests.sh builds and runs all of it (ADDSIM_SANITIZE=0
# leaves out the sanitized suite). The tests run with ADDSIM_TEST_REDUCED=1: the slowest tests
# check smaller instances of the same properties.
# Usage: bash scripts/run-sanitizers.sh [ctest arguments, e.g. -R BadInputs]   build + test
#        bash scripts/run-sanitizers.sh --build    build only (tests and harnesses)
#        bash scripts/run-sanitizers.sh --test [ctest arguments]              test only
# ADDSIM_SANITIZE_TARGETS="addsim test_io" builds only those targets (default: all).
# ADDSIM_SANITIZE_DIR (default build-sanitize) and ADDSIM_SANITIZE_OPT (default -O2) build and
# test a second folder at another optimisation level, to compare (docs/testing.md). -O2, not
# -O1: Eigen's small fixed-size expressions are inlined instead of left as instrumented calls,
# ~15 % less sanitized test time at ~+5 % compile; the whole suite passes there with no
# report (docs/testing.md, sixth round).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
dir="${ADDSIM_SANITIZE_DIR:-build-sanitize}"
mode=all
case "${1:-}" in --build) mode=build; shift ;; --test) mode=test; shift ;; esac

if [ "$mode" != test ]; then
  if ! command -v clang++-14 >/dev/null; then
    echo "run-sanitizers.sh: clang++-14 is missing (apt-get install clang-14 libfuzzer-14-dev)" >&2
    exit 1
  fi
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  # -gline-tables-only: file:line in every report at a fraction of -g's compile and link time.
  # Eigen's eigen_assert index checks stay on (no NDEBUG): they catch a wrong row or column
  # inside a matrix's own storage, which AddressSanitizer cannot see, and cost 0-12 % here.
  flags="${ADDSIM_SANITIZE_OPT:--O2} -gline-tables-only -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
  link="-fsanitize=address,undefined"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" \
    -DADDSIM_FUZZ=ON -DADDSIM_BUILD_BENCHMARKS=OFF -DADDSIM_BUILD_PYTHON=OFF -DADDSIM_UNITY_BUILD=ON \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link" \
    -DCMAKE_MODULE_LINKER_FLAGS="$link" >/dev/null
  targets=()
  for t in ${ADDSIM_SANITIZE_TARGETS:-}; do targets+=(--target "$t"); done
  start=$(date +%s)
  cmake --build "$dir" -j"${ADDSIM_SANITIZE_JOBS:-2}" "${targets[@]}"
  echo "run-sanitizers.sh: build $(($(date +%s) - start)) s"
fi
[ "$mode" = build ] && exit 0

export ADDSIM_TEST_REDUCED=1
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan-gmsh.supp:print_suppressions=0"
start=$(date +%s)
status=0
(cd "$dir" && ctest -j"${ADDSIM_SANITIZE_JOBS:-2}" --timeout 1800 --output-on-failure -LE fuzz "$@") || status=$?
echo "run-sanitizers.sh: tests $(($(date +%s) - start)) s, ctest exit $status"
exit $status
