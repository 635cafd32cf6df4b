"""Plain training utilities: optimizer and schedule, evaluation."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nasflow._loss import flat_logits
from nasflow.data import Batches
from nasflow.errors import ConfigError
from nasflow.supernet import call


def make_optimizer(
    params: Any, lr: float, weight_decay: float, name: str = "adamw"
) -> torch.optim.Optimizer:
    """AdamW (default) or SGD with Nesterov momentum."""
    if not (lr > 0 and math.isfinite(lr)):
        raise ConfigError(f"learning rate must be a positive finite number, got {lr!r}")
    if not weight_decay >= 0:
        raise ConfigError(f"weight_decay must be >= 0, got {weight_decay!r}")
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(
            params, lr=lr, momentum=0.9, nesterov=True, weight_decay=weight_decay
        )
    raise ConfigError(f"unknown optimizer {name!r}; choose 'adamw' or 'sgd'")


def warmup_cosine(
    optimizer: torch.optim.Optimizer, total_steps: int, warmup_steps: int = 0
) -> torch.optim.lr_scheduler.LRScheduler:
    """Linear warm-up then cosine decay to zero over ``total_steps``, stepped once per batch.

    PyTorch's ``LinearLR`` (factor ``1 / (w + 1)`` rising to 1 over the ``w`` warm-up
    steps) then ``CosineAnnealingLR`` (``T_max = total_steps - w``, down to 0), chained
    by ``SequentialLR``. Step ``s`` gets ``schedule_factor(s, total_steps, w)`` times the
    base rate (to 1e-14 of it, measured up to 200,000 steps: PyTorch computes the cosine
    recursively). The rate is 0 after ``total_steps`` steps; it is not meant to be stepped
    further (the cosine would rise again).
    """
    total = max(1, total_steps)
    warm = min(max(0, warmup_steps), total - 1)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total - warm)
    if warm == 0:
        return cosine
    linear = torch.optim.lr_scheduler.LinearLR(
        optimizer, start_factor=1.0 / (warm + 1), end_factor=1.0, total_iters=warm
    )
    return torch.optim.lr_scheduler.SequentialLR(optimizer, [linear, cosine], milestones=[warm])


def load_schedule_state(
    scheduler: torch.optim.lr_scheduler.LRScheduler, state: dict[str, Any]
) -> None:
    """Restore a ``warmup_cosine`` schedule, also from a checkpoint written when it was a
    ``LambdaLR`` (same curve): that one is replayed to its step (``last_epoch``)."""
    if "lr_lambdas" not in state:
        scheduler.load_state_dict(state)
        return
    with warnings.catch_warnings():  # no optimizer step is taken while replaying
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
        for _ in range(int(state["last_epoch"]) - scheduler.last_epoch):
            scheduler.step()


@torch.no_grad()
def evaluate(
    model: nn.Module,
    batches: Batches,
    arch: Mapping[str, Any] | None = None,
    device: torch.device | str = "cpu",
) -> tuple[float, float]:
    """``(accuracy, mean cross-entropy)`` of a network (or a supernet path) in eval mode."""
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    for x, y in batches.epoch(0):
        x, y = x.to(device), y.to(device)
        logits = model(x) if arch is None else call(model, x, arch)
        logits, y = flat_logits(logits, y)
        loss_sum += float(nn.functional.cross_entropy(logits, y, reduction="sum"))
        correct += int((logits.argmax(-1) == y).sum())
        total += y.numel()
    if total == 0:
        raise ConfigError("evaluate got an empty dataset")
    return correct / total, loss_sum / total
