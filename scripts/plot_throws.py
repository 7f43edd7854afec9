#!/usr/bin/python3
"""Side view (x-z) of thrown soft bodies: the mean node path of each `addsim simulate` output
and, for the last frame, the nodes; counts the floor and wall contact episodes (consecutive
steps in which some node is within 1 mm of the floor z = 0 / of the wall x = WALL).

Usage: /usr/bin/python3 scripts/plot_throws.py OUT.png "TITLE" [--target X,Z] [--line X]
           [--wall X] [--every N] LABEL=SIM_DIR [LABEL=SIM_DIR ...]

SIM_DIR is an `addsim simulate --out` folder (trajectory.npy: one row of all DOFs per step;
the scene's first body must be the FEM body, its DOFs first). Prints one line per run:
label, floor episodes (first-last step each), wall episodes, final mean node.
"""
import sys

import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def episodes(mask):
    out, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        if not m and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(mask) - 1))
    return out


def main(argv):
    out, title = argv[0], argv[1]
    target = line = wall = None
    every = 10
    runs = []
    args = argv[2:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--target":
            target = [float(v) for v in args[i + 1].split(",")]
            i += 2
        elif a == "--line":
            line = float(args[i + 1])
            i += 2
        elif a == "--wall":
            wall = float(args[i + 1])
            i += 2
        elif a == "--every":
            every = int(args[i + 1])
            i += 2
        else:
            label, d = a.rsplit("=", 1)
            runs.append((label, d))
            i += 1
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for k, (label, d) in enumerate(runs):
        q = np.load(f"{d}/trajectory.npy")
        x = q.reshape(q.shape[0], -1, 3)
        c = x.mean(axis=1)
        floor = episodes(x[:, :, 2].min(axis=1) < 1e-3)
        walls = episodes(x[:, :, 0].max(axis=1) > wall - 1e-3) if wall is not None else []
        color = f"C{k}"
        ax.plot(c[:, 0], c[:, 2], "-", color=color, label=f"{label} ({len(floor)} floor, {len(walls)} wall contacts)")
        ax.plot(c[::every, 0], c[::every, 2], "o", color=color, ms=3)
        last = x[-1]
        ax.plot(last[:, 0], last[:, 2], ".", color=color, ms=1.5, alpha=0.5)
        print(f"{label}: floor contacts {floor}; wall contacts {walls}; final mean node {np.round(c[-1], 4).tolist()}")
    ax.axhline(0.0, color="k", lw=1)
    if wall is not None:
        ax.axvline(wall, color="k", lw=2)
    if line is not None:
        ax.axvline(line, color="r", ls="--", lw=1, label=f"target line x = {line} m")
    if target is not None:
        ax.plot([target[0]], [target[1]], "r*", ms=12, label="target")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("z (m)")
    ax.set_aspect("equal")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=130)


if __name__ == "__main__":
    main(sys.argv[1:])
