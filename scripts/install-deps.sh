#!/usr/bin/env bash
# Installs every build, test and tooling dependency of addsim from Debian 12 apt,
# non-interactively and without recommended packages (SuiteSparse alone would pull
# ~170 MiB of recommends otherwise). Safe to re-run: apt skips what is present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libeigen3-dev
  libsuitesparse-dev libmetis-dev libopenblas0-pthread
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgmsh-dev gmsh
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-numpy python3-matplotlib python3-pytest
)

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
