"""Batches of task evaluations (Φ and dΦ/dp) over a ``dask.distributed`` cluster.

One machine runs a batch on its cores with ``Task.batch`` (C++ threads, docs/scale-out.md).
Beyond one machine, :func:`map_task` splits the batch into chunks, ships the task file and
every file it references to the workers (:class:`Package`), and runs each chunk there with
the same C++ batch function, so the results equal the in-process batch bit for bit::

    from dask.distributed import Client
    import addsim.dask
    client = Client("tcp://scheduler:8786")
    result = addsim.dask.map_task(client, "tasks/soft_material.json", P)   # P: (N, |p|)
    result.phi, result.dphi_dp, result.completed, result.failure

- Each worker process keeps the tasks it has loaded (model built, meshes generated) in a
  cache keyed by the package's content hash and the overrides, so a sweep of many chunks
  builds each scene once per worker, not once per chunk.
- A rollout that fails (a step that does not converge, an inverted element) or a row that
  is not a valid parameter vector comes back as a row with ``completed`` False and its
  reason; it never fails the batch.
- A worker that dies mid-batch has its chunks rerun by Dask on another worker (the scheduler
  reschedules the lost tasks; ``retries`` more attempts are allowed for a chunk that itself
  raised). Results are assembled by row index, each row exactly once.

Also a command (the path ``addsim sweep --scheduler ADDRESS`` runs)::

    python3 -m addsim.dask --scheduler ADDRESS --task TASK --points IN --out OUT [--errors FILE]
                           [--set PATH=JSON ...] [--no-gradient] [--shared-filesystem]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import pathlib
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import BatchResult, InputError, Task

__all__ = ["Package", "map_task", "worker_cache_info"]

# A package larger than this is refused: a cluster should then share a file system
# (shared_filesystem=True) instead of shipping the files with every batch.
_MAX_PACKAGE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Package:
    """A task (or scene) file plus every file it references, as bytes.

    ``main`` is the file's name relative to the package root; ``files`` maps relative names
    to contents. References are found by reading every JSON file of the package and keeping
    each string value that names an existing file relative to that JSON file's folder (a
    task's ``scene`` and ``data``, a scene's mesh and URDF files, ...), recursively."""

    main: str
    files: tuple  # ((relative name, bytes), ...), sorted by name

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Package":
        start = pathlib.Path(path).resolve()
        if not start.is_file():
            raise InputError(f"{path}: no such file")
        found: dict[pathlib.Path, bytes] = {}
        todo = [start]
        while todo:
            file = todo.pop()
            if file in found:
                continue
            data = file.read_bytes()
            found[file] = data
            if sum(len(d) for d in found.values()) > _MAX_PACKAGE_BYTES:
                raise InputError(f"{path}: the task and the files it references exceed "
                                 f"{_MAX_PACKAGE_BYTES >> 20} MiB; use shared_filesystem=True")
            if file.suffix.lower() != ".json":
                continue
            try:
                doc = json.loads(data)
            except ValueError:
                continue  # the loader on the worker reports the syntax error with its position
            for text in _strings(doc):
                if not text or "\n" in text or len(text) > 4096:
                    continue
                candidate = (file.parent / text)
                try:
                    if candidate.is_file():
                        todo.append(candidate.resolve())
                except OSError:
                    continue
        root = pathlib.Path(os.path.commonpath([str(f.parent) for f in found]))
        files = tuple(sorted((str(f.relative_to(root)), d) for f, d in found.items()))
        return cls(str(start.relative_to(root)), files)

    @property
    def key(self) -> str:
        """Hash of the names and contents: equal packages share one worker cache entry."""
        h = hashlib.sha256(self.main.encode())
        for name, data in self.files:
            h.update(b"\0" + name.encode() + b"\0" + len(data).to_bytes(8, "little"))
            h.update(data)
        return h.hexdigest()[:24]

    def materialize(self, root: str | os.PathLike) -> pathlib.Path:
        """Writes the files under root (once; the folder is named after the key) and returns
        the path of the main file."""
        folder = pathlib.Path(root) / self.key
        done = folder / ".complete"
        if not done.exists():
            for name, data in self.files:
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
                tmp.write_bytes(data)
                os.replace(tmp, target)
            done.write_text("")
        return folder / self.main


def _strings(doc: Any):
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for value in doc.values():
            yield from _strings(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _strings(value)


# Worker-process cache: (package key or path, overrides) → loaded Task. Dask keeps worker
# processes alive across tasks, so each builds a scene once per batch source, not per chunk.
_cache: dict[tuple, Task] = {}
_cache_lock = threading.Lock()
_loads = 0


def worker_cache_info() -> dict:
    """How many tasks this process has loaded and holds (for ``client.run``)."""
    with _cache_lock:
        return {"loads": _loads, "cached": len(_cache)}


def _load(source: Package | str, overrides: tuple) -> Task:
    global _loads
    key = (source.key if isinstance(source, Package) else source, overrides)
    with _cache_lock:
        task = _cache.get(key)
        if task is None:
            if isinstance(source, Package):
                path = source.materialize(pathlib.Path(tempfile.gettempdir()) / "addsim-dask")
            else:
                path = source
            task = Task.load(path, list(overrides))
            _cache[key] = task
            _loads += 1
        return task


def _evaluate_chunk(source: Package | str, overrides: tuple, start: int, params: np.ndarray,
                    gradients: bool) -> dict:
    """Runs rows start … start + len(params) − 1 on this worker (one thread: a Dask worker
    runs as many chunks at once as it has threads)."""
    task = _load(source, overrides)
    try:
        r = task.batch(params, gradients=gradients, threads=1)
    except InputError:
        # Some row is not a valid parameter vector: evaluate row by row so only that row fails.
        rows = []
        for i, row in enumerate(params):
            try:
                rows.append(task.batch(row[None, :], gradients=gradients, threads=1, first_row=start + i))
            except InputError as err:
                n = task.scene.num_params
                rows.append(BatchResult(np.array([math.nan]),
                                        np.full((1, n), math.nan) if gradients else None,
                                        np.array([False]), [f"invalid parameters: {err}"], np.array([-1])))
        r = BatchResult(np.concatenate([x.phi for x in rows]),
                        np.concatenate([x.dphi_dp for x in rows]) if gradients else None,
                        np.concatenate([x.completed for x in rows]), sum((x.failure for x in rows), []),
                        np.concatenate([x.failed_step for x in rows]))
    return {"start": start, "phi": r.phi, "dphi_dp": r.dphi_dp, "completed": r.completed,
            "failure": r.failure, "failed_step": r.failed_step}


def map_task(client, task: str | os.PathLike, params: Any, *, overrides: Sequence[str] = (),
             gradients: bool = True, chunk_size: int | None = None, shared_filesystem: bool = False,
             retries: int = 2) -> BatchResult:
    """Φ and (with ``gradients``) dΦ/dp of a task file at every row of ``params`` (full
    parameter vectors p, shape (N, |p|)) on the workers of ``client``.

    ``overrides`` are 'PATH=JSON' strings as for ``Task.load``. ``chunk_size`` rows go to one
    Dask task (default: about four chunks per worker thread). With ``shared_filesystem`` the
    workers read the task by its absolute path instead of receiving the files. Raises
    InputError when the task cannot be read or params has the wrong shape; failed rollouts
    are rows of the result (``completed`` False)."""
    P = np.atleast_2d(np.asarray(params, dtype=float))
    local = Task.load(task, list(overrides))  # validates the task and overrides here, at once
    n = local.scene.num_params
    if P.ndim != 2 or (P.shape[0] > 0 and P.shape[1] != n):
        raise InputError(f"map_task: params must have shape (N, {n}), got {P.shape}")
    count = P.shape[0]
    if count == 0:
        return BatchResult(np.zeros(0), np.zeros((0, n)) if gradients else None, np.zeros(0, dtype=bool), [],
                           np.zeros(0, dtype=int))
    source: Package | str
    if shared_filesystem:
        source = str(pathlib.Path(task).resolve())
    else:
        source = Package.from_file(task)
    if chunk_size is None:
        threads = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
        chunk_size = max(1, math.ceil(count / (4 * threads)))
    if chunk_size < 1:
        raise InputError(f"map_task: chunk_size must be >= 1, got {chunk_size}")
    [shipped] = client.scatter([source], broadcast=True, hash=False)
    batch_id = uuid.uuid4().hex[:12]
    futures = [client.submit(_evaluate_chunk, shipped, tuple(overrides), start, P[start:start + chunk_size],
                             gradients, key=f"addsim-chunk-{batch_id}-{start}", pure=False, retries=retries)
               for start in range(0, count, chunk_size)]
    chunks = client.gather(futures)
    phi = np.full(count, math.nan)
    grad = np.full((count, n), math.nan) if gradients else None
    completed = np.zeros(count, dtype=bool)
    failure = [""] * count
    failed_step = np.full(count, -1)
    seen = np.zeros(count, dtype=int)
    for c in chunks:
        rows = slice(c["start"], c["start"] + len(c["phi"]))
        seen[rows] += 1
        phi[rows] = c["phi"]
        if gradients:
            grad[rows] = c["dphi_dp"]
        completed[rows] = c["completed"]
        failure[rows] = c["failure"]
        failed_step[rows] = c["failed_step"]
    if not (seen == 1).all():
        raise RuntimeError(f"map_task: rows assembled {seen.min()}..{seen.max()} times (expected once each)")
    return BatchResult(phi, grad, completed, failure, failed_step)


def _main(argv: Sequence[str] | None = None) -> int:
    # The command behind `addsim sweep --scheduler`: points and results as hexadecimal floats
    # (exact in both directions), one row per point.
    parser = argparse.ArgumentParser(prog="python3 -m addsim.dask", description=__doc__.split("\n")[0])
    parser.add_argument("--scheduler", required=True, help="address of the dask scheduler (tcp://host:port)")
    parser.add_argument("--task", required=True)
    parser.add_argument("--points", required=True, help="file: one row per point, |p| hexadecimal floats")
    parser.add_argument("--out", required=True, help="file: per point completed, failed step, phi, dphi_dp, failure")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--errors", help="file for the one-line message of bad input (exit code 2)")
    parser.add_argument("--no-gradient", action="store_true")
    parser.add_argument("--shared-filesystem", action="store_true")
    args = parser.parse_args(argv)
    from dask.distributed import Client  # imported here: addsim.dask imports without a cluster

    rows = [[float.fromhex(x) for x in line.split()] for line in pathlib.Path(args.points).read_text().splitlines()
            if line.strip()]
    try:
        # Seconds to wait for the scheduler (ADDSIM_DASK_TIMEOUT, default 30).
        timeout = float(os.environ.get("ADDSIM_DASK_TIMEOUT", "30"))
        with Client(args.scheduler, timeout=timeout) as client:
            r = map_task(client, args.task, np.array(rows), overrides=args.sets, gradients=not args.no_gradient,
                         shared_filesystem=args.shared_filesystem)
    except (InputError, OSError) as err:
        message = " ".join(str(err).split())
        if args.errors:
            pathlib.Path(args.errors).write_text(message + "\n")
        else:
            print(f"addsim: error: {message}", file=sys.stderr)
        return 2
    tmp = pathlib.Path(args.out + ".tmp")
    with tmp.open("w") as out:
        for k in range(len(rows)):
            values = [r.phi[k]] + (list(r.dphi_dp[k]) if r.dphi_dp is not None else [])
            reason = r.failure[k].replace("\n", " ")
            out.write(f"{int(r.completed[k])} {int(r.failed_step[k])} {' '.join(float(v).hex() for v in values)}"
                      f"\t{reason}\n")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    # Run from the imported module, not from __main__: Dask pickles functions by reference to
    # their module, and workers import addsim.dask (a function of __main__ would be pickled by
    # value, with this process's locks and caches).
    from addsim.dask import _main as _imported_main

    sys.exit(_imported_main())
