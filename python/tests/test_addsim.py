"""The addsim Python module against the CLI, finite differences and itself (docs/python.md)."""

import json
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import addsim


# ---------------------------------------------------------------------------------------
# Import, scenes, parameters


def test_import_from_any_folder(tmp_path):
    # With the package's folder on the path (as CTest sets it, or the installed .pth file).
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(addsim.__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", "import addsim, addsim.torch; print(addsim.Scene.__name__)"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Scene"


def test_scene_round_trip(source_dir):
    scene = addsim.Scene.load(source_dir / "scenes" / "rigid_sphere_throw.json", steps=50)
    doc = scene.to_dict()
    assert doc["steps"] == 50
    again = addsim.Scene.from_dict(doc)
    assert again.to_dict() == doc
    assert (again.num_dofs, again.num_params, again.steps, again.dt) == (6, scene.num_params, 50, 0.001)
    np.testing.assert_array_equal(again.simulate().q, scene.simulate().q)


def test_overrides_in_three_spellings(source_dir):
    path = source_dir / "scenes" / "rigid_sphere_throw.json"
    a = addsim.Scene.load(path, ["steps=20", "solver.tolerance=1e-12"])
    b = addsim.Scene.load(path, {"steps": 20, "solver.tolerance": 1e-12})
    c = addsim.Scene.load(path, steps=20, solver__tolerance=1e-12)
    assert a.to_dict() == b.to_dict() == c.to_dict()


def test_parameter_table(rigid_scene):
    table = rigid_scene.parameters()
    assert len(table) == rigid_scene.num_params == len(table.names)
    v = table["bodies.0.velocity"]
    assert v.size == 3 and v.kind == "initial_condition"
    np.testing.assert_array_equal(table.values[v.slice], [1.0, 0.0, 2.0])
    assert table["bodies.ball.velocity"] == v  # the alias resolves too
    mass = table["bodies.0.mass"]
    assert mass.lower >= 0.0 and table.lower[mass.offset] == mass.lower
    p = rigid_scene.params({"bodies.0.velocity": [3.0, 0.0, 1.0]})
    np.testing.assert_array_equal(p[v.slice], [3.0, 0.0, 1.0])
    sel = rigid_scene.select(["bodies.0.velocity", "bodies.0.angular_velocity.0.1"])
    assert len(sel) == 4 and sel.names[3] == "bodies.0.angular_velocity.0.1"
    np.testing.assert_array_equal(sel.gather(table.values), [1.0, 0.0, 2.0, -5.0])


# ---------------------------------------------------------------------------------------
# simulate against the CLI


def test_simulate_equals_cli_trajectory(source_dir, cli, tmp_path, capfd):
    scene_file = source_dir / "scenes" / "rigid_sphere_throw.json"
    cli_run = subprocess.run([str(cli), "simulate", str(scene_file), "--set", "steps=300", "--out", str(tmp_path)],
                             capture_output=True, text=True, timeout=300)
    assert cli_run.returncode == 0, cli_run.stderr
    capfd.readouterr()
    scene = addsim.Scene.load(scene_file, steps=300)
    rollout = scene.simulate()
    assert capfd.readouterr().out == ""  # the library prints nothing
    expected = np.load(tmp_path / "trajectory.npy")
    assert rollout.q.shape == expected.shape == (301, 6)
    np.testing.assert_array_equal(rollout.q, expected)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert scene.meta() == meta
    # Per-step reports match steps.csv; the ball touches the floor, so its COM stays above r.
    steps = np.genfromtxt(tmp_path / "steps.csv", delimiter=",", names=True)
    assert [r.iterations for r in rollout.reports] == [int(k) for k in steps["newton_iterations"]]
    assert rollout.completed and rollout.failure == "" and len(rollout.reports) == 300
    ball = rollout.body("ball")
    assert ball.dof_labels == meta["bodies"][0]["dof_labels"]
    com = ball.center_of_mass()
    assert com.shape == (301, 3)
    np.testing.assert_array_equal(com, rollout.q[:, :3])  # rigid body: c = p_WB
    assert com[:, 2].min() > 0.09
    np.testing.assert_array_equal(rollout.body(0).q, rollout.q)
    assert not rollout.q.flags.writeable


def test_velocities_are_the_time_scheme_differences(particle_scene):
    r = particle_scene.simulate()
    h = particle_scene.dt
    np.testing.assert_array_equal(r.v[0], [0.3, -0.2, 0.5])
    # BDF2 steady state (i ≥ 2): v^i = (3q^i − 4q^{i−1} + q^{i−2}) / 2h.
    i = 10
    np.testing.assert_allclose(r.v[i], (3 * r.q[i] - 4 * r.q[i - 1] + r.q[i - 2]) / (2 * h), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# vjp against the CLI's gradient, finite differences; jvp against vjp


def test_vjp_equals_cli_gradient_and_task_gradient(source_dir, cli):
    task_file = source_dir / "tasks" / "rigid_sphere_throw.json"
    out = subprocess.run([str(cli), "gradient", str(task_file)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    reference = json.loads(out.stdout)
    names = list(reference["gradient"])
    expected = np.array([reference["gradient"][n] for n in names])

    # The task's objective is the final x of the ball's centre of mass: ∂L/∂q^n_x = 1.
    task = addsim.Task.load(task_file)
    rollout = task.scene.simulate(check=True)
    dl_dq = np.zeros_like(rollout.q)
    dl_dq[-1, 0] = 1.0
    g = rollout.vjp(dl_dq, select=task.selection)
    assert list(task.selection.names) == names
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-14)
    assert np.count_nonzero(np.abs(expected) > 1e-3) >= 3

    params = task.parameters()
    phi, grad = task.value_and_gradient(params.x0)
    assert phi == pytest.approx(reference["phi"], rel=1e-14)
    np.testing.assert_allclose(grad, expected, rtol=1e-10)
    np.testing.assert_array_equal(task.gradient(params.x0), grad)
    assert task.evaluate(params.x0) == phi


def _linear_functional(scene, p, gq, gv):
    r = scene.simulate(p, check=True)
    return float(np.sum(gq * r.q) + np.sum(gv * r.v))


@pytest.mark.parametrize("which", ["particle_scene", "rigid_scene", "spinning_scene"])
def test_vjp_against_finite_differences(which, request):
    scene = request.getfixturevalue(which)
    rng = np.random.default_rng(7)
    r = scene.simulate(check=True)
    if which == "spinning_scene":
        # ∂L/∂v^i reaches q^{i−k} of another chart through the chart Jacobian: make sure one switched.
        theta = np.linalg.norm(r.q[:, 3:6], axis=1)
        assert np.abs(np.diff(theta)).max() > 1.0
    gq = rng.standard_normal(r.q.shape)
    gv = rng.standard_normal(r.v.shape)
    grad = r.vjp(gq, gv)
    grad_q_only = r.vjp(gq)
    table = scene.parameters()
    checked = 0
    for entry in table:
        if entry.kind not in ("initial_condition", "mass", "material", "coupling"):
            continue
        for j in range(entry.offset, entry.offset + entry.size):
            h = 1e-6 * max(1.0, abs(table.values[j]))
            if table.values[j] - h < table.lower[j]:
                continue  # a central difference would leave the parameter's domain
            p_plus, p_minus = table.values.copy(), table.values.copy()
            p_plus[j] += h
            p_minus[j] -= h
            fd = (_linear_functional(scene, p_plus, gq, gv) - _linear_functional(scene, p_minus, gq, gv)) / (2 * h)
            fd_q = (_linear_functional(scene, p_plus, gq, 0 * gv) -
                    _linear_functional(scene, p_minus, gq, 0 * gv)) / (2 * h)
            scale = max(abs(fd), 1e-3 * np.abs(grad).max())
            assert abs(grad[j] - fd) <= 1e-5 * scale, (table.names[j], grad[j], fd)
            assert abs(grad_q_only[j] - fd_q) <= 1e-5 * max(abs(fd_q), 1e-3 * np.abs(grad_q_only).max())
            checked += 1
    assert checked >= 6
    assert np.abs(grad).max() > 1e-2


@pytest.mark.parametrize("which", ["particle_scene", "rigid_scene", "fem_scene"])
def test_jvp_matches_vjp(which, request):
    # Dot-product test: <gq, J dp> = <Jᵀ gq, dp> for random gq and dp.
    scene = request.getfixturevalue(which)
    rng = np.random.default_rng(11)
    r = scene.simulate(check=True)
    second = {"particle_scene": "bodies.0.mass", "rigid_scene": "bodies.0.mass",
              "fem_scene": "bodies.0.angular_velocity"}[which]
    sel = scene.select(["bodies.0.velocities" if which == "particle_scene" else "bodies.0.velocity", second])
    dp = rng.standard_normal(len(sel))
    gq = rng.standard_normal(r.q.shape)
    tangent = r.jvp(dp, select=sel)
    assert tangent.shape == r.q.shape
    lhs = float(np.sum(gq * tangent))
    rhs = float(r.vjp(gq, select=sel) @ dp)
    assert lhs == pytest.approx(rhs, rel=1e-9)
    assert abs(lhs) > 1e-3
    # The dict form and a full vector give the same tangent.
    full = sel.scatter(np.zeros(scene.num_params), dp)
    np.testing.assert_array_equal(r.jvp(full), tangent)


def test_jvp_against_finite_differences(particle_scene):
    r = particle_scene.simulate(check=True)
    dp = {"bodies.0.velocities": [0.5, 1.0, -0.3]}
    tangent = r.jvp(dp)
    h = 1e-6
    p = particle_scene.params()
    sel = particle_scene.select(["bodies.0.velocities"])
    step = sel.scatter(np.zeros_like(p), np.array([0.5, 1.0, -0.3]))
    fd = (particle_scene.simulate(p + h * step).q - particle_scene.simulate(p - h * step).q) / (2 * h)
    np.testing.assert_allclose(tangent, fd, atol=1e-7 * np.abs(fd).max())
    assert np.abs(tangent[-1]).max() > 0.01


# ---------------------------------------------------------------------------------------
# Bad input: a clear exception, no crash, no hang, nothing on stdout


def test_bad_input_raises_input_error(source_dir, tmp_path, capfd, rigid_scene):
    with pytest.raises(addsim.InputError, match="no_such_scene.json"):
        addsim.Scene.load(tmp_path / "no_such_scene.json")
    with pytest.raises(addsim.InputError, match="bodies.0.velocity"):
        addsim.Scene.load(source_dir / "scenes" / "rigid_sphere_throw.json", bodies__0__velocity=[1, 2])
    doc = rigid_scene.to_dict()
    doc["bogus_key"] = 1
    with pytest.raises(addsim.InputError, match="bogus_key"):
        addsim.Scene.from_dict(doc, source="mine")
    with pytest.raises(addsim.InputError, match="NaN|nan"):
        addsim.Scene.from_dict({"steps": float("nan")})
    with pytest.raises(addsim.InputError, match="no.such.key"):
        rigid_scene.params({"no.such.key": 1.0})
    with pytest.raises(addsim.InputError, match="bodies.0.mass"):
        rigid_scene.simulate({"bodies.0.mass": -1.0})
    with pytest.raises(addsim.InputError, match=r"\|p\|"):
        rigid_scene.simulate(np.zeros(3))
    with pytest.raises(addsim.InputError, match="threads"):
        rigid_scene.simulate(threads=3)
    r = rigid_scene.simulate()
    with pytest.raises(addsim.InputError, match="dL_dq"):
        r.vjp(np.zeros((3, 6)))
    with pytest.raises(addsim.InputError, match="dL_dv"):
        r.vjp(np.zeros_like(r.q), np.zeros((len(r.q), 2)))
    with pytest.raises(addsim.InputError, match="non-finite"):
        r.vjp(np.full_like(r.q, np.nan))
    with pytest.raises(addsim.InputError):
        r.body("nobody")
    with pytest.raises(addsim.InputError, match="task"):
        addsim.Task.load(tmp_path / "missing_task.json")
    assert issubclass(addsim.InputError, ValueError)
    assert capfd.readouterr().out == ""


def test_failed_rollout_reports_step_and_reason(source_dir, capfd):
    # One Newton iteration per step cannot reach 1e-14 N on the sheet pulled across a plane.
    scene = addsim.Scene.load(source_dir / "scenes" / "mass_spring_sheet.json", solver__max_iterations=1,
                              solver__tolerance=1e-14)
    r = scene.simulate()
    assert not r.completed and r.failed_step >= 1 and r.failure
    assert len(r.q) == r.failed_step  # only converged states are kept
    with pytest.raises(addsim.SimulationError) as err:
        r.check()
    assert err.value.step == r.failed_step and err.value.reason == r.failure
    with pytest.raises(addsim.SimulationError) as err:
        r.vjp(np.zeros_like(r.q))
    assert err.value.step == r.failed_step and err.value.reason == r.failure
    assert f"step {r.failed_step}" in str(err.value)
    with pytest.raises(addsim.SimulationError):
        scene.simulate(check=True)
    assert capfd.readouterr().out == ""


# ---------------------------------------------------------------------------------------
# Parallel rollouts


def test_parallel_python_threads_equal_serial(rigid_scene):
    params = [rigid_scene.params({"bodies.0.velocity": [1.0 + 0.1 * k, 0.0, 2.0]}) for k in range(6)]
    serial = [rigid_scene.simulate(p) for p in params]
    gq = np.ones_like(serial[0].q)
    serial_grads = [r.vjp(gq) for r in serial]
    results = [None] * len(params)

    def work(k):
        r = rigid_scene.simulate(params[k])
        results[k] = (r.q, r.vjp(gq))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(params))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    for k in range(len(params)):
        np.testing.assert_array_equal(results[k][0], serial[k].q)
        np.testing.assert_array_equal(results[k][1], serial_grads[k])
    assert not np.array_equal(serial[0].q, serial[1].q)


def test_batch_equals_serial(fem_scene):
    base = fem_scene.params()
    sel = fem_scene.select(["bodies.0.velocity"])
    batch = np.stack([sel.scatter(base, [1.0 + 0.2 * k, 0.0, -0.5 + 0.1 * k]) for k in range(4)])
    rollouts = fem_scene.simulate_batch(batch, threads=2)
    rng = np.random.default_rng(3)
    gq = rng.standard_normal((4,) + rollouts[0].q.shape)
    grads = addsim.vjp_batch(rollouts, gq, threads=2)
    for k in range(4):
        serial = fem_scene.simulate(batch[k], threads=1)
        np.testing.assert_array_equal(rollouts[k].q, serial.q)
        np.testing.assert_array_equal(grads[k], serial.vjp(gq[k]))


# ---------------------------------------------------------------------------------------
# Fixes of the ux20 review: wrong lengths, wrong types, messages, read-only states, batches


def test_selection_rejects_wrong_lengths(rigid_scene):
    # These read and wrote outside p (garbage, a segfault, a double free) before the check.
    np_ = rigid_scene.num_params
    sel = rigid_scene.select(["bodies.0.mass"])
    assert sel.num_params == np_
    for n in (0, 2, np_ + 1):
        with pytest.raises(addsim.InputError, match=rf"p has {n} entries, expected \|p\| = {np_}"):
            sel.gather(np.zeros(n))
        with pytest.raises(addsim.InputError, match=rf"p has {n} entries, expected \|p\| = {np_}"):
            sel.scatter(np.zeros(n), [1.0])
    kn = rigid_scene.select(["contact.kn"])
    with pytest.raises(addsim.InputError, match=r"values has 2 entries, expected 1"):
        kn.scatter(rigid_scene.params({}), [1, 2])
    p = rigid_scene.params()
    np.testing.assert_array_equal(sel.gather(sel.scatter(p, [2.5])), [2.5])


def test_rollout_states_stay_read_only(rigid_scene):
    r = rigid_scene.simulate()
    q = r.q
    first = float(q[0, 0])
    for a in (q, r.v, q[1:], r.body(0).q):
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a.setflags(write=True)
    with pytest.raises(ValueError):
        q[0, 0] = 99.0
    assert r.q[0, 0] == first
    assert r.q is r.q  # one cached array, not a copy per access


def test_non_finite_values_name_their_key(source_dir, rigid_scene):
    path = source_dir / "scenes" / "rigid_sphere_throw.json"
    for spelled in ({"contact__kn": float("inf")}, {"overrides": {"contact.kn": np.float64("inf")}}):
        with pytest.raises(addsim.InputError, match=r"rigid_sphere_throw.json: contact.kn: got infinity; NaN and "
                                                    r"infinity are not allowed") as err:
            addsim.Scene.load(path, **spelled)
        assert len(str(err.value)) < 300
    with pytest.raises(addsim.InputError, match=r"bodies.0.velocity.1: got NaN"):
        addsim.Scene.load(path, bodies__0__velocity=[1.0, float("nan"), 0.0])
    with pytest.raises(addsim.InputError, match=r"^mine: bodies.0.velocity.2: got -infinity"):
        addsim.Scene.from_dict(rigid_scene.to_dict(), {"bodies.0.velocity": np.array([1.0, 0.0, -np.inf])},
                               source="mine")
    # A dictionary with one NaN: the key path, not the whole document.
    doc = json.loads((source_dir / "scenes" / "quadruped_walk.json").read_text())
    doc["contact"]["kn"] = float("nan")
    with pytest.raises(addsim.InputError, match=r"^<dict>: contact.kn: got NaN; NaN and infinity are not allowed") \
            as err:
        addsim.Scene.from_dict(doc)
    assert len(str(err.value)) < 300
    doc["contact"]["kn"] = {1, 2}
    with pytest.raises(addsim.InputError, match=r"^<dict>: contact.kn: a set is not a JSON value"):
        addsim.Scene.from_dict(doc)


def test_wrong_argument_types_raise_type_error(rigid_scene):
    r = rigid_scene.simulate()
    with pytest.raises(TypeError, match=r"vjp_batch: rollouts\[0\] must be an addsim.Rollout, got int"):
        addsim.vjp_batch([1, 2], np.zeros((2,) + r.q.shape))
    with pytest.raises(TypeError, match=r"vjp_batch: rollouts must be a list of addsim.Rollout, got Scene"):
        addsim.vjp_batch(rigid_scene, np.zeros((1,) + r.q.shape))
    with pytest.raises(TypeError, match=r"addsim.Scene\(impl\) must be a loaded scene .*got str"):
        addsim.Scene("scenes/rigid_sphere_throw.json")
    with pytest.raises(TypeError, match=r"addsim.Task\(impl\) must be a loaded task .*got dict"):
        addsim.Task({})
    with pytest.raises(TypeError, match=r"select: paths must be a key path or a list of key paths.*got int"):
        rigid_scene.select(5)
    with pytest.raises(TypeError, match=r"select: paths must be .*got a list holding a int"):
        r.vjp(np.zeros_like(r.q), select=[5])
    with pytest.raises(TypeError, match=r"select: paths must be .*got dict"):
        r.jvp([1.0], select={"bodies.0.mass": 1})


def _batch_with_a_failed_row(source_dir):
    # Three Newton iterations per step: the sphere in free flight converges, the one thrown
    # down hard into the floor does not on its impact step.
    scene = addsim.Scene.load(source_dir / "scenes" / "rigid_sphere_throw.json", steps=60,
                              solver__max_iterations=3)
    P = np.stack([scene.params({"bodies.0.velocity": v}) for v in ([1.0, 0.0, 2.0], [1.0, 0.0, -20.0])])
    return scene, P


def test_simulate_batch_failed_row(source_dir):
    scene, P = _batch_with_a_failed_row(source_dir)
    rows = scene.simulate_batch(P, threads=2)  # check=False by default, as simulate
    serial = [scene.simulate(P[b], threads=1) for b in range(2)]
    assert rows[0].completed and not rows[1].completed
    for b in range(2):
        assert rows[b].completed == serial[b].completed and rows[b].failed_step == serial[b].failed_step
        assert rows[b].failure == serial[b].failure
        np.testing.assert_array_equal(rows[b].q, serial[b].q)
    assert rows[1].failed_step >= 1 and len(rows[1].q) == rows[1].failed_step and rows[1].failure
    with pytest.raises(addsim.SimulationError, match=r"row 1: the rollout failed at step") as err:
        scene.simulate_batch(P, threads=2, check=True)
    assert (err.value.row, err.value.step, err.value.reason) == (1, rows[1].failed_step, rows[1].failure)
    assert all(r.completed for r in scene.simulate_batch(P[:1], check=True))
