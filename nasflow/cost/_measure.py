"""Timing on the device: op instances (forward + backward + optimizer) and whole steps.

Both timers spread the machine's noise instead of letting a slow moment hit one
candidate: work is done in rounds, each round visits every item once in a fresh random
order. Every visit starts with one untimed iteration (the caches were just used by
another item).

What is timed, and which statistic (``robust_seconds``), is chosen for a shared machine
whose load comes and goes (``benchmarks/results/cost-model.md``, "Cost-table stability"
and its *Clocks* table):

- The clock (``nasflow.train.stack.device_clock`` with ``cpu_time=True``, the step
  timer's) is the calling thread's CPU time on a CPU device (``time.thread_time``): time
  the thread spends waiting for a core that another process holds is not counted. On a
  GPU it is wall time, read after the device's queued work is done.
- CPU time alone is not enough with several intra-op threads: torch's worker threads spin
  (and the calling thread with them) while one of them waits for a core, so a loaded
  iteration burns more CPU time too. Interference only ever *adds* time, so an item's
  figure is its fastest timed iteration over all rounds (the minimum; Chen & Revels,
  "Robust benchmarking in noisy environments", 2016, which BenchmarkTools.jl and
  ``timeit`` follow): slow rounds, however many, are ignored as long as one iteration ran
  undisturbed. Medians, which the table used before, move with the share of loaded
  iterations: under one more busy core they moved several-fold where the minimum of
  thread CPU time barely moved.
- A fixed reference op (``reference_unit``) is timed in every round of ``measure_ops``;
  how much its rounds disagree (``assess_reference``) says whether the machine was
  loaded while the table was measured. A millisecond op is rarely preempted, so the
  rounds agree under a steady load; every round therefore also spins one thread for a
  moment (:class:`CoreShare`): the share of a core it gets is what another process left.
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import torch
from torch import nn

from nasflow._checks import check_choice, check_int
from nasflow.cost._fingerprint import PRECISIONS
from nasflow.cost._units import OpInstance, make_instance
from nasflow.errors import ConfigError
from nasflow.train.stack import Stack, StepTimer, device_clock

#: ``median / best`` of the reference op's rounds above which the machine counts as
#: loaded. On an idle machine the rounds agree within a few percent; with another
#: process on one of two cores the typical round is 1.5-6x the best one.
LOADED_RATIO = 1.5
#: The statistic of every figure in the table (see ``robust_seconds``).
STATISTIC = "best of rounds"
#: Share of a core (CPU time over wall time) that one busy thread must get, over the
#: samples of a :class:`CoreShare`, for the machine to count as steady. Alone it gets
#: all of one; with a load average of 6-7 on 2 cores it got 0.38-0.41 (measured here,
#: one intra-op thread).
LOADED_SHARE = 0.8
#: Wall seconds one :class:`CoreShare` sample spins for.
SHARE_SAMPLE_SECONDS = 0.02


@dataclass(frozen=True)
class OpTiming:
    """Measured raw seconds of one op instance (``robust_seconds`` of all its timed
    iterations, on ``device_clock(device, cpu_time=True)``).

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


def timer_name(device: torch.device | str) -> str:
    """What a table measured on ``device`` holds: clock and statistic, versioned. Part of
    the cost model's device fingerprint, so rows timed another way are never mixed in."""
    clock = "thread-cpu" if torch.device(device).type == "cpu" else "wall"
    return f"{clock}/min/v2"


def robust_seconds(samples: Sequence[float]) -> float:
    """The figure of one item: its fastest timed iteration (the minimum over all rounds).

    Timing noise on a shared machine is one-sided (a preempted thread, a spinning
    worker, a cold cache only add time), so the minimum is the estimator that slow
    rounds cannot move, however many there are, as long as one iteration ran undisturbed.

    Raises:
        ValueError: No samples, or a negative or non-finite one (naming it).
    """
    values = [float(v) for v in samples]
    if not values:
        raise ConfigError("robust_seconds needs at least one timed sample, got none")
    bad = [v for v in values if not (v >= 0.0 and v < float("inf"))]
    if bad:
        raise ConfigError(f"timed samples must be finite seconds >= 0, got {bad[0]!r}")
    return min(values)


@dataclass(frozen=True)
class Stability:
    """How steady the machine was while a table was measured, from the reference op.

    Attributes:
        clock: What was timed (``"thread CPU time"`` or ``"wall time"``).
        statistic: How an op's figure is taken from its rounds (``STATISTIC``).
        rounds: Rounds the reference op was timed in.
        reference_seconds: The reference op's figure (its best round), measured.
        reference_median_seconds: The median of its per-round best iterations.
        ratio: ``reference_median_seconds / reference_seconds``: 1 on a steady machine.
        spread: Interquartile range of its per-round figures over their median.
        wall_over_clock: Median wall time over median clock time of the reference op
            (``None`` where the clock is wall time): above 1, the thread waited for a core.
        loaded: ``ratio > LOADED_RATIO``, or ``core_share < LOADED_SHARE``: the machine
            looked loaded.
        measured_at: When (UTC, ISO 8601).
        core_share: The share of a core one busy thread got over the run (see
            :class:`CoreShare`; ``None``: not sampled, a record written before it was).
    """

    clock: str
    statistic: str
    rounds: int
    reference_seconds: float
    reference_median_seconds: float
    ratio: float
    spread: float
    wall_over_clock: float | None
    loaded: bool
    measured_at: str
    core_share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stability:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def why_loaded(self) -> str:
        """What made the machine look loaded, in words ("" when it looked steady)."""
        return load_reasons(self.ratio, self.rounds, self.core_share)


def load_reasons(ratio: float | None, rounds: int | None, share: float | None) -> str:
    """Why a measurement counts as loaded ("" when steady): a busy thread's share of a
    core below ``LOADED_SHARE``, the reference op's typical round above ``LOADED_RATIO``
    times its best."""
    reasons = []
    if share is not None and share < LOADED_SHARE:
        reasons.append(f"a busy thread got {share:.0%} of a core")
    if ratio is not None and ratio > LOADED_RATIO:
        reasons.append(f"the reference op's typical round took {ratio:.2f}x its best of {rounds}")
    return "; ".join(reasons)


def core_share_sample(seconds: float = SHARE_SAMPLE_SECONDS) -> tuple[float, float]:
    """Spin the calling thread for ``seconds`` of wall time: ``(its CPU seconds, wall
    seconds)``. Below 1, another process held the core for the difference."""
    c0, w0 = time.thread_time(), time.perf_counter()
    end = w0 + seconds
    while time.perf_counter() < end:
        pass
    return time.thread_time() - c0, time.perf_counter() - w0


class CoreShare:
    """Samples, spread over a measurement, of the share of a core one busy thread gets.

    A measurement calls :meth:`sample` between its rounds; :attr:`share` is their CPU
    seconds over their wall seconds. Interference from other processes that a
    millisecond timing escapes (the scheduler preempts a thread every few milliseconds)
    shows here as waiting: at a load average of 4 on 2 cores a thread gets about half a
    core.
    """

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0
        self.samples = 0

    def sample(self, seconds: float = SHARE_SAMPLE_SECONDS) -> None:
        cpu, wall = core_share_sample(seconds)
        self.cpu, self.wall, self.samples = self.cpu + cpu, self.wall + wall, self.samples + 1

    @property
    def share(self) -> float | None:
        """CPU seconds over wall seconds of every sample (``None``: none taken)."""
        return min(1.0, self.cpu / self.wall) if self.wall > 0 else None

    @property
    def loaded(self) -> bool:
        """Whether the share is below ``LOADED_SHARE``."""
        share = self.share
        return share is not None and share < LOADED_SHARE

    def to_dict(self) -> dict[str, Any]:
        """The record a measurement keeps: share, samples, the threshold and the verdict."""
        return {
            "core_share": self.share,
            "samples": self.samples,
            "threshold": LOADED_SHARE,
            "loaded": self.loaded,
        }


def assess_reference(
    clock: str,
    round_seconds: Sequence[float],
    round_wall_seconds: Sequence[float] | None = None,
    *,
    threshold: float = LOADED_RATIO,
    core_share: float | None = None,
) -> Stability:
    """Judge the machine from the reference op's per-round figures and the share of a
    core a busy thread got meanwhile.

    Args:
        clock: The clock's name.
        round_seconds: The reference op's best iteration of each round, on ``clock``.
        round_wall_seconds: The same rounds on the wall clock (``None`` if ``clock`` is it).
        threshold: ``median / best`` above which the machine counts as loaded.
        core_share: :attr:`CoreShare.share` over the rounds (``None``: not sampled);
            below ``LOADED_SHARE`` the machine counts as loaded.

    Raises:
        ValueError: No rounds, bad seconds, or a threshold below 1 (naming it).
    """
    if not (isinstance(threshold, (int, float)) and threshold >= 1.0):
        raise ConfigError(f"threshold must be a number >= 1, got {threshold!r}")
    best = robust_seconds(round_seconds)
    median = statistics.median(round_seconds)
    ratio = median / best if best > 0 else 1.0
    wall_ratio = None
    if round_wall_seconds is not None and len(round_wall_seconds):
        clock_median = statistics.median(round_seconds)
        if clock_median > 0:
            wall_ratio = statistics.median(round_wall_seconds) / clock_median
    return Stability(
        clock,
        STATISTIC,
        len(round_seconds),
        best,
        median,
        ratio,
        _spread(round_seconds),
        wall_ratio,
        ratio > threshold or (core_share is not None and core_share < LOADED_SHARE),
        datetime.now(timezone.utc).isoformat(timespec="seconds"),
        core_share,
    )


def reference_unit() -> OpInstance:
    """The reference op timed in every round: a 32-channel width-5 ``Conv1d`` with
    ``BatchNorm1d`` and ``ReLU`` on a (64, 32, 40) input (about a millisecond on one
    CPU core, the size of the default space's ops). Fixed, so that its figure compares
    across studies and machines."""
    with torch.device("meta"):
        module = nn.Sequential(
            nn.Conv1d(32, 32, 5, padding=2, bias=False), nn.BatchNorm1d(32), nn.ReLU()
        )
    return make_instance("reference", "reference", module, (64, 32, 40), True, torch.float32)


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The autocast context of a precision (a no-op context for fp32)."""
    if check_choice("precision", precision, PRECISIONS) == "fp32":
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

    def run(self, clock: Callable[[], float] | None = None) -> tuple[float, float]:
        """One iteration; returns (forward+backward seconds, optimizer seconds) on
        ``clock`` (a ``device_clock``; default: the device's wall clock)."""
        clock = clock or device_clock(self.device)[1]
        if self.x.requires_grad:
            self.x.grad = None
        for p in self.params:
            p.grad = None
        t0 = clock()
        with autocast(self.device, self.precision):
            out = self.module(self.x)
        if self.grad is not None:
            out.backward(self.grad)
        t1 = clock()
        if self.opt is not None:
            self.opt.step()
        return t1 - t0, clock() - t1


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


@dataclass(frozen=True)
class OpMeasurement:
    """What one ``measure_ops`` run found.

    Attributes:
        timings: Key to timing of every distinct op instance measured.
        stability: The reference op's verdict on the machine during the run.
    """

    timings: dict[str, OpTiming]
    stability: Stability


def measure_ops(
    units: Sequence[OpInstance],
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    *,
    warmup: int = 3,
    rounds: int = 5,
    iters: int = 3,
    seed: int = 0,
) -> OpMeasurement:
    """Measure every distinct op instance of ``units`` (by key), interleaved in rounds,
    with the reference op (``reference_unit``) visited in every round too.

    Args:
        units: Op instances; duplicates (same key) are timed once.
        device: Where to time.
        precision: ``"fp32"``, ``"bf16"`` or ``"fp16"`` (autocast).
        warmup: Untimed iterations at an op's first visit.
        rounds: Visits per op.
        iters: Timed iterations per visit.
        seed: Seeds the visiting order and the weights.

    Returns:
        The timings (``robust_seconds`` of all of an op's timed iterations, on
        ``device_clock(device, cpu_time=True)``; ``flops``/``params``/``description`` are
        left for the caller) and the machine's stability.
    """
    dev = torch.device(device)
    check_int("warmup", warmup, 0)
    check_int("rounds", rounds, 1)
    check_int("iters", iters, 1)
    clock_name, clock = device_clock(dev, cpu_time=True)
    ref = reference_unit()
    by_key = {u.key: u for u in units}
    distinct = list(by_key.values())
    items = distinct if ref.key in by_key else [*distinct, ref]
    ref_index = next(i for i, u in enumerate(items) if u.key == ref.key)
    harnesses: list[_OpHarness | None] = [None] * len(items)
    fb: list[list[float]] = [[] for _ in items]
    opt: list[list[float]] = [[] for _ in items]
    ref_rounds: list[float] = []
    ref_walls: list[float] = []
    gauge = CoreShare()
    for i in _rounds(len(items), rounds, seed):
        h = harnesses[i]
        if h is None:
            h = harnesses[i] = _OpHarness(items[i], dev, precision)
            for _ in range(warmup):
                h.run(clock)
        h.run(clock)
        visit: list[float] = []
        walls: list[float] = []
        for _ in range(iters):
            w0 = time.perf_counter()
            a, b = h.run(clock)
            walls.append(time.perf_counter() - w0)
            fb[i].append(a)
            opt[i].append(b)
            visit.append(a + b)
        if i == ref_index:
            ref_rounds.append(robust_seconds(visit))
            ref_walls.append(min(walls))
            gauge.sample()
    stability = assess_reference(
        clock_name,
        ref_rounds,
        ref_walls if clock is time.thread_time else None,
        core_share=gauge.share,
    )
    timings = {
        u.key: OpTiming(robust_seconds(fb[i]), robust_seconds(opt[i]), _spread(fb[i]), len(fb[i]))
        for i, u in enumerate(items)
        if u.key in by_key
    }
    return OpMeasurement(timings, stability)


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
    """``measure_ops(...).timings``: the timings alone (see ``measure_ops``)."""
    return measure_ops(
        units, device, precision, warmup=warmup, rounds=rounds, iters=iters, seed=seed
    ).timings


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
    """Training-step seconds of several networks, interleaved in rounds, timed by the
    step timer (``StepTimer``: AdamW through the ``Stack`` of ``precision``) on the
    thread's CPU time on a CPU, as the op table is timed.

    Args:
        builders: Each builds one network (called once, at its first visit).
        batch: The ``(x, y)`` batch every step trains on.
        device: Where to train.
        precision: ``"fp32"``, ``"bf16"`` or ``"fp16"`` (the stack's autocast).
        warmup: Untimed steps at a network's first visit.
        rounds: Visits per network.
        iters: Timed steps per visit.
        seed: Seeds the visiting order.

    Returns:
        Array ``(rounds, len(builders))``: each visit's ``robust_seconds`` (its fastest
        step); ``robust_seconds`` over a column is a network's figure.
    """
    dev = torch.device(device)
    check_int("warmup", warmup, 0)
    check_int("rounds", rounds, 1)
    check_int("iters", iters, 1)
    check_choice("precision", precision, PRECISIONS)
    stack = Stack(amp=None if precision == "fp32" else precision)
    timers: list[StepTimer | None] = [None] * len(builders)
    visits = [0] * len(builders)
    out = np.zeros((rounds, len(builders)))
    for i in _rounds(len(builders), rounds, seed):
        timer = timers[i]
        if timer is None:
            timer = timers[i] = StepTimer(builders[i](), stack, dev, cpu_time=True)
            timer(*batch, 0, warmup=warmup)
        out[visits[i], i] = robust_seconds(timer(*batch, iters, warmup=1))
        visits[i] += 1
    return out
