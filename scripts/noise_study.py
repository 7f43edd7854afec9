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
For the point cloud (--spin-search grid, the default) the spin is found before the bounce:
after 1. (x0, v0 only), `spin_scan` evaluates the ballistic objective on a grid of omega_y
(`addsim sweep`, objective only) and `ballistic_spin` refines x0, v0, omega0 from the best
grid point; these three stages simulate a rigid stand-in (E = 1e6 Pa, the bound) so that the
soft start's centrifugal bulge does not decide the spin. The cloud's only view of the spin
before contact is the rotation of the surface's facets, a basin of +-1 rad/s with local
minima around it (`spin-landscape` plots it); --spin-search none lets the spin join the
material in stage 2 instead, the paper's Kinect approach.
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
      [--method gauss_newton] [--staged] [--spin-search grid|none] [--spin-grid=A:B:N]
  /usr/bin/python3 scripts/noise_study.py report --out DIR [--figure PNG] [--table MD]
  /usr/bin/python3 scripts/noise_study.py spin-landscape --out DIR --figure PNG [--noise 0,2,5]

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
import time

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
# Point cloud, spin search (--spin-search grid): the ballistic stages simulate a rigid stand-in
# (E at its upper bound): at the 10x softer start the spinning ball bulges by
# rho w^2 r^2 / (2E) = 8 %, and that bulge, not the facets' rotation, would decide the fit.
RIGID_E = 1e6
SPIN_GRID = (-30.25, 9.75, 81)  # omega_y grid of the spin scan (rad/s): 0.5 rad/s spacing, no round values


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


def make_task(d, kind, model, a_mm, x, tris, steps, sims, method, seed, known_spin=None, spin_search="none"):
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
    if kind == "cloud" and spin_search == "grid" and known_spin is None:
        # The cloud sees the spin only through the rotation of the surface's facets, whose
        # objective has a basin of +-1 rad/s around the truth and local minima elsewhere
        # (docs/validation/noise-study.md): fit x0, v0 (ballistic), scan omega_y on a grid
        # (spin_scan, objective only), refine x0, v0, omega0 from the best grid point
        # (ballistic_spin), then the material and everything as for markers.
        stages = [("ballistic", initial[:2], BALLISTIC_LAST), ("spin_scan", [initial[2] + ".0.1"], BALLISTIC_LAST),
                  ("ballistic_spin", initial, BALLISTIC_LAST), ("bounce", material, BOUNCE_LAST),
                  ("all", initial + material, steps)]
        budgets = [sims[0], 0, sims[0]] + sims[1:]
        rigid = {"ballistic", "spin_scan", "ballistic_spin"}
    else:
        # Without the spin search, the cloud's spin joins the material in the bounce stage, as
        # the paper's Kinect fit lets the initial conditions change once contact counts.
        bounce = material if kind == "markers" else material + initial[2:]
        stages = [("ballistic", ballistic, BALLISTIC_LAST), ("bounce", bounce, BOUNCE_LAST),
                  ("all", initial + material, steps)]
        budgets = list(sims)
        rigid = set()
    # More budgets than three: further "all" stages, each restarting from the best point
    # (Gauss-Newton's damping starts afresh).
    extra = ["all%d" % (k + 2) for k in range(len(sims) - 3)]
    stages += [(name, initial + material, steps) for name in extra]
    files.update({name: files["all"] for name in extra})
    files.update({name: files["ballistic"] for name, _, _ in stages if name.startswith(("spin_scan", "ballistic_"))})
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
            "optimize": {"method": method, "max_sims": max(budgets[k], 1)},
        }
        if stage in rigid:
            task["set"]["bodies.ball.material.youngs_modulus"] = RIGID_E
        if stage == "spin_scan":
            task["parameters"] = [{"path": names[0], "lower": SPIN_GRID[0], "upper": SPIN_GRID[1]}]
        (d / ("task_%s.json" % stage)).write_text(json.dumps(task, indent=2) + "\n")
    task["name"] = "noise_%s_%s_%gmm" % (kind, model, a_mm)
    task["description"] = task["description"].split("; stage")[0] + "; %d stages" % len(stages)
    task["parameters"] = [BOUNDS.get(p, {"path": p}) for p in initial + material]
    task["set"]["steps"] = steps
    task["set"]["bodies.ball.material.youngs_modulus"] = START["E"]
    # The staged form has no grid scan (it is not an optimiser stage): chained form only.
    task["stages"] = [
        {"name": stage, "parameters": names, "steps": last,
         "objective_set": {"0.data": files[stage]}, "optimize": {"max_sims": budgets[k]}}
        for k, (stage, names, last) in enumerate(stages) if stage != "spin_scan"]
    for st in task["stages"]:
        if st["name"] in rigid:
            st["set"] = {"bodies.ball.material.youngs_modulus": RIGID_E}
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


def as_scene_set(params, carried=None):
    f = by_field(params)
    keys = {"E": "bodies.ball.material.youngs_modulus", "cf": "obstacles.floor.friction",
            "position": "bodies.ball.position", "velocity": "bodies.ball.velocity",
            "angular_velocity": "bodies.ball.angular_velocity"}
    for k, v in f.items():  # components not estimated keep the carried value, else the start's
        if isinstance(v, list):
            before = (carried or {}).get(keys[k], START[k])
            f[k] = [before[i] if x is None else x for i, x in enumerate(v)]
    return {keys[k]: v for k, v in f.items()}


def spin_scan(args, task_file, out, log):
    """The objective of task_file (one parameter: omega_y) on the grid --spin-grid, by
    `addsim sweep` (objective only); a result.json-like record of the best grid point."""
    a, b, n = args.spin_grid
    if (out / "result.json").exists():
        return json.loads((out / "result.json").read_text())
    started = time.monotonic()
    if not (out / "sweep.csv").exists():
        addsim_run(args.addsim, ["sweep", str(task_file), "--out", str(out), "--axes",
                                 "bodies.ball.angular_velocity.0.1", "--grid", str(n),
                                 "--range=%g:%g" % (a, b), "--no-gradient", "--quiet",
                                 "--threads", str(args.jobs)], log)
    rows = np.genfromtxt(out / "sweep.csv", delimiter=",", names=True, dtype=None, encoding=None)
    ok = rows["completed"] == 1
    if not ok.any():
        raise RuntimeError("%s: no grid point simulated" % (out / "sweep.csv"))
    omega, phi = rows[rows.dtype.names[1]][ok], rows["phi"][ok]
    best = int(np.argmin(phi))
    start = int(np.argmin(np.abs(omega - json.loads(task_file.read_text())["set"][
        "bodies.ball.angular_velocity"][1])))
    # How clearly the scan decided: the winner's and the best other basin's depth below the
    # median of the grid points farther than 2 rad/s from the winner (the basin's half-width
    # is about 1 rad/s), in units of their standard deviation (the plateau's scatter).
    far = np.abs(omega - omega[best]) > 2.0
    runner_up = int(np.flatnonzero(far)[np.argmin(phi[far])]) if far.any() else best
    plateau, scatter = (np.median(phi[far]), phi[far].std()) if far.sum() > 1 else (phi[best], 0.0)
    depth = (lambda k: float((plateau - phi[k]) / scatter) if scatter > 0 else 0.0)
    record = {"parameters": {"bodies.ball.angular_velocity.0.1": float(omega[best])},
              "depth": depth(best),
              "runner_up": {"angular_velocity_y": float(omega[runner_up]), "phi": float(phi[runner_up]),
                            "depth": depth(runner_up)},
              "phi": float(phi[best]), "phi0": float(phi[start]), "phi_ratio": float(phi[best] / phi[start]),
              "simulations": int(len(rows)), "failed_simulations": int((~ok).sum()),
              "seconds": time.monotonic() - started,
              "stop_reason": "grid of %d points" % n}
    (out / "result.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def stage_names(d):
    """The stages of the chained form, in order, from the task files make_task wrote."""
    task = json.loads((d / "task.json").read_text())
    names = [st["name"] for st in task["stages"]]
    if (d / "task_spin_scan.json").exists():
        names.insert(names.index("ballistic") + 1, "spin_scan")
    return names


def errors(results, names):
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
                       for n, r in zip(names, results)]
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
              args.known_spin, args.spin_search)
    if args.staged:
        opt = d / "opt"
        resume = ["--resume"] if (opt / "checkpoint.json").exists() else []
        addsim_run(args.addsim, ["optimize", str(d / "task.json"), "--out", str(opt), "--quiet", *resume],
                   d / "optimize.log")
        result = json.loads((opt / "result.json").read_text())
        (d / "errors.json").write_text(json.dumps(errors([result], None), indent=2) + "\n")
        return d
    carried = {}
    results = []
    names = stage_names(d)
    for stage in names:
        task_file = d / ("task_%s.json" % stage)
        task = json.loads(task_file.read_text())
        rigid_e = task["set"]["bodies.ball.material.youngs_modulus"] == RIGID_E
        task["set"].update(carried)
        if rigid_e:  # the ballistic stages keep their rigid stand-in
            task["set"]["bodies.ball.material.youngs_modulus"] = RIGID_E
        task_file.write_text(json.dumps(task, indent=2) + "\n")
        opt = d / ("opt_" + stage)
        if stage == "spin_scan":
            results.append(spin_scan(args, task_file, opt, d / "sweep_spin_scan.log"))
            carried.update(as_scene_set(results[-1]["parameters"], carried))
            continue
        if not (opt / "result.json").exists():
            resume = ["--resume"] if (opt / "checkpoint.json").exists() else []
            addsim_run(args.addsim, ["optimize", str(task_file), "--out", str(opt), "--quiet", *resume],
                       d / ("optimize_%s.log" % stage))
        results.append(json.loads((opt / "result.json").read_text()))
        carried.update(as_scene_set(results[-1]["parameters"], carried))
    (d / "errors.json").write_text(json.dumps(errors(results, names), indent=2) + "\n")
    return d


def run(args):
    global SMOOTHING, CLOUD_POINTS
    SMOOTHING = args.smoothing
    CLOUD_POINTS = args.cloud_points
    runs = []
    for item in args.runs.split(","):
        kind, model, a = item.split(":")
        runs.append((kind, model, float(a)))
    if args.staged and args.spin_search == "grid" and any(k == "cloud" for k, _, _ in runs):
        sys.exit("noise_study.py: --staged has no spin scan (not an optimiser stage); "
                 "add --spin-search none or run the chained form")
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


def spin_landscape(args):
    """Φ(omega_y) of the point cloud over the ballistic phase (steps <= BALLISTIC_LAST), every
    other parameter at the truth, for the start's, the true and the rigid stand-in's E, at
    the noise levels --noise: where the spin's local minima come from."""
    global SMOOTHING
    SMOOTHING = args.smoothing
    out = pathlib.Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    x, tris = truth_run(args.addsim, out, "tanh", args.steps)
    a, b, n = args.spin_grid
    curves = []
    for a_mm in [float(t) for t in args.noise.split(",")]:
        d = out / ("spin_landscape_%gmm" % a_mm)
        make_task(d, "cloud", "tanh", a_mm, x, tris, args.steps, [1, 1, 1], "gauss_newton",
                  args.seed + int(10 * a_mm), spin_search="none")
        for E in (START["E"], TRUTH["E"], RIGID_E):
            task = json.loads((d / "task_ballistic.json").read_text())
            task["set"].update({"bodies.ball.material.youngs_modulus": E, "obstacles.floor.friction": TRUTH["cf"],
                                "bodies.ball.position": TRUTH["position"], "bodies.ball.velocity": TRUTH["velocity"],
                                "bodies.ball.angular_velocity": TRUTH["angular_velocity"]})
            task["parameters"] = [{"path": "bodies.ball.angular_velocity.0.1", "lower": a, "upper": b}]
            f = d / ("scan_E%g.json" % E)
            f.write_text(json.dumps(task, indent=2) + "\n")
            sweep = d / ("sweep_E%g" % E)
            if not (sweep / "sweep.csv").exists():
                addsim_run(args.addsim, ["sweep", str(f), "--out", str(sweep), "--axes",
                                         "bodies.ball.angular_velocity.0.1", "--grid", str(n),
                                         "--range=%g:%g" % (a, b), "--no-gradient", "--quiet",
                                         "--threads", str(args.jobs)], d / ("sweep_E%g.log" % E))
            rows = np.genfromtxt(sweep / "sweep.csv", delimiter=",", names=True, dtype=None, encoding=None)
            curves.append((a_mm, E, rows[rows.dtype.names[1]], rows["phi"]))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(curves) // 3, figsize=(5.5 * len(curves) / 3, 3.6), squeeze=False)
    for k, (a_mm, E, omega, phi) in enumerate(curves):
        ax = axes[0][k // 3]
        ax.plot(omega, phi, marker=".", label="E = %g Pa" % E)
        ax.axvline(TRUTH["angular_velocity"][1], color="grey", lw=0.8, ls="--")
        ax.set_xlabel("ω_y (rad/s), other parameters true")
        ax.set_ylabel("Φ, point cloud, steps ≤ %d (m²)" % BALLISTIC_LAST)
        ax.set_yscale("log")
        # The noise-free truth has Φ = 0: clip the axis below the rigid stand-in's minimum.
        floor = min(c[3].min() for c in curves if c[0] == a_mm and c[1] == RIGID_E)
        ax.set_ylim(bottom=0.5 * floor)
        ax.set_title("%g mm noise" % a_mm, fontsize=9)
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
                   "markers:linear:1,markers:tanh:5,markers:linear:5,markers:hybrid:1,markers:hybrid:5,"
                   "cloud:tanh:1,cloud:tanh:5")
    r.add_argument("--steps", type=int, default=70, help="time horizon of the study (steps of 0.01 s)")
    r.add_argument("--sims", default="6,10,16", help="simulation budget of the three stages")
    r.add_argument("--method", default="gauss_newton")
    r.add_argument("--seed", type=int, default=14)
    r.add_argument("--known-spin", choices=["given", "axis"],
                   help="point cloud: the spin given at its true value, or only its axis (y) given")
    r.add_argument("--spin-search", choices=["grid", "none"], default="grid",
                   help="point cloud: scan omega_y on a grid in the ballistic phase (default), or "
                   "none (the spin joins the material in the bounce stage)")
    r.add_argument("--spin-grid", type=lambda t: (float(t.split(":")[0]), float(t.split(":")[1]), int(t.split(":")[2])),
                   default=SPIN_GRID, help="A:B:N, the omega_y grid of the spin scan (rad/s; write --spin-grid=-30.25:9.75:81)")
    r.add_argument("--smoothing", type=float, default=SMOOTHING,
                   help="contact.smoothing (m) of truth and fit (0: the unsmoothed penalty)")
    r.add_argument("--cloud-points", type=int, default=CLOUD_POINTS,
                   help="point cloud: points per frame (a Kinect v2 sees the ball with hundreds)")
    r.add_argument("--staged", action="store_true", help="run task.json (one task, three stages)")
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    p.add_argument("--figure")
    p.add_argument("--table")
    g = sub.add_parser("spin-landscape")
    g.add_argument("--out", required=True)
    g.add_argument("--figure", required=True)
    g.add_argument("--addsim", default=str(ROOT / "build" / "src" / "addsim" / "cli" / "addsim"))
    g.add_argument("--jobs", type=int, default=2)
    g.add_argument("--steps", type=int, default=70)
    g.add_argument("--seed", type=int, default=14)
    g.add_argument("--noise", default="0,2,5", help="noise levels (mm)")
    g.add_argument("--smoothing", type=float, default=SMOOTHING)
    g.add_argument("--spin-grid", type=lambda t: (float(t.split(":")[0]), float(t.split(":")[1]), int(t.split(":")[2])),
                   default=(-25.0, -5.0, 41))
    args = ap.parse_args()
    {"run": run, "report": report, "spin-landscape": spin_landscape}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
