#!/usr/bin/env bash
# Copies the URDF robots shipped by Debian's dart-doc (KUKA KR5 sixx R650, Barrett WAM,
# DRC-Hubo; meshes included) into the git-ignored data/robots/ for the URDF tests and
# scenes (docs/robots.md). Installs dart-doc with apt-get when it is absent (needs root);
# safe to re-run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src=/usr/share/doc/dart/data/urdf
if [ ! -d "$src" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "fetch-robots.sh: $src is missing; run as root (or apt-get install dart-doc) first" >&2
    exit 1
  fi
  apt-get install -y --no-install-recommends dart-doc
fi
mkdir -p "$root/data/robots"
for robot in KR5 wam drchubo; do
  rm -rf "$root/data/robots/$robot"
  cp -r "$src/$robot" "$root/data/robots/$robot"
done
echo "fetch-robots.sh: KR5, wam, drchubo in $root/data/robots"
