"""Timing on the device: op instances (forward + backward + optimizer) and whole steps.

Both timers spread the machine's noise instead of letting a slow moment hit one
candidate: work is done in rounds, each round visits every item once in a fresh random
order, and an item's figure is the median over all its timed iterations. Every visit
starts with one untimed iteration (the caches were just used by another item).
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nasflow.cost._fingerprint import PRECISIONS, check_precision
from nasflow.cost._units import OpInstance


@dataclass(frozen=True)
class OpTiming:
    """Measured raw seconds of one op instance (medians over all timed iterations).

    Attributes:
        fwd_bwd: Forward plus backward of the op alone, as a harness sees it.
        optimizer: One AdamW step over the op's parameters (0 without parameters).
        spread: Interquartile range of the forward+backward samples over their median.
        samples: Timed iterations.
        flops: Forward plus backward FLOPs.
        params: Trainable parameter elements.
        description: Where and what the op is (for people reading the table).
    """

    fwd_bwd: float
    optimizer: float
    spread: float
    samples: int
    flops: int = 0
    params: int = 0
    description: str = ""


def check_count(name: str, value: int, minimum: int) -> int:
    """``value`` if it is an int >= ``minimum``, else ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The autocast context of a precision (a no-op context for fp32)."""
    if check_precision(precision) == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=PRECISIONS[precision])


def materialize(meta_module: nn.Module, device: torch.device, seed: int = 0) -> nn.Module:
    """A real copy of a ``meta`` module on ``device`` with freshly initialised weights.

    Every parameter gets small normal values and every floating buffer zeros, then each
    submodule's own ``reset_parameters`` / ``reset_running_stats`` runs, so standard
    layers get their usual initialisation (and no uninitialised memory, whose denormals
    could distort timings, survives).
    """
    gen = torch.Generator().manual_seed(seed)
    module = copy.deepcopy(meta_module).to_empty(device=device)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
        for b in module.buffers():
            b.zero_()
        for m in module.modules():
            for fn in ("reset_parameters", "reset_running_stats"):
                reset = getattr(m, fn, None)
                if callable(reset):
                    reset()
    return module.train()


class _OpHarness:
    """Runs one op instance's training work: forward, backward from a fixed gradient,
    and an AdamW step over its parameters."""

    def __init__(self, unit: OpInstance, device: torch.device, precision: str) -> None:
        self.device, self.precision = device, precision
        self.module = materialize(unit.module, device)
        self.params = [p for p in self.module.parameters() if p.requires_grad]
        self.opt = (
            torch.optim.AdamW(self.params, lr=1e-3, weight_decay=0.0) if self.params else None
        )
        if unit.input_dtype.is_floating_point:
            self.x = torch.randn(unit.input_shape, device=device, dtype=unit.input_dtype)
            self.x.requires_grad_(unit.input_requires_grad)
        else:
            self.x = torch.zeros(unit.input_shape, device=device, dtype=unit.input_dtype)
        with autocast(device, precision):
            out = self.module(self.x)
        self.grad = torch.randn_like(out) if out.requires_grad else None

    def run(self) -> tuple[float, float]:
        """One iteration; returns (forward+backward seconds, optimizer seconds)."""
        if self.x.requires_grad:
            self.x.grad = None
        for p in self.params:
            p.grad = None
        _sync(self.device)
        t0 = time.perf_counter()
        with autocast(self.device, self.precision):
            out = self.module(self.x)
        if self.grad is not None:
            out.backward(self.grad)
        _sync(self.device)
        t1 = time.perf_counter()
        if self.opt is not None:
            self.opt.step()
            _sync(self.device)
        return t1 - t0, time.perf_counter() - t1


def _rounds(n: int, rounds: int, seed: int) -> Iterator[int]:
    """Item indices: ``rounds`` passes, each a fresh random permutation."""
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        yield from (int(i) for i in rng.permutation(n))


def _spread(samples: Sequence[float]) -> float:
    med = statistics.median(samples)
    if len(samples) < 4 or med <= 0:
        return 0.0
    q = statistics.quantiles(samples, n=4)
    return (q[2] - q[0]) / med


def time_ops(
    units: Sequence[OpInstance],
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    *,
    warmup: int = 3,
    rounds: int = 5,
    iters: int = 3,
    seed: int = 0,
) -> dict[str, OpTiming]:
    """Measure every distinct op instance of ``units`` (by key), interleaved in rounds.

    Args:
        units: Op instances; duplicates (same key) are timed once.
        device: Where to time.
        precision: ``"fp32"`` or ``"bf16"`` (autocast).
        warmup: Untimed iterations at an op's first visit.
        rounds: Visits per op.
        iters: Timed iterations per visit.
        seed: Seeds the visiting order and the weights.

    Returns:
        Key to timing; ``flops``/``params``/``description`` are left for the caller.
    """
    dev = torch.device(device)
    check_count("warmup", warmup, 0)
    check_count("rounds", rounds, 1)
    check_count("iters", iters, 1)
    distinct = list({u.key: u for u in units}.values())
    harnesses: list[_OpHarness | None] = [None] * len(distinct)
    fb: list[list[float]] = [[] for _ in distinct]
    opt: list[list[float]] = [[] for _ in distinct]
    for i in _rounds(len(distinct), rounds, seed):
        h = harnesses[i]
        if h is None:
            h = harnesses[i] = _OpHarness(distinct[i], dev, precision)
            for _ in range(warmup):
                h.run()
        h.run()
        for _ in range(iters):
            a, b = h.run()
            fb[i].append(a)
            opt[i].append(b)
    return {
        u.key: OpTiming(
            statistics.median(fb[i]), statistics.median(opt[i]), _spread(fb[i]), len(fb[i])
        )
        for i, u in enumerate(distinct)
    }


def _loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if out.dim() == 3:  # (B, T, V) -> (B*T, V)
        out, y = out.reshape(-1, out.shape[-1]), y.reshape(-1)
    return F.cross_entropy(out, y)


class _StepHarness:
    """One whole-network training step: forward, cross-entropy, backward, AdamW step.

    The same work as ``nasflow.train.measure_step_time`` (AdamW, ``zero_grad`` to
    ``None``), so predictions and the search runner's measurements mean the same thing.
    """

    def __init__(
        self,
        net: nn.Module,
        x: torch.Tensor,
        y: torch.Tensor,
        device: torch.device,
        precision: str,
    ) -> None:
        self.net, self.x, self.y = net.to(device).train(), x.to(device), y.to(device)
        self.device, self.precision = device, precision
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-3, weight_decay=0.0)

    def run(self) -> float:
        _sync(self.device)
        t0 = time.perf_counter()
        with autocast(self.device, self.precision):
            loss = _loss(self.net(self.x), self.y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        _sync(self.device)
        return time.perf_counter() - t0


def time_steps(
    builders: Sequence[Callable[[], nn.Module]],
    batch: tuple[torch.Tensor, torch.Tensor],
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    *,
    warmup: int = 2,
    rounds: int = 3,
    iters: int = 3,
    seed: int = 0,
) -> np.ndarray:
    """Training-step seconds of several networks, interleaved in rounds.

    Args:
        builders: Each builds one network (called once, at its first visit).
        batch: The ``(x, y)`` batch every step trains on.
        device: Where to train.
        precision: ``"fp32"`` or ``"bf16"`` (autocast).
        warmup: Untimed steps at a network's first visit.
        rounds: Visits per network.
        iters: Timed steps per visit.
        seed: Seeds the visiting order.

    Returns:
        Array ``(rounds, len(builders))``: the median step seconds of each visit.
    """
    dev = torch.device(device)
    check_count("warmup", warmup, 0)
    check_count("rounds", rounds, 1)
    check_count("iters", iters, 1)
    harnesses: list[_StepHarness | None] = [None] * len(builders)
    visits = [0] * len(builders)
    out = np.zeros((rounds, len(builders)))
    for i in _rounds(len(builders), rounds, seed):
        h = harnesses[i]
        if h is None:
            h = harnesses[i] = _StepHarness(builders[i](), *batch, dev, precision)
            for _ in range(warmup):
                h.run()
        h.run()
        out[visits[i], i] = statistics.median(h.run() for _ in range(iters))
        visits[i] += 1
    return out
