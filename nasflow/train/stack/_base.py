"""The stack-layer interface: one speedup layer, a true no-op unless it is in the stack."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar

import torch
from torch import nn


class StackLayer:
    """One layer of the speedup stack (mixed precision, compile, checkpointing, ...).

    A layer touches a training step in at most three places: it may wrap the module that
    runs the forward pass (``wrap``; the wrapper shares parameters with the original, so
    optimizers and checkpoints keep using the original module), enter a context around
    every forward pass and loss computation (``forward_context``), and enter a context
    around the whole step, backward and update included (``step_context``). A layer that
    is not in the stack does nothing at all; the defaults below are the no-op, and a layer
    overrides only what it needs.

    Gradient accumulation and the cross-rank gradient reduction change *when* the
    optimizer steps rather than how a forward pass runs, so they are policies of the step
    engine (``Accumulation``, ``GradReducer``), not layers.
    """

    #: Short name used in configs, reports and the ``nasflow:stack`` study attribute.
    name: ClassVar[str] = ""

    def check(self, device: torch.device) -> None:
        """Raise ``ValueError`` (naming the device) when the layer cannot run on ``device``."""

    def wrap(self, model: nn.Module) -> nn.Module:
        """The module to run forward passes on; shares its parameters with ``model``."""
        return model

    def forward_context(self) -> AbstractContextManager[Any]:
        """Entered around every forward pass and loss computation."""
        return nullcontext()

    def step_context(self) -> AbstractContextManager[Any]:
        """Entered around a whole training step: forward, backward and optimizer update."""
        return nullcontext()

    def describe(self) -> dict[str, Any]:
        """The layer's settings as JSON-able data (for reports and study attributes)."""
        return {"name": self.name}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "name")
        return f"{type(self).__name__}({args})"
