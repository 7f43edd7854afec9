"""addsim.dask on a real LocalCluster (two worker processes, loopback only): results equal the
in-process C++ batch bit for bit, failed rows are records, workers keep tasks warm, and a worker
killed mid-batch loses nothing and duplicates nothing."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import addsim
import addsim.dask

distributed = pytest.importorskip("dask.distributed", reason="Debian's python3-distributed is not installed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=50)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def task_path(source_dir):
    return source_dir / "tasks" / "soft_material.json"


def throws(task: addsim.Task, n: int, seed: int = 3) -> np.ndarray:
    """n parameter vectors with the ball's throw velocity jittered."""
    p0 = task.scene.params()
    v = task.scene.parameters()["bodies.ball.velocity"].slice
    rng = np.random.default_rng(seed)
    P = np.tile(p0, (n, 1))
    P[:, v] += rng.uniform(-0.3, 0.3, size=(n, v.stop - v.start))
    return P


def same(a: addsim.BatchResult, b: addsim.BatchResult) -> None:
    assert np.array_equal(a.phi, b.phi, equal_nan=True)
    assert np.array_equal(a.dphi_dp, b.dphi_dp, equal_nan=True)
    assert np.array_equal(a.completed, b.completed)
    assert a.failure == b.failure
    assert np.array_equal(a.failed_step, b.failed_step)


def test_package_holds_the_task_scene_and_data(task_path):
    pkg = addsim.dask.Package.from_file(task_path)
    names = sorted(name for name, _ in pkg.files)
    assert pkg.main.endswith("soft_material.json")
    assert any(n.endswith("scenes/soft_ball_small.json") for n in names)
    assert any(n.endswith("data/soft_material_markers.csv") for n in names)
    assert len(names) == 3
    assert pkg.key == addsim.dask.Package.from_file(task_path).key


def test_results_equal_the_in_process_batch_bit_for_bit(client, task_path):
    task = addsim.Task.load(task_path)
    P = throws(task, 10)
    local = task.batch(P, threads=2)
    assert local.completed.all()
    remote = addsim.dask.map_task(client, task_path, P, chunk_size=3)
    same(local, remote)
    assert np.all(np.abs(remote.dphi_dp).sum(axis=1) > 0)
    # Without gradients, and with the workers reading the files themselves.
    shared = addsim.dask.map_task(client, task_path, P, gradients=False, shared_filesystem=True)
    assert shared.dphi_dp is None
    assert np.array_equal(shared.phi, local.phi)


def test_failed_and_invalid_rows_are_records(client, task_path):
    task = addsim.Task.load(task_path)
    P = throws(task, 4)
    table = task.scene.parameters()
    P[1, table["bodies.ball.material.youngs_modulus"].offset] = 1e-2   # fails at impact
    P[1, table["bodies.ball.velocity"].offset + 2] = -3.0
    P[2, 0] = np.nan                                                    # not a parameter vector
    r = addsim.dask.map_task(client, task_path, P, chunk_size=4)
    assert list(r.completed) == [True, False, False, True]
    assert r.failed_step[1] > 0 and "step" in r.failure[1]
    assert "invalid parameters" in r.failure[2] and "batch item 2" in r.failure[2]
    assert np.isnan(r.phi[1]) and np.isnan(r.phi[2])
    assert np.isfinite(r.phi[[0, 3]]).all()


def test_workers_keep_loaded_tasks_warm(client, task_path):
    task = addsim.Task.load(task_path, ["scene.contact.kn=1100"])
    before = client.run(addsim.dask.worker_cache_info)
    addsim.dask.map_task(client, task_path, throws(task, 12), overrides=["scene.contact.kn=1100"], chunk_size=1)
    after = client.run(addsim.dask.worker_cache_info)
    # 12 chunks over 2 workers: each worker loaded this task at most once.
    for worker, info in after.items():
        assert info["loads"] - before.get(worker, {"loads": 0})["loads"] <= 1


def test_a_worker_killed_mid_batch_loses_nothing(client, task_path):
    task = addsim.Task.load(task_path)
    P = throws(task, 96, seed=9)
    local = task.batch(P, threads=2)
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    killed = threading.Event()

    def kill() -> None:
        os.kill(victim, signal.SIGKILL)
        killed.set()

    timer = threading.Timer(0.5, kill)
    timer.start()
    try:
        remote = addsim.dask.map_task(client, task_path, P, chunk_size=1)
    finally:
        timer.cancel()
    assert killed.is_set(), "the batch ended before the worker was killed; make it longer"
    same(local, remote)
    # The nanny restarted the killed worker: the cluster is whole again for later tests.
    deadline = time.time() + 60
    while len(client.scheduler_info()["workers"]) < 2 and time.time() < deadline:
        time.sleep(0.2)
    assert victim not in client.run(os.getpid).values()


def test_bad_input_raises_before_any_work(client, task_path):
    with pytest.raises(addsim.InputError):
        addsim.dask.map_task(client, task_path, np.zeros((2, 3)))
    with pytest.raises(addsim.InputError):
        addsim.dask.map_task(client, task_path / "missing.json", np.zeros((1, 3)))


def test_cli_sweep_on_the_scheduler_equals_the_in_process_sweep(client, task_path, cli, tmp_path):
    import subprocess

    args = ["sweep", str(task_path), "--samples", "6", "--seed", "4", "--quiet"]
    local = subprocess.run([str(cli), *args, "--out", str(tmp_path / "local")], capture_output=True, text=True)
    assert local.returncode == 0, local.stderr
    remote = subprocess.run([str(cli), *args, "--out", str(tmp_path / "remote"), "--scheduler",
                             client.scheduler.address], capture_output=True, text=True)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == "" and remote.stderr == ""
    assert (tmp_path / "local" / "sweep.csv").read_text() == (tmp_path / "remote" / "sweep.csv").read_text()
    assert sorted(p.name for p in (tmp_path / "remote").iterdir()) == ["sweep.csv"]
    # An unreachable scheduler is bad input: one line, exit code 2.
    bad = subprocess.run([str(cli), *args, "--out", str(tmp_path / "bad"), "--scheduler", "tcp://127.0.0.1:9"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "ADDSIM_DASK_TIMEOUT": "2"})
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.startswith("addsim: error: --scheduler tcp://127.0.0.1:9") and bad.stderr.count("\n") == 1
