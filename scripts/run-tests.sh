#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to every test: installs the dependencies,
# builds addsim with its tests and runs them under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/install-python.sh
cd build
ctest --output-on-failure -j2 --timeout 900
