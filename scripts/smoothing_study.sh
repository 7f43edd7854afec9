#!/usr/bin/env bash
# Reproduces the data and figures of docs/validation/optimization.md, section "Why the
# landscape has kinks, and what smooths it": Φ and the adjoint dΦ/dv_x along v_x ∈ [1.95, 2.05]
# m/s (101 samples) of tasks/ball_to_target.json per contact model, k_n, time step and
# smoothing width; BFGS runs from several starts; the plots. Needs a Release build with the
# smoothing_study target (cmake --build build --target smoothing_study). About 2 h on the shared 2-core machine.
# Usage: scripts/smoothing_study.sh [OUT_DIR]   (default docs/validation/optimization)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/validation/optimization}
mkdir -p "$out"
S=build/benchmarks/smoothing_study
plot=(/usr/bin/python3 scripts/plot_smoothing_study.py)
T=tasks/ball_to_target.json

line() {  # name, overrides...
  local name=$1
  shift
  "$S" line "$T" "$out/line_$name.csv" bodies.ball.velocity.0.0 1.95 2.05 101 "$@"
}
line linear_kn1e3_w0 scene.contact.model=linear
line tanh_kn1e3_w0 scene.contact.model=tanh
line hybrid_kn1e3_w0 scene.contact.model=hybrid
line tanh_kn1e3_w2mm scene.contact.model=tanh scene.contact.smoothing=0.002
line tanh_kn1e3_w5mm scene.contact.model=tanh scene.contact.smoothing=0.005
line linear_kn1e3_w5mm scene.contact.model=linear scene.contact.smoothing=0.005
line tanh_kn1e2_w0 scene.contact.model=tanh scene.contact.kn=100
line linear_kn1e2_w0 scene.contact.model=linear scene.contact.kn=100
line tanh_kn1e3_w0_h5ms scene.contact.model=tanh scene.dt=0.005 scene.steps=200
for m in linear tanh; do
  "$S" line "$T" "$out/line_omega_${m}_kn1e3_w5mm.csv" bodies.ball.angular_velocity.0.1 -15.5 -14.5 101 \
    scene.contact.model=$m scene.contact.smoothing=0.005
done
# The rigid analogue: x(1 s) of tasks/rigid_sphere_throw.json along v_z.
rline() {  # name, overrides...
  local name=$1
  shift
  "$S" line tasks/rigid_sphere_throw.json "$out/line_rigid_$name.csv" bodies.0.velocity.0.2 1.9 2.1 101 "$@"
}
rline linear_w0 scene.contact.model=linear
rline linear_w1mm scene.contact.model=linear scene.contact.smoothing=0.001
rline tanh_w0 scene.contact.model=tanh
for w in 1:0.001 2:0.002 5:0.005 10:0.01; do
  rline "tanh_w${w%%:*}mm" scene.contact.model=tanh "scene.contact.smoothing=${w#*:}"
done
rline tanh_w0_kd0 scene.contact.model=tanh scene.contact.kd=0
rline tanh_w0_ramp2mm scene.contact.model=tanh scene.contact.damping_ramp=0.002

bfgs() {  # name, budget, overrides...
  local name=$1 budget=$2
  shift 2
  "$S" bfgs "$T" "$out/bfgs_$name.csv" "$budget" "$@"
}
bfgs tanh_w0 80 scene.contact.model=tanh
bfgs linear_w0 80 scene.contact.model=linear
bfgs tanh_w5mm 80 scene.contact.model=tanh scene.contact.smoothing=0.005
bfgs linear_w5mm 80 scene.contact.model=linear scene.contact.smoothing=0.005
for start in "fast:[2.8,0,1.4]:[0,-15,0]" "spin5:[2,0,1]:[0,-5,0]" "spin25:[2,0,1]:[0,-25,0]" \
             "slowspin25:[1.2,0,0.6]:[0,-25,0]" "fastspin5:[2.8,0,1.4]:[0,-5,0]" "slow:[1.2,0,0.6]:[0,-15,0]"; do
  IFS=: read -r name v w <<<"$start"
  bfgs "tanh_w5mm_$name" 50 scene.contact.model=tanh scene.contact.smoothing=0.005 \
    "scene.bodies.ball.velocity=$v" "scene.bodies.ball.angular_velocity=$w"
done
# Continuation in w: 30 mm, then 5 mm from the first stage's best point.
for start in "spin5:[2,0,1]:[0,-5,0]:25" "fast:[2.8,0,1.4]:[0,-15,0]:25"; do
  IFS=: read -r name v w budget <<<"$start"
  bfgs "cont1_$name" "$budget" scene.contact.model=tanh scene.contact.smoothing=0.03 \
    "scene.bodies.ball.velocity=$v" "scene.bodies.ball.angular_velocity=$w"
  best=$(/usr/bin/python3 -c "
import csv, math, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if math.isfinite(float(r['phi']))]
r = min(rows, key=lambda r: float(r['phi']))
x = [r[k] for k in list(r)[5:]]
print('[%s,%s,%s]:[%s,%s,%s]' % tuple(x))" "$out/bfgs_cont1_$name.csv")
  IFS=: read -r v2 w2 <<<"$best"
  bfgs "cont2_$name" 35 scene.contact.model=tanh scene.contact.smoothing=0.005 \
    "scene.bodies.ball.velocity=$v2" "scene.bodies.ball.angular_velocity=$w2"
done

cd "$out"
"${plot[@]}" lines lines_models.png --title "ball_to_target: k_n = 1e3, h = 10 ms" --xlabel "v_x (m/s)" \
  line_linear_kn1e3_w0.csv:linear line_tanh_kn1e3_w0.csv:tanh line_hybrid_kn1e3_w0.csv:hybrid
"${plot[@]}" lines lines_kn_dt.png --title "ball_to_target: k_n and time step (tanh)" --xlabel "v_x (m/s)" \
  line_tanh_kn1e3_w0.csv:"k_n = 1e3, h = 10 ms" line_tanh_kn1e2_w0.csv:"k_n = 1e2, h = 10 ms" \
  line_linear_kn1e2_w0.csv:"k_n = 1e2, linear" line_tanh_kn1e3_w0_h5ms.csv:"k_n = 1e3, h = 5 ms"
"${plot[@]}" lines lines_smoothing.png --title "ball_to_target: smoothing width w (k_n = 1e3)" --xlabel "v_x (m/s)" \
  line_tanh_kn1e3_w0.csv:"tanh, w = 0" line_tanh_kn1e3_w2mm.csv:"tanh, w = 2 mm" \
  line_tanh_kn1e3_w5mm.csv:"tanh, w = 5 mm" line_linear_kn1e3_w5mm.csv:"linear, w = 5 mm"
"${plot[@]}" lines lines_omega.png --title "ball_to_target: spin line, w = 5 mm" --xlabel "omega_y (rad/s)" \
  line_omega_linear_kn1e3_w5mm.csv:"linear, w = 5 mm" line_omega_tanh_kn1e3_w5mm.csv:"tanh, w = 5 mm"
"${plot[@]}" lines lines_rigid.png --title "rigid_sphere_throw: x(1 s) along v_z (k_n = 1e5, critical k_d, h = 1 ms, tanh)" \
  --xlabel "v_z (m/s)" line_rigid_tanh_w0.csv:"w = 0" line_rigid_tanh_w10mm.csv:"w = 10 mm" \
  line_rigid_tanh_w0_ramp2mm.csv:"w = 0, damping ramp 2 mm"
"${plot[@]}" bfgs bfgs.png --title "ball_to_target: BFGS from the shipped start" \
  bfgs_tanh_w0.csv:"tanh, w = 0" bfgs_linear_w0.csv:"linear, w = 0" bfgs_linear_w5mm.csv:"linear, w = 5 mm" \
  bfgs_tanh_w5mm.csv:"tanh, w = 5 mm"
"${plot[@]}" bfgs bfgs_starts.png --title "ball_to_target: tanh, w = 5 mm, other starts; w-continuation" \
  bfgs_tanh_w5mm_fastspin5.csv:"(2.8,0,1.4; -5)" bfgs_tanh_w5mm_fast.csv:"(2.8,0,1.4; -15)" \
  bfgs_tanh_w5mm_slow.csv:"(1.2,0,0.6; -15)" bfgs_tanh_w5mm_spin25.csv:"(2,0,1; -25)" \
  bfgs_tanh_w5mm_spin5.csv:"(2,0,1; -5)" bfgs_tanh_w5mm_slowspin25.csv:"(1.2,0,0.6; -25)" \
  bfgs_cont2_fast.csv:"(2.8,0,1.4; -15), stage 2 after w = 30 mm" bfgs_cont2_spin5.csv:"(2,0,1; -5), stage 2 after w = 30 mm"
"${plot[@]}" signs line_*.csv
