#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the main job: installs the dependencies,
# builds addsim and runs `addsim demo` (outputs under ./demo-output).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/src/addsim/cli/addsim demo --out demo-output
