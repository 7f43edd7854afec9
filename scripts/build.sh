#!/usr/bin/env bash
# Configures and builds addsim in ./build (Release, -j2). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 "${launcher[@]}" "$@" >/dev/null
cmake --build build -j2
