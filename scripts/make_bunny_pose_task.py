#!/usr/bin/python3
"""Writes tasks/bunny_to_pose.json, the paper's bunny-throw objective (Fig. SphereAndBunnyThrow b).

The objective is the squared distance of every mesh node to its place in a target pose at the
final step: the bunny's rest mesh, upright, translated so that it stands on the floor (z = 0)
with its mean node position at TARGET_XY. The nodes are read from the scene's initial state:
a one-step run of scenes/bunny_throw.json writes trajectory.npy, whose row 0 holds every node
at step 0 (the rest mesh, upright, moved to the scene's `position`).

The task uses a `feature_points` term whose markers are given by their world positions at
step 0 (one per node; a marker is embedded in the tet containing it, i.e. it is the node
itself), so it stays valid if the mesh's numbering ever changes. (gmsh-generated meshes are
numbered canonically, mesh/tet_mesh.h `canonicalize`, so the numbering is the same in every
process.) Its targets are those positions plus the translation.

The "stay upright" regulariser is an `upright` term (task-format.md) on the two nodes nearest
to the points 3 cm below and 3 cm above the mean node, with their rest direction as the
direction, so it is zero at the target pose.

It also writes two staged versions of the same objective for `addsim optimize`:
tasks/bunny_to_pose_continuation.json (the paper's contact-stiffness continuation on the scene's
linear contact) and tasks/bunny_to_pose_gn.json (Gauss-Newton stages on tanh friction with the C¹
smoothed normal penalty, its width w narrowed from stage to stage, then on the scene's own contact;
docs/validation/optimization.md §Bunny explains why the scene's contact needs the smoothed start).

Usage: scripts/make_bunny_pose_task.py ADDSIM_BINARY  (from anywhere; writes into the repository)
"""

import ast
import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENE = ROOT / "scenes" / "bunny_throw.json"
TASK = ROOT / "tasks" / "bunny_to_pose.json"
CONTINUATION = ROOT / "tasks" / "bunny_to_pose_continuation.json"
SMOOTHED = ROOT / "tasks" / "bunny_to_pose_gn.json"
# The paper's contact-stiffness continuation (Fig. continuation_plot: k_n 100 -> 1000, i.e. from a
# tenth of the final stiffness), scaled to the scene's k_n = 100 N/m: stages 25, 50, then the scene's.
CONTINUATION_KN = (25, 50)
# Widths w (m) of the smoothed normal penalty (`contact.smoothing`), one Gauss-Newton stage each, with
# tanh friction. At the impact speeds (~1 m/s) a node moves ~10 mm per 10 ms step, so only a blend
# about that wide makes each node's contact onset smooth in the throw; 10 mm is optimisable from the
# scene's throw, but the bunny then rests ~3.4 mm above the floor on the blend. Narrower stages bring
# it down to the floor (rest height ~w/2 minus a little), each starting at the previous optimum, and
# the last stage, on the scene's own contact, starts within ~1 cm of its optimum.
SMOOTHING_WIDTHS = (0.010, 0.003, 0.001)
TARGET_XY = (0.30, 0.05)  # m: where the bunny should stand at the final time (our choice)
UPRIGHT_OFFSET = 0.03     # m: the regulariser's nodes lie about this far below/above the mean node
UPRIGHT_WEIGHT = 0.1      # a 90° tilt (½‖d/‖d‖ − u‖² = 1) then costs as much as a 1.5 cm offset of all 877 nodes


def read_npy_rows(path):
    """Rows of a little-endian float64 2-D .npy file (numpy is not needed)."""
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            sys.exit(f"{path}: not an .npy file")
        major = f.read(2)[0]
        size = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
        header = ast.literal_eval(f.read(size).decode("latin1"))
        if header["descr"] != "<f8" or header["fortran_order"]:
            sys.exit(f"{path}: expected C-ordered <f8, got {header}")
        rows, cols = header["shape"]
        values = struct.unpack(f"<{rows * cols}d", f.read(8 * rows * cols))
    return [values[r * cols:(r + 1) * cols] for r in range(rows)]


def nearest(nodes, point):
    return min(range(len(nodes)), key=lambda k: sum((nodes[k][i] - point[i]) ** 2 for i in range(3)))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    addsim = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([addsim, "simulate", str(SCENE), "--set", "steps=1", "--quiet", "--out", out], check=True)
        q0 = read_npy_rows(Path(out) / "trajectory.npy")[0]
        scene = json.loads(Path(SCENE).read_text())
    if len(scene["bodies"]) != 1 or len(q0) % 3:
        sys.exit(f"{SCENE}: expected one FEM body")
    nodes = [q0[3 * k:3 * k + 3] for k in range(len(q0) // 3)]
    mean = [sum(x[i] for x in nodes) / len(nodes) for i in range(3)]
    lowest = min(x[2] for x in nodes)
    shift = (TARGET_XY[0] - mean[0], TARGET_XY[1] - mean[1], -lowest)
    targets = [[round(x[i] + shift[i], 9) for i in range(3)] for x in nodes]

    bottom = nearest(nodes, (mean[0], mean[1], mean[2] - UPRIGHT_OFFSET))
    top = nearest(nodes, (mean[0], mean[1], mean[2] + UPRIGHT_OFFSET))
    axis = [nodes[top][i] - nodes[bottom][i] for i in range(3)]
    norm = math.sqrt(sum(a * a for a in axis))
    direction = [round(a / norm, 9) for a in axis]

    name = scene["bodies"][0]["name"]
    markers = [[round(x[i], 9) for i in range(3)] for x in nodes]
    task = {
        "name": "bunny_to_pose",
        "description": (
            "Paper Fig. SphereAndBunnyThrow b: choose the bunny's initial linear and angular velocity so that, "
            "after landing on the floor and hitting the wall, every mesh node reaches a target pose at the final "
            f"step (the rest mesh, upright, standing on the floor with its mean node at x, y = {TARGET_XY[0]}, "
            f"{TARGET_XY[1]} m), plus a regulariser that keeps the bunny upright. Generated by "
            "scripts/make_bunny_pose_task.py from the scene's step-0 nodes."),
        "scene": "../scenes/bunny_throw.json",
        "parameters": [f"bodies.{name}.velocity", f"bodies.{name}.angular_velocity"],
        "objective": [
            {
                "type": "feature_points",
                "body": name,
                "markers": "@MARKERS@",
                "frames": [{"step": -1, "positions": "@TARGETS@"}],
            },
            {
                "type": "upright",
                "body": name,
                "weight": UPRIGHT_WEIGHT,
                "bottom": {"node": bottom},
                "top": {"node": top},
                "direction": direction,
                "step": -1,
            },
        ],
    }
    # Compact lists: one line per marker and per target.
    text = json.dumps(task, indent=2)
    text = text.replace('"@MARKERS@"', "[\n" + ",\n".join(" " * 8 + json.dumps({"position": m}) for m in markers) +
                        "\n      ]")
    text = text.replace('"@TARGETS@"', "[\n" + ",\n".join(" " * 12 + json.dumps(t) for t in targets) +
                        "\n          ]")
    TASK.write_text(text + "\n")
    print(f"{TASK}: {len(nodes)} nodes, upright nodes {bottom} -> {top}, shift {shift}")

    # The same objective as a k_n continuation for `addsim optimize` (Gauss-Newton: the
    # objective is a sum of squares over 6 parameters; each stage starts from the previous
    # stage's best point, docs/task-format.md `stages`).
    head = {
        "name": "bunny_to_pose_continuation",
        "description": (
            "tasks/bunny_to_pose.json as a contact-stiffness continuation (paper Fig. continuation_plot): "
            f"Gauss-Newton against floor and wall with k_n = {CONTINUATION_KN[0]} and {CONTINUATION_KN[1]} N/m, "
            "then the scene's 100 N/m, each stage from the previous stage's best point. "
            "Generated by scripts/make_bunny_pose_task.py."),
        "scene": task["scene"],
        "parameters": task["parameters"],
        "optimize": {"method": "gauss_newton", "max_sims": 200, "phi_change": 1e-3},
        "stages": [{"name": f"kn {kn}", "set": {"contact.kn": kn}, "optimize": {"max_seconds": 800}}
                   for kn in CONTINUATION_KN] +
                  [{"name": "kn 100 (scene)", "optimize": {"max_seconds": 1300, "phi_change": 0}}],
    }
    head_text = json.dumps(head, indent=2)
    objective_start = text.index('  "objective"')
    CONTINUATION.write_text(head_text[:-2] + ",\n" + text[objective_start:] + "\n")
    print(f"{CONTINUATION}: stages k_n = {CONTINUATION_KN} then the scene's")

    # The same objective on smoothed contact first: tanh friction (eq. tanhPenT) and the C¹
    # normal penalty of width w (docs/contact.md), w narrowed stage by stage, each stage stopping
    # when an iteration gains < 0.1 %; then the scene's own contact (linear friction, no
    # smoothing) from the last smoothed optimum, until an iteration gains < 0.01 %.
    widths_mm = ", ".join(f"{w * 1000:g}" for w in SMOOTHING_WIDTHS)
    stages = [{"name": f"tanh w {w * 1000:g} mm", "set": {"contact.model": "tanh", "contact.smoothing": w},
               "optimize": {"max_sims": 30, "phi_change": 1e-3}} for w in SMOOTHING_WIDTHS]
    stages.append({"name": "scene's contact", "optimize": {"max_sims": 40, "phi_change": 1e-4}})
    smooth = {
        "name": "bunny_to_pose_gn",
        "description": (
            "tasks/bunny_to_pose.json solved by Gauss-Newton over a continuation in the contact model: "
            f"tanh friction with the C1 normal penalty of width w = {widths_mm} mm (contact.smoothing), "
            "then the scene's own contact (linear friction, no smoothing), each stage from the previous "
            "stage's best point. Generated by scripts/make_bunny_pose_task.py."),
        "scene": task["scene"],
        "parameters": task["parameters"],
        "optimize": {"method": "gauss_newton"},
        "stages": stages,
    }
    smooth_text = json.dumps(smooth, indent=2)
    SMOOTHED.write_text(smooth_text[:-2] + ",\n" + text[objective_start:] + "\n")
    print(f"{SMOOTHED}: tanh friction with w = {widths_mm} mm, then the scene's contact")


if __name__ == "__main__":
    main()
