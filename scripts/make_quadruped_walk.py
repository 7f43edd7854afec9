#!/usr/bin/python3
"""Writes scenes/quadruped_walk.json and tasks/quadruped_walk.json (paper Table 2, compliant robot).

The scene is scenes/quadruped.json (13 rigid bodies, 78 DOF, 12 motors) with the paper's row:
192 steps of 1/60 s, k_n = 1e5, k_d = 0.1, joint (ball) stiffness 5e5, motor stiffness 1e5,
motor damping 10, c_f = 0.8, and per-step motor targets (`target_angles`) holding a nominal
gait: a hand-made trot as joint-angle sinusoids (the paper's nominal comes from a motion
planner on an idealised robot; ours is simpler and, like theirs, does not carry the compliant
robot to the target). Diagonal legs (0 and 3, 1 and 2) move together, half a period apart
from the other pair:

    hip(t)  = r(t) · A_hip  · sin(2π f t + φ_leg)             (positive: foot swings back)
    knee(t) = r(t) · A_knee · max(0, −cos(2π f t + φ_leg))    (flexes while the foot swings forward)
    abduction = 0,

with r(t) a quintic ramp from 0 to 1 over the first `ramp` seconds, so the robot starts from
its standing pose at rest.

The task asks for the torso's centre of mass `distance` further along +x at the final step
(com_target, at the height it stands at), keeps it on the line y = 0, z = standing height at
every step (com_line: no falling, no drifting sideways), upright (its body z axis along the
world z at every step) and smooth controls (β Σ ‖p^{i+1} − p^i‖² over all 12 target
sequences). The 12 × (steps + 1) targets are the parameters.

With --soft-feet (paper Table 2 row 4, "soft feet") every shin's tip sphere is replaced by a
soft FEM foot (a 5 x 5 x 4 cm box of about 40 tets, 27 nodes, E = 5e5 Pa, ν = 0.3, 1000 kg/m³,
viscosity 1 Pa s; 78 + 4 x 81 = 402 DOF) whose 9 top nodes are held by ball joints (5e5 N/m) to
the shin; the feet's boundary nodes carry the floor contact.

--contact-model, --contact-kt and --contact-smoothing put scene overrides into the task's `set`
(the scene keeps the paper's contact): the soft-feet tasks use tanh friction, k_t = 100 N s/m and
a 2 mm C¹ normal blend, which cut the forward run's Newton iterations from 16 to 6.4 per step
and let Gauss–Newton converge in 5 iterations (L-BFGS-B in 13–22)
(docs/validation/trajectory-optimization.md, soft feet). --phi-ratio sets the stop Φ/Φ₀.

With --gauss-newton only the task tasks/NAME_gn.json is written: the same scene (scenes/NAME.json,
left as it is), objective and start, solved by Levenberg–Marquardt (`gauss_newton`, the
Jacobian by the reverse sweep) instead of L-BFGS-B, with a relative-decrease stopping rule.

Usage: scripts/make_quadruped_walk.py [--name NAME] [--steps N] [--distance D] [--soft-feet] ...
       (defaults: the full row 3; the row 4 files: --soft-feet --name quadruped_soft_feet
       --steps 144 --distance 0.75 --contact-model tanh --contact-kt 100 --contact-smoothing 0.002
       --phi-ratio 0.01 --max-sims 60; add --gauss-newton for the GN tasks)
"""

import argparse
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEGS = 4
PHASE = [0.0, math.pi, math.pi, 0.0]  # trot: legs 0 (front left) and 3 (rear right) together


def ramp(t, duration):
    if duration <= 0.0 or t >= duration:
        return 1.0
    u = t / duration
    return u * u * u * (10.0 + u * (-15.0 + 6.0 * u))


def gait(steps, dt, args):
    """Target angles per joint name, one per step 0 … steps."""
    targets = {}
    for leg in range(LEGS):
        hip, knee = [], []
        for i in range(steps + 1):
            t = i * dt
            r = ramp(t, args.ramp)
            phase = 2.0 * math.pi * args.frequency * t + PHASE[leg]
            hip.append(round(r * args.hip * math.sin(phase), 9))
            knee.append(round(r * args.knee * max(0.0, -math.cos(phase)), 9))
        targets[f"leg{leg}_abd"] = [0.0] * (steps + 1)
        targets[f"leg{leg}_hip"] = hip
        targets[f"leg{leg}_knee"] = knee
    return targets


def make_scene(args):
    scene = json.loads((ROOT / "scenes" / "quadruped.json").read_text())
    dt = 1.0 / 60.0
    scene["name"] = args.name
    scene["description"] = (
        "Paper Table 2 'compliant robot': scenes/quadruped.json (13 rigid bodies, 78 DOF, 12 motors) "
        f"with the paper's values ({args.steps} steps of 1/60 s, k_n 1e5, k_d 0.1, joints 5e5, motors "
        "1e5, motor damping 10, c_f 0.8) and per-step motor targets holding a hand-made trot "
        f"(hip amplitude {args.hip} rad, knee {args.knee} rad, {args.frequency} Hz, diagonal pairs; "
        "written by scripts/make_quadruped_walk.py).")
    scene["dt"] = dt
    scene["steps"] = args.steps
    scene["contact"] = {"kn": 1e5, "kd": 0.1}
    # Touch-downs converge in fewer Newton iterations with the stick predictor (docs/solver.md,
    # "Stick predictor": β 10 for the rigid feet, 1000 for the FEM feet's many contact nodes).
    scene["solver"] = {"stick_predictor_ratio": 1000.0 if args.soft_feet else 10.0}
    if not args.soft_feet:
        # The rigid robot's 78 x 78 matrix is banded after reordering: a banded LU per Newton
        # iteration is cheaper than a kept dense LU with GMRES (docs/solver.md, "The sheet
        # flip's linear solves: a banded LU"; quadruped walk 38.5 -> 30.0 ms per simulation).
        scene["solver"].update({"linear_solver": "banded", "reuse_factorization": False})
    else:
        # The soft-feet robot's 402 x 402 matrix: a block LU over FEM nodes and rigid bodies
        # factorises in half of KLU's instructions (docs/solver.md, "Soft-feet quadruped: a
        # block LU over FEM nodes and rigid bodies"; one simulation 320 -> 249 ms CPU).
        scene["solver"]["linear_solver"] = "schur"
        # With the tasks' tanh contact, each Newton direction gets the contact laws' nonlinear
        # correction per foot (docs/solver.md, "Soft-feet quadruped: a contact correction of the
        # Newton direction": 919 -> 686 iterations); the scene's own linear contact is unaffected.
        scene["solver"]["contact_correction"] = True
        # The first three Newton iterations of every step factorise their Jacobian: they take the
        # step's large moves (motor-driven legs, then the feet), after which GMRES on the kept LU
        # mostly gave up and factorised anyway (docs/solver.md, "Soft-feet quadruped: fresh LUs for
        # a step's first iterations": 2,781 -> 1,046 GMRES iterations).
        scene["solver"]["fresh_factorization_iterations"] = 3
        # Direct solves of Newton directions stop refining once their residual meets the
        # inexact-Newton forcing, as GMRES does (docs/solver.md, "Direct solves to the requested
        # tolerance": every direct solve meets it with its first substitution; -4.3 % instructions).
        scene["solver"]["refine_to_tolerance"] = True
    scene["obstacles"][0]["friction"] = 0.8
    targets = gait(args.steps, dt, args)
    if args.soft_feet:
        add_soft_feet(scene)
        scene["description"] += (" Soft feet: each shin tip is a 5 x 5 x 4 cm FEM box (E 5e5 Pa) held at its top "
                                 "nodes by ball joints (paper Table 2 row 4).")
    for joint in scene["joints"]:
        if joint["type"] == "motor_damping":
            joint["damping"] = 10.0
            continue
        joint["stiffness"] = 5e5
        if joint["type"] == "motor":
            joint["motor_stiffness"] = 1e5
            joint.pop("target_angle", None)
            joint["target_angles"] = targets[joint["name"]]
    return scene


def landscape_contact(args):
    """The task's scene overrides that smooth the optimisation landscape (none by default)."""
    keys = {}
    if args.contact_model:
        keys["contact.model"] = args.contact_model
    if args.contact_kt is not None:
        keys["contact.kt"] = args.contact_kt
    if args.contact_smoothing is not None:
        keys["contact.smoothing"] = args.contact_smoothing
    return keys


FOOT_SIZE = [0.05, 0.05, 0.04]  # m
FOOT_TOP_NODES = range(18, 27)  # the 9 nodes on the top face of gmsh's 40-tet box (z = +0.02 m)


def add_soft_feet(scene):
    """FEM feet at the shin tips instead of the sphere proxies, held at their top nodes."""
    shins = [b for b in scene["bodies"] if b["name"].endswith("_shin")]
    for k, shin in enumerate(shins):
        tip = shin["proxies"][0]
        bottom = shin["position"][2] + tip["center"][2] - tip["radius"]
        shin["proxies"] = []
        name = f"foot{k}"
        scene["bodies"].append({
            "type": "fem", "name": name,
            "mesh": {"generator": "box", "size": FOOT_SIZE, "target_tets": 40},
            "position": [shin["position"][0], shin["position"][1], bottom + 0.5 * FOOT_SIZE[2]],
            "material": {"youngs_modulus": 5e5, "poisson_ratio": 0.3, "density": 1000, "viscosity": 1}})
        for node in FOOT_TOP_NODES:
            scene["joints"].append({"type": "ball", "anchors": [{"body": shin["name"]}, {"body": name, "point": node}],
                                    "stiffness": 5e5})


def make_task(args, motors):
    control = [f"joints.{name}.target_angles" for name in motors]
    task = {
        "name": args.name,
        "description": (
            "Paper Table 2 compliant quadruped walking: the 12 motors' per-step targets so that the "
            f"torso's centre of mass is {args.distance} m further along +x at the final step, on the "
            "line y = 0 at its standing height and upright at every step, with the smoothness "
            "regulariser on all twelve target sequences (written by scripts/make_quadruped_walk.py)."),
        "scene": f"../scenes/{args.name}.json",
        "parameters": control,
        "objective": [
            {"type": "com_target", "body": "torso", "target": [args.distance, 0.0, args.height],
             "step": -1, "weight": args.target_weight},
            {"type": "com_line", "body": "torso", "point": [0.0, 0.0, args.height],
             "direction": [1.0, 0.0, 0.0], "steps": [0, -1], "weight": args.line_weight},
            {"type": "upright", "body": "torso", "bottom": {"local": [0.0, 0.0, 0.0]},
             "top": {"local": [0.0, 0.0, 0.1]}, "steps": [0, -1], "weight": args.upright_weight},
            {"type": "control_smoothness", "control": control, "weight": args.smoothness},
        ],
        "optimize": {"method": "lbfgsb", "max_sims": args.max_sims, "phi_ratio": args.phi_ratio},
    }
    overrides = landscape_contact(args)
    if overrides:
        task["description"] += (
            " The task's `set` smooths the contact for the optimiser: "
            + ", ".join(f"{k} = {v}" for k, v in overrides.items())
            + " (docs/validation/trajectory-optimization.md, soft feet); the scene keeps the paper's contact.")
        task = {**{k: task[k] for k in ("name", "description", "scene")}, "set": overrides,
                **{k: task[k] for k in ("parameters", "objective", "optimize")}}
    return task


def make_gauss_newton_task(task, args):
    """The L-BFGS-B task solved by Levenberg–Marquardt with the reverse-mode Jacobian."""
    task["name"] = f"{args.name}_gn"
    task["description"] += (
        " Gauss-Newton variant: Levenberg-Marquardt with the Jacobian by one reverse sweep, "
        f"damping lambda0 = {args.damping:g}, stopping when an iteration lowers Phi by at most "
        f"{args.phi_change:g} of it.")
    task["optimize"] = {"method": "gauss_newton", "max_sims": args.max_sims, "phi_ratio": args.phi_ratio,
                        "phi_change": args.phi_change,
                        "gauss_newton": {"damping": args.damping, "jacobian": "adjoint"}}
    return task


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="quadruped_walk")
    parser.add_argument("--steps", type=int, default=192)
    parser.add_argument("--hip", type=float, default=0.1, help="hip pitch amplitude, rad")
    parser.add_argument("--knee", type=float, default=0.3, help="knee flexion while swinging, rad")
    parser.add_argument("--frequency", type=float, default=2.0, help="gait frequency, Hz")
    parser.add_argument("--ramp", type=float, default=0.25, help="amplitude ramp-in, s")
    parser.add_argument("--distance", type=float, default=1.0, help="target travel along +x, m")
    parser.add_argument("--height", type=float, default=0.42, help="torso centre height, m")
    parser.add_argument("--target-weight", type=float, default=100.0)
    parser.add_argument("--line-weight", type=float, default=1.0)
    parser.add_argument("--upright-weight", type=float, default=0.1)
    parser.add_argument("--smoothness", type=float, default=1e-2)
    parser.add_argument("--max-sims", type=int, default=120)
    parser.add_argument("--phi-ratio", type=float, default=1e-6, help="stop when Phi/Phi0 is at most this")
    parser.add_argument("--contact-model", choices=["linear", "tanh"], help="contact.model (absent: linear)")
    parser.add_argument("--contact-kt", type=float, help="contact.kt, N s/m (absent: k_n dt)")
    parser.add_argument("--contact-smoothing", type=float, help="contact.smoothing, m (absent: 0)")
    parser.add_argument("--soft-feet", action="store_true", help="FEM feet instead of the shin-tip spheres")
    parser.add_argument("--gauss-newton", action="store_true",
                        help="write only the Gauss-Newton task tasks/NAME_gn.json (scene unchanged)")
    parser.add_argument("--damping", type=float, default=10.0, help="Gauss-Newton: initial damping lambda0")
    parser.add_argument("--phi-change", type=float, default=1e-3,
                        help="Gauss-Newton: stop when an iteration lowers Phi by at most this fraction")
    args = parser.parse_args()

    scene = make_scene(args)
    motors = [j["name"] for j in scene["joints"] if j["type"] == "motor"]
    if args.gauss_newton:
        task = make_gauss_newton_task(make_task(args, motors), args)
        (ROOT / "tasks" / f"{args.name}_gn.json").write_text(json.dumps(task, indent=1) + "\n")
        return
    (ROOT / "scenes" / f"{args.name}.json").write_text(json.dumps(scene, indent=1) + "\n")
    (ROOT / "tasks" / f"{args.name}.json").write_text(json.dumps(make_task(args, motors), indent=1) + "\n")


if __name__ == "__main__":
    main()
