"""Analytic costs of a module at an input shape: FLOPs, parameters, activation memory.

Everything here runs on PyTorch's ``meta`` device (shapes only, no data, no kernels), so it
costs milliseconds whatever the network's size. FLOPs come from
``torch.utils.flop_counter.FlopCounterMode``, which counts matrix products and convolutions
(forward and backward) as 2 FLOPs per multiply-accumulate; element-wise ops, norms and
pooling count zero.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from nasflow.errors import ConfigError


class FlopCount(NamedTuple):
    """FLOPs of one training step of a module (forward and backward pass)."""

    forward: int
    backward: int

    @property
    def total(self) -> int:
        return self.forward + self.backward


def check_shape(shape: Sequence[int], what: str = "input_shape") -> tuple[int, ...]:
    """``shape`` as a tuple of positive ints, or ``ValueError`` naming it."""
    try:
        out = tuple(shape)
    except TypeError:
        raise ConfigError(f"{what} must be a sequence of positive ints, got {shape!r}") from None
    if not out or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in out):
        raise ConfigError(f"{what} must be a sequence of positive ints, got {shape!r}")
    return out


def on_meta(module: nn.Module) -> nn.Module:
    """``module`` itself if all its tensors are on ``meta``, else a ``meta`` copy."""
    tensors = [*module.parameters(), *module.buffers()]
    if all(t.device.type == "meta" for t in tensors):
        return module
    return copy.deepcopy(module).to("meta")


def _meta_input(shape: tuple[int, ...], dtype: torch.dtype, requires_grad: bool) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.empty(shape, dtype=dtype, device="meta", requires_grad=requires_grad)
    return torch.zeros(shape, dtype=dtype, device="meta")


def _as_tensor(out: object) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, tuple | list) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    raise ConfigError(f"the module returned {type(out).__name__}, not a tensor")


def count_flops(
    module: nn.Module,
    input_shape: Sequence[int],
    *,
    input_requires_grad: bool = False,
    input_dtype: torch.dtype = torch.float32,
) -> FlopCount:
    """FLOPs of a forward and a backward pass of ``module`` on one batch.

    The backward pass is seeded with a gradient of ones on the output, as a loss would
    seed it; it computes parameter gradients and, when ``input_requires_grad``, the
    input gradient (an op in the middle of a network must produce it, the first layer
    does not).

    Args:
        module: Any module; it is copied to the ``meta`` device (it is never run).
        input_shape: The full input shape, batch dimension included.
        input_requires_grad: Whether the backward pass computes the input's gradient.
        input_dtype: Input dtype; integer dtypes (token ids) get zeros.

    Returns:
        Forward and backward FLOPs (2 per multiply-accumulate).
    """
    shape = check_shape(input_shape)
    meta = on_meta(module)
    meta.train()
    x = _meta_input(shape, input_dtype, input_requires_grad and input_dtype.is_floating_point)
    with FlopCounterMode(display=False) as counter:
        out = _as_tensor(meta(x))
    forward = counter.get_total_flops()
    backward = 0
    if out.requires_grad:
        with FlopCounterMode(display=False) as counter:
            out.backward(torch.ones_like(out))
        backward = counter.get_total_flops()
    return FlopCount(int(forward), int(backward))


def count_params(module: nn.Module) -> int:
    """Number of trainable parameter elements."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def activation_bytes(
    module: nn.Module,
    input_shape: Sequence[int],
    *,
    input_requires_grad: bool = False,
    input_dtype: torch.dtype = torch.float32,
) -> int:
    """Bytes of the tensors a training forward pass keeps for the backward pass.

    Counted with ``torch.autograd.graph.saved_tensors_hooks`` on the ``meta`` device: each
    distinct tensor saved by autograd counts once at its full size. Parameters saved by
    an op (a linear layer saves its weight) and buffers (batch-norm running statistics) are not
    activations and are left out. It is
    an estimate: two saved views of one storage count twice, and the caching allocator's
    fragmentation and the temporaries that live only inside one op are not included.

    Args:
        module: Any module; it is copied to the ``meta`` device.
        input_shape: Full input shape, batch dimension included.
        input_requires_grad: Whether the input needs a gradient.
        input_dtype: Input dtype.
    """
    shape = check_shape(input_shape)
    meta = on_meta(module)
    meta.train()
    params = {id(t) for t in (*meta.parameters(), *meta.buffers())}
    seen: dict[int, torch.Tensor] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if id(t) not in params:
            seen[id(t)] = t  # keep a reference so ids stay unique
        return t

    x = _meta_input(shape, input_dtype, input_requires_grad and input_dtype.is_floating_point)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        meta(x)
    return sum(t.numel() * t.element_size() for t in seen.values())
