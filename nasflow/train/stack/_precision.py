"""CPU/numeric layers: mixed precision (autocast, loss scaling), flushing denormal floats,
and the number of intra-op threads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import torch

from nasflow.errors import ConfigError
from nasflow.train.stack._base import StackLayer

#: ``amp`` setting -> autocast dtype.
AMP_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


class MixedPrecision(StackLayer):
    """Autocast forward passes to bf16 (CPU and GPU) or fp16 (GPU, with loss scaling).

    Parameters, gradients and optimizer state stay fp32; only the forward pass (and so the
    saved activations) runs in the low-precision dtype. fp16 needs dynamic loss scaling
    (``torch.amp.GradScaler``) against underflowing gradients, which only CUDA supports
    here, so fp16 is refused on other devices rather than silently run unscaled.

    Args:
        dtype: ``"bf16"`` or ``"fp16"``.
    """

    name = "amp"

    def __init__(self, dtype: str = "bf16") -> None:
        if dtype not in AMP_DTYPES:
            raise ConfigError(f"amp must be one of {sorted(AMP_DTYPES)} or None, got {dtype!r}")
        self.dtype = dtype
        self._device_type = "cpu"

    def check(self, device: torch.device) -> None:
        if self.dtype == "fp16" and device.type != "cuda":
            raise ConfigError(
                f"amp='fp16' needs a CUDA device for dynamic loss scaling, got device "
                f"{str(device)!r}; use amp='bf16' on this device"
            )
        if self.dtype == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ConfigError(
                f"amp='bf16' is not supported by {torch.cuda.get_device_name(device)!r}; "
                "use amp='fp16'"
            )
        if device.type not in ("cpu", "cuda"):
            raise ConfigError(f"amp supports cpu and cuda devices, got {str(device)!r}")
        self._device_type = device.type

    def forward_context(self) -> AbstractContextManager[Any]:
        return torch.autocast(self._device_type, dtype=AMP_DTYPES[self.dtype])

    def scaler(self) -> torch.amp.GradScaler:
        """Dynamic loss scaling for fp16; a disabled (pass-through) scaler for bf16."""
        return torch.amp.GradScaler(self._device_type, enabled=self.dtype == "fp16")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}


@contextmanager
def _flush_denormal() -> Iterator[None]:
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


class FlushDenormal(StackLayer):
    """Treat denormal floats as zero during the whole training step (x86 CPUs).

    Tiny weights and gradients late in training can become denormal, and CPU arithmetic
    on denormals can be many times slower. Whether that happens for a given network is
    an empirical question, so this is a layer to measure, not a default. PyTorch has no
    getter for the flag: the layer sets it for the step and restores the default (off).
    """

    name = "denormal"

    def check(self, device: torch.device) -> None:
        if device.type != "cpu":
            raise ConfigError(f"denormal flushing is a CPU layer, got device {str(device)!r}")
        supported = torch.set_flush_denormal(True)
        torch.set_flush_denormal(False)
        if not supported:
            raise ConfigError("this CPU does not support flushing denormals (needs SSE3)")

    def step_context(self) -> AbstractContextManager[Any]:
        return _flush_denormal()


@contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Threads(StackLayer):
    """Run the training step with ``n`` intra-op CPU threads (restored afterwards).

    On a CPU that other jobs share, every parallel region waits for all its threads to be
    scheduled, so fewer threads can be faster for small networks; on an idle machine the
    opposite holds. Which one applies here is measured, not assumed.

    Args:
        n: Intra-op threads during the step.
    """

    name = "threads"

    def __init__(self, n: int = 1) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"threads must be an int >= 1 or None, got {n!r}")
        self.n = n

    def check(self, device: torch.device) -> None:
        if device.type != "cpu":
            raise ConfigError(f"the threads layer is a CPU layer, got device {str(device)!r}")

    def step_context(self) -> AbstractContextManager[Any]:
        return _threads(self.n)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "n": self.n}
