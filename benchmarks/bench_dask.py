#!/usr/bin/env python3
"""Dask overhead over the in-process batch (docs/scale-out.md; issue target: ≤ 15 %).

The same batch of soft-ball throws (tasks/ball_to_target.json: 451 tets, 100 steps, Φ and
dΦ/dp by the adjoint) runs (a) in process on 2 C++ threads (``Task.batch``) and (b) on a
LocalCluster of 2 single-threaded worker processes on loopback (``addsim.dask.map_task``),
alternately, --repeats times; medians and the ratio are printed. Also Dask's per-task
round trip (an empty task) and the per-rollout cost, the inputs of the scale-out estimate.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/bench_dask.py [--rollouts 64] [--repeats 3]
"""

import argparse
import pathlib
import statistics
import time

import numpy as np

import addsim
import addsim.dask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = pathlib.Path(__file__).resolve().parents[1]
    parser.add_argument("--task", default=str(root / "tasks" / "ball_to_target.json"))
    parser.add_argument("--rollouts", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=0, help="rows per Dask task (0: about 4 per worker)")
    args = parser.parse_args()
    from dask.distributed import Client, LocalCluster

    task = addsim.Task.load(args.task)
    p0 = task.scene.params()
    v = task.scene.parameters()["bodies.ball.velocity"].slice
    rng = np.random.default_rng(1)
    P = np.tile(p0, (args.rollouts, 1))
    P[:, v] *= rng.uniform(0.9, 1.1, size=(args.rollouts, v.stop - v.start))

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, silence_logs=50)
    client = Client(cluster)
    try:
        chunk = args.chunk or None
        addsim.dask.map_task(client, args.task, P[:2], chunk_size=1)  # workers load the task once
        local_s, dask_s = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            a = task.batch(P, threads=2)
            local_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            b = addsim.dask.map_task(client, args.task, P, chunk_size=chunk)
            dask_s.append(time.perf_counter() - t)
            assert np.array_equal(a.phi, b.phi) and np.array_equal(a.dphi_dp, b.dphi_dp)
        round_trips = []
        for _ in range(50):
            t = time.perf_counter()
            client.submit(int, 1, pure=False).result()
            round_trips.append(time.perf_counter() - t)
    finally:
        client.close()
        cluster.close()
    lm, dm = statistics.median(local_s), statistics.median(dask_s)
    print(f"batch of {args.rollouts} rollouts + adjoints ({pathlib.Path(args.task).name})")
    print(f"  in process, 2 threads : median {lm:.3f} s  (runs {', '.join(f'{x:.3f}' for x in local_s)})")
    print(f"  LocalCluster, 2 procs : median {dm:.3f} s  (runs {', '.join(f'{x:.3f}' for x in dask_s)})")
    print(f"  Dask overhead         : {100 * (dm / lm - 1):+.1f} %")
    print(f"  per rollout + adjoint : {2 * lm / args.rollouts * 1e3:.1f} ms of one core")
    print(f"  Dask task round trip  : median {statistics.median(round_trips) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
