"""Activation checkpointing: trade recomputation in backward for activation memory."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.utils.checkpoint import checkpoint

from nasflow._checks import check_int
from nasflow.errors import ConfigError
from nasflow.supernet import SuperModule, Supernet, SuperSequential, call
from nasflow.train.stack._base import StackLayer


def split_segments(modules: Sequence[nn.Module], segments: int | None) -> list[list[nn.Module]]:
    """Consecutive runs of ``modules``: ``segments`` of them, ``round(sqrt(n))`` by default."""
    n = len(modules)
    count = max(1, round(math.sqrt(n))) if segments is None else min(segments, n)
    size = math.ceil(n / max(1, count))
    return [list(modules[i : i + size]) for i in range(0, n, size)]


@contextmanager
def _keep_bn_buffers(segment: Sequence[nn.Module]) -> Iterator[None]:
    """Undo the running-statistics update that a recomputed forward pass makes."""
    bns = [m for mod in segment for m in mod.modules() if isinstance(m, _BatchNorm)]
    saved = [[b.clone() for b in m.buffers()] for m in bns]
    try:
        yield
    finally:
        with torch.no_grad():
            for m, old in zip(bns, saved, strict=True):
                for b, o in zip(m.buffers(), old, strict=True):
                    b.copy_(o)


def _contexts(
    segment: Sequence[nn.Module],
) -> tuple[AbstractContextManager[Any], AbstractContextManager[Any]]:
    return nullcontext(), _keep_bn_buffers(segment)


def _run(segment: Sequence[nn.Module], x: torch.Tensor, arch: Mapping[str, Any] | None):
    for m in segment:
        x = m(x) if arch is None else call(m, x, arch)
    return x


def _forward(
    segments: Sequence[Sequence[nn.Module]],
    x: torch.Tensor,
    arch: Mapping[str, Any] | None,
    keep_bn: bool,
) -> torch.Tensor:
    """Checkpoint every segment but the last (its activations are needed at once)."""
    for i, seg in enumerate(segments):
        if i == len(segments) - 1 or not torch.is_grad_enabled():
            x = _run(seg, x, arch)
        elif keep_bn:
            x = checkpoint(
                _run, seg, x, arch, use_reentrant=False, context_fn=partial(_contexts, seg)
            )
        else:
            x = checkpoint(_run, seg, x, arch, use_reentrant=False)
    return x


class CheckpointedSequential(nn.Module):
    """A view of an ``nn.Sequential`` that checkpoints consecutive segments of it."""

    def __init__(self, inner: nn.Sequential, segments: int | None, keep_bn: bool) -> None:
        super().__init__()
        self.inner = inner
        self.keep_bn = keep_bn
        self._segments = split_segments(list(inner), segments)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _forward(self._segments, x, None, self.keep_bn)


class CheckpointedSupernet(SuperModule):
    """A view of a supernet with a ``SuperSequential`` body, checkpointed by segments."""

    def __init__(self, inner: Supernet, segments: int | None, keep_bn: bool) -> None:
        super().__init__()
        self.inner = inner
        self.keep_bn = keep_bn
        self._segments = split_segments(list(inner.body.layers), segments)

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        return _forward(self._segments, x, self.inner._check(arch), self.keep_bn)

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        return self.inner.extract(arch)


class Checkpointing(StackLayer):
    """Activation checkpointing of consecutive segments of a sequential network.

    Only the inputs of each segment are kept for backward; the segment's forward pass is
    run again during backward. That costs roughly one extra forward pass per step, which
    the harness reports next to the memory it saves. A recomputed forward pass would
    update batch-norm running statistics a second time; the recomputation restores them.

    Args:
        segments: How many segments to split the network into; ``None`` picks
            ``round(sqrt(number of modules))``.
        keep_bn_stats: Undo the second running-statistics update of recomputed batch
            norms (also correct under the compile layer; switch off only for networks
            without batch norm, to skip the buffer copies).
    """

    name = "checkpointing"

    def __init__(self, segments: int | None = None, keep_bn_stats: bool = True) -> None:
        check_int("segments", segments, 2, optional=True)
        self.segments = segments
        self.keep_bn_stats = keep_bn_stats

    def wrap(self, model: nn.Module) -> nn.Module:
        if isinstance(model, nn.Sequential):
            return CheckpointedSequential(model, self.segments, self.keep_bn_stats)
        if isinstance(model, Supernet) and isinstance(model.body, SuperSequential):
            return CheckpointedSupernet(model, self.segments, self.keep_bn_stats)
        raise ConfigError(
            "activation checkpointing wraps an nn.Sequential or a Supernet whose body is a "
            f"SuperSequential, got {type(model).__name__}"
        )

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "segments": self.segments}
