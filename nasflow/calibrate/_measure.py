"""Measurement primitives: memory of the training state, device description, ratio spread.

The activation memory of a step is measured by the engine's ``ActivationMeter``
(``nasflow.train.stack``).
"""

from __future__ import annotations

import platform
import statistics
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from nasflow._host import cpu_model
from nasflow.errors import ConfigError


def state_bytes(module: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Bytes of parameters, buffers, gradients and optimizer state."""
    tensors = [*module.parameters(), *module.buffers()]
    tensors += [p.grad for p in module.parameters() if p.grad is not None]
    for state in optimizer.state.values():
        tensors += [v for v in state.values() if isinstance(v, torch.Tensor)]
    return sum(t.numel() * t.element_size() for t in tensors)


def device_name(device: torch.device) -> str:
    """A human-readable name of the device, e.g. ``"cpu: AMD EPYC (2 threads)"``."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"cpu: {cpu_model()} ({torch.get_num_threads()} threads)"


def environment(device: torch.device) -> dict[str, Any]:
    """Where a measurement was taken."""
    return {
        "device": device_name(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    """``(q25, median, q75)`` of ``values`` (all three equal for a single value)."""
    if not values:
        raise ConfigError("quantiles of an empty sequence")
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]
