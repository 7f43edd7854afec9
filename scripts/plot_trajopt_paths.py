#!/usr/bin/python3
"""Figures of the Table 2 trajectory optimisations: targets against achieved feature points.

Each run directory is an `addsim simulate` output (trajectory.npy, meta.json): the start
scene's (initial guess / nominal gait) and the optimised scene's (`DIR/optimized_scene.json`
of `addsim optimize`).

    plot_trajopt_paths.py sheet OUT.png TASK START_RUN OPT_RUN
        top views of the sheet at the pose terms' steps (targets as crosses, the sheet's
        particles and the targeted nodes of the start and of the optimum) and a side view
        (y, z) of both handles' paths.
    plot_trajopt_paths.py quadruped OUT.png TASK START_RUN OPT_RUN OPT_SCENE
        the torso's centre x(t), y(t), z(t) for the nominal gait and the optimum, with the
        com_target and com_line targets, and the change of legs 0 and 3's motor targets (optimised
        from OPT_SCENE, the optimize run's optimized_scene.json, minus the task's scene's).
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def load_run(run):
    run = Path(run)
    q = np.load(run / "trajectory.npy")
    meta = json.loads((run / "meta.json").read_text())
    return q, meta


def body_block(q, meta, name):
    for b in meta["bodies"]:
        if b["name"] == name:
            return q[:, b["dof_offset"]:b["dof_offset"] + b["dof_count"]]
    raise SystemExit(f"no body {name!r} in the run")


def resolve_step(step, n):
    return step if step >= 0 else n + 1 + step


def plot_sheet(out, task, start, opt):
    q0, meta0 = load_run(start)
    q1, meta1 = load_run(opt)
    terms = [t for t in task["objective"] if t["type"] == "pose"]
    n = q0.shape[0] - 1
    fig, axes = plt.subplots(1, len(terms) + 1, figsize=(4.2 * (len(terms) + 1), 4.2))
    for ax, term in zip(axes, terms):
        # A window's last step (the target time); a single step as it is.
        step = resolve_step(term["step"] if "step" in term else term["steps"][1], n)
        nodes = term["nodes"]
        targets = np.array(term["targets"])
        for q, meta, colour, label in ((q0, meta0, "0.6", "initial guess"), (q1, meta1, "C0", "optimised")):
            x = body_block(q, meta, term["body"])[step].reshape(-1, 3)
            ax.plot(x[:, 0], x[:, 1], ".", color=colour, ms=4)
            ax.plot(x[nodes, 0], x[nodes, 1], "o", color=colour, mfc="none", ms=9, label=f"{label} (corners)")
        ax.plot(targets[:, 0], targets[:, 1], "x", color="C3", ms=10, mew=2, label="targets")
        ax.set_title(f"top view, step {step} (t = {step * meta0['dt']:.2f} s)")
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_aspect("equal")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="best")
    ax = axes[-1]
    far = terms[0]["nodes"][2]
    for q, meta, style, label in ((q0, meta0, "--", "initial guess"), (q1, meta1, "-", "optimised")):
        h = np.array(meta["handles"][0]["positions"])
        ax.plot(h[:, 1], h[:, 2], style, color="C1", label=f"handle {meta['handles'][0]['name']} ({label})")
        x = body_block(q, meta, terms[0]["body"])[:, 3 * far:3 * far + 3]
        ax.plot(x[:, 1], x[:, 2], style, color="C2", label=f"sheet node {far} ({label})")
    ax.set_title("side view (y, z) over both flips")
    ax.set_xlabel("y [m]")
    ax.set_ylabel("z [m]")
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_quadruped(out, task, start, opt, start_scene, opt_scene):
    q0, meta0 = load_run(start)
    q1, meta1 = load_run(opt)
    dt = meta0["dt"]
    target = next(t for t in task["objective"] if t["type"] == "com_target")
    line = next((t for t in task["objective"] if t["type"] == "com_line"), None)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for k, (ax, axis) in enumerate(zip(axes.flat[:3], "xyz")):
        for q, meta, colour, label in ((q0, meta0, "0.5", "nominal trot"), (q1, meta1, "C0", "optimised")):
            c = body_block(q, meta, target["body"])
            ax.plot(np.arange(c.shape[0]) * dt, c[:, k], color=colour, label=label)
        n = q0.shape[0] - 1
        step = resolve_step(target.get("step", -1), n)
        ax.plot([step * dt], [target["target"][k]], "x", color="C3", ms=10, mew=2, label="com_target")
        if line is not None and k > 0:
            ax.axhline(line["point"][k], color="C3", lw=0.8, ls=":", label="com_line")
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"torso centre {axis} [m]")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    ax = axes[1, 1]
    nominal = {j.get("name"): j for j in start_scene["joints"]}
    optimised = {j.get("name"): j for j in opt_scene["joints"]}
    for c, name in enumerate(("leg0_abd", "leg0_hip", "leg0_knee", "leg3_abd", "leg3_hip", "leg3_knee")):
        d = np.array(optimised[name]["target_angles"]) - np.array(nominal[name]["target_angles"])
        ax.plot(np.arange(d.size) * dt, d, color=f"C{c}", lw=0.9, ls="-" if c < 3 else "--", label=name)
    ax.set_title("motor targets: optimised − nominal")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("change of target [rad]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    args = sys.argv[1:]
    if not ((len(args) == 5 and args[0] == "sheet") or (len(args) == 6 and args[0] == "quadruped")):
        raise SystemExit(__doc__)
    kind, out, task_file, start, opt = args[:5]
    task = json.loads(Path(task_file).read_text())
    if kind == "sheet":
        plot_sheet(out, task, start, opt)
    else:
        start_scene = json.loads((Path(task_file).parent / task["scene"]).read_text())
        opt_scene = json.loads(Path(args[5]).read_text())
        plot_quadruped(out, task, start, opt, start_scene, opt_scene)


if __name__ == "__main__":
    main()
