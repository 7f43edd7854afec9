#!/usr/bin/python3
"""Runs `addsim optimize` on a task several times from starts perturbed by round-off-sized
noise and prints how far the optimum's pose-term nodes end from their targets in each run.

A trajectory optimisation whose result changes a lot when the start moves by 1e-9 m is not
solved, it is a draw: this script measures that spread (docs/validation/trajectory-optimization.md,
sheet flip). Run 0 is the task as it is; run k ≥ 1 adds ±eps (random signs, seed k) to every
handle position of the task's scene. Each run writes OUT/run<k>/{scene.json,task.json,opt/}.

Per run and per `pose` objective term (its `step`, or the last step of its `steps` window) the
distance of every listed node from its target is printed in mm, with the iterations,
simulations, t_opt (result.json `seconds`) and the CPU time of the whole command.

Usage: scripts/perturbed_runs.py TASK OUT [--runs N] [--eps M] [--addsim PATH] [-- ARGS...]
ARGS go to `addsim optimize` (e.g. --set scene.contact.smoothing=0.005).
"""

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def perturbed_task(task_file, out, seed, eps):
    """Copies the task and its scene into OUT with the scene's handle paths moved by ±eps."""
    task = json.loads(task_file.read_text())
    scene = json.loads((task_file.parent / task["scene"]).read_text())
    if eps > 0.0:
        rng = np.random.default_rng(seed)
        for handle in scene.get("handles", []):
            rows = np.asarray(handle["positions"], dtype=float)
            handle["positions"] = (rows + eps * rng.choice([-1.0, 1.0], size=rows.shape)).tolist()
    out.mkdir(parents=True, exist_ok=True)
    (out / "scene.json").write_text(json.dumps(scene))
    task["scene"] = "scene.json"
    (out / "task.json").write_text(json.dumps(task))
    return task


def pose_errors(task, opt):
    """mm per pose term: (step, [distance of each node from its target])."""
    q = np.load(opt / "trajectory.npy")
    meta = json.loads((opt / "meta.json").read_text())
    bodies = meta["bodies"]
    rows = []
    for term in task["objective"]:
        if term["type"] != "pose":
            continue
        body = term.get("body", 0)
        b = next(x for x in bodies if x["name"] == body) if isinstance(body, str) else bodies[body]
        step = term["step"] if "step" in term else term.get("steps", [-1, -1])[1]
        x = q[step][b["dof_offset"]:b["dof_offset"] + b["dof_count"]].reshape(-1, 3)
        err = np.linalg.norm(x[term["nodes"]] - np.asarray(term["targets"]), axis=1) * 1e3
        rows.append((step if step >= 0 else len(q) - 1, err))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=4, help="run 0 unperturbed, then runs − 1 perturbed ones")
    parser.add_argument("--eps", type=float, default=1e-9, help="perturbation of each handle coordinate, m")
    parser.add_argument("--addsim", default=str(ROOT / "build" / "src" / "addsim" / "cli" / "addsim"))
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    a = parser.parse_args(argv[:split])
    extra = argv[split + 1:]
    worst = {}
    for k in range(a.runs):
        run = a.out / f"run{k}"
        task = perturbed_task(a.task.resolve(), run, k, a.eps if k > 0 else 0.0)
        opt = run / "opt"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([a.addsim, "optimize", str(run / "task.json"), "--out", str(opt), "--quiet", *extra],
                              capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            print(f"run {k}: addsim optimize failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
            continue
        result = json.loads((opt / "result.json").read_text())
        parts = []
        for step, err in pose_errors(task, opt):
            parts.append(f"step {step}: " + " ".join(f"{e:.2f}" for e in err))
            worst.setdefault(step, []).append(err.max())
        print(f"run {k}: {result['iterations']} iterations, {result['simulations']} simulations, "
              f"t_opt {result['seconds']:.2f} s, CPU {cpu:.1f} s | mm from target, " + " | ".join(parts), flush=True)
    for step, values in sorted(worst.items()):
        v = np.array(values)
        print(f"step {step}: worst node per run, mm: min {v.min():.2f}, median {np.median(v):.2f}, max {v.max():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
