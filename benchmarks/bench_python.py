#!/usr/bin/env python3
"""Python overhead of addsim's module over its C++ cost (issue 16 target: < 5 %).

Per rollout: the time of ``scene.simulate(params)`` plus the first ``rollout.q`` access (the
one copy into numpy) against the C++ part of the call (simulator set-up and run, timed
inside the binding with the GIL released). Per vjp: ``rollout.vjp(dL_dq)`` against the
adjoint sweep's C++ time. Medians over --repeats calls on the rigid ball throw
(scenes/rigid_sphere_throw.json, 1,000 steps). Also the same through addsim.torch.rollout
(forward + backward of a loss on the states).

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/bench_python.py [--repeats 20]
"""

import argparse
import pathlib
import statistics
import time

import numpy as np

import addsim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default=str(pathlib.Path(__file__).resolve().parents[1] / "scenes" /
                                               "rigid_sphere_throw.json"))
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    scene = addsim.Scene.load(args.scene)
    params = scene.params()
    dl_dq = None
    sim_py, sim_cpp, vjp_py, vjp_cpp = [], [], [], []
    for _ in range(args.repeats + 1):  # the first call warms up and is dropped
        t0 = time.perf_counter()
        rollout = scene.simulate(params)
        q = rollout.q
        sim_py.append(time.perf_counter() - t0)
        sim_cpp.append(rollout.cpp_seconds)
        if dl_dq is None:
            dl_dq = np.zeros_like(q)
            dl_dq[-1, 0] = 1.0
        t0 = time.perf_counter()
        rollout.vjp(dl_dq)
        vjp_py.append(time.perf_counter() - t0)
        vjp_cpp.append(rollout.vjp_cpp_seconds)

    def report(what, py, cpp):
        py, cpp = py[1:], cpp[1:]
        over = [p / c - 1.0 for p, c in zip(py, cpp)]
        print(f"{what:>8}: Python {1e3 * statistics.median(py):8.3f} ms, C++ {1e3 * statistics.median(cpp):8.3f} ms, "
              f"overhead median {100 * statistics.median(over):6.2f} % "
              f"({1e3 * statistics.median([p - c for p, c in zip(py, cpp)]):.3f} ms)")

    print(f"scene {scene.name}: |q| = {scene.num_dofs}, |p| = {scene.num_params}, {scene.steps} steps; "
          f"{args.repeats} calls each, medians")
    report("simulate", sim_py, sim_cpp)
    report("vjp", vjp_py, vjp_cpp)

    try:
        import torch
        import addsim.torch
    except ImportError:
        return
    sel = scene.select(["bodies.0.velocity", "bodies.0.angular_velocity"])
    x = torch.tensor(sel.gather(params), dtype=torch.float64, requires_grad=True)
    torch_times = []
    for _ in range(args.repeats + 1):
        t0 = time.perf_counter()
        q = addsim.torch.rollout(scene, x, select=sel)
        q[-1, 0].backward()
        torch_times.append(time.perf_counter() - t0)
        x.grad = None
    cpp = [a + b for a, b in zip(sim_cpp, vjp_cpp)]
    report("torch", torch_times, cpp)


if __name__ == "__main__":
    main()
