#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to every test: installs the dependencies,
# builds addsim with its tests and runs them under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/install-python.sh
# The libFuzzer harnesses (build-fuzz, ccache) for the 60-second smoke runs labelled "fuzz";
# ADDSIM_FUZZ_SMOKE=0 skips the build (the fuzz tests then report themselves skipped).
if [ "${ADDSIM_FUZZ_SMOKE:-1}" != 0 ] && command -v clang++-14 >/dev/null; then
  bash scripts/run-fuzzers.sh --build || echo "run-tests.sh: the fuzz build failed; the fuzz smoke tests will report themselves skipped" >&2
fi
cd build
ctest --output-on-failure -j2 --timeout 900
