#!/usr/bin/python3
"""Cylinder drop (paper Fig. CylinderDrop b, c): per step the mean tangential speed of the
puck's contact nodes and the Newton iterations, linear vs tanh friction.

Usage: scripts/plot_cylinder_drop.py OUT_LINEAR OUT_TANH [PNG]
OUT_* are `addsim simulate scenes/cylinder_drop.json` output directories (trajectory.npy,
meta.json, steps.csv); PNG defaults to docs/validation/cylinder_tangential_velocity.png.
The contact nodes are meta.json's "contact_nodes"; the incline normal is the one of
scenes/cylinder_drop.json (NORMAL below).
"""
import json
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# Normal of the 20-degree incline in scenes/cylinder_drop.json.
INCLINE = math.radians(20.0)
NORMAL = np.array([math.sin(INCLINE), 0.0, math.cos(INCLINE)])


def tangential_speed(out):
    """Mean over the contact (boundary) nodes of |v_t| per step (m/s), and the step times (s)."""
    out = pathlib.Path(out)
    meta = json.loads((out / "meta.json").read_text())
    body = next(b for b in meta["bodies"] if b["type"] == "fem")
    q = np.load(out / "trajectory.npy")
    dt = meta["dt"]
    nodes = np.asarray(body["contact_nodes"])
    x = q[:, body["dof_offset"]:body["dof_offset"] + body["dof_count"]].reshape(q.shape[0], -1, 3)[:, nodes, :]
    v = np.diff(x, axis=0) / dt  # backward difference: velocity at steps 1..n
    vt = v - np.einsum("snk,k->sn", v, NORMAL)[..., None] * NORMAL
    return np.arange(1, q.shape[0]) * dt, np.linalg.norm(vt, axis=2).mean(axis=1)


def newton_iterations(out):
    """Per step (time s, Newton iterations) from steps.csv."""
    data = np.genfromtxt(pathlib.Path(out) / "steps.csv", delimiter=",", names=True)
    return data["time"], data["newton_iterations"]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    png = pathlib.Path(argv[3] if len(argv) > 3 else "docs/validation/cylinder_tangential_velocity.png")
    fig, (ax_v, ax_n) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for out, label, color in ((argv[1], "linear", "tab:green"), (argv[2], "tanh", "tab:blue")):
        t, vt = tangential_speed(out)
        ax_v.semilogy(t, np.maximum(vt, 1e-7), color=color, label=label)
        tn, it = newton_iterations(out)
        ax_n.plot(tn, it, color=color, label=label, drawstyle="steps-mid")
        print(f"{label}: mean tangential speed of the contact nodes at t = {t[-1]:.3f} s: {vt[-1]:.3e} m/s; "
              f"max {vt.max():.3f} m/s; Newton iterations {int(it.sum())} ({it.mean():.2f} per step)")
    ax_v.set_ylabel("mean |v_t| of contact nodes [m/s]")
    ax_v.legend()
    ax_v.grid(True, which="both", alpha=0.3)
    ax_n.set_ylabel("Newton iterations")
    ax_n.set_xlabel("time [s]")
    ax_n.grid(True, alpha=0.3)
    fig.suptitle("Cylinder drop on a 20° incline (c_f = 0.4, k_n = 100 N/m, BDF1, h = 5 ms)")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
