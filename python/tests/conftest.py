"""Shared fixtures of the addsim Python tests: the source tree, the CLI binary and small
scenes (short rollouts, contact-free or tight Newton tolerance, so finite differences work)."""

import os
import pathlib
import shutil

import pytest

import addsim

SOURCE_DIR = pathlib.Path(os.environ.get("ADDSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


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
