#!/usr/bin/env bash
# Installs every build, test and tooling dependency of addsim from Debian 12 apt,
# non-interactively and without recommended packages (SuiteSparse alone would pull
# ~170 MiB of recommends otherwise). Safe to re-run: apt skips what is present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libeigen3-dev
  libsuitesparse-dev libmetis-dev libopenblas0-pthread liblapack-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgmsh-dev gmsh
  libmujoco-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-numpy python3-matplotlib python3-pytest
  liblbfgspp-dev libpagmo-dev
  pybind11-dev python3-dev python3-torch python3-distributed
  liburdfdom-dev dart-doc
  chromium
  ccache
  clang-14 libfuzzer-14-dev
)
# node and npm fetch the bunny and the viewer's three.js; Debian's when the machine has none.
# liblapack-dev: the block LU factorises its large diagonal blocks with dgetrf (docs/solver.md).
# chromium renders the viewer in tests (tests/viewer) and the demo's PNG still.
# clang-14 and libfuzzer-14-dev build the libFuzzer harnesses (fuzz/, scripts/run-fuzzers.sh).
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then packages+=(nodejs npm); fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The Stanford bunny (npm package "bunny", public domain: 1839 vertices, a closed surface)
# into the git-ignored third_party/npm, converted to data/bunny.obj: scaled by 0.01 to a
# ≈ 10 cm tall bunny (m) and turned z-up. Without node/npm it says so on stderr; safe to re-run.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if command -v npm >/dev/null && command -v node >/dev/null; then
  if [ ! -f "$root/third_party/npm/node_modules/bunny/index.js" ]; then
    npm install --prefix "$root/third_party/npm" --no-audit --no-fund --silent bunny@1
  fi
  # three.js for the HTML viewer (docs/viewer.md): its CommonJS build is inlined into every
  # index.html that addsim writes, so the pages open offline.
  if [ ! -f "$root/third_party/npm/node_modules/three/build/three.cjs" ]; then
    npm install --prefix "$root/third_party/npm" --no-audit --no-fund --silent --save-exact three@0.160.1
  fi
  if [ ! -f "$root/data/bunny.obj" ]; then
    mkdir -p "$root/data"
    node -e '
      const b = require(process.argv[1]);
      const lines = ["# Stanford bunny (npm \"bunny\", public domain), m, z-up"];
      for (const [x, y, z] of b.positions) lines.push(`v ${0.01 * x} ${-0.01 * z} ${0.01 * y}`);
      for (const [i, j, k] of b.cells) lines.push(`f ${i + 1} ${j + 1} ${k + 1}`);
      require("fs").writeFileSync(process.argv[2], lines.join("\n") + "\n");
    ' "$root/third_party/npm/node_modules/bunny" "$root/data/bunny.obj"
  fi
else
  echo "install-deps.sh: node or npm is missing, so data/bunny.obj was not made" \
       "(scenes/bunny_throw.json and tasks/bunny_to_pose.json need it)" >&2
fi

# URDF robots (KR5, WAM, DRC-Hubo) from dart-doc into the git-ignored data/robots/.
bash "$root/scripts/fetch-robots.sh"
