#!/usr/bin/env python3
"""The paper's self-supervised throwing game (§6.3, docs/validation/learning.md).

A small MLP maps a target position (x*, y*) on a rectangle to the initial velocity of a
rigid ball; the ball is simulated by addsim (examples/learn_throw/throw.json: thrown from
0.5 m, one bounce on a frictional floor) through ``addsim.torch.rollout``, and the loss of a
sample is written in torch on the simulated states:

    Φ = S + k_p P,
    S = soft minimum (temperature τ) of the distance ‖c^i − x*‖ over the descending part of
        the trajectory after the first bounce (steps after the ball leaves the floor, before
        it touches it again, with v_z < 0),
    P = max(0, min_i z^i − r)²: no contact at all is penalised by the height it stayed above
        touching the floor.

Backward is one adjoint sweep per rollout (addsim's vjp), mini-batches run in parallel C++
threads. ADAM with β₁ = 0.95, β₂ = 0.999, ε = 1e-8, mini-batch 5, learning rate 1e-2 halved
after every epoch; 1000 training and 100 test targets uniformly in the rectangle.

    PYTHONPATH=build/python /usr/bin/python3 examples/learn_throw/learn_throw.py --out out/learn_throw

trains with friction (μ = 0.5) and without (μ = 0), evaluates both controllers in the
frictional world, and writes metrics.json, learning_curve.png and friction.png.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import time

import numpy as np
import torch

import addsim
import addsim.torch

HERE = pathlib.Path(__file__).resolve().parent
RADIUS = 0.1          # m, the ball's radius (throw.json)
TARGET_Z = 0.2        # m, height of the targets' centre (a cup rim 0.1 m above the ball touching the floor)
X_RANGE = (1.2, 2.0)  # m, the rectangle of targets
Y_RANGE = (-0.4, 0.4)
TAU = 0.01            # m, soft-minimum temperature
K_P = 10.0            # 1/m, weight of the no-contact penalty
V_LOW = (0.5, -1.5, -0.5)   # m/s, the range of throw velocities the controller can output
V_HIGH = (4.0, 1.5, 2.5)
FALLBACK = 1.0        # m, added to S of a throw without a descending flight after one bounce


class Controller(torch.nn.Module):
    """Target (x*, y*) → throw velocity v⁰ (m/s): 2 → 64 → 64 → 3, tanh hidden layers, and a
    tanh output scaled to the throwing arm's range V_LOW … V_HIGH. The range keeps every throw
    one that bounces and comes down again within the 1.5 s rollout (a throw up at more than
    about 3 m/s would still be rising after its bounce when the rollout ends)."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                                       torch.nn.Tanh(), torch.nn.Linear(64, 3))
        self.register_buffer("center", torch.tensor([sum(X_RANGE) / 2, sum(Y_RANGE) / 2]))
        self.register_buffer("half_size", torch.tensor([(X_RANGE[1] - X_RANGE[0]) / 2, (Y_RANGE[1] - Y_RANGE[0]) / 2]))
        low, high = torch.tensor(V_LOW), torch.tensor(V_HIGH)
        self.register_buffer("v_mid", (low + high) / 2)
        self.register_buffer("v_half", (high - low) / 2)

    def forward(self, target_xy: torch.Tensor) -> torch.Tensor:
        return self.v_mid + self.v_half * torch.tanh(self.net((target_xy - self.center) / self.half_size))


def descending_after_bounce(z: np.ndarray, vz: np.ndarray) -> np.ndarray:
    """Mask (B, n+1) of the steps a sample's loss looks at: after the ball first leaves the
    floor and before it touches it again, moving down. All False for a throw without such
    steps (no contact, never leaving the floor, or still rising when the rollout ends)."""
    mask = np.zeros_like(z, dtype=bool)
    for b in range(z.shape[0]):
        touching = z[b] < RADIUS
        first = np.flatnonzero(touching)
        if first.size == 0:
            continue
        leave = first[0] + np.flatnonzero(~touching[first[0]:])
        if leave.size == 0:
            continue
        start = leave[0]
        again = start + np.flatnonzero(touching[start:])
        end = again[0] if again.size else len(z[b])
        mask[b, start:end] = vz[b, start:end] < 0
    return mask


def sample_losses(q: torch.Tensor, v: torch.Tensor, targets: torch.Tensor):
    """Per-sample Φ = S + k_p P (B,), and the closest distance over the same steps (B,).

    A throw without a descending flight after one bounce must not score by passing the target
    on its way to the bounce or rising from it: its S is the distance at the last step plus
    FALLBACK (1 m), which still pulls it towards the target but never beats a real hit."""
    c = q[..., :3]
    target = torch.cat([targets, torch.full_like(targets[:, :1], TARGET_Z)], dim=1)
    dist = torch.sqrt(((c - target[:, None, :]) ** 2).sum(-1) + 1e-12)
    mask = torch.from_numpy(descending_after_bounce(q[..., 2].detach().numpy(), v[..., 2].detach().numpy()))
    valid = mask.any(dim=1)
    masked = torch.where(mask, -dist / TAU, torch.full_like(dist, -math.inf))
    masked = torch.where(valid[:, None], masked, torch.zeros_like(dist))  # finite where unused
    soft = -TAU * torch.logsumexp(masked, dim=1)
    fallback = dist[:, -1] + FALLBACK
    penalty = torch.clamp(q[..., 2].min(dim=1).values - RADIUS, min=0.0) ** 2
    hard = torch.where(mask, dist, torch.full_like(dist, math.inf)).min(dim=1).values
    hard = torch.where(valid, hard, fallback)
    return torch.where(valid, soft, fallback) + K_P * penalty, hard.detach()


def evaluate(scene, select, model, targets):
    with torch.no_grad():
        v0 = model(targets).double()
    q, v = addsim.torch.rollout(scene, v0, select=select, velocities=True)
    loss, err = sample_losses(q, v, targets.double())
    return float(loss.mean()), err.numpy(), q.detach().numpy()


def train(mu: float, args, train_targets, test_targets, log):
    scene = addsim.Scene.load(HERE / "throw.json", {"obstacles.0.friction": mu})
    select = scene.select(["bodies.0.velocity"])
    torch.manual_seed(args.seed)
    model = Controller().double()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.95, 0.999), eps=1e-8)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    rng = np.random.default_rng(args.seed)
    history = []
    test_loss, test_err, _ = evaluate(scene, select, model, test_targets)
    history.append({"epoch": 0, "train_loss": None, "test_loss": test_loss,
                    "test_error_median_m": float(np.median(test_err)), "seconds": 0.0})
    log(f"mu={mu}: epoch 0 test loss {test_loss:.4f}, median error {np.median(test_err):.3f} m")
    for epoch in range(1, args.epochs + 1):
        t0, cpu0 = time.perf_counter(), time.process_time()
        order = rng.permutation(len(train_targets))
        losses, skipped = [], 0
        for start in range(0, len(order), args.batch):
            batch = train_targets[order[start:start + args.batch]]
            v0 = model(batch)
            try:
                q, v = addsim.torch.rollout(scene, v0, select=select, velocities=True, threads=args.threads)
            except addsim.SimulationError as err:
                skipped += 1  # a throw the solver cannot finish has no gradient: skip the mini-batch
                log(f"mu={mu}: epoch {epoch}: mini-batch skipped: {err}")
                continue
            loss = sample_losses(q, v, batch)[0].mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
        sched.step()
        test_loss, test_err, _ = evaluate(scene, select, model, test_targets)
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "test_loss": test_loss,
                        "test_error_median_m": float(np.median(test_err)),
                        "test_within_radius": float(np.mean(test_err < RADIUS)), "seconds": seconds,
                        "cpu_seconds": cpu_seconds, "skipped_batches": skipped})
        log(f"mu={mu}: epoch {epoch} train loss {np.mean(losses):.4f}, test loss {test_loss:.4f}, "
            f"median error {np.median(test_err):.4f} m, within r {100 * np.mean(test_err < RADIUS):.0f} %, "
            f"{seconds:.1f} s wall, {cpu_seconds:.1f} s CPU")
    return model, history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/learn_throw")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="C++ threads per mini-batch (0 = all cores)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--frictions", type=float, nargs="+", default=[0.5, 0.0],
                        help="friction coefficients to train with (each controller is tested with the first)")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_file = open(out / "log.txt", "w")

    def log(line):
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed + 100)

    def sample(count):
        return torch.from_numpy(np.stack([rng.uniform(*X_RANGE, count), rng.uniform(*Y_RANGE, count)], 1))

    train_targets, test_targets = sample(args.train), sample(args.test)
    results = {"settings": {"epochs": args.epochs, "train": args.train, "test": args.test, "batch": args.batch,
                            "tau_m": TAU, "k_p": K_P, "v_low": V_LOW, "v_high": V_HIGH, "radius_m": RADIUS, "target_z_m": TARGET_Z,
                            "x_range_m": X_RANGE, "y_range_m": Y_RANGE, "adam": [0.95, 0.999, 1e-8],
                            "lr": "1e-2, halved after every epoch"}}
    models = {}
    for mu in args.frictions:
        models[mu], results[f"history_mu{mu}"] = train(mu, args, train_targets, test_targets, log)
        torch.save(models[mu].state_dict(), out / f"controller_mu{mu}.pt")

    # Both controllers in the frictional world (the paper's friction figure).
    world_mu = args.frictions[0]
    world = addsim.Scene.load(HERE / "throw.json", {"obstacles.0.friction": world_mu})
    select = world.select(["bodies.0.velocity"])
    evals = {}
    for mu, model in models.items():
        loss, err, q = evaluate(world, select, model, test_targets)
        evals[mu] = (err, q)
        results[f"trained_mu{mu}_tested_mu{world_mu}"] = {
            "test_loss": loss, "error_median_m": float(np.median(err)), "error_mean_m": float(np.mean(err)),
            "error_p95_m": float(np.percentile(err, 95)), "within_radius": float(np.mean(err < RADIUS))}
        np.save(out / f"test_errors_trained_mu{mu}.npy", err)
        log(f"trained with mu={mu}, tested with mu={world_mu}: median error {np.median(err):.4f} m, "
            f"95th percentile {np.percentile(err, 95):.4f} m, within r {100 * np.mean(err < RADIUS):.0f} %")
    (out / "metrics.json").write_text(json.dumps(results, indent=2))
    np.save(out / "test_targets.npy", test_targets.numpy())
    plot(out, results, evals, test_targets.numpy())


def plot_learning_curve(out, results):
    """Loss (linear: the soft minimum goes below the closest distance, by up to τ ln(steps))
    and median test error (log) per epoch, for every friction trained with."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (loss_ax, err_ax) = plt.subplots(1, 2, figsize=(11, 4))
    keys = [k for k in results if k.startswith("history_mu")]
    for key, style in zip(keys, ("-", "--", ":")):
        mu, h = key[len("history_mu"):], results[key]
        loss_ax.plot([e["epoch"] for e in h[1:]], [e["train_loss"] for e in h[1:]], "o" + style, label=f"train, μ={mu}")
        loss_ax.plot([e["epoch"] for e in h], [e["test_loss"] for e in h], "s" + style, label=f"test, μ={mu}")
        err_ax.plot([e["epoch"] for e in h], [e["test_error_median_m"] for e in h], "s" + style,
                    label=f"test, trained and tested with μ={mu}")
    err_ax.axhline(RADIUS, color="grey", lw=0.8, ls=":", label="ball radius")
    loss_ax.set_xlabel("epoch")
    loss_ax.set_ylabel("loss Φ = S + k_p P (mean over samples, m)")
    loss_ax.set_title("Throw controller: training and test loss")
    loss_ax.legend()
    err_ax.set_yscale("log")
    err_ax.set_xlabel("epoch")
    err_ax.set_ylabel("median closest distance to the target (m)")
    err_ax.set_title("Test error (100 targets)")
    err_ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "learning_curve.png", dpi=150)


def plot(out, results, evals, targets):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot_learning_curve(out, results)
    fig, (side, top) = plt.subplots(1, 2, figsize=(11, 4))
    world_mu = next(iter(evals))
    for mu, colour in zip(evals, ("k", "r", "g")):
        err, q = evals[mu]
        label = f"trained with μ={mu}"
        for k in range(3):
            side.plot(q[k, :, 0], q[k, :, 2], colour, lw=1, label=label if k == 0 else None)
        c = q[..., :3]
        # Closest approach of each test throw while above the floor, top view.
        target3 = np.concatenate([targets, np.full((len(targets), 1), TARGET_Z)], 1)
        idx = np.argmin(np.linalg.norm(c - target3[:, None, :], axis=2) + np.where(c[..., 2] < RADIUS, 1e3, 0), 1)
        pts = c[np.arange(len(c)), idx]
        top.plot(pts[:, 0], pts[:, 1], colour + ".", label=f"{label}: median error {1e3 * np.median(err):.0f} mm")
    side.plot(targets[:3, 0], np.full(3, TARGET_Z), "bx", ms=10, label="targets")
    side.axhline(0, color="grey", lw=0.5)
    side.set_xlabel("x (m)")
    side.set_ylabel("z (m)")
    side.set_title(f"Tested with friction μ = {world_mu}: three throws")
    side.legend(fontsize=8)
    top.plot(targets[:, 0], targets[:, 1], "bx", label="test targets")
    top.set_xlabel("x (m)")
    top.set_ylabel("y (m)")
    top.set_aspect("equal")
    top.set_title("Closest approach (above the floor) to each test target")
    top.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "friction.png", dpi=150)


if __name__ == "__main__":
    main()
