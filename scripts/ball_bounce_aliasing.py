#!/usr/bin/python3
"""Rebound of the soft ball against the throw's vertical speed: time-grid aliasing.

Reads `addsim simulate` output folders of scenes/soft_ball_throw.json thrown with
v = (2, 0, v_z) for a fine set of v_z and plots, per folder group, the coefficient of
restitution of the first and second floor contact (-v_z after / v_z before, centre of mass,
at the steps where the contact starts and ends) and the time at which the first one starts.

Usage:
  /usr/bin/python3 scripts/ball_bounce_aliasing.py OUT.png LABEL=GLOB [LABEL=GLOB ...]
    GLOB matches folders named ..._<v_z> (the number after the last "_" is v_z).
Prints one line per folder (v_z, contact start times, restitutions).
"""
import csv
import glob
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bounces(folder):
    rows = list(csv.DictReader(open(f"{folder}/steps.csv")))
    starts, ends, prev = [], [], 0
    for i, r in enumerate(rows):
        c = int(r["contact_points"])
        if c > 0 and prev == 0:
            starts.append(i)
        if c == 0 and prev > 0:
            ends.append(i)
        prev = c
    out = []
    for s, e in zip(starts, ends):
        v_in = float(rows[s - 1]["ball.vcom_z"])
        v_out = float(rows[e]["ball.vcom_z"])
        out.append((float(rows[s]["time"]), -v_out / v_in))
    return out


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 5.6), sharex=True)
    for spec in argv[2:]:
        label, _, pattern = spec.rpartition("=")
        data = []
        for folder in glob.glob(pattern):
            vz = float(folder.rstrip("/").rsplit("_", 1)[1])
            b = bounces(folder)
            if len(b) >= 2:
                data.append((vz, b))
        data.sort()
        for vz, b in data:
            print(label, f"v_z {vz:.3f}", "starts", [s for s, _ in b], "e", " ".join(f"{e:.3f}" for _, e in b))
        vz = [d[0] for d in data]
        for k, style in ((0, "o-"), (1, "s--")):
            a1.plot(vz, [d[1][k][1] for d in data], style, ms=3, label=f"{label}, contact {k + 1}")
        a2.plot(vz, [d[1][0][0] for d in data], "o-", ms=3, label=f"{label}, contact 1")
    a1.set_ylabel("restitution $-v_z^+/v_z^-$")
    a2.set_ylabel("time of the first step in contact (s)")
    a2.set_xlabel("initial $v_z$ (m/s)")
    a1.set_title("soft ball: restitution against the impact's phase on the time grid", fontsize=9)
    for a in (a1, a2):
        a.grid(True, alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
