#!/usr/bin/python3
"""Markdown table of scripts/ball_starts.sh runs of tasks/ball_to_target_lbfgsb_1mm_surrogate.json
(variant lbfgsb, BALL_LBFGSB_TASK set to it): per start, the simulations on the rigid surrogate
(stages whose name starts with "rigid") and on the soft ball, split per stage, the final distance
to the target sqrt(2 Phi), whether the run ended within 1 mm (stop reason phi_below), the CPU time
of the whole command (user + system, time.txt) and t_opt at quiet per-simulation costs:
soft simulations x SOFT_S + surrogate simulations x RIGID_S (seconds per simulation + adjoint,
measured separately; defaults 0.19 and 0.0015).

Usage: /usr/bin/python3 scripts/ball_starts_surrogate_table.py RUNS_DIR [SOFT_S [RIGID_S]]
"""
import glob
import json
import os
import sys


def main(root, soft_s, rigid_s):
    runs = sorted(glob.glob(os.path.join(root, "lbfgsb_*")), key=lambda p: int(p.rsplit("_", 1)[1]))
    if os.path.exists(os.path.join(root, "shipped", "result.json")):
        runs.insert(0, os.path.join(root, "shipped"))
    print("| start | v (m/s) | ω_y (rad/s) | surrogate sims | soft sims (per stage) | distance | ≤ 1 mm | CPU | t_opt quiet | ≤ 13.25 s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ok = 0
    for run in runs:
        if not os.path.exists(os.path.join(run, "result.json")):
            continue
        res = json.load(open(os.path.join(run, "result.json")))
        start = open(os.path.join(run, "start.txt")).read().split() if os.path.exists(os.path.join(run, "start.txt")) else []
        v = next((s[2:] for s in start if s.startswith("v=")), "(2, 0, 1)")
        w = next((s[2:] for s in start if s.startswith("w=")), "-15")
        prev, sur, soft, parts = 0, 0, 0, []
        for st in res["stages"]:
            n = st["simulations"] - prev
            prev = st["simulations"]
            if st["name"].startswith("rigid"):
                sur += n
            else:
                soft += n
                parts.append(str(n))
        cpu = ""
        for f in (os.path.join(run, "time.txt"), run + ".time"):
            if os.path.exists(f):
                t = [float(x) for x in open(f).read().split()]
                cpu = f"{t[1] + t[2]:.1f} s"
        solved = res["stop_reason"] == "phi_below"
        t_opt = soft * soft_s + sur * rigid_s
        fast = solved and t_opt <= 13.25
        ok += fast
        name = os.path.basename(run).replace("lbfgsb_", "")
        wy = w.strip("[]").split(",")[1] if "," in w else w
        print(f"| {name} | {v} | {wy} | {sur} | {soft} ({' + '.join(parts)}) | {1000 * (2 * res['phi']) ** 0.5:.3g} mm | "
              f"{'yes' if solved else 'no'} | {cpu} | {t_opt:.1f} s | {'yes' if fast else 'no'} |")
    print(f"\n{ok} of {len(runs)} runs within 1 mm and 13.25 s at {soft_s} s per soft-ball and {rigid_s} s per surrogate simulation.")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], float(a[1]) if len(a) > 1 else 0.19, float(a[2]) if len(a) > 2 else 0.0015)
