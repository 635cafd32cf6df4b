"""Batch-norm recalibration: re-estimate running statistics for one path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from nasflow.supernet._base import call


@torch.no_grad()
def recalibrate_bn(
    model: nn.Module,
    batches: Iterable[Any],
    num_batches: int,
    arch: Mapping[str, Any] | None = None,
    device: torch.device | str | None = None,
) -> int:
    """Reset every BN layer's running statistics and re-estimate them on training batches.

    The statistics are a plain average over the batches (``momentum=None``), which is what
    Once-for-All and SPOS do before scoring a path. The model is left in eval mode.

    Args:
        model: A supernet (then ``arch`` is required) or a stand-alone network.
        batches: An iterable of ``(x, y)`` or ``x`` training batches.
        num_batches: How many batches to use (at least 1).
        arch: The path to run through a supernet.
        device: Where to move each batch; default, the model's device.

    Returns:
        The number of batches actually used.
    """
    if isinstance(num_batches, bool) or not isinstance(num_batches, int) or num_batches < 1:
        raise ValueError(f"num_batches must be an int >= 1, got {num_batches!r}")
    bns = [m for m in model.modules() if isinstance(m, _BatchNorm)]
    saved = [(m, m.momentum) for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    if device is None:
        device = next(model.parameters()).device
    model.train()
    used = 0
    try:
        for batch in batches:
            if used >= num_batches:
                break
            x = batch[0] if isinstance(batch, list | tuple) else batch
            x = x.to(device)
            if arch is None:
                model(x)
            else:
                call(model, x, arch)
            used += 1
    finally:
        for m, momentum in saved:
            m.momentum = momentum
        model.eval()
    if used == 0:
        raise ValueError("recalibrate_bn got no batches")
    return used
