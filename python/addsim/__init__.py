"""addsim: analytically differentiable simulation of rigid bodies, FEM soft bodies and
mass-spring systems with frictional contact (Geilinger et al., ADD, TOG 2020).

The C++ core runs the simulation, the adjoint (``Rollout.vjp``) and direct sensitivities
(``Rollout.jvp``); this package gives them numpy arrays and, in ``addsim.torch``, a
PyTorch autograd op. See docs/python.md.

    import addsim
    scene = addsim.Scene.load("scenes/rigid_sphere_throw.json", steps=200)
    rollout = scene.simulate({"bodies.0.velocity": [1.0, 0.0, 2.0]})
    x = rollout.body("ball").center_of_mass()[-1, 0]
    dL_dq = np.zeros_like(rollout.q); dL_dq[-1, 0] = 1.0
    dx_dv = rollout.vjp(dL_dq, select=["bodies.0.velocity"])
"""

from __future__ import annotations

import json as _json
import os as _os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import _addsim
from ._addsim import BodyView, InputError, ParameterEntry, Selection, SimulationError, StepReport

__all__ = [
    "BatchResult",
    "BodyView",
    "InputError",
    "Parameter",
    "ParameterTable",
    "Rollout",
    "Scene",
    "Selection",
    "SimulationError",
    "StepReport",
    "Task",
    "TaskParameters",
]


def _json_default(value: Any) -> Any:
    # numpy scalars and arrays inside scene dictionaries and override values.
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _first_invalid(value: Any, path: str) -> tuple[str, str] | None:
    """(key path, what is wrong) of the first value inside ``value`` that JSON cannot hold: a
    NaN or infinite number, or an object of another type; None if there is none."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            shown = "NaN" if value != value else ("-" if value < 0 else "") + "infinity"
            return path, f"got {shown}; NaN and infinity are not allowed (values must be finite numbers)"
        return None
    if isinstance(value, Mapping):
        items = ((str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return path, f"a {type(value).__name__} is not a JSON value (expected a number, string, list or dictionary)"
    for key, item in items:
        found = _first_invalid(item, f"{path}.{key}" if path else key)
        if found is not None:
            return found
    return None


def _dumps(value: Any, source: str, path: str = "") -> str:
    """JSON text of ``value`` (a scene document, or the value of the override at key path
    ``path``). allow_nan=False: NaN and infinity are not JSON and the scene reader would
    reject them anyway; an error names the source and the key path of the first bad value,
    never the whole document."""
    try:
        return _json.dumps(value, default=_json_default, allow_nan=False)
    except (TypeError, ValueError) as err:
        found = _first_invalid(value, path)
        if found is None:  # not expected: every failure of json.dumps is a value _first_invalid finds
            raise InputError(f"{source}: {path or 'document'}: cannot convert to JSON: {str(err)[:200]}") from None
        raise InputError(f"{source}: {found[0] or 'document'}: {found[1]}") from None


def _overrides(overrides: Sequence[str] | Mapping[str, Any] | None, kwargs: Mapping[str, Any],
               source: str) -> list[str]:
    """'PATH=JSON' strings from a list of such strings, a {path: value} mapping and keyword
    arguments (``solver__tolerance=1e-12`` is the key path ``solver.tolerance``); ``source``
    names the scene or task file in error messages."""
    out: list[str] = []
    if overrides is None:
        pass
    elif isinstance(overrides, Mapping):
        out += [f"{path}={_dumps(value, source, str(path))}" for path, value in overrides.items()]
    elif isinstance(overrides, str):
        out.append(overrides)
    else:
        for item in overrides:
            if not isinstance(item, str):
                raise InputError(f"override {item!r}: expected a 'PATH=JSON' string")
            out.append(item)
    for key, value in kwargs.items():
        path = key.replace("__", ".")
        out.append(f"{path}={_dumps(value, source, path)}")
    return out


def _require(value: Any, kind: type, argument: str, expected: str) -> None:
    # Wrong-type arguments: a TypeError naming the argument, before any attribute of it is read.
    if not isinstance(value, kind):
        raise TypeError(f"{argument} must be {expected}, got {type(value).__name__}")


@dataclass(frozen=True)
class Parameter:
    """One entry of a scene's parameter table: ``rows × cols`` scalars at ``offset`` in p."""

    path: str
    alias: str
    kind: str
    offset: int
    rows: int
    cols: int
    value: np.ndarray
    lower: float
    upper: float
    log_scale: bool

    @property
    def size(self) -> int:
        return self.rows * self.cols

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.size)


class ParameterTable:
    """The scene's differentiable parameters p (model/parameters.h): entries by key path, and
    per scalar its name, default value, bounds and log flag (arrays of length |p|)."""

    def __init__(self, scene: "Scene"):
        defaults = scene._impl.default_params()
        self.entries: list[Parameter] = []
        for e in scene._impl.parameter_entries():
            value = defaults[e.offset:e.offset + e.size].reshape(e.rows, e.cols)
            self.entries.append(Parameter(e.path, e.alias, e.kind, e.offset, e.rows, e.cols, value.copy(),
                                          e.lower, e.upper, e.log_scale))
        self.names: list[str] = scene._impl.parameter_names()
        self.values: np.ndarray = defaults
        self.lower = np.empty(len(defaults))
        self.upper = np.empty(len(defaults))
        self.log_scale = np.zeros(len(defaults), dtype=bool)
        for e in self.entries:
            self.lower[e.slice], self.upper[e.slice], self.log_scale[e.slice] = e.lower, e.upper, e.log_scale

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):
        return iter(self.entries)

    def __getitem__(self, path: str) -> Parameter:
        for e in self.entries:
            if path in (e.path, e.alias):
                return e
        raise KeyError(path)

    def __repr__(self) -> str:
        rows = ", ".join(f"{e.path}[{e.rows}x{e.cols}]" for e in self.entries)
        return f"ParameterTable(|p|={len(self)}: {rows})"


class Scene:
    """A validated scene (docs/scene-format.md) and its finalised model. Immutable; share one
    scene between threads freely."""

    def __init__(self, impl: "_addsim._Scene"):
        _require(impl, _addsim._Scene, "addsim.Scene(impl)",
                 "a loaded scene (make scenes with Scene.load(path) or Scene.from_dict(doc))")
        self._impl = impl

    @classmethod
    def load(cls, path: str | _os.PathLike, overrides: Sequence[str] | Mapping[str, Any] | None = None,
             **kwargs: Any) -> "Scene":
        """Reads a scene file with overrides: 'PATH=JSON' strings, a {path: value} mapping,
        or keywords with ``__`` for dots (``Scene.load(f, steps=200, solver__tolerance=1e-12)``).
        Raises InputError naming the file and key path for anything invalid."""
        path = _os.fspath(path)
        return cls(_addsim._Scene.load_file(path, _overrides(overrides, kwargs, str(path))))

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any] | None = None,
                  source: str = "<dict>", **kwargs: Any) -> "Scene":
        """Builds a scene from a dictionary in the scene-file format, validated exactly like a
        file (``source`` names it in error messages)."""
        if not isinstance(doc, Mapping):
            raise InputError(f"{source}: a scene must be a dictionary, got {type(doc).__name__}")
        return cls(_addsim._Scene.load_text(_dumps(dict(doc), source), source, _overrides(overrides, kwargs, source)))

    def to_dict(self) -> dict:
        """The scene document after overrides, as validated (``Scene.from_dict`` round-trips it)."""
        return self._impl.document()

    name = property(lambda self: self._impl.name)
    description = property(lambda self: self._impl.description)
    num_dofs = property(lambda self: self._impl.num_dofs, doc="|q|")
    num_params = property(lambda self: self._impl.num_params, doc="|p|")
    steps = property(lambda self: self._impl.steps, doc="number of time steps n")
    dt = property(lambda self: self._impl.dt, doc="time step (s)")

    def meta(self) -> dict:
        """The DOF layout that ``addsim simulate`` writes to meta.json."""
        return self._impl.meta()

    def parameters(self) -> ParameterTable:
        return ParameterTable(self)

    def params(self, updates: Mapping[str, Any] | None = None) -> np.ndarray:
        """The full parameter vector p (|p|): the defaults with {key path: values} replaced."""
        return self._impl.params(updates)

    def select(self, paths: str | Iterable[str]) -> Selection:
        """Scalars of p chosen by key paths (entries, rows or single scalars)."""
        if isinstance(paths, str):
            return self._impl.select([paths])
        given = type(paths).__name__
        if isinstance(paths, Iterable) and not isinstance(paths, Mapping):
            paths = list(paths)
            bad = [type(path).__name__ for path in paths if not isinstance(path, str)]
            if not bad:
                return self._impl.select(paths)
            given = f"a list holding a {bad[0]}"
        raise TypeError(f"select: paths must be a key path or a list of key paths (strings), got {given}")

    def simulate(self, params: Any = None, *, threads: int = 0, check: bool = False) -> "Rollout":
        """Runs the scene from params: None (defaults), a full vector p, or {key path: values}.
        The GIL is released while it runs. A step that fails ends the rollout early
        (``rollout.completed`` is False); with ``check=True`` that raises SimulationError.
        ``threads`` (1 or 2) overrides the scene's ``solver.threads`` (0 = the scene's)."""
        rollout = Rollout(self, _addsim.simulate(self._impl, params, threads))
        if check:
            rollout.check()
        return rollout

    def simulate_batch(self, params: Any, *, threads: int = 0, check: bool = False) -> list["Rollout"]:
        """One rollout per row of params (B × |p|, or a list of {key path: values}), run in
        parallel on ``threads`` C++ threads (0 = all cores), each simulator on one thread, so
        the result equals ``simulate(p, threads=1, check=check)`` row by row, bit for bit: a
        row whose step fails is a rollout with ``completed`` False (states up to the failed
        step); with ``check=True`` the first failed row (lowest index) raises SimulationError
        (``.row``, ``.step``, ``.reason``) once all rows have run."""
        if isinstance(params, (list, tuple)) and params and isinstance(params[0], Mapping):
            params = np.stack([self.params(d) for d in params])
        impls = _addsim.simulate_batch(self._impl, np.atleast_2d(np.asarray(params, dtype=float)), threads)
        rollouts = [Rollout(self, r) for r in impls]
        if check:
            for row, r in enumerate(rollouts):
                if not r.completed:
                    raise _failure(r, row)
        return rollouts

    def __repr__(self) -> str:
        return f"Scene({self.name!r}, |q|={self.num_dofs}, |p|={self.num_params}, steps={self.steps}, dt={self.dt})"


def _selected(scene: Scene, select: Any) -> Selection | None:
    if select is None:
        return None
    if isinstance(select, Selection):
        if select.num_params != scene.num_params:
            raise InputError(f"select: the Selection is of a parameter vector of |p| = {select.num_params}, "
                             f"this scene has |p| = {scene.num_params} (select it from this scene)")
        return select
    return scene.select(select)


class Rollout:
    """A recorded run: states q, v (numpy, (steps+1) × |q|, read-only, copied once from the
    C++ trajectory on first access), per-step reports, and its vector–Jacobian (adjoint) and
    Jacobian–vector (direct) products."""

    def __init__(self, scene: Scene, impl: "_addsim.Rollout"):
        _require(scene, Scene, "addsim.Rollout(scene, impl)", "an addsim.Scene")
        _require(impl, _addsim.Rollout, "addsim.Rollout(scene, impl)", "a rollout (made by Scene.simulate)")
        self.scene = scene
        self._impl = impl
        self.vjp_cpp_seconds = 0.0  # wall time of the last vjp's C++ part (s), for benchmarks

    q = property(lambda self: self._impl.q, doc="q⁰ … q^m, shape (m+1, |q|)")
    v = property(lambda self: self._impl.v, doc="v⁰ … v^m, shape (m+1, |q|) (the time scheme's differences of q)")
    p = property(lambda self: self._impl.p, doc="the parameters p of the run")
    completed = property(lambda self: self._impl.completed)
    failure = property(lambda self: self._impl.failure, doc="why the run stopped early ('' if completed)")
    failed_step = property(lambda self: self._impl.failed_step)
    reports = property(lambda self: self._impl.reports, doc="one StepReport per attempted step")
    wall_seconds = property(lambda self: self._impl.wall_seconds, doc="the forward run's wall time (s)")
    cpp_seconds = property(lambda self: self._impl.cpp_seconds,
                           doc="wall time of the C++ part of the call that made this rollout (s)")

    @property
    def times(self) -> np.ndarray:
        return np.arange(self.q.shape[0]) * self.scene.dt

    def check(self) -> "Rollout":
        """Raises SimulationError (with .step and .reason) if the rollout did not complete."""
        if not self.completed:
            raise _failure(self)
        return self

    def body(self, key: str | int) -> BodyView:
        """One body's columns (by meta.json name, 'bodies.<i>' or index): ``.q``, ``.v``,
        ``.center_of_mass()`` (m+1, 3), ``.dof_labels``."""
        return self._impl.body(key)

    def vjp(self, dL_dq: Any, dL_dv: Any = None, select: Any = None) -> np.ndarray:
        """dL/dp for a loss L with upstream gradients ∂L/∂q^i (an array shaped like ``q``) and
        optionally ∂L/∂v^i (shaped like ``v``), by one adjoint sweep. Returns all of dL/dp
        (|p|), or the entries of the key paths / Selection ``select``."""
        g, self.vjp_cpp_seconds = self._impl._vjp(np.asarray(dL_dq, dtype=float),
                                                  None if dL_dv is None else np.asarray(dL_dv, dtype=float))
        sel = _selected(self.scene, select)
        return g if sel is None else g[np.asarray(sel.indices, dtype=int)]

    def jvp(self, dp: Any, select: Any = None) -> np.ndarray:
        """dq^i/dp · dp for every step (shape of ``q``) by direct sensitivities. dp: a full
        vector (|p|), {key path: values}, or the values of the selection ``select``."""
        sel = _selected(self.scene, select)
        if sel is not None:
            full = sel.scatter(np.zeros(self.scene.num_params), np.asarray(dp, dtype=float))
        elif isinstance(dp, Mapping):
            full = np.zeros(self.scene.num_params)
            for path, value in dp.items():
                idx = np.asarray(self.scene.select([path]).indices, dtype=int)
                full[idx] = np.asarray(value, dtype=float).ravel()
        else:
            full = np.asarray(dp, dtype=float)
        return self._impl._jvp(full)

    def __repr__(self) -> str:
        state = "completed" if self.completed else f"failed at step {self.failed_step}"
        return f"Rollout({self.scene.name!r}, states={self.q.shape[0]}, {state})"


def _failure(rollout: Rollout, row: int | None = None) -> SimulationError:
    # row: the rollout's row in a batch (named in the message and kept as .row).
    where = "" if row is None else f"row {row}: "
    err = SimulationError(f"{rollout.scene._impl.source}: {where}the rollout failed at step {rollout.failed_step}: "
                          f"{rollout.failure}")
    err.step = rollout.failed_step
    err.reason = rollout.failure
    err.row = row
    return err


def vjp_batch(rollouts: Sequence[Rollout], dL_dq: Any, dL_dv: Any = None, *, threads: int = 0) -> np.ndarray:
    """dL/dp (B × |p|) of B rollouts of one scene with upstream gradients (B, steps+1, |q|),
    one adjoint sweep each, run in parallel on ``threads`` C++ threads (0 = all cores)."""
    _require(rollouts, Iterable, "vjp_batch: rollouts", "a list of addsim.Rollout")
    rollouts = list(rollouts)
    for b, r in enumerate(rollouts):
        _require(r, Rollout, f"vjp_batch: rollouts[{b}]", "an addsim.Rollout")
    return _addsim.vjp_batch([r._impl for r in rollouts], np.asarray(dL_dq, dtype=float),
                             None if dL_dv is None else np.asarray(dL_dv, dtype=float), threads)


@dataclass(frozen=True)
class TaskParameters:
    """A task's optimiser variables x (docs/task-format.md): one per selected scalar, x = ln p
    for log-scaled ones, else x = p; bounds in p's units."""

    names: list
    x0: np.ndarray
    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    log_scale: np.ndarray


@dataclass
class BatchResult:
    """Results of a batch of task evaluations, one row per parameter vector."""
    phi: np.ndarray            #: (B,) Φ, NaN where the rollout failed
    dphi_dp: np.ndarray | None #: (B, |p|) dΦ/dp by the adjoint (NaN rows where failed), None without gradients
    completed: np.ndarray      #: (B,) bool
    failure: list              #: (B,) reason naming the step, "" where completed
    failed_step: np.ndarray    #: (B,) the step that did not converge, -1 where none


class Task:
    """A task file (docs/task-format.md): scene, selected parameters and objective Φ."""

    def __init__(self, impl: "_addsim._Task"):
        _require(impl, _addsim._Task, "addsim.Task(impl)", "a loaded task (make tasks with Task.load(path))")
        self._impl = impl
        self.scene = Scene(impl.scene)

    @classmethod
    def load(cls, path: str | _os.PathLike, overrides: Sequence[str] | Mapping[str, Any] | None = None,
             **kwargs: Any) -> "Task":
        """Reads a task file; overrides as for Scene.load ('scene.<path>' for scene keys)."""
        path = _os.fspath(path)
        return cls(_addsim._Task.load_file(path, _overrides(overrides, kwargs, str(path))))

    name = property(lambda self: self._impl.name)
    description = property(lambda self: self._impl.description)
    selection = property(lambda self: self._impl.selection)

    def parameters(self) -> TaskParameters:
        sel = self._impl.selection
        lower, upper = self._impl.bounds()
        p = self.scene.params()
        return TaskParameters(list(sel.names), self._impl.x0(), sel.gather(p), lower, upper,
                              np.asarray(self._impl.log_scale(), dtype=bool))

    def params_of(self, x: Any) -> np.ndarray:
        """The full parameter vector p for optimiser variables x."""
        return self._impl.p_of(np.asarray(x, dtype=float))

    def evaluate(self, x: Any) -> float:
        """Φ at x (one rollout). Raises SimulationError if the rollout fails."""
        return self._impl.evaluate(np.asarray(x, dtype=float))

    def gradient(self, x: Any) -> np.ndarray:
        """dΦ/dx at x by the adjoint (one rollout and one backward sweep)."""
        return self._impl.value_and_gradient(np.asarray(x, dtype=float))[1]

    def value_and_gradient(self, x: Any) -> tuple[float, np.ndarray]:
        return self._impl.value_and_gradient(np.asarray(x, dtype=float))

    def batch(self, params: Any, *, gradients: bool = True, threads: int = 0,
              first_row: int = 0) -> "BatchResult":
        """Φ and dΦ/dp at every row of params (full parameter vectors p, shape (B, |p|)) as one
        C++ batch over `threads` threads (0: all cores). A failed rollout is a row with
        completed False, NaN values and its reason; it raises nothing (docs/scale-out.md).
        first_row: the number of params' first row in error messages (`batch item k`), for a
        chunk of a larger batch (addsim.dask)."""
        phi, grad, completed, failure, failed_step = self._impl.batch(
            np.atleast_2d(np.asarray(params, dtype=float)), gradients, threads, first_row)
        return BatchResult(np.asarray(phi), None if grad is None else np.asarray(grad),
                           np.asarray(completed, dtype=bool), list(failure), np.asarray(failed_step, dtype=int))

    def __repr__(self) -> str:
        return f"Task({self.name!r}, parameters={list(self._impl.selection.names)})"
