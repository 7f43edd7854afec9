#!/usr/bin/env python3
"""Writes the soft-start material task (docs/validation/optimization.md, "Soft start"):
tasks/data/soft_material_451_markers.csv from a run of scenes/soft_ball_throw.json at the true
material (E = 2e4 Pa, c_f = 0.4), and tasks/soft_material_451.json, which starts 10x softer.

Usage: /usr/bin/python3 scripts/make_soft_start_task.py TRUTH_OUTPUT_DIR
where TRUTH_OUTPUT_DIR is the folder of
  addsim simulate scenes/soft_ball_throw.json --set contact.model='"tanh"' --set contact.smoothing=0.005 --out DIR
(tanh friction and a 5 mm C1 normal blend, the settings docs/validation/optimization.md
recommends for optimisation; the task uses the same).
Six surface nodes (the extreme nodes along +-x, +-y, +-z at t = 0) are the markers, sampled
every second step, without noise.
"""
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from noise_study import marker_nodes  # noqa: E402  (the same six extreme surface nodes)

root = pathlib.Path(__file__).resolve().parent.parent
q = np.load(pathlib.Path(sys.argv[1]) / "trajectory.npy")
x0 = q[0].reshape(-1, 3)
nodes = marker_nodes(x0)
rows = ["step,marker,x,y,z"]
for i in range(2, q.shape[0], 2):
    x = q[i].reshape(-1, 3)
    for m, k in enumerate(nodes):
        rows.append("%d,%d,%.17g,%.17g,%.17g" % (i, m, *x[k]))
(root / "tasks" / "data" / "soft_material_451_markers.csv").write_text("\n".join(rows) + "\n")
task = {
    "name": "soft_material_451",
    "description": "Material estimation from the paper's soft start (Sec. 6, Fig. noiseResults): the 451-tet soft ball "
    "of scenes/soft_ball_throw.json with tanh friction and a 5 mm normal-penalty blend, six surface-node markers recorded at E = 2e4 Pa and c_f = 0.4 "
    "(tasks/data/soft_material_451_markers.csv, scripts/make_soft_start_task.py), estimated from E = 2e3 Pa "
    "(10x softer) and c_f = 0.2. At E = 2e3 Pa the extrapolated Newton guess at impact inverts an element; the "
    "step starts from an admissible fallback guess instead (docs/solver.md), and failed steps would be retried as "
    "sub-steps (solver.substep_retry, on by default for addsim optimize).",
    "scene": "../scenes/soft_ball_throw.json",
    "set": {
        "contact.model": "tanh",
        "contact.smoothing": 0.005,
        "bodies.ball.material.youngs_modulus": 2000,
        "obstacles.floor.friction": 0.2,
    },
    "parameters": [
        {"path": "bodies.ball.material.youngs_modulus", "log": True, "lower": 500, "upper": 1e6},
        {"path": "obstacles.floor.friction", "lower": 0.0, "upper": 2.0},
    ],
    "objective": [
        {
            "type": "markers",
            "body": "ball",
            "markers": [{"node": k} for k in nodes],
            "data": "data/soft_material_451_markers.csv",
        }
    ],
    "optimize": {"method": "lbfgsb", "max_sims": 100, "phi_ratio": 1e-12},
}
# Continuation variant: Young's modulus alone first (the friction stays at its start), then both.
staged = dict(task)
staged["name"] = "soft_material_451_staged"
staged["description"] = task["description"] + " Two stages: E alone, then E and c_f."
staged["stages"] = [
    {"name": "stiffness", "parameters": ["bodies.ball.material.youngs_modulus"], "optimize": {"max_sims": 25}},
    {"name": "all", "optimize": {"max_sims": 35}},
]
(root / "tasks" / "soft_material_451_staged.json").write_text(json.dumps(staged, indent=2) + "\n")
(root / "tasks" / "soft_material_451.json").write_text(json.dumps(task, indent=2) + "\n")
print("markers on nodes", nodes)
