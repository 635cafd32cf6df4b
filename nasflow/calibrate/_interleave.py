"""Train several stack variants of one network side by side, interleaved chunk by chunk.

On a shared machine the speed of the same code drifts by 2-5x over minutes. Every variant
therefore trains the same network from the same initial weights on the same batches,
and the variants take turns: in each round each variant trains one chunk of batches
(in a fresh seeded random order every round, so no variant always follows the same
neighbour: a variant that changes global state, such as the thread count, would otherwise
bias the one after it). A variant's speed-up is then the median over
rounds of the *paired* ratio baseline chunk time / variant chunk time, with its spread.
Round 0 (warm-up, including compilation) and round 1 (memory measurement) are reported
but excluded from step times.
"""

from __future__ import annotations

import copy
import logging
import random
import time
import traceback
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from nasflow._checks import check_int
from nasflow.calibrate._measure import state_bytes
from nasflow.errors import ConfigError
from nasflow.train import Batches, Recipe, evaluate, make_optimizer
from nasflow.train.stack import ActivationMeter, Schedule, Stack, StackStep, device_clock

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunConfig(Recipe):
    """The shared training recipe of an interleaved run, and how it is measured.

    ``seed`` seeds the initial weights; ``lr`` is per batch (accumulation scales it by ``k``).

    Attributes:
        chunk: Batches each variant trains per turn.
        evals_per_epoch: Validation evaluations per epoch (for time to target).
        target_accuracy: Validation accuracy whose first crossing is recorded.
        max_batches: Stop after this many batches (a calibration); ``None`` trains all
            epochs. The schedule spans what is actually trained.
    """

    epochs: int = 3
    warmup_epochs: float = 0.5
    chunk: int = 8
    evals_per_epoch: int = 2
    target_accuracy: float = 0.9
    max_batches: int | None = None

    def __post_init__(self) -> None:
        check_int("max_batches", self.max_batches, optional=True)
        super().__post_init__()
        for name in ("chunk", "evals_per_epoch"):
            check_int(name, getattr(self, name))
        if not 0 < self.target_accuracy <= 1:
            raise ConfigError(f"target_accuracy must be in (0, 1], got {self.target_accuracy!r}")


@dataclass
class VariantRecord:
    """Everything measured for one variant."""

    name: str
    stack: Stack
    chunk_seconds: dict[int, float] = field(default_factory=dict)  # timed rounds only
    chunk_batches: dict[int, int] = field(default_factory=dict)
    # Host seconds of each timed round spent producing its batches (reading, augmenting,
    # copying to the device): the part of a step no layer of the stack shortens.
    chunk_data_seconds: dict[int, float] = field(default_factory=dict)
    warmup_seconds: float = 0.0  # round 0: first steps, compilation included
    train_seconds: float = 0.0
    batches: int = 0
    optimizer_steps: int = 0
    compilations: int = 0
    evals: list[dict[str, float]] = field(default_factory=list)
    activation_bytes: int | None = None
    peak_memory_bytes: int | None = None
    error: str | None = None
    #: Where the run cut the variant short (``Cut``; ``None``: it trained to the end).
    cut: Cut | None = None


@dataclass(frozen=True)
class Cut:
    """A variant too slow to be worth timing to the end: every one of its first
    ``rounds`` timed rounds ran below ``below`` times the baseline's speed (the paired
    per-round ratio), so it stopped there, unevaluated (its accuracy is not measured).

    Attributes:
        below: The ratio its rounds were all below.
        rounds: Timed rounds it ran.
        after_round: The round it was cut after.
    """

    below: float
    rounds: int
    after_round: int


def paired_ratios(base: VariantRecord, other: VariantRecord) -> list[float]:
    """Per timed round, in round order: baseline seconds per batch / ``other``'s seconds
    per batch (the rounds both timed)."""
    out = []
    for rnd in sorted(other.chunk_seconds):
        seconds = other.chunk_seconds[rnd]
        if rnd in base.chunk_seconds and seconds > 0:
            b = base.chunk_seconds[rnd] / base.chunk_batches[rnd]
            out.append(b / (seconds / other.chunk_batches[rnd]))
    return out


class _Runner:
    """One variant's network, optimizer, stack step and data stream."""

    def __init__(
        self,
        record: VariantRecord,
        model: nn.Module,
        batches: Batches,
        cfg: RunConfig,
        device: torch.device,
    ) -> None:
        self.record, self.model, self.device = record, model.to(device), device
        self.optimizer = make_optimizer(model.parameters(), cfg.lr, cfg.weight_decay)
        per_epoch = len(batches)
        total = _total(cfg, per_epoch)
        self.schedule = Schedule(total, min(total - 1, int(cfg.warmup_epochs * per_epoch)))
        self.step: StackStep = record.stack.build(model, self.optimizer, device, self.schedule)
        self.stream = (b for e in range(cfg.epochs) for b in batches.epoch(e))
        #: Host seconds the last chunk spent producing its batches.
        self.data_seconds = 0.0

    def run_chunk(self, n: int, meter: ActivationMeter | None, last: bool) -> int:
        """Train up to ``n`` batches (and step on a partial accumulation when ``last``);
        returns how many were trained."""
        self.model.train()
        done, self.data_seconds = 0, 0.0
        t0 = time.perf_counter()
        for x, y in self.stream:
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
            self.data_seconds += time.perf_counter() - t0
            if meter is not None:
                with meter.active():
                    self.step(x, y)
            else:
                self.step(x, y)
            done += 1
            if done == n:
                break
            t0 = time.perf_counter()
        if last or done < n:  # the end: step on what was accumulated
            self.step.flush()
        return done


def _total(cfg: RunConfig, per_epoch: int) -> int:
    total = cfg.epochs * per_epoch
    return total if cfg.max_batches is None else min(total, cfg.max_batches)


def run_interleaved(
    variants: dict[str, Stack],
    make_model: Callable[[], nn.Module],
    train: Batches,
    val: Batches,
    cfg: RunConfig,
    device: torch.device | str = "cpu",
    reseeded: Collection[str] = (),
    deadline: float | None = None,
    after_round: Callable[[], None] | None = None,
    cut: tuple[str, float, int] | None = None,
) -> dict[str, VariantRecord]:
    """Train every variant for ``cfg.epochs`` epochs, interleaved; measure each one.

    A variant that fails (a layer unsupported here, a compile error) keeps its error
    message and drops out; the others go on.

    Args:
        variants: Name -> stack (one of them is normally ``Stack()``, the baseline).
        make_model: Builds the network; called once, every variant starts from a copy.
        train: Training batches (``drop_last`` recommended).
        val: Validation batches.
        cfg: The recipe and measurement settings.
        device: Where to train.
        reseeded: Variants that start from other initial weights (seed + 1): a baseline
            replica among them measures the run's noise floor (speed and accuracy).
        deadline: A ``time.perf_counter()`` value: once it has passed (checked after every
            round, so a run overruns it by at most one round and one evaluation per
            variant), no further round starts and every variant is evaluated where it
            stopped (its last record in ``evals``); the records hold fewer batches.
        after_round: Called after every round (a load gauge's sample, a stop check that
            raises to end the run there).
        cut: ``(baseline, below, rounds)``: a variant (not ``baseline``, nor one of
            ``reseeded``) whose first ``rounds`` timed rounds all ran below ``below``
            times ``baseline``'s speed stops there (:class:`Cut`); ``None``: none stops.
    """
    device = torch.device(device)
    torch.manual_seed(cfg.seed)
    init = make_model()
    other = None
    if reseeded:
        torch.manual_seed(cfg.seed + 1)
        other = make_model()
    records = {name: VariantRecord(name, stack) for name, stack in variants.items()}
    runners: dict[str, _Runner] = {}
    for name, rec in records.items():
        try:
            model = copy.deepcopy(other if name in reseeded else init)
            runners[name] = _Runner(rec, model, train, cfg, device)
        except (ValueError, RuntimeError) as e:
            rec.error = f"{type(e).__name__}: {e}"
            _LOG.debug(f"stack calibration: {name}: skipped ({rec.error})")
    total = _total(cfg, len(train))
    eval_every = max(1, len(train) // cfg.evals_per_epoch)
    position, rnd = 0, 0
    shuffler = random.Random(cfg.seed)  # its own generator: the global RNGs are untouched
    while position < total and runners:
        n = min(cfg.chunk, total - position)
        order = list(runners)
        shuffler.shuffle(order)
        for name in order:
            _turn(runners, name, n, rnd, device, cfg, val, position, eval_every, total)
        position += n
        if cut is not None:
            _cut_slow(runners, records, cut, reseeded, rnd)
        rnd += 1
        _LOG.debug(f"stack calibration: round {rnd}: {position}/{total} batches")
        if after_round is not None:
            after_round()
        if position < total and deadline is not None and time.perf_counter() > deadline:
            _stop(runners, device, val)
            _LOG.debug(
                f"stack calibration: stopped at the time budget after {position}/{total} batches"
            )
            break
    return records


def _cut_slow(
    runners: dict[str, _Runner],
    records: dict[str, VariantRecord],
    cut: tuple[str, float, int],
    reseeded: Collection[str],
    rnd: int,
) -> None:
    """After round ``rnd``: stop every variant whose first ``rounds`` timed rounds (this
    one the last of them) all ran below ``below`` times the baseline's speed."""
    baseline, below, rounds = cut
    if baseline not in runners or rnd not in records[baseline].chunk_seconds:
        return
    for name in [n for n in runners if n != baseline and n not in reseeded]:
        rec = records[name]
        if rnd not in rec.chunk_seconds or len(rec.chunk_seconds) != rounds:
            continue
        ratios = paired_ratios(records[baseline], rec)
        if len(ratios) == rounds and max(ratios) < below:
            rec.cut = Cut(below, rounds, rnd)
            del runners[name]
            _LOG.debug(
                f"stack calibration: {name} cut after round {rnd} (x{max(ratios):.2f} at "
                f"best over {rounds} timed rounds, below x{below:.2f})"
            )


def _stop(runners: dict[str, _Runner], device: torch.device, val: Batches) -> None:
    """Stop a run early, between rounds: every variant steps on what it accumulated and
    is evaluated where it stopped (all at the same position, so accuracies compare)."""
    for r in runners.values():
        rec = r.record
        r.step.flush()
        rec.optimizer_steps = r.step.optimizer_steps
        if rec.evals and rec.evals[-1]["batches"] == rec.batches:
            continue
        acc, loss = evaluate(r.model, val, device=device)
        rec.evals.append(
            {
                "batches": rec.batches,
                "optimizer_steps": r.step.optimizer_steps,
                "train_seconds": rec.train_seconds,
                "val_accuracy": acc,
                "val_loss": loss,
            }
        )


def _turn(
    runners: dict[str, _Runner],
    name: str,
    n: int,
    rnd: int,
    device: torch.device,
    cfg: RunConfig,
    val: Batches,
    position: int,
    eval_every: int,
    total: int,
) -> None:
    """One variant's turn: train a chunk (timed), then evaluate if an eval point passed."""
    r = runners[name]
    rec = r.record
    meter = ActivationMeter() if rnd == 1 and device.type == "cpu" else None
    if rnd == 1 and device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    _, clock = device_clock(device)
    try:
        t0 = clock()
        done = r.run_chunk(n, meter, last=position + n >= total)
        seconds = clock() - t0
    except Exception as e:  # a layer that fails here must not take the whole run down
        rec.error = f"{type(e).__name__}: {e}"
        rec.error += "\n" + traceback.format_exc(limit=3)
        del runners[name]
        return
    rec.train_seconds += seconds
    rec.batches += done
    rec.optimizer_steps = r.step.optimizer_steps
    rec.compilations = r.step.compilations
    if rnd == 0:
        rec.warmup_seconds = seconds
    elif rnd > 1:
        rec.chunk_seconds[rnd], rec.chunk_batches[rnd] = seconds, done
        rec.chunk_data_seconds[rnd] = r.data_seconds
    if rnd == 1:
        static = state_bytes(r.model, r.optimizer)
        if meter is not None:
            rec.activation_bytes = meter.peak
            rec.peak_memory_bytes = static + meter.peak
        elif device.type == "cuda":
            rec.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    end = position + n
    if end // eval_every > position // eval_every or end == total:
        acc, loss = evaluate(r.model, val, device=device)
        rec.evals.append(
            {
                "batches": rec.batches,
                "optimizer_steps": rec.optimizer_steps,
                "train_seconds": rec.train_seconds,
                "val_accuracy": acc,
                "val_loss": loss,
            }
        )


def summarize(rec: VariantRecord, target: float) -> dict[str, Any]:
    """Time and steps to ``target`` validation accuracy, and the final accuracy."""
    hit = next((e for e in rec.evals if e["val_accuracy"] >= target), None)
    return {
        "final_accuracy": rec.evals[-1]["val_accuracy"] if rec.evals else None,
        "steps_to_target": None if hit is None else int(hit["optimizer_steps"]),
        "batches_to_target": None if hit is None else int(hit["batches"]),
        "seconds_to_target": None if hit is None else hit["train_seconds"],
    }
