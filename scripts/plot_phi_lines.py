#!/usr/bin/python3
"""Φ and its derivative along a line in parameter space, one curve per CSV.

Usage: /usr/bin/python3 scripts/plot_phi_lines.py [--delta] OUT.png "TITLE" "XLABEL" CSV:X:PHI:DPHI:LABEL [...]

X, PHI and DPHI name the CSV columns of the line coordinate, Φ and dΦ/d(line coordinate)
(an `addsim sweep` sweep.csv or a `scripts/throw_analysis.py scan` CSV); points are joined
in file order, failed points (nan) leave gaps. Top: Φ (log scale), or with --delta Φ − min Φ
of each curve on a linear scale (for lines over a tiny range); bottom: the derivative. A PHI
column other than `phi` (e.g. `dist` = √(2Φ)) is drawn on a linear scale under its own name.
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    delta = len(argv) > 1 and argv[1] == "--delta"
    if delta:
        argv = argv[:1] + argv[2:]
    if len(argv) < 5:
        sys.exit(__doc__)
    out, title, xlabel = argv[1:4]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.4), sharex=True)
    for spec in argv[4:]:
        path, xcol, phicol, dcol, label = spec.split(":", 4)
        with open(path, newline="") as f:
            rows = sorted(csv.DictReader(f), key=lambda r: float(r[xcol]))
        xs = [float(r[xcol]) for r in rows]
        phi = [float(r[phicol]) if r[phicol] not in ("", "nan") else math.nan for r in rows]
        d = [float(r[dcol]) if r[dcol] not in ("", "nan") else math.nan for r in rows]
        if phicol != "phi":
            top.plot(xs, phi, ".-", label=label)
        elif delta:
            low = min(v for v in phi if math.isfinite(v))
            top.plot(xs, [v - low for v in phi], ".-", label=f"{label} (min $\\Phi$ = {low:.6g})")
        else:
            top.semilogy(xs, phi, ".-", label=label)
        bottom.plot(xs, d, ".-", label=label)
    bottom.axhline(0.0, color="k", lw=0.8)
    top.set_ylabel(phicol if phicol != "phi" else "$\\Phi - \\min\\Phi$" if delta else "$\\Phi$")
    bottom.set_ylabel("adjoint $d\\Phi/ds$")
    bottom.set_xlabel(xlabel)
    top.set_title(title)
    top.grid(True, which="both", alpha=0.3)
    bottom.grid(True, alpha=0.3)
    top.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv)
