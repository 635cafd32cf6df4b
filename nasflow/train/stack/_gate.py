"""The memory fit of the cost-model gate: the largest micro-batch within a memory budget,
and the activation meter that measures a step's memory.

The gate's other half (skipping candidates whose predicted cost is over budget, before
any training) lives in the search's budget check; this half turns a memory budget into
``Stack(micro_batch=m)``, which splits each batch without changing its gradient.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from nasflow._checks import check_int
from nasflow.errors import ConfigError


class ActivationMeter:
    """Bytes of distinct tensor storages saved for backward while the meter is active.

    This is the activation memory a step holds between its forward and backward passes,
    which is what mixed precision halves and checkpointing cuts; CPU PyTorch has no
    allocator peak counter, so on CPU the harness reports it (plus parameters, gradients
    and optimizer state) as the step's memory.
    """

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}
        self.peak = 0

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        try:
            storage = t.untyped_storage()
            self._seen.setdefault(storage.data_ptr(), storage.nbytes())
        except (RuntimeError, NotImplementedError):  # tensor subclasses without storage
            pass
        return t

    @contextmanager
    def active(self) -> Iterator[ActivationMeter]:
        """Measure the forward passes (and backward) run inside this block."""
        self._seen.clear()
        try:
            with torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t):
                yield self
        finally:
            self.peak = max(self.peak, sum(self._seen.values()))


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
        raise ConfigError(f"memory_budget must be a positive byte count, got {memory_budget!r}")
    if bytes_for(1) > memory_budget:
        raise ConfigError(
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
