#!/usr/bin/env python3
"""Material and initial-condition estimation on synthetic data with noise (paper §6, Fig.
noiseResults, and the Kinect point-cloud experiment); docs/validation/noise-study.md.

For each contact model, a ground-truth run of scenes/soft_ball_throw.json (E = 2e4 Pa,
c_f = 0.4, thrown at v = (2, 0, 1) m/s with spin (0, -15, 0) rad/s) gives
  - six surface-node markers (the extreme nodes along +-x, +-y, +-z at t = 0, as the
    paper's "two along each coordinate axis"), every second step, or
  - a synthetic depth-camera point cloud (random points on the camera-facing half of the
    surface, every third step: 33 Hz against the Kinect's 30 Hz; no correspondences),
with uniform noise U(-a, a) per coordinate (a = 0, 1, 2, 5 mm; numpy seed 14 + 10 a, so every
contact model sees the same noise). The fit starts 10x softer (E = 2e3 Pa), at c_f = 0.2 and
at perturbed initial conditions (x0 off by (30, -20, 20) mm, v0 = (1.7, 0.2, 1.2) m/s, spin
(0, -10, 0) rad/s), and runs the paper's three-phase continuation:
  1. ballistic: initial position, velocity (and spin, for markers) against the data before
     the first contact (steps <= 34; contact starts at step 37),
  2. bounce: E and c_f with the initial conditions fixed, over the first bounce
     (steps <= 55),
  3. all: every parameter over the whole horizon (70 steps by default).
The stages run as three chained `addsim optimize` tasks (task_<stage>.json, each starting
from the best parameters of the one before, written into its `set`; each stage has its own
data file since a stage's horizon must contain every data row), or with --staged as one task
(task.json) with three `stages` that swap the data file with `objective_set` {"0.data": ...}
(docs/task-format.md; needs an addsim with `objective_set`). Method: Gauss-Newton /
Levenberg-Marquardt with direct sensitivities (the paper uses ADAM + L-BFGS; GN needs far
fewer simulations on these sum-of-squares objectives).

Usage:
  /usr/bin/python3 scripts/noise_study.py run --out DIR [--addsim BIN] [--jobs 2]
      [--runs markers:tanh:0,cloud:tanh:2,...] [--steps 70] [--sims 6,10,16]
      [--method gauss_newton] [--staged]
  /usr/bin/python3 scripts/noise_study.py report --out DIR [--figure PNG] [--table MD]

`run` writes DIR/<kind>_<model>_<noise>mm/ (task_<stage>.json and task.json, data/*.csv, the
`addsim optimize` outputs opt_<stage>/ or opt/, errors.json) and skips runs whose errors.json exists; `report` prints the
markdown table of every finished run and draws the figure.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENE = ROOT / "scenes" / "soft_ball_throw.json"
TRUTH = {"E": 2e4, "cf": 0.4, "position": [0.0, 0.0, 0.4], "velocity": [2.0, 0.0, 1.0],
         "angular_velocity": [0.0, -15.0, 0.0]}
START = {"E": 2e3, "cf": 0.2, "position": [0.03, -0.02, 0.42], "velocity": [1.7, 0.2, 1.2],
         "angular_velocity": [0.0, -10.0, 0.0]}
BALLISTIC_LAST = 34  # last step before the first contact (contact starts at step 37)
BOUNCE_LAST = 55  # the first bounce (contact at steps 37-42) and the rise after it
SMOOTHING = 0.005  # C1 normal-penalty blend (m), docs/contact.md; same for truth and fit
MARKER_EVERY = 2
CLOUD_EVERY = 3
CLOUD_POINTS = 40
BOUNDS = {"bodies.ball.material.youngs_modulus": {"path": "bodies.ball.material.youngs_modulus",
                                                  "log": True, "lower": 500, "upper": 1e6},
          "obstacles.floor.friction": {"path": "obstacles.floor.friction", "lower": 0.0, "upper": 2.0}}
CAMERA = np.array([0.8, -2.0, 0.6])  # synthetic depth camera, looking at the throw from -y


def addsim_run(binary, args, log):
    with open(log, "w") as f:
        subprocess.run(["nice", "-n", "5", binary, *args], stdout=f, stderr=subprocess.STDOUT,
                       check=True)


def truth_run(binary, out, model, steps):
    d = out / ("truth_" + model)
    if not (d / "trajectory.npy").exists():
        d.mkdir(parents=True, exist_ok=True)
        addsim_run(binary, ["simulate", str(SCENE), "--set", 'contact.model="%s"' % model,
                            "--set", "contact.smoothing=%g" % SMOOTHING, "--set", "steps=%d" % steps,
                            "--out", str(d), "--quiet"], out / ("truth_%s.log" % model))
    q = np.load(d / "trajectory.npy")
    meta = json.loads((d / "meta.json").read_text())
    geometry = meta["bodies"][0]["geometry"]
    return q.reshape(q.shape[0], -1, 3), np.array(geometry["surface_triangles"])


def marker_nodes(x0):
    nodes = []
    for axis in range(3):
        for pick in (np.argmax, np.argmin):
            k = int(pick(x0[:, axis]))
            if k not in nodes:
                nodes.append(k)
    return nodes


def noise(rng, shape, a_mm):
    return rng.uniform(-a_mm * 1e-3, a_mm * 1e-3, size=shape)


def write_markers(path, x, nodes, a_mm, seed, last):
    rng = np.random.default_rng(seed)
    rows = ["step,marker,x,y,z"]
    for i in range(MARKER_EVERY, x.shape[0], MARKER_EVERY):
        d = x[i, nodes] + noise(rng, (len(nodes), 3), a_mm)  # drawn for every frame: same noise per frame in every file
        if i > last:
            continue
        for m in range(len(nodes)):
            rows.append("%d,%d,%.17g,%.17g,%.17g" % (i, m, *d[m]))
    path.write_text("\n".join(rows) + "\n")


def write_cloud(path, x, tris, a_mm, seed, last):
    rng = np.random.default_rng(seed)
    rows = ["step,x,y,z"]
    for i in range(CLOUD_EVERY, x.shape[0], CLOUD_EVERY):
        a, b, c = x[i, tris[:, 0]], x[i, tris[:, 1]], x[i, tris[:, 2]]
        n = np.cross(b - a, c - a)
        area = 0.5 * np.linalg.norm(n, axis=1)
        centre = (a + b + c) / 3
        visible = np.einsum("ij,ij->i", n, CAMERA - centre) > 0
        p = np.where(visible, area, 0.0)
        t = rng.choice(len(tris), size=CLOUD_POINTS, p=p / p.sum())
        r1, r2 = rng.random(CLOUD_POINTS), rng.random(CLOUD_POINTS)
        s = np.sqrt(r1)
        y = ((1 - s)[:, None] * a[t] + (s * (1 - r2))[:, None] * b[t] + (s * r2)[:, None] * c[t])
        y += noise(rng, y.shape, a_mm)
        if i > last:
            continue
        for v in y:
            rows.append("%d,%.17g,%.17g,%.17g" % (i, *v))
    path.write_text("\n".join(rows) + "\n")


def make_task(d, kind, model, a_mm, x, tris, steps, sims, method, seed, known_spin=None):
    data = d / "data"
    data.mkdir(parents=True, exist_ok=True)
    files = {}
    for stage, last in (("ballistic", BALLISTIC_LAST), ("bounce", BOUNCE_LAST), ("all", steps)):
        f = data / ("%s_%s.csv" % (kind, stage))
        if kind == "markers":
            write_markers(f, x, marker_nodes(x[0]), a_mm, seed, last)
        else:
            write_cloud(f, x, tris, a_mm, seed, last)
        files[stage] = "data/" + f.name
    if kind == "markers":
        term = {"type": "markers", "body": "ball",
                "markers": [{"node": k} for k in marker_nodes(x[0])], "data": files["all"]}
        initial = ["bodies.ball.position", "bodies.ball.velocity", "bodies.ball.angular_velocity"]
        ballistic = initial
    else:
        term = {"type": "point_cloud", "body": "ball", "data": files["all"]}
        initial = ["bodies.ball.position", "bodies.ball.velocity", "bodies.ball.angular_velocity"]
        if known_spin == "given":  # diagnosis: the spin given at its true value, not estimated
            initial = initial[:2]
        elif known_spin == "axis":  # the spin axis known (y, the throw's), its rate estimated
            initial = initial[:2] + ["bodies.ball.angular_velocity.0.1"]
        ballistic = initial[:2]  # a sphere's cloud carries no spin before contact
    material = list(BOUNDS)
    # The cloud's spin shows only through the bounce (friction), so it joins the material
    # there, as the paper's Kinect fit lets the initial conditions change once contact counts.
    bounce = material if kind == "markers" else material + initial[2:]
    stages = [("ballistic", ballistic, BALLISTIC_LAST), ("bounce", bounce, BOUNCE_LAST),
              ("all", initial + material, steps)]
    # More budgets than three: further "all" stages, each restarting from the best point
    # (Gauss-Newton's damping starts afresh).
    stages += [("all%d" % (k + 2), initial + material, steps) for k in range(len(sims) - 3)]
    files.update({name: files["all"] for name, _, _ in stages[3:]})
    for k, (stage, names, last) in enumerate(stages):
        task = {
            "name": "noise_%s_%s_%gmm_%s" % (kind, model, a_mm, stage),
            "description": "scripts/noise_study.py: %s data, %s contact, %g mm uniform noise, start 10x "
            "softer; stage %d of %d (%s)" % (kind, model, a_mm, k + 1, len(stages), stage),
            "scene": os.path.relpath(SCENE, d),
            "set": {"contact.model": model, "contact.smoothing": SMOOTHING, "steps": last,
                    "bodies.ball.material.youngs_modulus": START["E"],
                    "obstacles.floor.friction": START["cf"],
                    "bodies.ball.position": START["position"],
                    "bodies.ball.velocity": START["velocity"],
                    "bodies.ball.angular_velocity": TRUTH["angular_velocity"] if known_spin == "given"
                    else START["angular_velocity"]},
            "parameters": [BOUNDS.get(p, {"path": p}) for p in names],
            "objective": [dict(term, data=files[stage])],
            "optimize": {"method": method, "max_sims": sims[k]},
        }
        (d / ("task_%s.json" % stage)).write_text(json.dumps(task, indent=2) + "\n")
    task["name"] = "noise_%s_%s_%gmm" % (kind, model, a_mm)
    task["description"] = task["description"].split("; stage")[0] + "; %d stages" % len(stages)
    task["parameters"] = [BOUNDS.get(p, {"path": p}) for p in initial + material]
    task["set"]["steps"] = steps
    task["stages"] = [
        {"name": stage, "parameters": names, "steps": last,
         "objective_set": {"0.data": files[stage]}, "optimize": {"max_sims": sims[k]}}
        for k, (stage, names, last) in enumerate(stages)]
    (d / "task.json").write_text(json.dumps(task, indent=2) + "\n")


def by_field(params):
    """Best parameters by scene field: position/velocity/angular_velocity as 3-vectors, E, cf
    (names as result.json writes them: `<path>.0.<col>` for a row entry, `<path>` for a scalar)."""
    out = {}
    for name, value in params.items():
        parts = name.split(".")
        if parts[-1] == "youngs_modulus":
            out["E"] = value
        elif parts[-1] == "friction":
            out["cf"] = value
        else:
            field = parts[-3]
            out.setdefault(field, [None, None, None])[int(parts[-1])] = value
    return out


def as_scene_set(params):
    f = by_field(params)
    keys = {"E": "bodies.ball.material.youngs_modulus", "cf": "obstacles.floor.friction",
            "position": "bodies.ball.position", "velocity": "bodies.ball.velocity",
            "angular_velocity": "bodies.ball.angular_velocity"}
    for k, v in f.items():  # components not estimated (--known-spin axis) keep the start's
        if isinstance(v, list):
            f[k] = [START[k][i] if x is None else x for i, x in enumerate(v)]
    return {keys[k]: v for k, v in f.items()}


def stage_names(n):
    return ["ballistic", "bounce", "all"] + ["all%d" % (k + 2) for k in range(n - 3)]


def errors(results):
    final = results[-1]
    e = by_field(final["parameters"])
    e.setdefault("angular_velocity", TRUTH["angular_velocity"])  # given (--known-spin given)
    # --known-spin axis: the components not estimated are the start's (0)
    e["angular_velocity"] = [0.0 if v is None else v for v in e["angular_velocity"]]
    e["rel_E"] = abs(e["E"] - TRUTH["E"]) / TRUTH["E"]
    e["rel_cf"] = abs(e["cf"] - TRUTH["cf"]) / TRUTH["cf"]
    for k in ("position", "velocity", "angular_velocity"):
        e["abs_" + k] = float(np.linalg.norm(np.array(e[k]) - TRUTH[k]))
    e["phi"], e["phi0"] = final["phi"], final["phi0"]
    e["simulations"] = sum(r["simulations"] for r in results)
    e["failed_simulations"] = sum(r["failed_simulations"] for r in results)
    e["seconds"] = sum(r["seconds"] for r in results)
    if len(results) == 1:
        e["stages"] = final["stages"]
    else:
        e["stages"] = [{"name": n, "simulations": r["simulations"], "phi_ratio": r["phi_ratio"],
                        "stop_reason": r["stop_reason"], "parameters": by_field(r["parameters"])}
                       for n, r in zip(stage_names(len(results)), results)]
    return e


def one_run(args, kind, model, a_mm):
    out = pathlib.Path(args.out).resolve()
    d = out / ("%s_%s_%gmm" % (kind, model, a_mm))
    if (d / "errors.json").exists():
        return d
    x, tris = truth_run(args.addsim, out, model, args.steps)
    d.mkdir(parents=True, exist_ok=True)
    sims = [int(s) for s in args.sims.split(",")]
    make_task(d, kind, model, a_mm, x, tris, args.steps, sims, args.method, args.seed + int(10 * a_mm),
              args.known_spin)
    if args.staged:
        opt = d / "opt"
        resume = ["--resume"] if (opt / "checkpoint.json").exists() else []
        addsim_run(args.addsim, ["optimize", str(d / "task.json"), "--out", str(opt), "--quiet", *resume],
                   d / "optimize.log")
        result = json.loads((opt / "result.json").read_text())
        (d / "errors.json").write_text(json.dumps(errors([result]), indent=2) + "\n")
        return d
    carried = {}
    results = []
    for stage in stage_names(len(sims)):
        task_file = d / ("task_%s.json" % stage)
        task = json.loads(task_file.read_text())
        task["set"].update(carried)
        task_file.write_text(json.dumps(task, indent=2) + "\n")
        opt = d / ("opt_" + stage)
        if not (opt / "result.json").exists():
            resume = ["--resume"] if (opt / "checkpoint.json").exists() else []
            addsim_run(args.addsim, ["optimize", str(task_file), "--out", str(opt), "--quiet", *resume],
                       d / ("optimize_%s.log" % stage))
        results.append(json.loads((opt / "result.json").read_text()))
        carried.update(as_scene_set(results[-1]["parameters"]))
    (d / "errors.json").write_text(json.dumps(errors(results), indent=2) + "\n")
    return d


def run(args):
    global SMOOTHING
    SMOOTHING = args.smoothing
    runs = []
    for item in args.runs.split(","):
        kind, model, a = item.split(":")
        runs.append((kind, model, float(a)))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # Truth runs first (serially: runs of one model share it).
    for model in dict.fromkeys(m for _, m, _ in runs):
        truth_run(args.addsim, out.resolve(), model, args.steps)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(one_run, args, *r): r for r in runs}
        for f in concurrent.futures.as_completed(futures):
            r = futures[f]
            try:
                print("done", f.result(), flush=True)
            except subprocess.CalledProcessError as e:
                print("failed", r, e, flush=True)


def collect(out):
    rows = []
    for f in sorted(pathlib.Path(out).glob("*_*_*mm/errors.json")):
        kind, model, a = f.parent.name.split("_")
        rows.append((kind, model, float(a[:-2]), json.loads(f.read_text())))
    order = {"linear": 0, "tanh": 1, "hybrid": 2}
    rows.sort(key=lambda r: (r[0] != "markers", order.get(r[1], 3), r[2]))
    return rows


def report(args):
    rows = collect(args.out)
    lines = ["| data | contact | noise (mm) | E found (Pa) | rel. err. E | c_f found | rel. err. c_f "
             "| pos. err. (mm) | vel. err. (m/s) | spin err. (rad/s) | Φ/Φ₀ | sims (failed) | wall (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for kind, model, a, e in rows:
        lines.append("| %s | %s | %g | %.0f | %.2g %% | %.4f | %.2g %% | %.2g | %.2g | %.2g | %.1e | %d (%d) | %.0f |" % (
            kind, model, a, e["E"], 100 * e["rel_E"], e["cf"], 100 * e["rel_cf"],
            1e3 * e["abs_position"], e["abs_velocity"], e["abs_angular_velocity"],
            e["phi"] / e["phi0"] if e["phi0"] else float("nan"), e["simulations"],
            e["failed_simulations"], e["seconds"]))
    table = "\n".join(lines) + "\n"
    print(table)
    if args.table:
        pathlib.Path(args.table).write_text(table)
    if args.figure:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        quantities = [("rel_E", 100, "rel. error E (%)"), ("rel_cf", 100, "rel. error c_f (%)"),
                      ("abs_position", 1e3, "abs. error x0 (mm)"),
                      ("abs_velocity", 1.0, "abs. error v0 (m/s)")]
        kinds = [k for k in ("markers", "cloud") if any(r[0] == k for r in rows)]
        fig, axes = plt.subplots(len(kinds), 4, figsize=(14, 3.2 * len(kinds)), squeeze=False)
        colours = {"linear": "tab:green", "tanh": "tab:blue", "hybrid": "goldenrod"}
        levels = [0, 1, 2, 5]
        for r, kind in enumerate(kinds):
            for c, (key, scale, label) in enumerate(quantities):
                ax = axes[r][c]
                for j, model in enumerate(("linear", "tanh", "hybrid")):
                    pts = [(levels.index(a), scale * e[key]) for k, m, a, e in rows
                           if k == kind and m == model and a in levels]
                    if pts:
                        xs, ys = zip(*pts)
                        ax.bar(np.array(xs) + (j - 1) * 0.27, ys, 0.27, color=colours[model],
                               label=model)
                ax.set_xticks(range(len(levels)), ["%g" % a for a in levels])
                ax.set_xlabel("noise (mm)")
                ax.set_title("%s: %s" % (kind, label), fontsize=9)
                ax.set_yscale("log")
                if c == 0:
                    ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.figure, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--addsim", default=str(ROOT / "build" / "src" / "addsim" / "cli" / "addsim"))
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--runs", default="markers:tanh:0,markers:linear:0,markers:tanh:2,markers:linear:2,"
                   "cloud:tanh:0,cloud:tanh:2,markers:hybrid:0,markers:hybrid:2,markers:tanh:1,"
                   "markers:linear:1,markers:tanh:5,markers:linear:5,markers:hybrid:1,markers:hybrid:5")
    r.add_argument("--steps", type=int, default=70, help="time horizon of the study (steps of 0.01 s)")
    r.add_argument("--sims", default="6,10,16", help="simulation budget of the three stages")
    r.add_argument("--method", default="gauss_newton")
    r.add_argument("--seed", type=int, default=14)
    r.add_argument("--known-spin", choices=["given", "axis"],
                   help="point cloud: the spin given at its true value, or only its axis (y) given")
    r.add_argument("--smoothing", type=float, default=SMOOTHING,
                   help="contact.smoothing (m) of truth and fit (0: the unsmoothed penalty)")
    r.add_argument("--staged", action="store_true", help="run task.json (one task, three stages)")
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    p.add_argument("--figure")
    p.add_argument("--table")
    args = ap.parse_args()
    run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
