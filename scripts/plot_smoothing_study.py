#!/usr/bin/env python3
"""Plots of the contact-smoothing study (docs/validation/optimization.md).

  plot_smoothing_study.py lines OUT.png --title T --xlabel X CSV:LABEL [CSV:LABEL ...]
      Φ, the adjoint dΦ/dp and the contact events (Σ_steps points in contact) against the
      line parameter, one curve per CSV written by `smoothing_study line`.
  plot_smoothing_study.py bfgs OUT.png --title T CSV:LABEL [CSV:LABEL ...]
      Distance to the target √(2Φ) against simulations for `smoothing_study bfgs` runs.
  plot_smoothing_study.py signs CSV [CSV ...]
      Per file: sign changes of dΦ/dp over the whole line and the most within any window of
      width 0.05 (parameter units), kinks (steps of dΦ/dp between neighbouring samples above
      5× the median step) and the largest step, and how often the contact events change.
"""
import argparse
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return rows


def floats(rows, key):
    return [float(r[key]) if r[key] not in ("", "nan") else math.nan for r in rows]


def sign_changes(xs, ds, window=0.05):
    pts = [(x, d) for x, d in zip(xs, ds) if math.isfinite(d) and d != 0.0]
    changes = [0.5 * (a[0] + b[0]) for a, b in zip(pts, pts[1:]) if (a[1] > 0) != (b[1] > 0)]
    best = 0
    for c in changes:
        best = max(best, sum(1 for e in changes if c <= e <= c + window))
    return len(changes), best


def jumps(ds):
    """Kinks: steps of dΦ/dp between neighbouring samples above 5× the median step; and the largest step."""
    steps = [abs(b - a) for a, b in zip(ds, ds[1:]) if math.isfinite(a) and math.isfinite(b)]
    if not steps:
        return 0, 0.0
    med = sorted(steps)[len(steps) // 2]
    return sum(1 for s in steps if s > 5 * max(med, 1e-300)), max(steps)


def lines(args):
    fig, ax = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for spec in args.files:
        path, label = spec.rsplit(":", 1)
        rows = read(path)
        x, phi, d = floats(rows, "x"), floats(rows, "phi"), floats(rows, "dphi")
        ev = floats(rows, "contacts")
        ax[0].plot(x, phi, label=label, lw=1)
        ax[1].plot(x, d, label=label, lw=1)
        ax[2].plot(x, ev, label=label, lw=1)
    ax[0].set_ylabel("Φ (m²)")
    ax[1].set_ylabel("dΦ/dp (adjoint)")
    ax[1].axhline(0.0, color="k", lw=0.5)
    ax[2].set_ylabel("Σ steps: points in contact")
    ax[2].set_xlabel(args.xlabel)
    ax[0].set_title(args.title)
    ax[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


def bfgs(args):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for spec in args.files:
        path, label = spec.rsplit(":", 1)
        rows = read(path)
        sims = floats(rows, "sims")
        best, ys = math.inf, []
        for r in rows:
            phi = float(r["phi"])
            if math.isfinite(phi):
                best = min(best, math.sqrt(2 * phi))
            ys.append(best)
        ax.semilogy(sims, ys, label=label, lw=1.2)
    ax.axhline(1e-3, color="k", lw=0.6, ls="--")
    ax.set_xlabel("simulations")
    ax.set_ylabel("best distance to target √(2Φ) (m)")
    ax.set_title(args.title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


def signs(args):
    for path in args.files:
        rows = read(path)
        x, d, ev = floats(rows, "x"), floats(rows, "dphi"), floats(rows, "contacts")
        total, window = sign_changes(x, d, args.window)
        ev_changes = sum(1 for a, b in zip(ev, ev[1:]) if a != b)
        failed = sum(1 for r in rows if r["completed"] != "1")
        kinks, largest = jumps(d)
        steps = [abs(b - a) for a, b in zip(d, d[1:])]
        med = sorted(steps)[len(steps) // 2]
        at_event = sum(1 for k, st in enumerate(steps) if st > 5 * med and ev[k] != ev[k + 1])
        print(f"{path}: sign changes {total}, max in {args.window} window {window}, "
              f"kinks {kinks} ({at_event} where the contact events change), largest step of dPhi/dp {largest:.3g}, "
              f"event changes {ev_changes}/{len(rows) - 1}, failed {failed}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("lines")
    a.add_argument("out")
    a.add_argument("--title", default="")
    a.add_argument("--xlabel", default="p")
    a.add_argument("files", nargs="+")
    b = sub.add_parser("bfgs")
    b.add_argument("out")
    b.add_argument("--title", default="")
    b.add_argument("files", nargs="+")
    c = sub.add_parser("signs")
    c.add_argument("--window", type=float, default=0.05)
    c.add_argument("files", nargs="+")
    args = ap.parse_args()
    {"lines": lines, "bfgs": bfgs, "signs": signs}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
