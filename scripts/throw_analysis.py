#!/usr/bin/python3
"""Landscape probes for the throwing tasks (docs/validation/throwing.md), through the Python
module (build it with `cmake --build build --target addsim_python addsim_python_files`;
run with PYTHONPATH=build/python).

  throw_analysis.py scan TASK OUT.csv A B S0 S1 N [--set PATH=JSON ...]
      Φ and the adjoint dΦ/ds along p(s) = A + s (B − A), s in [S0, S1], N points. A and B
      are JSON lists of the task's selected parameters (in its order). CSV: s, phi, dphids,
      dist = √(2Φ).
  throw_analysis.py fold TASK RUN_DIR STEP [STEP ...] [--set PATH=JSON ...]
      At the best point of an `addsim optimize` run: the Jacobian of the centre of mass
      (x, z) at each STEP with respect to (v_x, v_z, ω_y) (adjoint of com_coordinate terms),
      its singular values, and at the task's own window the residual r and Jᵀr. A stationary
      point with r ≠ 0 needs σ₂/σ₁ → 0 there: a fold of the endpoint map.

Every evaluation is one forward run (+ adjoint) on one thread.
"""
import csv
import json
import sys

import numpy as np

try:
    import addsim
except ImportError:
    sys.exit("throw_analysis.py: the addsim Python module is not importable; build it "
             "(cmake --build build --target addsim_python addsim_python_files) and set PYTHONPATH=build/python")


def split_sets(args):
    rest, sets = [], {}
    i = 0
    while i < len(args):
        if args[i] == "--set":
            path, _, value = args[i + 1].partition("=")
            sets[path] = json.loads(value)
            i += 2
        else:
            rest.append(args[i])
            i += 1
    return rest, sets


def scan(args):
    (task_file, out, a, b, s0, s1, n), sets = split_sets(args)
    task = addsim.Task.load(task_file, sets)
    a, b = np.array(json.loads(a), float), np.array(json.loads(b), float)
    d = b - a
    ss = np.linspace(float(s0), float(s1), int(n))
    res = task.batch(np.array([task.params_of(a + s * d) for s in ss]), gradients=True, threads=1)
    idx = np.asarray(task.selection.indices, dtype=int)
    with open(out, "w") as f:
        f.write("s,phi,dphids,dist\n")
        for k, s in enumerate(ss):
            f.write(f"{s},{res.phi[k]},{res.dphi_dp[k][idx] @ d},{np.sqrt(2 * res.phi[k])}\n")
    print(f"{out}: {len(ss)} points, min dist {np.nanmin(np.sqrt(2 * res.phi)):.4g} m")


def best_point(run_dir):
    with open(f"{run_dir}/iterations.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    best = min(rows, key=lambda r: float(r["phi"]))
    return np.array([float(best[k]) for k in rows[0] if k.startswith("bodies.")]), best


def fold(args):
    (task_file, run_dir, *steps), sets = split_sets(args)
    x, best = best_point(run_dir)
    base = addsim.Task.load(task_file, sets)
    names = list(base.selection.names)
    cols = [names.index(n) for n in ("bodies.0.velocity.0.0", "bodies.0.velocity.0.2",
                                     "bodies.0.angular_velocity.0.1")]
    p = base.params_of(x)
    print(f"best of {run_dir}: simulation {best['sims']}, phi {float(best['phi']):.4e}, x = {np.round(x, 4).tolist()}")

    def row(step, axis):
        term = {"type": "com_coordinate", "body": 0, "axis": axis, "step": int(step)}
        t = addsim.Task.load(task_file, dict(sets, objective=[term]))
        r = t.batch(p[None, :], gradients=True, threads=1)
        return r.phi[0], t.selection.gather(r.dphi_dp[0])

    for step in steps:
        (cx, gx), (cz, gz) = row(step, [1, 0, 0]), row(step, [0, 0, 1])
        J = np.array([gx[cols], gz[cols]])
        sv = np.linalg.svd(J, compute_uv=False)
        print(f"step {int(step):4d}: c = ({cx:.4f}, {cz:.4f})  d(x,z)/d(vx,vz,wy) = {np.round(J, 4).tolist()}  "
              f"sigma = {np.round(sv, 4).tolist()}  sigma2/sigma1 = {sv[1] / sv[0]:.2e}")
        obj = base_objective(task_file)
        if obj.get("type") == "com_target" and int(step) in (-1, base.scene.steps):
            full_J = np.array([gx, row(step, [0, 1, 0])[1], gz])
            c = np.array([cx, row(step, [0, 1, 0])[0], cz])
            r = c - np.array(obj["target"], float)
            print(f"  residual r = {np.round(r, 5).tolist()} (|r| = {np.linalg.norm(r):.4f} m), "
                  f"J^T r = {np.array2string(full_J.T @ r, precision=2)}")


def base_objective(task_file):
    with open(task_file) as f:
        return json.load(f)["objective"][0]


def main(argv):
    if len(argv) < 2 or argv[1] not in ("scan", "fold"):
        sys.exit(__doc__)
    {"scan": scan, "fold": fold}[argv[1]](argv[2:])


if __name__ == "__main__":
    main(sys.argv)
