#!/usr/bin/env bash
# Makes `import addsim` work for Debian's /usr/bin/python3 from any folder: writes a .pth
# file into the interpreter's dist-packages pointing at the built package (build/python).
# Run after scripts/build.sh; needs write access to /usr/local/lib/python3.X/dist-packages
# (root or sudo). Rebuilding updates the package in place; no reinstall needed.
set -euo pipefail
cd "$(dirname "$0")/.."
package_dir="$(pwd)/build/python"
if [ ! -f "$package_dir/addsim/__init__.py" ] || ! ls "$package_dir"/addsim/_addsim*.so >/dev/null 2>&1; then
  echo "install-python: $package_dir has no built addsim package; run scripts/build.sh first" >&2
  exit 1
fi
site="$(/usr/bin/python3 -c 'import sys, sysconfig; print(sysconfig.get_path("purelib", "posix_local") if "posix_local" in sysconfig.get_scheme_names() else sysconfig.get_path("purelib"))')"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ] && [ ! -w "$(dirname "$site")" ]; then
  if ! command -v sudo >/dev/null; then
    echo "install-python: cannot write $site (not root, no sudo); use PYTHONPATH=$package_dir instead" >&2
    exit 0
  fi
  sudo_cmd=(sudo)
fi
"${sudo_cmd[@]}" mkdir -p "$site"
echo "$package_dir" | "${sudo_cmd[@]}" tee "$site/addsim.pth" >/dev/null
(cd / && /usr/bin/python3 -c "import addsim; print('install-python: addsim importable from', addsim.__file__)")
