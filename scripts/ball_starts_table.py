#!/usr/bin/python3
"""Markdown table of scripts/ball_starts.sh runs: per start, per variant, the simulations,
the final distance of the centre of mass to the target sqrt(2 Phi) and Phi/Phi0, with Phi0
the start's Phi on the w = 5 mm problem (the first row of its w5 run) for w5 and wcont,
since the continuation's first stages optimise other (wider-blend) problems; the w10 variant
solves the w = 10 mm problem and is measured against its own first row.

Usage: /usr/bin/python3 scripts/ball_starts_table.py RUNS_DIR
"""
import csv
import glob
import json
import math
import os
import sys


def load(run):
    rows = list(csv.DictReader(open(os.path.join(run, "iterations.csv"), newline="")))
    res = json.load(open(os.path.join(run, "result.json"))) if os.path.exists(os.path.join(run, "result.json")) else None
    return rows, res


def main(root):
    starts = sorted({int(p.rsplit("_", 1)[1]) for p in glob.glob(os.path.join(root, "*_*"))})
    print("| start | v (m/s) | ω_y (rad/s) | variant | simulations | distance | Φ/Φ₀ | ≤ 1 mm | wall time | stop |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for k in starts:
        phi0 = None
        w5 = os.path.join(root, f"w5_{k}")
        if os.path.exists(os.path.join(w5, "iterations.csv")):
            phi0 = float(next(csv.DictReader(open(os.path.join(w5, "iterations.csv"))))["phi"])
        for variant, label in (("w5", "w = 5 mm"), ("wcont", "w 30→10→5 mm"), ("w10", "w = 10 mm")):
            run = os.path.join(root, f"{variant}_{k}")
            if not os.path.exists(os.path.join(run, "iterations.csv")):
                continue
            rows, res = load(run)
            if not rows:
                continue
            if variant == "w10":
                phi0 = float(rows[0]["phi"])
            start = open(os.path.join(run, "start.txt")).read().split() if os.path.exists(os.path.join(run, "start.txt")) else []
            v = next((s[2:] for s in start if s.startswith("v=")), "?")
            w = next((s[2:] for s in start if s.startswith("w=")), "?")
            last_stage = max(int(r["stage"]) for r in rows)
            final = [float(r["phi"]) for r in rows if int(r["stage"]) == last_stage]
            phi = min(final) if res is None else res["phi"]
            dist = math.sqrt(2 * phi)
            ok = dist <= 1e-3 and res is not None and last_stage == (2 if variant == "wcont" else 0)
            summary.setdefault(variant, [0, 0])
            summary[variant][0] += ok
            summary[variant][1] += 1
            stop = res["stop_reason"] if res else "running"
            secs = f"{res['seconds']:.0f} s" if res else ""
            v = "(" + ", ".join(f"{float(c):g}" for c in v.strip("[]").split(",")) + ")" if "," in v else v
            w = f"{float(w.strip('[]').split(',')[1]):g}" if "," in w else w
            print(f"| {k} | {v} | {w} | {label} | {len(rows)} | "
                  f"{dist * 1e3:.3g} mm | {phi / phi0:.2g} | {'yes' if ok else 'no'} | {secs} | {stop} |"
                  if phi0 else f"| {k} | {v} | {w} | {label} | {len(rows)} | {dist * 1e3:.3g} mm | | | {secs} | {stop} |")
    print()
    for variant, (ok, n) in summary.items():
        print(f"{variant}: {ok} of {n} starts reach 1 mm")


if __name__ == "__main__":
    main(sys.argv[1])
