#!/usr/bin/python3
"""Plots an objective landscape written by `addsim landscape`: filled contours of Phi over
the two parameter axes and the negative gradient as arrows (like the paper's figure
SphereToPoint-objFcnCombined). Usage: plot_landscape.py landscape.csv out.png [--title T]
[--log]. Needs Debian's python3-matplotlib and python3-numpy (run with /usr/bin/python3)."""

import argparse
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--title", default="")
    ap.add_argument("--log", action="store_true", help="contour log10(Phi)")
    args = ap.parse_args()

    with open(args.csv, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [[float(v) for v in r] for r in reader if r]
    data = np.array(rows)
    ni, nj = int(data[:, 0].max()) + 1, int(data[:, 1].max()) + 1
    grid = np.full((ni, nj, 6), math.nan)
    for r in data:
        grid[int(r[0]), int(r[1])] = r[2:8]
    x, y, phi, gx, gy = (grid[:, :, k] for k in range(5))

    fig, ax = plt.subplots(figsize=(6.4, 5.2), dpi=120)
    z = np.log10(np.maximum(phi, 1e-300)) if args.log else phi
    cs = ax.contourf(x, y, z, levels=30, cmap="viridis")
    ax.contour(x, y, z, levels=15, colors="k", linewidths=0.4, alpha=0.5)
    fig.colorbar(cs, ax=ax, label="log10 Phi" if args.log else "Phi")
    # Arrows: the descent direction -grad Phi, each normalised to the grid spacing.
    norm = np.hypot(gx / max(np.ptp(x), 1e-300), gy / max(np.ptp(y), 1e-300))
    norm[norm == 0] = 1.0
    ax.quiver(x, y, -gx / max(np.ptp(x), 1e-300) / norm, -gy / max(np.ptp(y), 1e-300) / norm, color="white",
              angles="xy", pivot="mid", scale=max(ni, nj) * 1.3, width=0.004)
    failed = np.isnan(phi)
    if failed.any():
        ax.plot(x[failed], y[failed], "rx", label="failed run")
        ax.legend(loc="upper right")
    ax.set_xlabel(header[2])
    ax.set_ylabel(header[3])
    ax.set_title(args.title)
    fig.tight_layout()
    fig.savefig(args.png)


if __name__ == "__main__":
    main()
