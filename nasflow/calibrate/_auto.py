"""``stack="auto"``: keep only the layers that measurably pay off on this machine.

Nothing is assumed: bf16 autocast and ``torch.compile`` are large wins on a modern GPU
and can be slower than fp32 eager for MNIST-1D-sized networks on a 2-core CPU. A short
calibration trains the candidate with each layer alone and with the layers stacked
cumulatively next to the plain baseline (interleaved, same weights, same batches, plus a
reseeded baseline replica for the noise floor), keeps the layers that gain at least
``min_gain`` without losing accuracy, then measures the kept combination against the
baseline again, in the same run. The chosen stack is the fastest measured variant that
clears ``min_gain``; if none does, the baseline itself. So "auto" is never slower than
the baseline as measured in that run.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from nasflow.calibrate._harness import (
    BASELINE,
    QUALITY_TOLERANCE,
    REPLICA,
    compare_to_baseline,
    costs_accuracy,
    noise_floor,
    stack_variants,
    variant_row,
)
from nasflow.calibrate._interleave import RunConfig, run_interleaved
from nasflow.calibrate._measure import environment
from nasflow.cost import CoreShare
from nasflow.errors import ConfigError
from nasflow.space import Arch, SearchSpace
from nasflow.train import Batches, TrainingInterrupted, evaluate, make_optimizer
from nasflow.train.stack import LAYER_SPECS, Schedule, Stack, device_clock

#: Layers "auto" considers (``LayerSpec.auto``): not activation checkpointing, a memory
#: layer that always costs time and is switched on by the memory fit.
AUTO_LAYERS: tuple[str, ...] = tuple(spec.name for spec in LAYER_SPECS if spec.auto)


@dataclass(frozen=True)
class AutoResult:
    """The chosen stack and the JSON-able record stored on the study.

    Attributes:
        stack: The stack to train with (``Stack()`` when no layer paid off).
        record: Study user attribute ``nasflow:stack``; see :func:`auto_stack`.
    """

    stack: Stack
    record: dict[str, Any]


def _measure(
    variants: dict[str, Stack],
    make_model: Callable[[], nn.Module],
    train: Batches,
    val: Batches,
    cfg: RunConfig,
    device: torch.device,
    log: Callable[[str], None] | None,
    deadline: float | None = None,
    after_round: Callable[[], None] | None = None,
) -> tuple[dict[str, dict[str, Any]], int]:
    """Rows of an interleaved run by variant name, and the batches the baseline trained
    (fewer than asked when the run stopped at ``deadline``)."""
    records = run_interleaved(
        variants,
        make_model,
        train,
        val,
        cfg,
        device,
        log,
        reseeded=(REPLICA,),
        deadline=deadline,
        after_round=after_round,
    )
    rows = [
        variant_row(r, records[BASELINE], train.batch_size, cfg.target_accuracy)
        for r in records.values()
    ]
    compare_to_baseline(rows, QUALITY_TOLERANCE)
    return {r["name"]: r for r in rows}, records[BASELINE].batches


def _amortized(row: dict[str, Any], base: dict[str, Any], planned: int | None) -> float | None:
    """The multiplier with the variant's extra warm-up (compilation) spread over
    ``planned`` batches; the steady-state multiplier when ``planned`` is ``None``."""
    mult = row.get("multiplier")
    if mult is None or planned is None or "batch_seconds" not in row:
        return mult
    extra = max(0.0, row["warmup_seconds"] - base["warmup_seconds"])
    t_base = planned * base["batch_seconds"]
    return t_base / (planned * row["batch_seconds"] + extra)


#: Schema of :func:`auto_stack`'s record. 2: ``layers`` holds every layer considered, alone
#: and stacked cumulatively; ``chosen_multiplier`` is the chosen stack's own measurement
#: (schema 1's ``layers`` and ``end_to_end`` described the chosen stack only).
SCHEMA = 2


def auto_stack(
    make_model: Callable[[], nn.Module],
    train: Batches,
    val: Batches,
    device: torch.device | str = "cpu",
    candidates: Sequence[str] = AUTO_LAYERS,
    calibration_batches: int = 48,
    planned_batches: int | None = None,
    min_gain: float = 1.05,
    tolerance: float = QUALITY_TOLERANCE,
    cfg: RunConfig | None = None,
    base: Stack | None = None,
    log: Callable[[str], None] | None = None,
    deadline: float | None = None,
    after_round: Callable[[], None] | None = None,
    **settings: Any,
) -> AutoResult:
    """Calibrate the stack on this machine and return the layers worth keeping.

    The first phase trains the baseline, its reseeded replica, every candidate layer alone
    and the candidates stacked cumulatively (``candidates[:2]``, ..., all of them), all
    interleaved in one run. The layers that pay off alone are kept; the second phase
    measures the kept combination (and each kept layer alone) against the baseline again.

    The record (``AutoResult.record``, stored as study user attribute ``nasflow:stack``)
    extends the report's waterfall schema (``nasflow.report.stack_data``)::

        {"schema": 2,
         "baseline": "fp32 eager, one process",
         "device": "cpu: AMD EPYC (2 threads)",
         "layers": [                      # every candidate, in stacking order (phase 1)
             {"name": "amp", "alone": 0.93, "cumulative": 0.93, "kept": false},
             {"name": "threads", "alone": 1.31, "cumulative": 1.20, "kept": true}],
         "end_to_end": 1.20,              # all candidates stacked vs baseline (phase 1)
         "product": 1.22,                 # product of the layers' "alone" (measured ones)
         "interaction": 0.98,             # end_to_end / product; null unless all measured
         "chosen": ["threads"],           # the stack trained with ([]: the baseline)
         "chosen_multiplier": 1.28,       # the chosen stack vs baseline; null: baseline
         "chosen_from": "second phase",   # the run that measured it
         "stack": {...},                  # Stack.to_dict() of the chosen stack
         "candidates": [                  # every layer considered, kept or not
             {"name": "amp", "alone": 0.93, "q25": 0.9, "q75": 1.0,
              "accuracy_delta": -0.001, "warmup_seconds": 0.4, "amortized": 0.93,
              "kept": false, "reason": "gain x0.93 < x1.05"}, ...],
         "final_run": {"threads": {"multiplier": 1.28, "multiplier_q25": 1.2,
                                   "multiplier_q75": 1.4}, ...},  # second phase
         "noise": {"multiplier": 1.0, "multiplier_q25": 0.95, "multiplier_q75": 1.04,
                   "accuracy_delta": 0.002},   # first phase: baseline vs its reseeded replica
         "calibration": {"batches": 48, "seconds": 95.0, "first_phase_seconds": 70.0,
                         "second_phase": "ran", "variants": 12, "min_gain": 1.05,
                         "tolerance": 0.005, "planned_batches": null}}

    (The numbers above show the shape only.) Every multiplier is baseline time / variant
    time per batch (median of paired per-round ratios), measured in this calibration. A
    layer is kept when its multiplier (amortized over ``planned_batches`` when given, so a
    compile that never pays back is dropped) is at least ``min_gain`` and its validation
    accuracy is not below the baseline's by more than ``max(tolerance, noise floor)``.

    Args:
        make_model: Builds the network to calibrate on (e.g. ``lambda: space.build(arch)``).
        train: Training batches.
        val: Validation batches.
        device: Where to train.
        candidates: Layers to consider, in stacking order.
        calibration_batches: Batches each variant trains per phase.
        planned_batches: Batches the real training will run (amortizes compilation).
        min_gain: Smallest multiplier worth keeping.
        tolerance: Largest accuracy drop tolerated (as a fraction, 0.005 = 0.5 points).
        cfg: Recipe of the calibration (``max_batches`` is set from
            ``calibration_batches``).
        base: The baseline stack (every layer off).
        log: Progress lines.
        deadline: A ``time.perf_counter()`` value. A phase stops at the first round that
            ends after it (fewer timed rounds; every variant is still evaluated); when no
            layer was timed by then the record is a skipped one (``"skipped"``, the
            baseline). When the second phase (estimated from the first phase's time per
            variant) would end after it, it is skipped and the stack is chosen from the
            first phase's variants made of kept layers only (``"chosen_from": "first
            phase"``).
        after_round: Called after every interleaved round (see ``run_interleaved``).
        settings: How layers are switched on (``amp="bf16"``, ``accumulation=2``).
    """
    if not min_gain >= 1.0:
        raise ConfigError(f"min_gain must be >= 1, got {min_gain!r}")
    candidates = list(candidates)
    if not candidates:
        raise ConfigError("auto_stack needs at least one candidate layer")
    device = torch.device(device)
    base = base or Stack()
    cfg = replace(cfg or RunConfig(chunk=4), max_batches=calibration_batches)
    t0 = time.perf_counter()
    first = stack_variants(candidates, base, **settings)
    rows, done = _measure(first, make_model, train, val, cfg, device, log, deadline, after_round)
    first_seconds = time.perf_counter() - t0
    first_phase = (
        "complete"
        if done >= calibration_batches
        else f"stopped at the time budget after {done} of {calibration_batches} batches"
    )
    if all((rows.get(n) or {}).get("multiplier") is None for n in candidates):
        reason = (
            "no layer was timed"
            if done >= calibration_batches
            else f"the first phase {first_phase}"
        )
        record = skipped_record(device, f"{reason}, so nothing was measured", candidates)
        record["stack"] = base.to_dict()
        record["calibration"] = {
            "batches": calibration_batches,
            "seconds": time.perf_counter() - t0,
            "first_phase": first_phase,
        }
        return AutoResult(base, record)
    noise = noise_floor(list(rows.values()))
    acc_noise = abs((noise or {}).get("accuracy_delta") or 0.0)
    allowed = max(tolerance, acc_noise)
    decided = [
        decide_layer(rows.get(n), n, rows[BASELINE], planned_batches, min_gain, allowed)
        for n in candidates
    ]
    kept = [d["name"] for d in decided if d["kept"]]
    final_name, final_row, second = BASELINE, None, {}
    chosen_from, second_phase = "first phase", "not run: no layer kept"
    if kept:
        trial = {BASELINE: base, REPLICA: base, "+".join(kept): base.with_layers(kept, **settings)}
        if len(kept) > 1:
            trial.update({n: base.with_layers([n], **settings) for n in kept})
        need = first_seconds / len(first) * len(trial)
        if deadline is not None and time.perf_counter() + need > deadline:
            pool = {
                n: r
                for n, r in rows.items()
                if n == BASELINE or (n != REPLICA and set(n.split("+")) <= set(kept))
            }
            final_name = choose_final(pool, min_gain, planned_batches)
            final_row = rows.get(final_name) if final_name != BASELINE else None
            second_phase = f"skipped: about {need:.0f}s more would pass the time budget"
        else:
            second, _ = _measure(
                trial, make_model, train, val, cfg, device, log, deadline, after_round
            )
            final_name = choose_final(second, min_gain, planned_batches)
            final_row = second.get(final_name) if final_name != BASELINE else None
            chosen_from, second_phase = "second phase", "ran"
    chosen = [] if final_name == BASELINE else final_name.split("+")
    stack = base.with_layers(chosen, **settings) if chosen else base
    layers = []
    for i, name in enumerate(candidates):
        alone = (rows.get(name) or {}).get("multiplier")
        cum = (rows.get("+".join(candidates[: i + 1])) or {}).get("multiplier")
        layers.append({"name": name, "alone": alone, "cumulative": cum, "kept": name in chosen})
    measured = [x["alone"] for x in layers if x["alone"] is not None]
    product = math.prod(measured) if measured else None
    end_to_end = layers[-1]["cumulative"]
    interaction = (
        end_to_end / product
        if end_to_end is not None and product and len(measured) == len(layers)
        else None
    )
    record = {
        "schema": SCHEMA,
        "baseline": "fp32 eager, one process",
        "device": environment(device)["device"],
        "layers": layers,
        "end_to_end": end_to_end,
        "product": product,
        "interaction": interaction,
        "chosen": chosen,
        "chosen_multiplier": final_row.get("multiplier") if final_row else None,
        "chosen_from": chosen_from if chosen else None,
        "stack": stack.to_dict(),
        "candidates": decided,
        "final_run": {
            name: {k: row.get(k) for k in ("multiplier", "multiplier_q25", "multiplier_q75")}
            for name, row in second.items()
            if name != BASELINE and not row.get("error")
        },
        "noise": noise,
        "calibration": {
            "batches": calibration_batches,
            "seconds": time.perf_counter() - t0,
            "first_phase_seconds": first_seconds,
            "first_phase": first_phase,
            "second_phase": second_phase,
            "variants": len(first) + len(second),
            "min_gain": min_gain,
            "tolerance": tolerance,
            "planned_batches": planned_batches,
        },
    }
    return AutoResult(stack, record)


def choose_final(rows: dict[str, dict[str, Any]], min_gain: float, planned: int | None) -> str:
    """The fastest variant of a run whose multiplier clears ``min_gain``, else the baseline.

    Multipliers are measured against the baseline of the same run, so the choice is never
    slower than that baseline as measured there.
    """
    best, best_name = 1.0, BASELINE
    for name, row in rows.items():
        if name in (BASELINE, REPLICA) or row.get("error"):
            continue
        m = _amortized(row, rows[BASELINE], planned)
        if m is not None and m >= min_gain and m > best:
            best, best_name = m, name
    return best_name


def decide_layer(
    row: dict[str, Any] | None,
    name: str,
    base: dict[str, Any],
    planned: int | None,
    min_gain: float,
    allowed: float,
) -> dict[str, Any]:
    """Keep or drop one layer, with the reason."""
    out: dict[str, Any] = {"name": name, "kept": False}
    if row is None or row.get("error"):
        out["reason"] = f"failed: {(row or {}).get('error', 'not run').splitlines()[0]}"
        return out
    mult = _amortized(row, base, planned)
    delta = row.get("accuracy_delta")
    out.update(
        alone=row.get("multiplier"),
        q25=row.get("multiplier_q25"),
        q75=row.get("multiplier_q75"),
        accuracy_delta=delta,
        warmup_seconds=row["warmup_seconds"],
        amortized=mult if planned is not None else None,
    )
    if mult is None or mult < min_gain:
        out["reason"] = f"gain x{mult:.2f} < x{min_gain:.2f}" if mult else "no timing"
    elif delta is not None and costs_accuracy(delta, allowed):
        out["reason"] = f"accuracy {100 * delta:+.2f} points (allowed -{100 * allowed:.2f})"
    else:
        out.update(kept=True, reason=f"gain x{mult:.2f} >= x{min_gain:.2f}")
    return out


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
    log: Callable[[str], None] | None = None,
    budget: float | None = None,
    arch: Arch | None = None,
    should_stop: Callable[[], bool] | None = None,
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
        log: Progress lines.
        budget: Seconds the calibration may take (``None``: no limit, no probe).
        arch: The candidate (default: :func:`calibration_candidate` of ``seed``).
        should_stop: Polled after every interleaved round; when true the calibration
            ends there, measuring nothing more.

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
        log=log,
        deadline=deadline,
        after_round=after_round,
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


def skipped_record(device: torch.device, reason: str, candidates: Sequence[str]) -> dict[str, Any]:
    """The record of a calibration that did not run: the baseline, and no measurement."""
    return {
        "schema": SCHEMA,
        "skipped": reason,
        "baseline": "fp32 eager, one process",
        "device": environment(device)["device"],
        "layers": [],
        "end_to_end": None,
        "product": None,
        "interaction": None,
        "chosen": [],
        "chosen_multiplier": None,
        "chosen_from": None,
        "stack": Stack().to_dict(),
        "candidates": [{"name": n, "kept": False, "reason": "not measured"} for n in candidates],
        "calibration": {},
    }
