#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the main job: installs the dependencies,
# builds only the addsim command-line tool (tests and benchmarks are built by
# scripts/run-tests.sh) and runs `addsim demo`: outputs, the viewer page and a PNG still of
# the final frame under ./demo-output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 "${launcher[@]}" >/dev/null
cmake --build build -j2 --target addsim
./build/src/addsim/cli/addsim demo --out demo-output
echo "Open $(pwd)/demo-output/index.html in a browser to watch the demo (offline, no server needed)."
