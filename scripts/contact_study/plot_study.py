"""Plots of the contact-model study (paper Fig. CylinderDrop b, c) from contact_study's CSVs.

Usage: /usr/bin/python3 plot_study.py <out_dir>
Writes tangential_speed.png and convergence.png into <out_dir>.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODELS = [("linear", "tab:green"), ("tanh", "tab:blue"), ("hybrid", "goldenrod"), ("sqp", "tab:red")]


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
        for step, style in ((60, "-"), (150, "--")):
            path = os.path.join(out, "%s_convergence_%d.csv" % (name, step))
            if not os.path.exists(path):
                continue
            rows = read(path)
            ax.semilogy([int(r["iteration"]) for r in rows], [max(float(r["residual"]), 1e-16) for r in rows],
                        style, color=color, label="%s, step %d" % (name, step))
    ax.set_xlabel("solver iteration (residual evaluations)")
    ax.set_ylabel("residual norm")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=120)


if __name__ == "__main__":
    main(sys.argv[1])
