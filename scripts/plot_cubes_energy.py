#!/usr/bin/python3
"""Paper Fig. RBcubes: total energy over time of scenes/rigid_cubes_bounce.json (BDF2) for a
sweep of the contact damping k_d, at the scene's h = 1/60 s and at h = 1 ms (3 s each).

Usage: scripts/plot_cubes_energy.py ADDSIM [PNG] [WORKDIR]
ADDSIM is the built `addsim` executable; PNG defaults to docs/validation/rigid_cubes_energy.png,
WORKDIR (simulation outputs) to /tmp/cubes_energy. Energy per cube: ½ m |v|² + ½ I |ω|² + m g z
+ Σ_corners ½ k_n max(−z_corner, 0)² (penalty energy), with v the BDF2 difference and ω the backward
difference of trajectory.npy (centre, rotation vector); cube size, mass and k_n are those of the scene.
"""
import json
import pathlib
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

SCENE = pathlib.Path(__file__).resolve().parent.parent / "scenes" / "rigid_cubes_bounce.json"
KD_SWEEP = [0.0, 5.0, 10.0, 20.0, 40.0, 80.0]
STEPS = [(1.0 / 60.0, 180), (1e-3, 3000)]  # (h in s, steps)
G = 9.81


def run(addsim, kd, dt, steps, out):
    """Simulates the scene with contact.kd = kd, time step dt (s) into `out`; returns (completed, message)."""
    cmd = [addsim, "simulate", str(SCENE), "--out", str(out), "--quiet", "--set", f"contact.kd={kd}",
           "--set", f"dt={dt!r}", "--set", f"steps={steps}"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    return res.returncode == 0, res.stderr.strip()


def total_energy(out, scene, dt):
    """Time (s) and total energy (J) per step 2..n of an output directory with time step dt (s)."""
    q = np.load(pathlib.Path(out) / "trajectory.npy")
    kn = scene["contact"]["kn"]
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
    energy = np.zeros(q.shape[0] - 2)
    for k, body in enumerate(scene["bodies"]):
        m = body["mass"]
        size = np.asarray(body["shape"]["size"])
        inertia = m / 12.0 * np.array([size[1] ** 2 + size[2] ** 2, size[0] ** 2 + size[2] ** 2,
                                       size[0] ** 2 + size[1] ** 2])
        c = q[:, 6 * k:6 * k + 3]
        rot = Rotation.from_rotvec(q[:, 6 * k + 3:6 * k + 6])
        v = (3.0 * c[2:] - 4.0 * c[1:-1] + c[:-2]) / (2.0 * dt)
        omega_body = (rot[1:-1].inv() * rot[2:]).as_rotvec() / dt  # body-frame angular velocity
        depth = np.maximum(-(c[2:, None, 2] + np.einsum("sij,nj->sni", rot[2:].as_matrix(), 0.5 * size * corners)[..., 2]),
                           0.0)
        energy += (0.5 * m * (v ** 2).sum(axis=1) + 0.5 * (inertia * omega_body ** 2).sum(axis=1) + m * G * c[2:, 2]
                   + 0.5 * kn * (depth ** 2).sum(axis=1))
    return np.arange(2, q.shape[0]) * dt, energy


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    png = pathlib.Path(argv[2] if len(argv) > 2 else "docs/validation/rigid_cubes_energy.png")
    work = pathlib.Path(argv[3] if len(argv) > 3 else "/tmp/cubes_energy")
    scene = json.loads(SCENE.read_text())
    fig, axes = plt.subplots(1, len(STEPS), figsize=(11, 4), sharey=True)
    for ax, (dt, steps) in zip(axes, STEPS):
        for kd in KD_SWEEP:
            out = work / f"h_{dt:.4g}_kd_{kd:g}"
            ok, msg = run(argv[1], kd, dt, steps, out)
            if not ok:
                print(f"h = {dt:.4g} s, k_d = {kd:g}: failed: {msg}", file=sys.stderr)
                continue
            t, e = total_energy(out, scene, dt)
            ax.plot(t, e, label=f"$k_d$ = {kd:g} N s/m")
            print(f"h = {dt:.4g} s, k_d = {kd:g}: E(2h) = {e[0]:.3f} J, E(1 s) = {e[int(round(1 / dt)) - 2]:.3f} J, "
                  f"E({t[-1]:.2f} s) = {e[-1]:.3f} J")
        ax.set_xlabel("time [s]")
        ax.set_title(f"rigid_cubes_bounce.json, BDF2, h = {'1/60' if dt > 0.01 else f'{dt * 1e3:g} ms'}")
    axes[0].set_ylabel("total energy [J]")
    axes[-1].legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
