#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (docs/fuzzing.md) in ./build-sanitize with clang++-14
# (scripts/run-sanitizers.sh: -fsanitize=address,undefined, -fno-sanitize-recover=all, libFuzzer
# coverage in the readers, the same folder as the sanitized test suite) and runs each for
# SECONDS (default 60) under `nice -n 19`, one after the other. Each harness grows its
# working corpus build-sanitize/corpus/<harness> (seeded from the curated fuzz/corpus/<harness>,
# tests/data/bad/ and the shipped scenes, tasks and meshes); crashes, sanitizer reports,
# timeouts and out-of-memory inputs go to build-sanitize/findings/<harness>/ and make the script
# fail. Needs clang-14 and libfuzzer-14-dev (scripts/install-deps.sh installs them).
# Usage: bash scripts/run-fuzzers.sh [SECONDS] [HARNESS...]       (default: all six)
#        bash scripts/run-fuzzers.sh --build                       (build only)
#        ADDSIM_FUZZ_NO_BUILD=1 skips the build.
#        bash scripts/run-fuzzers.sh --smoke SECONDS HARNESS       (CTest: no build, exit 77
#            when the harness is not built; the corpus grows in a temporary folder only;
#            ADDSIM_FUZZ_SMOKE_SECONDS in the environment replaces SECONDS, which CTest
#            configured: scripts/run-tests.sh runs the smoke tests for 30 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
all=(scene task msh tetgen obj markers)
bin="${ADDSIM_FUZZ_BIN:-$root/build-sanitize/fuzz}"  # ADDSIM_FUZZ_BIN: harnesses built elsewhere

# Per-input limits: an input taking longer than this (s) is a hang; RSS beyond 2 GiB is a finding.
limits=(-timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 -print_final_stats=1)
dict_of() {
  case "$1" in scene | task) echo "-dict=$root/fuzz/json.dict" ;; msh) echo "-dict=$root/fuzz/msh.dict" ;; *) echo "" ;; esac
}
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan-gmsh.supp:print_suppressions=0"

if [ "${1:-}" = "--smoke" ]; then
  seconds=${ADDSIM_FUZZ_SMOKE_SECONDS:-$2} h=$3
  case "$seconds" in '' | *[!0-9]* | 0)
    echo "run-fuzzers.sh: ADDSIM_FUZZ_SMOKE_SECONDS must be a positive whole number of seconds, not '$seconds'" >&2
    exit 2 ;;
  esac
  if [ ! -x "$bin/fuzz_$h" ]; then
    echo "run-fuzzers.sh: $bin/fuzz_$h is not built (scripts/run-tests.sh builds it when clang++-14 is installed)"
    exit 77
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # The minimised crashers of past findings first: each must now run clean.
  regressions=("$root/fuzz/regressions/$h/"*)
  if [ -e "${regressions[0]}" ]; then
    "$bin/fuzz_$h" "${limits[@]}" -artifact_prefix="$work/" "${regressions[@]}"
  fi
  # shellcheck disable=SC2046
  "$bin/fuzz_$h" "${limits[@]}" $(dict_of "$h") -max_total_time="$seconds" -artifact_prefix="$work/" \
    "$work" "$root/fuzz/corpus/$h"
  exit $?
fi

build() {
  # The harnesses live in the sanitizer build folder (scripts/run-sanitizers.sh), which
  # compiles the library once for them and for the sanitized test suite.
  local targets=""
  for h in "${all[@]}"; do targets="$targets fuzz_$h"; done
  ADDSIM_SANITIZE_TARGETS="${targets# }" ADDSIM_SANITIZE_JOBS="${ADDSIM_FUZZ_JOBS:-2}" \
    bash "$root/scripts/run-sanitizers.sh" --build
}

if [ "${1:-}" = "--build" ]; then
  build
  exit 0
fi
seconds=${1:-60}
shift || true
harnesses=("$@")
[ "${#harnesses[@]}" -gt 0 ] || harnesses=("${all[@]}")
[ "${ADDSIM_FUZZ_NO_BUILD:-0}" = 1 ] || build

# Seeds besides the curated corpus: the malformed-input corpus and the shipped files.
seed_dirs() {
  case "$1" in
    scene) echo "$root/tests/data/bad/scenes $root/scenes $root/tests/data" ;;
    task) echo "$root/tests/data/bad/tasks $root/tasks" ;;
    msh | tetgen | obj) echo "$root/tests/data/bad/meshes $root/tests/data" ;;
    markers) echo "$root/tests/data/bad/data $root/tasks/data" ;;
  esac
}
pattern_of() {
  case "$1" in
    scene | task) echo "*.json" ;; msh) echo "*.msh" ;; tetgen) echo "*.node" ;; obj) echo "*.obj" ;; markers) echo "*.csv" ;;
  esac
}

status=0
summary=()
for h in "${harnesses[@]}"; do
  corpus="$root/build-sanitize/corpus/$h"
  findings="$root/build-sanitize/findings/$h"
  mkdir -p "$corpus" "$findings"
  cp -n "$root/fuzz/corpus/$h/"* "$corpus/" 2>/dev/null || true
  # shellcheck disable=SC2046
  for f in $(find $(seed_dirs "$h") -maxdepth 2 -name "$(pattern_of "$h")" -size -64k 2>/dev/null); do
    if [ "$h" = tetgen ]; then
      ele="${f%.node}.ele"
      [ -f "$ele" ] && { cat "$f"; printf '\0'; cat "$ele"; } >"$corpus/seed_$(basename "$f")"
    else
      cp -n "$f" "$corpus/seed_$(basename "$(dirname "$f")")_$(basename "$f")"
    fi
  done
  log="$root/build-sanitize/findings/$h.log"
  rc=0
  # shellcheck disable=SC2046
  nice -n 19 "$bin/fuzz_$h" "${limits[@]}" $(dict_of "$h") -max_total_time="$seconds" \
    -artifact_prefix="$findings/" "$corpus" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  summary+=("$h: $execs executions in $seconds s, exit $rc, $(find "$findings" -type f | wc -l) finding file(s)")
  if [ "$rc" -ne 0 ]; then
    status=1
    tail -n 40 "$log" >&2
  fi
done
printf 'run-fuzzers.sh: %s\n' "${summary[@]}"
exit $status
