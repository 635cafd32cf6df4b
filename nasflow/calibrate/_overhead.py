"""Trainer overhead: nasflow's training step with the stack off vs a hand-written loop."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nasflow.calibrate._measure import environment, quantiles
from nasflow.errors import ConfigError
from nasflow.train import Batches, EpochTrainer, TrainConfig, make_optimizer, warmup_cosine
from nasflow.train.stack import Schedule, Stack, device_clock

HAND = "hand-written loop"


def _hand_loop(
    model: nn.Module, total: int, warmup: int, lr: float, wd: float
) -> Callable[..., float]:
    """The loop a PyTorch user writes: AdamW, warm-up + cosine, the loss read back."""
    opt = make_optimizer(model.parameters(), lr, wd)
    sched = warmup_cosine(opt, total, warmup)

    def step(x: torch.Tensor, y: torch.Tensor) -> float:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        return loss.item()

    return step


def trainer_overhead(
    make_model: Callable[[], nn.Module],
    train: Batches,
    epochs: int = 2,
    chunk: int = 4,
    lr: float = 3e-3,
    weight_decay: float = 1e-2,
    device: torch.device | str = "cpu",
    seed: int = 0,
    threads: int | None = None,
) -> dict[str, Any]:
    """Time nasflow's steps against a hand-written loop on the same model and batches.

    Three copies of one network train side by side on the same batches, interleaved
    chunk by chunk: the hand-written loop, ``Stack()`` (every layer off) through
    ``StackStep``, and the existing ``EpochTrainer.step``. Returns, per trainer, the median
    seconds per batch and the median (and quartiles) of the per-round paired ratio
    trainer time / hand-written time; 1.05 would be 5% overhead.

    Args:
        threads: Intra-op CPU threads for the whole comparison (``None``: as set). One
            thread keeps a shared machine's scheduling noise out of a per-step overhead
            that is a matter of Python, not of arithmetic.

    Raises:
        ConfigError: ``train`` and ``epochs`` give no batch past the first ``chunk``.
    """
    if threads is None:
        return _overhead(make_model, train, epochs, chunk, lr, weight_decay, device, seed)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        result = _overhead(make_model, train, epochs, chunk, lr, weight_decay, device, seed)
    finally:
        torch.set_num_threads(before)
    return {**result, "threads": threads}


def _overhead(
    make_model: Callable[[], nn.Module],
    train: Batches,
    epochs: int,
    chunk: int,
    lr: float,
    weight_decay: float,
    device: torch.device | str,
    seed: int,
) -> dict[str, Any]:
    device = torch.device(device)
    total = epochs * len(train)
    if total <= chunk:  # round 0 is warm-up: nothing would be timed
        raise ConfigError(
            f"the trainer overhead times rounds of {chunk} batches after a first one, but "
            f"{epochs} epoch(s) of {len(train)} batches give {total}: use a smaller batch "
            "size, more epochs or more data"
        )
    torch.manual_seed(seed)
    init = make_model().to(device)
    models = {name: copy.deepcopy(init) for name in (HAND, "nasflow StackStep", "EpochTrainer")}
    stack = Stack().build(
        models["nasflow StackStep"],
        make_optimizer(models["nasflow StackStep"].parameters(), lr, weight_decay),
        device,
        Schedule(total, len(train) // 10),
    )
    recipe = TrainConfig(epochs=epochs, lr=lr, weight_decay=weight_decay, warmup_epochs=0.1)
    epoch_trainer = EpochTrainer(models["EpochTrainer"], train, recipe, device)
    steps: dict[str, Callable[..., float]] = {
        HAND: _hand_loop(models[HAND], total, len(train) // 10, lr, weight_decay),
        "nasflow StackStep": stack,
        "EpochTrainer": epoch_trainer.step,
    }
    streams: dict[str, Iterator[Any]] = {
        n: (b for e in range(epochs) for b in train.epoch(e)) for n in steps
    }
    times: dict[str, dict[int, float]] = {n: {} for n in steps}
    for m in models.values():
        m.train()
    names = list(steps)
    _, clock = device_clock(device)
    for rnd in range(-(-total // chunk)):
        order = names[rnd % len(names) :] + names[: rnd % len(names)]
        for name in order:
            t0 = clock()
            for _, (x, y) in zip(range(chunk), streams[name], strict=False):
                steps[name](x.to(device), y.to(device))
            if rnd > 0:  # round 0 is warm-up
                times[name][rnd] = clock() - t0
    rows = []
    for name in names:
        ratios = [times[name][r] / times[HAND][r] for r in times[name]]
        lo, med, hi = quantiles(ratios)
        rows.append(
            {
                "name": name,
                "ms_per_batch": 1e3 * quantiles(list(times[name].values()))[1] / chunk,
                "ratio": med,
                "ratio_q25": lo,
                "ratio_q75": hi,
                "rounds": len(ratios),
            }
        )
    return {
        "environment": environment(device),
        "batches": total,
        "chunk": chunk,
        "threads": torch.get_num_threads(),
        "rows": rows,
    }


def format_overhead(result: dict[str, Any]) -> str:
    """The overhead table: time per batch and the ratio to the hand-written loop."""
    lines = [f"{'trainer':<20} {'ms/batch':>9} {'vs hand-written loop':>26}"]
    for r in result["rows"]:
        spread = f"x{r['ratio']:.3f} [{r['ratio_q25']:.3f},{r['ratio_q75']:.3f}]"
        lines.append(f"{r['name']:<20} {r['ms_per_batch']:>9.2f} {spread:>26}")
    lines.append(
        f"{result['batches']} batches per trainer, chunks of {result['chunk']}, interleaved, "
        f"{result['threads']} intra-op thread(s); "
        "ratio = median of per-round paired time ratios [q25,q75]; target <= x1.05"
    )
    return "\n".join(lines)
