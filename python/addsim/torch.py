"""PyTorch op for addsim (docs/python.md): ``rollout(scene, params)`` runs the simulator on a
batch of parameter vectors and returns the states as a tensor; its backward pass is one
adjoint sweep per rollout (``Rollout.vjp``) whatever the loss, so any loss written in torch
on the states is differentiated exactly through the simulator.

    import torch, addsim, addsim.torch
    scene = addsim.Scene.load("scenes/rigid_sphere_throw.json", steps=300)
    v0 = torch.tensor([[1.0, 0.0, 2.0]], dtype=torch.float64, requires_grad=True)
    q = addsim.torch.rollout(scene, v0, select=["bodies.0.velocity"])   # (1, 301, 6)
    loss = (q[:, -1, 0] - 0.5).pow(2).sum()
    loss.backward()                                                    # v0.grad by the adjoint
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import torch

from . import InputError, Scene, Selection, _selected, vjp_batch

__all__ = ["rollout"]


class _Rollout(torch.autograd.Function):
    """Forward: B rollouts (in parallel C++ threads); backward: B adjoint sweeps."""

    @staticmethod
    def forward(ctx, params: torch.Tensor, scene: Scene, indices: np.ndarray | None, base: np.ndarray,
                threads: int, velocities: bool):
        x = params.detach().cpu().to(torch.float64).numpy()
        if indices is None:
            full = x
        else:
            full = np.tile(base, (x.shape[0], 1))
            full[:, indices] = x
        rollouts = scene.simulate_batch(full, threads=threads, check=True)
        ctx.rollouts, ctx.indices, ctx.threads = rollouts, indices, threads
        ctx.params_dtype, ctx.params_device = params.dtype, params.device
        q = torch.from_numpy(np.stack([r.q for r in rollouts])).to(dtype=params.dtype, device=params.device)
        if not velocities:
            return q
        v = torch.from_numpy(np.stack([r.v for r in rollouts])).to(dtype=params.dtype, device=params.device)
        return q, v

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_q: torch.Tensor, grad_v: torch.Tensor | None = None):
        gq = grad_q.detach().cpu().to(torch.float64).numpy()
        gv = None
        if grad_v is not None and bool(torch.any(grad_v != 0)):
            gv = grad_v.detach().cpu().to(torch.float64).numpy()
        g = vjp_batch(ctx.rollouts, gq, gv, threads=ctx.threads)
        if ctx.indices is not None:
            g = g[:, ctx.indices]
        grad = torch.from_numpy(np.ascontiguousarray(g)).to(dtype=ctx.params_dtype, device=ctx.params_device)
        return grad, None, None, None, None, None


def rollout(scene: Scene, params: torch.Tensor, select: str | Iterable[str] | Selection | None = None,
            base: Any = None, *, velocities: bool = False, threads: int = 0):
    """States of the rollouts of ``scene`` at ``params`` as a differentiable tensor.

    params: (m,) or (B, m); m = |p| without ``select``, else the number of scalars the key
    paths of ``select`` name (the other parameters come from ``base``: None for the scene's
    defaults, a full vector p or {key path: values}). Returns q, shape (steps+1, |q|) or
    (B, steps+1, |q|), in params' dtype; with ``velocities=True`` the pair (q, v). The B
    rollouts run on ``threads`` C++ threads (0 = all cores). Backward: one adjoint sweep per
    rollout. A failed rollout raises addsim.SimulationError; parameters outside their bounds
    raise addsim.InputError. params must be a floating-point tensor (float64 for gradcheck;
    float32 and half precision are computed in float64 and rounded back): an integer or bool
    tensor raises TypeError, as its states and gradients could not be represented.
    """
    if not isinstance(scene, Scene):
        raise TypeError(f"addsim.torch.rollout: scene must be an addsim.Scene, got {type(scene).__name__}")
    if not isinstance(params, torch.Tensor):
        raise TypeError(f"addsim.torch.rollout: params must be a torch.Tensor, got {type(params).__name__}")
    if not params.is_floating_point():
        raise TypeError(f"addsim.torch.rollout: params must have a floating dtype (the states are returned in "
                        f"params' dtype), got {params.dtype}; use params.double()")
    if params.dim() not in (1, 2):
        raise InputError(f"addsim.torch.rollout: params must have shape (m,) or (B, m), got {tuple(params.shape)}")
    if select is None:
        indices, expected = None, scene.num_params
        if base is not None:
            raise InputError("addsim.torch.rollout: base is only used together with select")
        full_base = None
    else:
        sel = _selected(scene, select)
        indices, expected = np.asarray(sel.indices, dtype=int), sel.size
        full_base = scene.params(base) if (base is None or isinstance(base, Mapping)) else np.asarray(base, float)
        if full_base.shape != (scene.num_params,):
            raise InputError(f"addsim.torch.rollout: base must have |p| = {scene.num_params} values")
    if params.shape[-1] != expected:
        raise InputError(f"addsim.torch.rollout: params has {params.shape[-1]} columns, expected {expected}"
                         + ("" if select is None else f" (the scalars selected by {list(sel.names)})"))
    batched = params.dim() == 2
    out = _Rollout.apply(params if batched else params.unsqueeze(0), scene, indices, full_base, threads, velocities)
    if batched:
        return out
    return (out[0][0], out[1][0]) if velocities else out[0]
