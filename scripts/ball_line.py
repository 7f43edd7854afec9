#!/usr/bin/python3
"""Phi and its exact directional derivative along a line through a ball-throw optimum.

Samples p(t) = p0 + t d over the six initial velocities (v, omega) of a ball task with
`addsim gradient` (adjoint) and writes one CSV row per sample (t, Phi, dPhi/dt = grad . d,
distance sqrt(2 Phi), the six parameters) and a two-panel plot. Used for the stall study of
the ball-to-a-point experiment (docs/validation/throwing.md).

Usage:
  /usr/bin/python3 scripts/ball_line.py ADDSIM TASK OUT_PREFIX "P0" "D" T0 T1 N [--set ...]
    P0, D: six comma-separated numbers (vx,vy,vz,wx,wy,wz); D is normalised to unit length.
    T0, T1, N: the line parameter range (units of the parameters) and sample count.
    Remaining arguments are passed to `addsim gradient` (e.g. --set scene.contact.smoothing=0.005).
Writes OUT_PREFIX.csv and OUT_PREFIX.png. Runs two samples at a time.
"""
import concurrent.futures
import csv
import json
import math
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = ["bodies.0.velocity.0.0", "bodies.0.velocity.0.1", "bodies.0.velocity.0.2",
         "bodies.0.angular_velocity.0.0", "bodies.0.angular_velocity.0.1",
         "bodies.0.angular_velocity.0.2"]


def sample(addsim, task, p, extra):
    v = "[%.12g,%.12g,%.12g]" % tuple(p[:3])
    w = "[%.12g,%.12g,%.12g]" % tuple(p[3:])
    cmd = [addsim, "gradient", task, "-q", "--set", f"scene.bodies.ball.velocity={v}",
           "--set", f"scene.bodies.ball.angular_velocity={w}", *extra]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return out["phi"], [out["gradient"][n] for n in NAMES]


def main(argv):
    if len(argv) < 9:
        sys.exit(__doc__)
    addsim, task, prefix = argv[1], argv[2], argv[3]
    p0 = [float(s) for s in argv[4].split(",")]
    d = [float(s) for s in argv[5].split(",")]
    if len(p0) != 6 or len(d) != 6:
        sys.exit("P0 and D need six numbers each")
    norm = math.sqrt(sum(x * x for x in d))
    d = [x / norm for x in d]
    t0, t1, n = float(argv[6]), float(argv[7]), int(argv[8])
    extra = argv[9:]
    ts = [t0 + (t1 - t0) * k / (n - 1) for k in range(n)]
    points = [[a + t * b for a, b in zip(p0, d)] for t in ts]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: sample(addsim, task, p, extra), points))
    rows = []
    for t, p, (phi, grad) in zip(ts, points, results):
        rows.append([t, phi, sum(g * x for g, x in zip(grad, d)), math.sqrt(2 * phi), *p])
    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t", "phi", "dphi_dt", "distance", "vx", "vy", "vz", "wx", "wy", "wz"])
        w.writerows(rows)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 5.6), sharex=True)
    a1.plot([r[0] for r in rows], [r[3] * 100 for r in rows], ".-")
    a1.set_ylabel("distance to target (cm)")
    a2.plot([r[0] for r in rows], [r[2] for r in rows], ".-")
    a2.axhline(0, color="k", lw=0.5)
    a2.set_ylabel("exact d$\\Phi$/dt (adjoint)")
    a2.set_xlabel("t along the line (parameter units)")
    a1.set_title(f"line through ({argv[4]}) along ({', '.join('%.3g' % x for x in d)})", fontsize=8)
    for a in (a1, a2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main(sys.argv)
