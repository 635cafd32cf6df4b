"""A study's ``stack="auto"`` calibration: a winner-sized candidate of its space, the
layers worth trying on its device, a time budget checked by a probe first."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from nasflow.calibrate._auto import (
    AUTO_LAYERS,
    CUT_BELOW,
    AutoResult,
    auto_stack,
    skipped_record,
)
from nasflow.calibrate._interleave import RunConfig
from nasflow.cost import CoreShare
from nasflow.space import Arch, SearchSpace
from nasflow.train import Batches, TrainingInterrupted, evaluate, make_optimizer
from nasflow.train.stack import Schedule, Stack, device_clock

#: Candidates sampled by :func:`calibrate_for_space`; the largest is calibrated on.
CALIBRATION_SAMPLES = 8
#: Batches each variant trains per phase in a study's calibration.
STUDY_CALIBRATION_BATCHES = 16
#: Training batches the budget probe times (after one warm-up batch).
PROBE_BATCHES = 5
#: The budget estimate lets the variants average this many times the baseline's time per
#: batch (a layer can be slower than the baseline; that is what the calibration finds out).
ESTIMATE_SLACK = 1.5


def calibration_candidate(space: SearchSpace, seed: int) -> tuple[Arch, int]:
    """The architecture a study calibrates on, and its parameter count: the largest (by
    parameters) of ``CALIBRATION_SAMPLES`` architectures sampled with ``seed``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    archs = [space.sample(rng) for _ in range(CALIBRATION_SAMPLES)]
    sizes = [sum(p.numel() for p in space.build(a).parameters()) for a in archs]
    i = int(np.argmax(sizes))
    return archs[i], sizes[i]


def study_candidates(device: torch.device | str) -> tuple[str, ...]:
    """Layers a study's calibration considers on ``device`` (no compile on a CPU)."""
    device = torch.device(device)
    return (
        AUTO_LAYERS if device.type == "cuda" else tuple(n for n in AUTO_LAYERS if n != "compile")
    )


def first_phase_variants(n_layers: int) -> int:
    """Variants of :func:`auto_stack`'s first phase: baseline, replica, each layer alone,
    and the cumulative stacks of 2 or more layers."""
    return 2 + n_layers + max(0, n_layers - 1)


def probe_seconds(
    make_model: Callable[[], nn.Module],
    train: Batches,
    val: Batches,
    cfg: RunConfig,
    device: torch.device,
    batches: int = PROBE_BATCHES,
) -> tuple[float, float]:
    """``(seconds per training batch, seconds per validation pass)`` of the baseline,
    measured now (the calibration's budget check): the median of ``batches`` timed
    batches, so that one batch stalled by another process does not decide it."""
    torch.manual_seed(cfg.seed)
    model = make_model().to(device)
    step = Stack().build(
        model,
        make_optimizer(model.parameters(), cfg.lr, cfg.weight_decay),
        device,
        Schedule(batches + 1, 0),
    )
    stream = iter(train.epoch(0))
    model.train()
    x, y = next(stream)
    step(x.to(device), y.to(device))  # warm-up
    times = []
    _, clock = device_clock(device)
    for x, y in stream:
        t0 = clock()
        step(x.to(device), y.to(device))
        times.append(clock() - t0)
        if len(times) == batches:
            break
    step.flush()
    per_batch = statistics.median(times) if times else 0.0
    t0 = time.perf_counter()
    evaluate(model, val, device=device)
    return per_batch, time.perf_counter() - t0


def calibrate_for_space(
    space: SearchSpace,
    train: Batches,
    val: Batches,
    lr: float,
    weight_decay: float,
    planned_batches: int,
    device: torch.device | str = "cpu",
    seed: int = 0,
    calibration_batches: int = STUDY_CALIBRATION_BATCHES,
    budget: float | None = None,
    arch: Arch | None = None,
    should_stop: Callable[[], bool] | None = None,
    cut_below: float | None = CUT_BELOW,
) -> AutoResult:
    """A study's short ``stack="auto"`` calibration, on a winner-sized candidate.

    Calibrates on :func:`calibration_candidate` (the candidates a search keeps tend to be
    the large ones, and a larger network is where a layer's gain or loss shows). Each
    variant trains ``calibration_batches`` batches in turns of 2. On a CPU
    ``torch.compile`` is not a candidate: its inductor warm-up alone takes longer than the
    whole calibration; measure it with ``nasflow measure-stack`` and set it explicitly if it
    pays off over a long run.

    With a ``budget``, a probe first times a few baseline batches and one validation pass
    of the candidate; when the first phase, estimated from them (``ESTIMATE_SLACK`` times
    the baseline's time for every variant), would take longer than ``budget``, nothing is
    calibrated: the result trains with the baseline and its record carries ``"skipped"``
    (the reason) and no measurement. Otherwise ``budget`` is the deadline of
    :func:`auto_stack`: a phase stops at the first round that ends past it, and the second
    phase runs only if it fits what is left.

    Args:
        space: The search space.
        train: Training batches (the study's batch size).
        val: Validation batches.
        lr: Peak learning rate of the calibration runs.
        weight_decay: Their AdamW weight decay.
        planned_batches: Batches a candidate trains in the study (amortizes warm-up).
        device: Where to train.
        seed: Seeds the architecture sample and the initial weights.
        calibration_batches: Batches each variant trains per phase.
        budget: Seconds the calibration may take (``None``: no limit, no probe).
        arch: The candidate (default: :func:`calibration_candidate` of ``seed``).
        should_stop: Polled after every interleaved round; when true the calibration
            ends there, measuring nothing more.
        cut_below: Variants hopelessly slower than the baseline stop early (see
            :func:`auto_stack`; ``None``: none does).

    The record's ``calibration["load"]`` is a ``nasflow.cost.CoreShare`` sampled after
    every round (the share of a core a busy thread got): whether the machine looked
    loaded while the calibration ran (then it is not stored for the device).

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop.
    """
    device = torch.device(device)
    t0 = time.perf_counter()
    if arch is None:
        arch, params = calibration_candidate(space, seed)
    else:
        params = sum(p.numel() for p in space.build(arch).parameters())
    candidates = study_candidates(device)
    cfg = RunConfig(lr=lr, weight_decay=weight_decay, chunk=2, evals_per_epoch=1, seed=seed)

    def make_model() -> nn.Module:
        return space.build(arch)

    about = {"arch": arch.to_json(), "params": params, "budget_seconds": budget}
    deadline = None
    if budget is not None:
        end = t0 + budget
        why = _over_budget(make_model, train, val, cfg, device, calibration_batches, end, about)
        if why is not None:
            record = skipped_record(device, why, candidates)
            record["calibration"].update(about, seconds=time.perf_counter() - t0)
            return AutoResult(Stack(), record)
        deadline = t0 + budget
    after_round = _RoundHook(should_stop)
    result = auto_stack(
        make_model,
        train,
        val,
        device,
        candidates=candidates,
        calibration_batches=calibration_batches,
        planned_batches=planned_batches,
        cfg=cfg,
        deadline=deadline,
        after_round=after_round,
        cut_below=cut_below,
    )
    result.record["calibration"].update(
        about, seconds=time.perf_counter() - t0, load=after_round.gauge.to_dict()
    )
    return result


class _RoundHook:
    """Run after every round of a study's calibration: a load sample
    (``nasflow.cost.CoreShare``), then the stop check."""

    def __init__(self, should_stop: Callable[[], bool] | None) -> None:
        self.should_stop, self.gauge, self.rounds = should_stop, CoreShare(), 0

    def __call__(self) -> None:
        self.rounds += 1
        self.gauge.sample()
        if self.should_stop is not None and self.should_stop():
            raise TrainingInterrupted(f"the stack calibration, after round {self.rounds}")


def _over_budget(
    make_model: Callable[[], nn.Module],
    train: Batches,
    val: Batches,
    cfg: RunConfig,
    device: torch.device,
    calibration_batches: int,
    deadline: float,
    about: dict[str, Any],
) -> str | None:
    """Why the first phase, estimated from a probe of the baseline, would not end before
    ``deadline`` (a ``time.perf_counter()`` value; ``None``: it would); the probe's figures
    go into ``about``, the budget is ``about["budget_seconds"]``."""
    per_batch, per_eval = probe_seconds(make_model, train, val, cfg, device)
    variants = first_phase_variants(len(study_candidates(device)))
    estimate = variants * (ESTIMATE_SLACK * calibration_batches * per_batch + per_eval)
    about.update(
        probe_batch_seconds=per_batch, probe_eval_seconds=per_eval, estimated_seconds=estimate
    )
    if estimate <= deadline - time.perf_counter():
        return None
    return (
        f"estimated {estimate:.0f}s for the first phase ({variants} variants x "
        f"{calibration_batches} batches at a measured median "
        f"{1000 * per_batch:.0f} ms per baseline batch x{ESTIMATE_SLACK:g}, plus one "
        f"validation pass each at {per_eval:.1f}s) exceeds the {about['budget_seconds']:g}s "
        "budget"
    )
