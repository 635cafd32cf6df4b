"""The memory fit of the cost-model gate: the largest micro-batch within a memory budget.

The gate's other half (skipping candidates whose predicted cost is over budget, before
any training) lives in the search's budget check; this half turns a memory budget into
``Stack(micro_batch=m)``, which splits each batch without changing its gradient.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from nasflow._checks import check_int
from nasflow.train.stack._measure import ActivationMeter


def largest_micro_batch(
    batch_size: int, memory_budget: float, bytes_for: Callable[[int], float]
) -> int:
    """The largest ``m <= batch_size`` with ``bytes_for(m) <= memory_budget``.

    Args:
        batch_size: The recipe's batch size (the most a micro-batch can be).
        memory_budget: Bytes available to one training step.
        bytes_for: Memory of a step on ``m`` samples, non-decreasing in ``m`` (a cost-model
            prediction, or :func:`measured_step_bytes`).

    Raises:
        ValueError: Bad arguments, or not even one sample fits.
    """
    check_int("batch_size", batch_size)
    if not memory_budget > 0:
        raise ValueError(f"memory_budget must be a positive byte count, got {memory_budget!r}")
    if bytes_for(1) > memory_budget:
        raise ValueError(
            f"one sample needs {bytes_for(1):.0f} bytes, over the memory budget of "
            f"{memory_budget:.0f}"
        )
    lo, hi = 1, batch_size  # bytes_for(lo) fits; find the last m that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if bytes_for(mid) <= memory_budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def measured_step_bytes(model: nn.Module, sample: torch.Tensor, target: torch.Tensor):
    """``bytes_for(m)`` measured: parameters and gradients plus the activations that one
    forward/backward on ``m`` copies of ``sample`` saves (on a copy of ``model``).

    Args:
        model: The network (not modified).
        sample: One input, without the batch dimension.
        target: Its label.
    """
    net = copy.deepcopy(model).train()
    static = sum(2 * p.numel() * p.element_size() for p in net.parameters())

    def bytes_for(m: int) -> float:
        x = sample.unsqueeze(0).expand(m, *sample.shape).contiguous()  # (m, *sample.shape)
        y = target.reshape(1).expand(m).contiguous()
        meter = ActivationMeter()
        with meter.active():
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        net.zero_grad(set_to_none=True)
        return float(static + meter.peak)

    return bytes_for
