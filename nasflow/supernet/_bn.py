"""Batch-norm recalibration: re-estimate running statistics for one path."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.optim.swa_utils import update_bn

from nasflow._checks import check_int
from nasflow.errors import ConfigError
from nasflow.supernet._base import call


class _OnPath(nn.Module):
    """``model`` with ``arch`` bound, so ``forward(x)`` runs that path (what ``update_bn``
    calls); the model is a submodule, so its BN layers are this module's."""

    def __init__(self, model: nn.Module, arch: Mapping[str, Any]) -> None:
        super().__init__()
        self.model, self.arch = model, arch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call(self.model, x, self.arch)


class _Counted:
    """An iterable that counts the items taken from it."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items, self.taken = items, 0

    def __iter__(self) -> Iterator[Any]:
        for item in self.items:
            self.taken += 1
            yield item


def recalibrate_bn(
    model: nn.Module,
    batches: Iterable[Any],
    num_batches: int,
    arch: Mapping[str, Any] | None = None,
    device: torch.device | str | None = None,
) -> int:
    """Reset every BN layer's running statistics and re-estimate them on training batches.

    PyTorch's ``torch.optim.swa_utils.update_bn`` on the first ``num_batches`` batches
    (through the path ``arch`` of a supernet), without gradients: the statistics are a
    plain average over the batches (``momentum=None``), which is what Once-for-All and
    SPOS do before scoring a path. The model is left in eval mode, with the layers'
    momenta restored even when a forward pass raises (``update_bn`` alone would leave them
    ``None``).

    Args:
        model: A supernet (then ``arch`` is required) or a stand-alone network.
        batches: An iterable of ``(x, y)`` or ``x`` training batches.
        num_batches: How many batches to use (at least 1).
        arch: The path to run through a supernet.
        device: Where to move each batch; default, the model's device.

    Returns:
        The number of batches actually used (0 for a model without BN layers: nothing to
        re-estimate, no batch is run).

    Raises:
        ValueError: ``num_batches`` is not an int >= 1, or ``batches`` is empty.
    """
    check_int("num_batches", num_batches)
    saved = [(m, m.momentum) for m in model.modules() if isinstance(m, _BatchNorm)]
    if not saved:
        return 0
    if device is None:
        device = next(model.parameters()).device
    taken = _Counted(itertools.islice(batches, num_batches))
    try:
        with torch.no_grad():
            update_bn(taken, model if arch is None else _OnPath(model, arch), device=device)
    finally:
        for m, momentum in saved:
            m.momentum = momentum
        model.eval()
    if taken.taken == 0:
        raise ConfigError("recalibrate_bn got no batches")
    return taken.taken
