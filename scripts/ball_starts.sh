#!/usr/bin/env bash
# Ball to a point (tasks/ball_to_target.json) from a grid of starts around the solution
# v* = (1.93, 0.03, 1.40) m/s, omega* = (0, -15.7, 0) rad/s: throw speed x 0.6 ... 1.4, spin
# omega_y offset -8 ... +8 rad/s. Variants per start:
#   w5     tanh friction, w = 5 mm only (budget 60 simulations)
#   wcont  tasks/ball_to_target_wcontinuation.json (w = 30 -> 10 -> 5 mm, 25 + 25 + 60)
#   w10    tanh friction, w = 10 mm only (budget 60 simulations)
#   gn     tasks/ball_to_target_gn.json as shipped: Gauss-Newton / Levenberg-Marquardt, tanh, w = 5 mm
#          (30 simulations, or fewer on a stall), then if needed the fallback w = 10 mm -> 5 mm
#   lbfgsb tasks/ball_to_target_lbfgsb.json as shipped: L-BFGS-B, tanh, w = 20 -> 10 -> 5 mm, spin in units of 10 rad/s
# Starts 10-13 are the corners of the issue's range: speed x 0.5 and 1.5, spin offset -10 and +10;
# starts 14-21 eight further starts inside it (docs/validation/throwing.md, "Eight further starts").
# Usage: scripts/ball_starts.sh ADDSIM OUTDIR VARIANT [START_INDEX ...] [-- ADDSIM_ARGS ...]
# (ADDSIM_ARGS, e.g. --set optimize.gauss_newton.step_shrink=0.5, are added to every gn and lbfgsb run.)
# BALL_GN_TASK=FILE runs the gn variant on another task file (a variant of ball_to_target_gn.json);
# BALL_LBFGSB_TASK=FILE the lbfgsb variant (a variant of ball_to_target_lbfgsb.json).
# Each run writes OUTDIR/VARIANT_<k>/ (addsim optimize outputs, and time.txt: wall, user and system
# seconds of the whole command from /usr/bin/time); tabulate with
# /usr/bin/python3 scripts/ball_starts_table.py OUTDIR.
set -euo pipefail
addsim=$1; out=$2; variant=$3; shift 3
cd "$(dirname "$0")/.."
# k: speed factor s, spin offset d (omega_y = -15.7 + d); v = s * (1.9, 0, 1.4)
starts=("0.6 -8" "0.6 0" "0.6 8" "0.8 -8" "0.8 8" "1.2 -8" "1.2 8" "1.4 -8" "1.4 0" "1.4 8"
        "0.5 -10" "0.5 10" "1.5 -10" "1.5 10"
        "0.5 0" "1.5 0" "1.0 -10" "1.0 10" "0.7 -5" "1.3 5" "0.55 5" "1.45 -5")
idx=(); extra=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do idx+=("$1"); shift; done
if [ $# -gt 0 ]; then shift; extra=("$@"); fi
if [ ${#idx[@]} -eq 0 ]; then idx=($(seq 0 9)); fi
for k in "${idx[@]}"; do
  read -r s d <<<"${starts[$k]}"
  v=$(awk -v s="$s" 'BEGIN{printf "[%.4f,0,%.4f]", 1.9*s, 1.4*s}')
  w=$(awk -v d="$d" 'BEGIN{printf "[0,%.4f,0]", -15.7+d}')
  dir="$out/${variant}_$k"
  rm -rf "$dir"
  mkdir -p "$out"
  tmp="$out/.time_${variant}_$k"
  timed=(/usr/bin/time -o "$tmp" -f "%e %U %S")
  case $variant in
    w5) nice -n 5 "$addsim" optimize tasks/ball_to_target.json --out "$dir" --quiet --max-sims 60 \
          --set optimize.phi_ratio=1e-20 --set 'scene.contact.model="tanh"' --set scene.contact.smoothing=0.005 \
          --set "scene.bodies.ball.velocity=$v" --set "scene.bodies.ball.angular_velocity=$w" || true ;;
    w10) nice -n 5 "$addsim" optimize tasks/ball_to_target.json --out "$dir" --quiet --max-sims 60 \
          --set optimize.phi_ratio=1e-20 --set 'scene.contact.model="tanh"' --set scene.contact.smoothing=0.01 \
          --set "scene.bodies.ball.velocity=$v" --set "scene.bodies.ball.angular_velocity=$w" || true ;;
    gn) "${timed[@]}" nice -n 5 "$addsim" optimize "${BALL_GN_TASK:-tasks/ball_to_target_gn.json}" --out "$dir" --quiet \
          --set "scene.bodies.ball.velocity=$v" --set "scene.bodies.ball.angular_velocity=$w" "${extra[@]}" || true
        mv "$tmp" "$dir/time.txt" ;;
    lbfgsb) "${timed[@]}" nice -n 5 "$addsim" optimize "${BALL_LBFGSB_TASK:-tasks/ball_to_target_lbfgsb.json}" --out "$dir" --quiet \
          --set "scene.bodies.ball.velocity=$v" --set "scene.bodies.ball.angular_velocity=$w" "${extra[@]}" || true
        mv "$tmp" "$dir/time.txt" ;;
    wcont) nice -n 5 "$addsim" optimize tasks/ball_to_target_wcontinuation.json --out "$dir" --quiet \
          --set "scene.bodies.ball.velocity=$v" --set "scene.bodies.ball.angular_velocity=$w" || true ;;
    *) echo "unknown variant $variant" >&2; exit 2 ;;
  esac
  echo "$k s=$s d=$d v=$v w=$w" > "$dir/start.txt"
done
