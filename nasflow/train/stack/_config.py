"""``Stack``: which speedup layers a training run uses (everything off by default)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from nasflow._checks import check_int
from nasflow.train.stack._base import StackLayer
from nasflow.train.stack._checkpointing import Checkpointing
from nasflow.train.stack._compile import Compile
from nasflow.train.stack._precision import AMP_DTYPES, FlushDenormal, MixedPrecision, Threads

if TYPE_CHECKING:
    from nasflow.train.stack._accumulation import Schedule
    from nasflow.train.stack._ddp import GradReducer
    from nasflow.train.stack._step import StackStep

#: Layer names, in the order the harness adds them cumulatively (compile last: it is the
#: slowest to set up, so the fewest variants pay for it).
LAYERS: tuple[str, ...] = (
    "amp",
    "accumulation",
    "denormal",
    "threads",
    "checkpointing",
    "compile",
)


@dataclass(frozen=True)
class Stack:
    """The speedup stack of a training run. ``Stack()`` is plain fp32 eager training.

    Attributes:
        amp: ``None`` (fp32), ``"bf16"`` (CPU and GPU) or ``"fp16"`` (GPU, loss scaling).
        accumulation: Batches per optimizer step: an int ``k >= 1`` or ``"adaptive"``
            (variance-aware, up to ``k_max``); the learning rate is scaled by ``k``.
        compile: ``torch.compile`` the network (per op block for a supernet).
        checkpointing: Activation checkpointing by segments.
        denormal: Flush denormal floats to zero during the step (CPU).
        threads: Intra-op CPU threads during the step (``None``: leave as is).
        clip_norm: Clip the global gradient norm to this value (``None``: no clipping).
        k_max: Largest ``k`` of adaptive accumulation.
        noise_target: Adaptive accumulation's allowed relative gradient variance.
        micro_batch: Split every batch into chunks of at most this many samples (the
            cost-model gate's memory fit; gradients are unchanged); ``None``: no split.
        compile_backend: ``torch.compile`` backend.
    """

    amp: str | None = None
    accumulation: int | str = 1
    compile: bool = False
    checkpointing: bool = False
    denormal: bool = False
    threads: int | None = None
    clip_norm: float | None = None
    k_max: int = 8
    noise_target: float = 1.0
    micro_batch: int | None = None
    compile_backend: str = "inductor"

    def __post_init__(self) -> None:
        if self.amp is not None and self.amp not in AMP_DTYPES:
            raise ValueError(f"amp must be None, 'bf16' or 'fp16', got {self.amp!r}")
        acc = self.accumulation
        if acc != "adaptive" and (isinstance(acc, bool) or not isinstance(acc, int) or acc < 1):
            raise ValueError(f"accumulation must be an int >= 1 or 'adaptive', got {acc!r}")
        for flag in ("compile", "checkpointing", "denormal"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if self.clip_norm is not None and not (
            self.clip_norm > 0 and math.isfinite(self.clip_norm)
        ):
            raise ValueError(
                f"clip_norm must be a positive number or None, got {self.clip_norm!r}"
            )
        check_int("k_max", self.k_max)
        if not (self.noise_target > 0 and math.isfinite(self.noise_target)):
            raise ValueError(f"noise_target must be a positive number, got {self.noise_target!r}")
        check_int("threads", self.threads, optional=True)
        check_int("micro_batch", self.micro_batch, optional=True)

    @property
    def enabled(self) -> tuple[str, ...]:
        """Names of the layers that are on, in ``LAYERS`` order."""
        on = {
            "amp": self.amp is not None,
            "accumulation": self.accumulation != 1,
            "denormal": self.denormal,
            "threads": self.threads is not None,
            "checkpointing": self.checkpointing,
            "compile": self.compile,
        }
        return tuple(name for name in LAYERS if on[name])

    def with_layers(self, names: Iterable[str], **settings: Any) -> Stack:
        """This stack with the layers ``names`` switched on (others untouched).

        ``settings`` give the values to switch on with (``amp="bf16"``,
        ``accumulation=2`` and ``threads=1`` by default).
        """
        on = {"amp": "bf16", "accumulation": 2, "denormal": True, "threads": 1}
        on.update(settings)
        changes: dict[str, Any] = {}
        for name in names:
            if name not in LAYERS:
                raise ValueError(f"unknown stack layer {name!r}; choose from {LAYERS}")
            changes[name] = on.get(name, True)
        return dataclasses.replace(self, **changes)

    def layers(self) -> list[StackLayer]:
        """Fresh layer objects, in the order they wrap the network."""
        out: list[StackLayer] = []
        if self.denormal:
            out.append(FlushDenormal())
        if self.threads is not None:
            out.append(Threads(self.threads))
        if self.amp is not None:
            out.append(MixedPrecision(self.amp))
        if self.checkpointing:
            out.append(Checkpointing())
        if self.compile:
            out.append(Compile(self.compile_backend))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings (``Stack.from_dict`` inverts it)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stack:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown Stack settings {unknown}; known: {sorted(known)}")
        return cls(**data)

    def build(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        device: torch.device | str = "cpu",
        schedule: Schedule | None = None,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy,
        reducer: GradReducer | None = None,
    ) -> StackStep:
        """The training-step callable of this stack for ``model`` and ``optimizer``."""
        from nasflow.train.stack._step import StackStep

        return StackStep(self, model, optimizer, device, schedule, loss_fn, reducer)
