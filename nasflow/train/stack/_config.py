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
from nasflow.errors import ConfigError
from nasflow.train.stack._base import StackLayer
from nasflow.train.stack._checkpointing import Checkpointing
from nasflow.train.stack._compile import Compile
from nasflow.train.stack._precision import AMP_DTYPES, FlushDenormal, MixedPrecision, Threads
from nasflow.train.stack._step import StackStep

if TYPE_CHECKING:
    from nasflow.train._distill import Distillation
    from nasflow.train.stack._accumulation import Schedule
    from nasflow.train.stack._ddp import GradReducer


@dataclass(frozen=True)
class LayerSpec:
    """The one declaration of a speedup layer; ``Stack`` and the calibration iterate over
    ``LAYER_SPECS`` for validation, ``enabled``, ``with_layers``, ``layers()`` and the
    layers ``stack="auto"`` considers.

    Attributes:
        name: The layer's name, which is also its ``Stack`` field (whose default is "off").
        on: The field value that switches the layer on by default (``Stack.with_layers``).
        allowed: What the field accepts, as the error message says it.
        valid: Whether a field value is allowed.
        build: The layer object of a stack that has the layer on; ``None`` for a policy
            of the step engine (accumulation) rather than a ``StackLayer``.
        wrap: Position of the layer object around the network (0: outermost).
        auto: Whether ``stack="auto"`` considers the layer.
        cpu_only: Whether the layer exists only on a CPU.
    """

    name: str
    on: Any
    allowed: str
    valid: Callable[[Any], bool]
    build: Callable[[Stack], StackLayer] | None = None
    wrap: int = 0
    auto: bool = True
    cpu_only: bool = False


def _count(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and v >= 1


def _flag(v: Any) -> bool:
    return isinstance(v, bool)


#: Every layer, in the order the harness adds them cumulatively (compile last: it is the
#: slowest to set up, so the fewest variants pay for it). Activation checkpointing is a
#: memory layer (it always costs time): the memory fit switches it on, never "auto".
LAYER_SPECS: tuple[LayerSpec, ...] = (
    LayerSpec(
        "amp",
        "bf16",
        "None, 'bf16' or 'fp16'",
        lambda v: v is None or v in AMP_DTYPES,
        lambda s: MixedPrecision(s.amp),
        wrap=2,
    ),
    LayerSpec(
        "accumulation", 2, "an int >= 1 or 'adaptive'", lambda v: v == "adaptive" or _count(v)
    ),
    LayerSpec(
        "denormal", True, "True or False", _flag, lambda s: FlushDenormal(), wrap=0, cpu_only=True
    ),
    LayerSpec(
        "threads",
        1,
        "an int >= 1 or None",
        lambda v: v is None or _count(v),
        lambda s: Threads(s.threads),
        wrap=1,
        cpu_only=True,
    ),
    LayerSpec(
        "checkpointing",
        True,
        "True or False",
        _flag,
        lambda s: Checkpointing(),
        wrap=3,
        auto=False,
    ),
    LayerSpec(
        "compile", True, "True or False", _flag, lambda s: Compile(s.compile_backend), wrap=4
    ),
)
#: Layer names, in the order the harness adds them cumulatively.
LAYERS: tuple[str, ...] = tuple(spec.name for spec in LAYER_SPECS)
#: Layers that exist only on CPU (the rest run on CPU and GPU).
CPU_LAYERS: tuple[str, ...] = tuple(spec.name for spec in LAYER_SPECS if spec.cpu_only)


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
        for spec in LAYER_SPECS:
            value = getattr(self, spec.name)
            if not spec.valid(value):
                raise ConfigError(f"{spec.name} must be {spec.allowed}, got {value!r}")
        if self.clip_norm is not None and not (
            self.clip_norm > 0 and math.isfinite(self.clip_norm)
        ):
            raise ConfigError(
                f"clip_norm must be a positive number or None, got {self.clip_norm!r}"
            )
        check_int("k_max", self.k_max)
        if not (self.noise_target > 0 and math.isfinite(self.noise_target)):
            raise ConfigError(f"noise_target must be a positive number, got {self.noise_target!r}")
        check_int("threads", self.threads, optional=True)
        check_int("micro_batch", self.micro_batch, optional=True)

    @property
    def enabled(self) -> tuple[str, ...]:
        """Names of the layers that are on, in ``LAYERS`` order."""
        off = {f.name: f.default for f in dataclasses.fields(self)}  # a layer is off by default
        return tuple(s.name for s in LAYER_SPECS if getattr(self, s.name) != off[s.name])

    def with_layers(self, names: Iterable[str], **settings: Any) -> Stack:
        """This stack with the layers ``names`` switched on (others untouched).

        ``settings`` give the values to switch on with (``amp="bf16"``,
        ``accumulation=2`` and ``threads=1`` by default).
        """
        specs = {spec.name: spec for spec in LAYER_SPECS}
        changes: dict[str, Any] = {}
        for name in names:
            if name not in specs:
                raise ConfigError(f"unknown stack layer {name!r}; choose from {LAYERS}")
            changes[name] = settings.get(name, specs[name].on)
        return dataclasses.replace(self, **changes)

    def layers(self) -> list[StackLayer]:
        """Fresh layer objects, in the order they wrap the network."""
        on = self.enabled
        specs = sorted(LAYER_SPECS, key=lambda spec: spec.wrap)
        return [s.build(self) for s in specs if s.build is not None and s.name in on]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings (``Stack.from_dict`` inverts it)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stack:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown Stack settings {unknown}; known: {sorted(known)}")
        return cls(**data)

    def build(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        device: torch.device | str = "cpu",
        schedule: Schedule | None = None,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy,
        reducer: GradReducer | None = None,
        distill: Distillation | None = None,
    ) -> StackStep:
        """The training-step callable of this stack for ``model`` and ``optimizer``
        (``distill``: a supernet's in-place distillation, see ``StackStep``)."""
        return StackStep(self, model, optimizer, device, schedule, loss_fn, reducer, distill)
