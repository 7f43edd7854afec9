#!/usr/bin/python3
"""Best Phi/Phi0 against simulations for several `addsim optimize` runs on one plot.

Usage: /usr/bin/python3 scripts/plot_optimization_runs.py OUT.png "TITLE" LABEL=RUN_DIR [LABEL=RUN_DIR ...]

The last "=" of each argument separates LABEL (which may contain "=") from RUN_DIR, an
`addsim optimize --out` folder; its iterations.csv (one row per simulation: stage,
iteration, sims, phi, ...) gives the curve: the best Phi so far over the first row's Phi
(Phi0), failed simulations (phi = inf) included in the count.
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def best_ratio_curve(run_dir):
    sims, best = [], []
    phi0, low = None, math.inf
    with open(f"{run_dir}/iterations.csv", newline="") as f:
        for row in csv.DictReader(f):
            phi = float(row["phi"])
            if phi0 is None:
                phi0 = phi
            low = min(low, phi)
            sims.append(int(row["sims"]))
            best.append(low / phi0)
    return sims, best


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    out, title = argv[1], argv[2]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for spec in argv[3:]:
        label, _, run_dir = spec.rpartition("=")
        sims, best = best_ratio_curve(run_dir)
        ax.semilogy(sims, best, drawstyle="steps-post", label=f"{label} ({sims[-1]} sims, {best[-1]:.2g})")
    ax.set_xlabel("simulations")
    ax.set_ylabel("best $\\Phi/\\Phi_0$")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv)
