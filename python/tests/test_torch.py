"""addsim.torch.rollout: torch.autograd.gradcheck (double precision) on a particle, a rigid
and a small FEM scene, and its backward against Rollout.vjp."""

import numpy as np
import pytest
import torch

import addsim
import addsim.torch


def _gradcheck(scene, select, values, eps=1e-6, atol=1e-5, rtol=1e-4):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    weights = torch.linspace(0.5, 1.5, scene.num_dofs, dtype=torch.float64)

    # A nonlinear loss of the states (and, with velocities, of the velocities).
    def loss_states(x):
        q, v = addsim.torch.rollout(scene, x, select=select, velocities=True)
        return torch.stack([(q * weights).sin().sum(dim=(-2, -1)), (v ** 2 * weights).sum(dim=(-2, -1))], dim=-1)

    assert torch.autograd.gradcheck(loss_states, (x,), eps=eps, atol=atol, rtol=rtol)


def test_gradcheck_particle(particle_scene):
    # Batch of two: the leading dimension is a batch of parameter vectors.
    _gradcheck(particle_scene, ["bodies.0.velocities", "bodies.0.mass"],
               [[0.3, -0.2, 0.5, 1.0], [0.1, 0.2, -0.4, 1.3]])


def test_gradcheck_rigid(rigid_scene):
    _gradcheck(rigid_scene, ["bodies.0.velocity", "bodies.0.angular_velocity"],
               [[1.0, 0.0, 2.0, 1.0, -5.0, 2.0]])


def test_gradcheck_fem(fem_scene):
    _gradcheck(fem_scene, ["bodies.0.velocity", "bodies.0.angular_velocity.0.1"], [1.0, 0.0, -0.5, -10.0])


def test_backward_is_the_vjp(rigid_scene):
    sel = rigid_scene.select(["bodies.0.velocity"])
    x = torch.tensor([[1.0, 0.0, 2.0], [1.5, 0.2, 1.0]], dtype=torch.float64, requires_grad=True)
    q = addsim.torch.rollout(rigid_scene, x, select=sel)
    assert q.shape == (2, rigid_scene.steps + 1, rigid_scene.num_dofs) and q.dtype == torch.float64
    target = torch.tensor([0.1, 0.0, 0.3], dtype=torch.float64)
    loss = ((q[:, :, :3] - target) ** 2).sum()
    loss.backward()
    for b in range(2):
        r = rigid_scene.simulate(sel.scatter(rigid_scene.params(), x[b].detach().numpy()), threads=1)
        np.testing.assert_array_equal(q[b].detach().numpy(), r.q)
        gq = np.zeros_like(r.q)
        gq[:, :3] = 2 * (r.q[:, :3] - target.numpy())
        np.testing.assert_allclose(x.grad[b].numpy(), r.vjp(gq, select=sel), rtol=1e-12, atol=1e-14)
    assert torch.count_nonzero(x.grad.abs() > 1e-3) >= 5


def test_float32_and_full_parameter_vector(particle_scene):
    p = torch.tensor(particle_scene.params(), dtype=torch.float32, requires_grad=True)
    q = addsim.torch.rollout(particle_scene, p)
    assert q.dtype == torch.float32 and q.shape == (particle_scene.steps + 1, 3)
    q[-1, 2].backward()
    assert p.grad.dtype == torch.float32 and torch.isfinite(p.grad).all()


def test_bad_arguments(rigid_scene):
    with pytest.raises(addsim.InputError, match="columns"):
        addsim.torch.rollout(rigid_scene, torch.zeros(2, dtype=torch.float64), select=["bodies.0.velocity"])
    with pytest.raises(TypeError, match="params must be a torch.Tensor, got list"):
        addsim.torch.rollout(rigid_scene, [1.0, 0.0, 2.0], select=["bodies.0.velocity"])
    with pytest.raises(TypeError, match="scene must be an addsim.Scene, got str"):
        addsim.torch.rollout("scenes/rigid_sphere_throw.json", torch.zeros(3), select=["bodies.0.velocity"])
    with pytest.raises(TypeError, match="select: paths must be"):
        addsim.torch.rollout(rigid_scene, torch.zeros(3, dtype=torch.float64), select=5)
    with pytest.raises(addsim.InputError, match="bodies.0.mass"):
        addsim.torch.rollout(rigid_scene, torch.tensor([-1.0], dtype=torch.float64), select=["bodies.0.mass"])


@pytest.mark.parametrize("values", [[1, 0, 2], [True, False, True]])
def test_integer_and_bool_params_raise_type_error(rigid_scene, values):
    # The states are returned in params' dtype: an integer or bool tensor would truncate them
    # (the sphere's final x of 0.05 m became 0), so it is refused, naming the argument and dtype.
    params = torch.tensor(values)
    with pytest.raises(TypeError, match=f"params must have a floating dtype.*got {params.dtype}"):
        addsim.torch.rollout(rigid_scene, params, select=["bodies.0.velocity"])
    q = addsim.torch.rollout(rigid_scene, params.double(), select=["bodies.0.velocity"])
    assert q.dtype == torch.float64 and q[-1, 0] > 0.01


def test_selection_of_another_scene_is_refused(rigid_scene, particle_scene):
    sel = particle_scene.select(["bodies.0.velocities"])
    with pytest.raises(addsim.InputError, match=r"\|p\| = "):
        addsim.torch.rollout(rigid_scene, torch.zeros(3, dtype=torch.float64), select=sel)
