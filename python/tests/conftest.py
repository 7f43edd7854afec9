"""Shared fixtures of the addsim Python tests: the source tree, the CLI binary and small
scenes (short rollouts, contact-free or tight Newton tolerance, so finite differences work)."""

import os
import pathlib
import shutil
import tempfile

import pytest

import addsim

SOURCE_DIR = pathlib.Path(os.environ.get("ADDSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))

# Temporary files (docs/testing.md, "Temporary files"): everything the session writes under the
# temp dir goes to one fresh addsim_pytest_* folder, which becomes $TMPDIR for this process and its
# children (the CLI, Dask's workers with their dask-worker-space and addsim-dask packages) and
# holds pytest's tmp_path folders. A test's tmp_path is removed when the test passed, kept and
# named in its report when it failed; the folder is removed when the session passed.
_TEMP_ROOT = pytest.StashKey[pathlib.Path]()
_TEST_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # First, before pytest's tmpdir plugin reads --basetemp.
    root = pathlib.Path(tempfile.mkdtemp(prefix="addsim_pytest_"))
    config.stash[_TEMP_ROOT] = root
    os.environ["TMPDIR"] = str(root)
    tempfile.tempdir = None  # gettempdir() caches its first answer: read $TMPDIR again
    if config.option.basetemp is None:
        config.option.basetemp = str(root / "basetemp")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    path = (getattr(item, "funcargs", None) or {}).get("tmp_path")
    if report.failed:
        item.stash[_TEST_FAILED] = True
        if path is not None:
            report.sections.append(("temporary directory", f"kept {path} (the test failed)"))
    if report.when == "teardown" and path is not None and not item.stash.get(_TEST_FAILED, False):
        shutil.rmtree(path, ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    root = session.config.stash.get(_TEMP_ROOT, None)
    if root is not None and exitstatus == 0:
        shutil.rmtree(root, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    root = config.stash.get(_TEMP_ROOT, None)
    if root is not None and exitstatus != 0:
        terminalreporter.write_sep("-", "temporary files")
        terminalreporter.write_line(f"kept the temporary directory {root} (the session failed)")


def _cli_path() -> pathlib.Path | None:
    env = os.environ.get("ADDSIM_CLI")
    if env:
        return pathlib.Path(env)
    built = SOURCE_DIR / "build" / "src" / "addsim" / "cli" / "addsim"
    return built if built.exists() else None


@pytest.fixture(scope="session")
def source_dir() -> pathlib.Path:
    return SOURCE_DIR


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    path = _cli_path()
    if path is None or not path.exists():
        pytest.fail("the addsim CLI was not found: set ADDSIM_CLI or build into build/")
    return path


@pytest.fixture(scope="session")
def particle_scene() -> addsim.Scene:
    # A particle on a nonlinear spring, thrown sideways: 40 steps, no contact.
    return addsim.Scene.load(SOURCE_DIR / "scenes" / "spring_oscillator.json", steps=40, dt=0.005,
                             solver__tolerance=1e-12, bodies__0__velocities=[[0.3, -0.2, 0.5]])


@pytest.fixture(scope="session")
def rigid_scene() -> addsim.Scene:
    # The thrown sphere with back-spin while it is in the air (0.06 s): rotation, gravity.
    return addsim.Scene.load(SOURCE_DIR / "scenes" / "rigid_sphere_throw.json", steps=30, dt=0.002,
                             solver__tolerance=1e-12, bodies__0__angular_velocity=[1.0, -5.0, 2.0])


@pytest.fixture(scope="session")
def fem_scene() -> addsim.Scene:
    # A 48-tet soft cube thrown with spin, high above the floor: elasticity, viscosity, no contact.
    return addsim.Scene.load(SOURCE_DIR / "tasks" / "scenes" / "soft_ball_small.json", steps=8,
                             solver__tolerance=1e-11, bodies__0__position=[0, 0, 1.0])


@pytest.fixture(scope="session")
def spinning_scene() -> addsim.Scene:
    # The sphere spinning at 40 rad/s: its rotation vector switches chart (|θ| near π) mid-run.
    return addsim.Scene.load(SOURCE_DIR / "scenes" / "rigid_sphere_throw.json", steps=60, dt=0.002,
                             solver__tolerance=1e-12, bodies__0__angular_velocity=[3.0, -40.0, 5.0])
