#!/usr/bin/env python3
"""Python overhead of addsim's module over its C++ cost (issue 16 target: < 5 %).

Per rollout: the time of ``scene.simulate(params)`` plus the first ``rollout.q`` access (the
one copy into numpy) against the C++ part of the call (simulator set-up and run, timed
inside the binding with the GIL released). Per vjp: ``rollout.vjp(dL_dq)`` against the
adjoint sweep's C++ time. Per torch step: ``addsim.torch.rollout`` forward + backward of a
loss on the final state against the C++ time of the simulate + vjp pair measured in the
same iteration (so both see the same machine load). Medians (and minima) over --repeats
iterations on the rigid ball throw (scenes/rigid_sphere_throw.json, 1,000 steps). Last,
the throughput of 8 rollouts + vjps run serially, from 2 Python threads, and as a C++ batch.

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
    try:
        import torch
        from addsim import torch as addsim_torch
    except ImportError:
        torch = None

    scene = addsim.Scene.load(args.scene)
    params = scene.params()
    sel = scene.select(["bodies.0.velocity", "bodies.0.angular_velocity"])
    dl_dq = None
    rows = {"simulate": [], "vjp": [], "torch": []}  # (Python seconds, C++ seconds) per iteration
    for it in range(args.repeats + 1):  # the first iteration warms up and is dropped
        t0 = time.perf_counter()
        rollout = scene.simulate(params)
        q = rollout.q
        sim = (time.perf_counter() - t0, rollout.cpp_seconds)
        if dl_dq is None:
            dl_dq = np.zeros_like(q)
            dl_dq[-1, 0] = 1.0
        t0 = time.perf_counter()
        rollout.vjp(dl_dq)
        vjp = (time.perf_counter() - t0, rollout.vjp_cpp_seconds)
        if it == 0:
            continue
        rows["simulate"].append(sim)
        rows["vjp"].append(vjp)
        if torch is not None:
            x = torch.tensor(sel.gather(params), dtype=torch.float64, requires_grad=True)
            t0 = time.perf_counter()
            addsim_torch.rollout(scene, x, select=sel)[-1, 0].backward()
            rows["torch"].append((time.perf_counter() - t0, sim[1] + vjp[1]))

    print(f"scene {scene.name}: |q| = {scene.num_dofs}, |p| = {scene.num_params}, {scene.steps} steps; "
          f"medians of {args.repeats} iterations")
    for what, pairs in rows.items():
        if not pairs:
            continue
        py = statistics.median(p for p, _ in pairs)
        cpp = statistics.median(c for _, c in pairs)
        over = statistics.median(p / c - 1.0 for p, c in pairs)
        extra = statistics.median(p - c for p, c in pairs)
        # The minima are the least disturbed by other processes on a shared machine.
        py_min, cpp_min = min(p for p, _ in pairs), min(c for _, c in pairs)
        print(f"{what:>8}: Python {1e3 * py:8.3f} ms, C++ {1e3 * cpp:8.3f} ms, overhead {100 * over:6.2f} % "
              f"({1e3 * extra:.3f} ms); minima {1e3 * py_min:.3f} / {1e3 * cpp_min:.3f} ms = "
              f"{100 * (py_min / cpp_min - 1):.2f} %")

    # Throughput of 8 rollouts + vjps: serial, from 2 Python threads (GIL released), and as a
    # C++ batch on 2 threads. Medians of 5 rounds each.
    batch = np.stack([sel.scatter(params, [1.0 + 0.1 * k, 0.0, 2.0, 0.0, -5.0, 0.0]) for k in range(8)])
    grads = np.broadcast_to(dl_dq, (8,) + dl_dq.shape)

    def serial():
        for p in batch:
            scene.simulate(p, threads=1).vjp(dl_dq)

    def python_threads():
        import threading
        work = [batch[0::2], batch[1::2]]
        threads = [threading.Thread(target=lambda ps: [scene.simulate(p, threads=1).vjp(dl_dq) for p in ps], args=(w,))
                   for w in work]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def cpp_batch():
        addsim.vjp_batch(scene.simulate_batch(batch, threads=2), grads, threads=2)

    timings = {}
    for name, fn in (("serial", serial), ("2 Python threads", python_threads), ("C++ batch, 2 threads", cpp_batch)):
        rounds = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            rounds.append(time.perf_counter() - t0)
        timings[name] = statistics.median(rounds)
    for name, t in timings.items():
        print(f"8 rollouts + vjps, {name:>20}: {1e3 * t:8.1f} ms (speed-up {timings['serial'] / t:4.2f})")


if __name__ == "__main__":
    main()
