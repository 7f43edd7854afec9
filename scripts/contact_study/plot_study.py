"""Plots of a contact-model study (paper Fig. CylinderDrop b, c; Fig. ToriBall) from the CSVs
of build/benchmarks/contact_study.

Usage: /usr/bin/python3 plot_study.py <out_dir>
Writes tangential_speed.png (mean tangential speed of the contact points over time, per
model) and convergence.png (residual norm per evaluation of every recorded step) into
<out_dir>.
"""
import csv
import glob
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODELS = [("linear", "tab:green"), ("tanh", "tab:blue"), ("hybrid", "goldenrod"), ("sqp", "tab:red")]
STYLES = ["-", "--", ":", "-."]


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main(out):
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, color in MODELS:
        path = os.path.join(out, name + "_series.csv")
        if not os.path.exists(path):
            continue
        rows = read(path)
        ax.semilogy([float(r["time"]) for r in rows],
                    [max(float(r["mean_tangential_speed"]), 1e-12) for r in rows], color=color, label=name)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("mean tangential speed (m/s)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "tangential_speed.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, color in MODELS:
        files = glob.glob(os.path.join(out, name + "_convergence_*.csv"))
        steps = sorted(int(re.search(r"_(\d+)\.csv$", f).group(1)) for f in files)
        for k, step in enumerate(steps):
            rows = read(os.path.join(out, "%s_convergence_%d.csv" % (name, step)))
            ax.semilogy([int(r["evaluation"]) for r in rows], [max(float(r["residual"]), 1e-16) for r in rows],
                        STYLES[k % len(STYLES)], color=color, label="%s, step %d" % (name, step))
    ax.set_xlabel("residual evaluation")
    ax.set_ylabel("residual norm (N)")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=120)


if __name__ == "__main__":
    main(sys.argv[1])
