"""``torch.compile`` as a stack layer, without recompiling when the supernet path changes.

``torch.compile`` guards on Python values: compiling a whole supernet whose path is an
argument recompiles for every new path (whittle#312). This layer compiles either a
stand-alone network (one graph; an extracted subnet has no path) or, for a supernet, each
candidate op block separately: a block's graph depends only on its own shapes (its
kernel, and the width choice), so after every (block, width) pair has been seen once,
switching paths reuses cached graphs. Every graph handed to the backend is counted.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from nasflow.errors import ConfigError
from nasflow.supernet import LayerChoice, SuperModule, Supernet
from nasflow.train.stack._base import StackLayer


class CompileCounter:
    """A ``torch.compile`` backend that counts the graphs it compiles.

    Args:
        backend: The real backend's name (``"inductor"``, ``"aot_eager"``, ``"eager"``).
    """

    def __init__(self, backend: str = "inductor") -> None:
        from torch._dynamo import list_backends

        known = set(list_backends(exclude_tags=())) | {"eager", "aot_eager", "inductor"}
        if backend not in known:
            raise ConfigError(f"unknown compile backend {backend!r}; known: {sorted(known)}")
        self.backend = backend
        self.compilations = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        from torch._dynamo import lookup_backend

        self.compilations += 1
        return lookup_backend(self.backend)(gm, example_inputs)


def _blocks(supernet: nn.Module) -> list[nn.Module]:
    """The candidate ops of every ``LayerChoice`` that have parameters."""
    out: list[nn.Module] = []
    for m in supernet.modules():
        if isinstance(m, LayerChoice):
            out += [c for c in m.candidates.values() if next(c.parameters(), None) is not None]
    return out


class CompiledBlocks(SuperModule):
    """A view of a supernet that runs each candidate op through its own compiled graph.

    The compiled forwards are installed on the op modules only for the duration of a
    forward pass, so ``extract`` and deep copies never see them. The recompile limit is
    raised to the number of (block, width) graphs the space can need, and hitting it is an
    error instead of a silent fall-back to eager mode.

    Args:
        inner: The supernet (or a view of one, such as a checkpointed supernet).
        counter: The counting backend.
    """

    def __init__(self, inner: SuperModule, counter: CompileCounter) -> None:
        super().__init__()
        supernet = next((m for m in inner.modules() if isinstance(m, Supernet)), None)
        if supernet is None:
            raise ConfigError(
                "compile a Supernet (per op block) or a stand-alone network, got a "
                f"{type(inner).__name__} without a Supernet inside"
            )
        self.inner = inner
        self._blocks = _blocks(inner)
        self._compiled = [torch.compile(b.forward, backend=counter) for b in self._blocks]
        values = [c for c in supernet.space.path_choices if c.kind == "value"]
        self.max_graphs = max(1, len(self._blocks)) * math.prod(len(c.values) for c in values)

    @contextmanager
    def _installed(self) -> Iterator[None]:
        for block, fn in zip(self._blocks, self._compiled, strict=True):
            block.forward = fn  # instance attribute shadows the class's forward
        try:
            limit = 2 * self.max_graphs + 8  # train/eval modes, a second batch size
            with torch._dynamo.config.patch(
                recompile_limit=limit,
                accumulated_recompile_limit=max(256, limit),
                fail_on_recompile_limit_hit=True,
            ):
                yield
        finally:
            for block in self._blocks:
                del block.forward

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        with self._installed():
            return self.inner(x, arch)

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        return self.inner.extract(arch)


class Compile(StackLayer):
    """``torch.compile`` a stand-alone network, or each op block of a supernet.

    Attributes:
        counter: Counts compiled graphs (``counter.compilations``): a stand-alone network
            compiles once (plus once per new input shape); a supernet once per (block,
            width) pair, and never again after those have been seen.

    Args:
        backend: ``torch.compile`` backend; the default ``"inductor"`` generates C++ on CPU
            (needs a C++ compiler on ``PATH``) and Triton on GPU.
    """

    name = "compile"

    def __init__(self, backend: str = "inductor") -> None:
        self.counter = CompileCounter(backend)

    @property
    def compilations(self) -> int:
        return self.counter.compilations

    def check(self, device: torch.device) -> None:
        if (
            self.counter.backend == "inductor"
            and device.type == "cpu"
            and not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++"))
        ):
            raise ConfigError(
                "compile backend 'inductor' on device 'cpu' needs a C++ compiler (g++, c++ or "
                "clang++) on PATH; install one or use compile_backend='aot_eager'"
            )

    def wrap(self, model: nn.Module) -> nn.Module:
        if isinstance(model, SuperModule):
            return CompiledBlocks(model, self.counter)
        return torch.compile(model, backend=self.counter)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.counter.backend}
