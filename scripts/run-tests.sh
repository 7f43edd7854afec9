#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to every test: installs the dependencies,
# builds addsim with its tests and runs them under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/install-python.sh
# The libFuzzer harnesses (build-fuzz, ccache) for the 60-second smoke runs labelled "fuzz".
# install-deps.sh installs clang-14, so a failed fuzz build fails the test command;
# ADDSIM_FUZZ_SMOKE=0 skips the build on purpose (the fuzz tests then report themselves skipped).
if [ "${ADDSIM_FUZZ_SMOKE:-1}" != 0 ]; then
  bash scripts/run-fuzzers.sh --build
fi
cd build
ctest --output-on-failure -j2 --timeout 900
