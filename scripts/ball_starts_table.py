#!/usr/bin/python3
"""Markdown table of scripts/ball_starts.sh runs: per start, per variant, the simulations,
iterations, the final distance of the centre of mass to the target sqrt(2 Phi), Phi/Phi0,
the first simulation of a final (w = 5 mm) stage within 1 mm of the target, t_opt (the run's own seconds, result.json) and the CPU time of the whole command (user +
system from time.txt, where the variant records it). Phi0 is the start's Phi on the
w = 5 mm problem (the first row of its w5 run) for w5 and wcont, since the continuation's
first stages optimise other (wider-blend) problems; w10 and gn are measured against their
own first row. gn (tasks/ball_to_target_gn.json) counts as solved when it ends in a stage
whose name starts with "w = 5 mm" (result.json); its simulations are split per stage run.
lbfgsb (tasks/ball_to_target_lbfgsb.json, w = 20 -> 10 -> 5 mm) counts as solved in the same
way (its last stage, w = 5 mm, ends within 1 mm; the variant column names the task file of result.json); its Phi0 is the start's Phi on the w = 5 mm problem,
the first row of the same start's gn run where one is in RUNS_DIR (else its own first row,
on w = 20 mm).

Usage: /usr/bin/python3 scripts/ball_starts_table.py RUNS_DIR [VARIANT ...]
"""
import csv
import glob
import json
import math
import os
import sys

LABELS = {"w5": "w = 5 mm", "wcont": "w 30→10→5 mm", "w10": "w = 10 mm", "gn": "ball_to_target_gn.json",
          "lbfgsb": "ball_to_target_lbfgsb.json"}
OWN_PHI0 = {"w10", "gn"}


def load(run):
    rows = list(csv.DictReader(open(os.path.join(run, "iterations.csv"), newline="")))
    res = json.load(open(os.path.join(run, "result.json"))) if os.path.exists(os.path.join(run, "result.json")) else None
    return rows, res


def main(root, variants):
    starts = sorted({int(p.rsplit("_", 1)[1]) for p in glob.glob(os.path.join(root, "*_*")) if p.rsplit("_", 1)[1].isdigit()})
    print("| start | v (m/s) | ω_y (rad/s) | variant | simulations | iterations | distance | Φ/Φ₀ | ≤ 1 mm "
          "| 1 mm at | t_opt | CPU | stop |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for k in starts:
        w5 = os.path.join(root, f"w5_{k}")
        w5_phi0 = None
        if os.path.exists(os.path.join(w5, "iterations.csv")):
            w5_phi0 = float(next(csv.DictReader(open(os.path.join(w5, "iterations.csv"))))["phi"])
        for variant in variants:
            run = os.path.join(root, f"{variant}_{k}")
            if not os.path.exists(os.path.join(run, "iterations.csv")):
                continue
            rows, res = load(run)
            if not rows:
                continue
            phi0 = float(rows[0]["phi"]) if variant in OWN_PHI0 else w5_phi0
            gn = os.path.join(root, f"gn_{k}", "iterations.csv")
            if variant == "lbfgsb":
                phi0 = float(next(csv.DictReader(open(gn)))["phi"]) if os.path.exists(gn) else float(rows[0]["phi"])
            start = open(os.path.join(run, "start.txt")).read().split() if os.path.exists(os.path.join(run, "start.txt")) else []
            v = next((s[2:] for s in start if s.startswith("v=")), "?")
            w = next((s[2:] for s in start if s.startswith("w=")), "?")
            last_stage = max(int(r["stage"]) for r in rows)
            final = [float(r["phi"]) for r in rows if int(r["stage"]) == last_stage]
            phi = min(final) if res is None else res["phi"]
            dist = math.sqrt(2 * phi)
            final_stages = {"wcont": (2,)}.get(variant, (0,))
            if variant in ("gn", "lbfgsb") and res is not None:
                # Solved when the last stage run is a w = 5 mm one (the task's stages have changed
                # over time: read the names).
                names = {st["stage"]: st["name"] for st in res.get("stages", [])}
                final_stages = tuple(k for k, name in names.items() if name.startswith("w = 5 mm"))
            ok = dist <= 1e-3 and res is not None and last_stage in final_stages
            # The first simulation (counted over the whole run) of a final-problem stage within 1 mm.
            first_mm = next((i + 1 for i, r in enumerate(rows)
                             if int(r["stage"]) in final_stages and r["phi"] not in ("", "inf")
                             and math.sqrt(2 * float(r["phi"])) <= 1e-3), None)
            summary.setdefault(variant, [0, 0, []])
            summary[variant][0] += ok
            summary[variant][1] += 1
            summary[variant][2].append(len(rows))
            stop = res["stop_reason"] if res else "running"
            iters = res["iterations"] if res else ""
            secs = f"{res['seconds']:.1f} s" if res else ""
            cpu = ""
            if os.path.exists(os.path.join(run, "time.txt")):
                wall, user, system = (float(x) for x in open(os.path.join(run, "time.txt")).read().split()[-3:])
                cpu = f"{user + system:.1f} s"
            v = "(" + ", ".join(f"{float(c):g}" for c in v.strip("[]").split(",")) + ")" if "," in v else v
            w = f"{float(w.strip('[]').split(',')[1]):g}" if "," in w else w
            ratio = f"{phi / phi0:.2g}" if phi0 else ""
            sims = str(len(rows))
            if last_stage > 0:
                counts = [sum(int(r["stage"]) == st for r in rows) for st in range(last_stage + 1)]
                sims += " (" + " + ".join(str(c) for c in counts if c > 0) + ")"
            label = os.path.basename(res["task_file"]) if res and res.get("task_file") else LABELS.get(variant, variant)
            print(f"| {k} | {v} | {w} | {label} | {sims} | {iters} | {dist * 1e3:.3g} mm "
                  f"| {ratio} | {'yes' if ok else 'no'} | {first_mm or '—'} | {secs} | {cpu} | {stop} |")
    print()
    for variant, (ok, n, sims) in summary.items():
        print(f"{variant}: {ok} of {n} starts reach 1 mm; simulations {min(sims)}-{max(sims)}, "
              f"median {sorted(sims)[len(sims) // 2]}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["w5", "wcont", "w10", "gn", "lbfgsb"])
