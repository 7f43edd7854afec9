#!/usr/bin/python3
"""Writes the inverse-kinematics start of tasks/kr5_cube_drag.json (paper Table 2, cube dragging
with the KUKA KR5 from URDF) from the free end-effector's solution.

Why. The KR5 holds the four strings at its palm; its parameters are the six motors' per-step
target angles. At the robot's holding pose the block sticks (static friction), and the
feature points barely respond to the targets (dΦ/dθ ≈ 4e-5 per rad for the elbow): Gauss–Newton
and L-BFGS-B stall at Φ/Φ₀ = 0.998. A free point end-effector with the same strings does not
have that trouble once it starts from a path that already pulls the block, so:

0. Set-up. The robot's holding pose (INITIAL_ANGLES) is written to scenes/kr5_cube_drag.json, the
   block is placed on the floor right below the palm with the strings pre-stretched by 2 mm, and
   the task's targets are the block's top corners moved DISTANCE along +x.

1. Free palm. `scenes/kr5_free_palm.json` replaces the robot by a kinematic body "effector" at
   the palm's start (from one simulation of the KR5 scene, step 0) with the same four strings;
   `tasks/kr5_free_palm.json` optimises its 60 poses (the cube-drag set-up: smoothness 0.01,
   Gauss–Newton from λ₀ = 1, 30 simulations) from the constant-speed start chosen by
   `scripts/make_cube_drag_start.py`. The run goes to `runs/kr5_free_palm/`.
2. Inverse kinematics through addsim itself. `tasks/kr5_cube_drag.json` gets a third objective
   term, `feature_points` on the body `kr5/palm` (its centre, where the strings attach) with the
   free palm's positions at steps 1 … 60, weight 0 in the task, and two `stages`: "ik" fits
   the motor targets to that palm path (the cube term's weight 0, the palm term's 1: the
   motors are stiff PD servos, so this is a nearly linear least-squares fit of the chain's
   kinematics, solved by Gauss–Newton like the rest), then "drag" optimises the cube target
   from there with the palm term off.

Usage: scripts/make_kr5_cube_drag.py [--addsim PATH] [--distance D] [--skip-free]
(needs `bash scripts/fetch-robots.sh` for data/robots/). --skip-free reuses
runs/kr5_free_palm/optimized_scene.json.
"""

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCENE = ROOT / "scenes" / "kr5_cube_drag.json"
TASK = ROOT / "tasks" / "kr5_cube_drag.json"
FREE_SCENE = ROOT / "scenes" / "kr5_free_palm.json"
FREE_TASK = ROOT / "tasks" / "kr5_free_palm.json"
FREE_RUN = ROOT / "runs" / "kr5_free_palm"
PALM = "kr5/palm"
# The holding pose: the palm 0.31 m in front of the base and 0.28 m up, so that it can lead the
# block by the ≈ 0.1 m that taut 0.23 m strings need to overcome static friction (tan θ ≥ c_f)
# over the whole drag within the arm's reach. (The first version held the palm at x = 0.47 m:
# the free palm's optimum then went to x = 0.59 m, out of reach; the inverse kinematics stopped
# 4 cm short.)
INITIAL_ANGLES = {"shoulder_pitch": -0.3, "elbow_pitch": 0.0}
CUBE_Z = 0.02412857  # m: the 5 cm block's centre at its force equilibrium on the floor
PRESTRETCH = 0.002   # m: each string's stretch at the start (a small tension, a gradient)
SMOOTHNESS = 0.01  # β on the motor targets (rad) and on the free palm's poses (m, rad)
OPTIMIZE = {"method": "gauss_newton", "max_sims": 60, "phi_ratio": 1e-6, "phi_change": 1e-3,
            "gauss_newton": {"damping": 1.0}}


def simulate(addsim, scene, out):
    subprocess.run([addsim, "simulate", str(scene), "--out", str(out), "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    meta = json.loads((Path(out) / "meta.json").read_text())
    offsets = {b["name"]: b["dof_offset"] for b in meta["bodies"]}
    return np.load(Path(out) / "trajectory.npy"), offsets


def place_cube(scene, task, palm0, distance):
    """The block at rest on the floor right below the palm, each string pre-stretched by
    PRESTRETCH from the palm's centre to a top corner, and the task's target the block's top
    corners moved by `distance` along +x."""
    cube = next(b for b in scene["bodies"] if b["name"] == "cube")
    center = np.array([palm0[0], palm0[1], CUBE_Z])
    cube["position"] = [round(float(x), 8) for x in center]
    for joint in scene["joints"]:
        corner = center + np.array(next(a["point"] for a in joint["anchors"] if a["body"] == "cube"))
        joint["rest_length"] = round(float(np.linalg.norm(corner - palm0)) - PRESTRETCH, 6)
    frame = task["objective"][0]["frames"][0]
    frame["positions"] = [[round(float(c), 8) for c in center + np.array(m["local"]) + [distance, 0.0, 0.0]]
                          for m in task["objective"][0]["markers"]]


def free_palm_files(scene, task, palm0):
    """The KR5 scene and task with the robot replaced by a kinematic point end-effector."""
    free = dict(scene)
    free["name"] = "kr5_free_palm"
    free["description"] = ("The KR5 cube drag (scenes/kr5_cube_drag.json) with the robot replaced by a kinematic "
                           "body at the palm's start holding the same four strings at its centre: the free "
                           "end-effector whose optimum scripts/make_kr5_cube_drag.py maps to the KR5's motor "
                           "targets.")
    free["bodies"] = [b for b in scene["bodies"] if b["type"] != "urdf"]
    free["bodies"].append({"type": "rigid", "name": "effector", "kinematic": True,
                           "shape": {"type": "box", "size": [0.04, 0.04, 0.01]}, "mass": 0.1,
                           "position": [round(float(x), 6) for x in palm0]})
    free["joints"] = json.loads(json.dumps(scene["joints"]).replace(f'"{PALM}"', '"effector"'))
    steps = scene["steps"]
    free_task = {
        "name": "kr5_free_palm",
        "description": ("Cube drag with a free point end-effector at the KR5's palm (scenes/kr5_free_palm.json): "
                        "its poses at steps 1 ... %d so that the block's top corners reach the KR5 task's "
                        "targets; the first step of scripts/make_kr5_cube_drag.py." % steps),
        "scene": "../scenes/kr5_free_palm.json",
        "parameters": [f"bodies.effector.poses.{i}" for i in range(1, steps + 1)],
        "objective": [task["objective"][0],
                      {"type": "control_smoothness", "control": "bodies.effector.poses", "weight": SMOOTHNESS}],
        # No phi_change stop: its first iterations lower Φ slowly while the block starts to slide.
        "optimize": dict(OPTIMIZE, max_sims=30, phi_change=0.0),
    }
    return free, free_task


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--addsim", default=str(ROOT / "build" / "src" / "addsim" / "cli" / "addsim"))
    parser.add_argument("--distance", type=float, default=0.05, help="drag distance along +x, m")
    parser.add_argument("--skip-free", action="store_true", help="reuse the free palm's earlier run")
    args = parser.parse_args()

    scene = json.loads(SCENE.read_text())
    task = json.loads(TASK.read_text())
    steps = scene["steps"]
    robot = next(b for b in scene["bodies"] if b["type"] == "urdf")
    robot["initial_angles"] = dict(INITIAL_ANGLES)
    SCENE.write_text(json.dumps(scene, indent=1) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        q, offsets = simulate(args.addsim, SCENE, tmp)
    palm0 = q[0, offsets[PALM]:offsets[PALM] + 3]
    place_cube(scene, task, palm0, args.distance)
    scene["description"] = (
        "Paper Table 2 cube dragging with the KUKA KR5 from URDF (scripts/fetch-robots.sh) instead of a free "
        "end-effector: four strings (unilateral springs, k = 5 N/m, pre-stretched by 2 mm) from the palm's centre "
        "to the top corners of a 5 cm, 75 g block right below it; the six joint motors' per-step targets (6 x 61 "
        "controls) are the parameters. Holding pose shoulder_pitch -0.3 rad (palm 0.31 m in front of the base, "
        "0.28 m up). 60 steps of 1/60 s, k_n = 200, k_d = 1e-3, c_f = 0.5; the robot's links have mesh collision "
        "shapes only and no contact. Block and strings placed by scripts/make_kr5_cube_drag.py.")
    SCENE.write_text(json.dumps(scene, indent=1) + "\n")

    if not args.skip_free:
        free, free_task = free_palm_files(scene, task, palm0)
        FREE_SCENE.write_text(json.dumps(free, indent=1) + "\n")
        FREE_TASK.write_text(json.dumps(free_task, indent=1) + "\n")
        subprocess.run(["/usr/bin/python3", str(ROOT / "scripts" / "make_cube_drag_start.py"), str(FREE_TASK),
                        str(args.distance), "--addsim", args.addsim], check=True)
        shutil.rmtree(FREE_RUN, ignore_errors=True)
        subprocess.run([args.addsim, "optimize", str(FREE_TASK), "--out", str(FREE_RUN), "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as tmp:
        qf, offsets_f = simulate(args.addsim, FREE_RUN / "optimized_scene.json", tmp)
    path = qf[:, offsets_f["effector"]:offsets_f["effector"] + 3]

    targets = [f"robots.kr5.joints.{j}.target_angles" for j in
               ("shoulder_yaw", "shoulder_pitch", "elbow_pitch", "elbow_roll", "wrist_pitch", "wrist_roll")]
    cube_term = task["objective"][0]
    palm_term = {"type": "feature_points", "body": PALM, "weight": 0.0, "markers": [{"local": [0.0, 0.0, 0.0]}],
                 "frames": [{"step": i, "positions": [[round(float(x), 7) for x in path[i]]]}
                            for i in range(1, steps + 1)]}
    task["description"] = (
        "Cube dragging with the KR5 (paper Table 2 row, robot variant): the six motors' per-step target angles "
        "(6 x 61 = 366 controls) so that the block's top corners end %g cm further along +x at t = 1 s, with the "
        "smoothness regulariser (beta = %g) on all six target sequences. Start by inverse kinematics: stage 'ik' "
        "fits the targets so that the palm follows the free end-effector's optimum (tasks/kr5_free_palm.json; "
        "objective term 2, off in the task), stage 'drag' then optimises the cube target. Both Gauss-Newton from "
        "lambda0 = 1. Written by scripts/make_kr5_cube_drag.py." % (args.distance * 100, SMOOTHNESS))
    task["parameters"] = targets
    task["objective"] = [cube_term, {"type": "control_smoothness", "control": targets, "weight": SMOOTHNESS},
                         palm_term]
    task["optimize"] = OPTIMIZE
    task["stages"] = [
        {"name": "ik", "objective_set": {"0.weight": 0, "2.weight": 1}, "optimize": {"max_sims": 20}},
        {"name": "drag", "optimize": {"max_sims": 60}},
    ]
    TASK.write_text(json.dumps(task, indent=1) + "\n")
    print(f"palm start {np.round(palm0, 4).tolist()}, free palm end {np.round(path[-1], 4).tolist()}; wrote {TASK}")


if __name__ == "__main__":
    main()
