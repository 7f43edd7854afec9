#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to every test: installs the dependencies,
# builds addsim with its tests and runs them under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# In CI (CI set, as GitHub Actions and .ci runners do) the Google Benchmark programs are not
# built: no test runs them, and their compile is ~65 CPU-s of the cold Release build
# (docs/fuzzing.md "Measured in CI"). A developer's run builds them as scripts/build.sh does.
build_args=()
if [ -n "${CI:-}" ] && [ "${CI:-}" != false ]; then build_args=(-DADDSIM_BUILD_BENCHMARKS=OFF); fi
bash scripts/build.sh "${build_args[@]}"
bash scripts/install-python.sh
# The AddressSanitizer + UndefinedBehaviorSanitizer build (build-sanitize, clang-14, ccache):
# the whole test suite and the libFuzzer harnesses share one compiled library
# (scripts/run-sanitizers.sh, docs/fuzzing.md). install-deps.sh installs clang-14, so a failed
# build fails the test command. ADDSIM_SANITIZE=0 leaves out the sanitized suite (a developer's
# quick run; CI runs it); ADDSIM_FUZZ_SMOKE=0 leaves out the harnesses' smoke runs; with both
# off nothing is built there (the smoke tests then report themselves skipped).
targets=""  # everything (tests and harnesses); the harnesses alone when the suite is left out
if [ "${ADDSIM_SANITIZE:-1}" = 0 ]; then
  targets="fuzz_scene fuzz_task fuzz_msh fuzz_tetgen fuzz_obj fuzz_markers"
fi
if [ "${ADDSIM_SANITIZE:-1}" != 0 ] || [ "${ADDSIM_FUZZ_SMOKE:-1}" != 0 ]; then
  ADDSIM_SANITIZE_TARGETS="$targets" bash scripts/run-sanitizers.sh --build
fi
# The Release suite (with the fuzz smoke runs, label "fuzz"), then the same suite under the
# sanitizers (without label "fuzz"); a failure in either fails the command. The smoke runs
# fuzz 30 s per harness here (CI's time budget, docs/fuzzing.md); ADDSIM_FUZZ_SMOKE_SECONDS
# changes that (a bare `ctest` uses the configured ADDSIM_FUZZ_SMOKE_SECONDS, default 60).
export ADDSIM_FUZZ_SMOKE_SECONDS="${ADDSIM_FUZZ_SMOKE_SECONDS:-30}"
status=0
release_args=()
[ "${ADDSIM_FUZZ_SMOKE:-1}" != 0 ] || release_args=(-LE fuzz)
(cd build && ctest --output-on-failure -j2 --timeout 900 "${release_args[@]}") || status=1
if [ "${ADDSIM_SANITIZE:-1}" != 0 ]; then
  bash scripts/run-sanitizers.sh --test || status=1
fi
exit $status
