#!/usr/bin/python3
"""Chooses the straight-line start of a cube-drag task (paper Table 2, cube dragging) and writes
it into the task's scene overrides.

The start is the end-effector moving at constant velocity v along +x from its scene pose
(a kinematic body's default `poses` are position + velocity · t, docs/scene-format.md), set in
the task as `"set": {"bodies.effector.velocity": [v, 0, 0]}`. The cube lags behind the
effector (the strings must stretch before their pull overcomes static friction), so the best
speed is above distance / duration. v is found by a golden-section search on Φ(v) of one
rollout each (`addsim gradient TASK --set scene.bodies.effector.velocity=[v,0,0]`, which
overrides a speed the task already sets) over
[d/T, 3 d/T]; each trial is one simulation, which the reported optimisation cost includes.
Gauss–Newton then starts from the effector path that already brings the cube closest to its
target (docs/validation/trajectory-optimization.md).

Usage: scripts/make_cube_drag_start.py TASK DISTANCE_M [--addsim PATH] [--tolerance REL]
       [--dry-run]
"""

import argparse
import json
import math
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "bodies.effector.velocity"


def rollout_phi(addsim, task, speed):
    """Φ of the task with the effector at constant velocity `speed` along +x (one simulation)."""
    out = subprocess.run([addsim, "gradient", str(task), "--quiet", "--set", f"scene.{KEY}=[{speed!r},0,0]"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["phi"]


def golden_section(f, a, b, rel_tol):
    """Minimum of a unimodal f on [a, b] to a bracket width of rel_tol · b; returns (x, f(x), calls)."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    calls = 2
    while b - a > rel_tol * b:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
        calls += 1
    return (c, fc, calls) if fc < fd else (d, fd, calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", type=Path)
    parser.add_argument("distance", type=float, help="drag distance along +x, m")
    parser.add_argument("--addsim", default=str(ROOT / "build" / "src" / "addsim" / "cli" / "addsim"))
    parser.add_argument("--tolerance", type=float, default=0.05, help="relative width of the final bracket")
    parser.add_argument("--dry-run", action="store_true", help="print the speed, leave the task unchanged")
    args = parser.parse_args()

    task = json.loads(args.task.read_text())
    scene = json.loads((args.task.parent / task["scene"]).read_text())
    duration = scene["dt"] * scene["steps"]
    lo = args.distance / duration
    speed, phi, calls = golden_section(lambda v: rollout_phi(args.addsim, args.task, v), lo, 3.0 * lo,
                                       args.tolerance)
    speed = round(speed, 4)
    print(f"effector speed {speed} m/s: Phi {phi:.4e} after {calls} rollouts (d/T = {lo:.4f} m/s)")
    if not args.dry_run:
        task.setdefault("set", {})[KEY] = [speed, 0.0, 0.0]
        args.task.write_text(json.dumps(task, indent=1) + "\n")


if __name__ == "__main__":
    main()
