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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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
from nasflow.errors import ConfigError
from nasflow.train import Batches
from nasflow.train.stack import LAYER_SPECS, Stack

#: Layers "auto" considers (``LayerSpec.auto``): not activation checkpointing, a memory
#: layer that always costs time and is switched on by the memory fit.
AUTO_LAYERS: tuple[str, ...] = tuple(spec.name for spec in LAYER_SPECS if spec.auto)

#: A variant whose first ``CUT_ROUNDS`` timed rounds all ran below ``CUT_BELOW`` times the
#: baseline's speed stops there, unevaluated: it would need more than twice its measured
#: speed to reach ``min_gain``. On a CPU without fast bf16 (autocast x0.09-0.11 measured
#: there) the four variants holding ``amp`` were most of a study's calibration (40 s of its
#: 45 s budget on one VM); see benchmarks/results/b3-speedup-stack.md, "Cutting hopeless
#: variants short".
CUT_BELOW = 0.5
CUT_ROUNDS = 2


@dataclass(frozen=True)
class AutoResult:
    """The chosen stack and the JSON-able record stored on the study.

    The record (stored as study user attribute ``nasflow:stack``) extends the report's
    waterfall schema (``nasflow.report.stack_data``)::

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
                         "second_phase": "ran", "variants": 12, "cut": [],
                         "min_gain": 1.05,
                         "tolerance": 0.005, "planned_batches": null}}

    (The numbers above show the shape only.) Every multiplier is baseline time / variant
    time per batch (median of paired per-round ratios), measured in that calibration.

    Attributes:
        stack: The stack to train with (``Stack()`` when no layer paid off).
        record: Study user attribute ``nasflow:stack``, as above.
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
    deadline: float | None = None,
    after_round: Callable[[], None] | None = None,
    cut_below: float | None = None,
) -> tuple[dict[str, dict[str, Any]], int]:
    """Rows of an interleaved run by variant name, and the batches the baseline trained
    (fewer than asked when the run stopped at ``deadline``); ``cut_below``: see
    :func:`auto_stack`."""
    records = run_interleaved(
        variants,
        make_model,
        train,
        val,
        cfg,
        device,
        reseeded=(REPLICA,),
        deadline=deadline,
        after_round=after_round,
        cut=None if cut_below is None else (BASELINE, cut_below, CUT_ROUNDS),
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
    deadline: float | None = None,
    after_round: Callable[[], None] | None = None,
    cut_below: float | None = CUT_BELOW,
    **settings: Any,
) -> AutoResult:
    """Calibrate the stack on this machine and return the layers worth keeping.

    The first phase trains the baseline, its reseeded replica, every candidate layer alone
    and the candidates stacked cumulatively (``candidates[:2]``, ..., all of them), all
    interleaved in one run. The layers that pay off alone are kept; the second phase
    measures the kept combination (and each kept layer alone) against the baseline again.
    The record is described in :class:`AutoResult`. A layer is kept when its multiplier
    (amortized over ``planned_batches`` when given, so a compile that never pays back is
    dropped) is at least ``min_gain`` and its validation accuracy is not below the
    baseline's by more than ``max(tolerance, noise floor)``.

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
        deadline: A ``time.perf_counter()`` value. A phase stops at the first round that
            ends after it (fewer timed rounds; every variant is still evaluated); when no
            layer was timed by then the record is a skipped one (``"skipped"``, the
            baseline). When the second phase (estimated from the first phase's time per
            variant) would end after it, it is skipped and the stack is chosen from the
            first phase's variants made of kept layers only (``"chosen_from": "first
            phase"``).
        after_round: Called after every interleaved round (see ``run_interleaved``).
        cut_below: A variant whose first ``CUT_ROUNDS`` timed rounds all ran below this
            times the baseline's speed stops there (``Cut``; its layer is dropped, its
            accuracy not measured); ``None``: every variant runs to the end.
        settings: How layers are switched on (``amp="bf16"``, ``accumulation=2``).
    """
    candidates = _checked(min_gain, cut_below, candidates)
    device = torch.device(device)
    base = base or Stack()
    cfg = replace(cfg or RunConfig(chunk=4), max_batches=calibration_batches)

    def measure(variants: dict[str, Stack]) -> tuple[dict[str, dict[str, Any]], int]:
        return _measure(
            variants, make_model, train, val, cfg, device, deadline, after_round, cut_below
        )

    t0 = time.perf_counter()
    first = stack_variants(candidates, base, **settings)
    rows, done = measure(first)
    first_seconds = time.perf_counter() - t0
    first_phase = _phase_words(done, calibration_batches)
    if all((rows.get(n) or {}).get("multiplier") is None for n in candidates):
        return _nothing_timed(device, candidates, base, calibration_batches, done, first_phase, t0)
    noise = noise_floor(list(rows.values()))
    allowed = max(tolerance, abs((noise or {}).get("accuracy_delta") or 0.0))
    decided = [
        decide_layer(rows.get(n), n, rows[BASELINE], planned_batches, min_gain, allowed)
        for n in candidates
    ]
    kept = [d["name"] for d in decided if d["kept"]]
    final = _FinalChoice()
    if kept:
        per_variant = first_seconds / len(first)
        final = _second_phase(kept, base, settings, rows, per_variant, deadline, measure)
        final = final.choose(min_gain, planned_batches)
    chosen = [] if final.name == BASELINE else final.name.split("+")
    stack = base.with_layers(chosen, **settings) if chosen else base
    record = _record(device, candidates, rows, decided, final, stack, noise)
    record["calibration"] = {
        "batches": calibration_batches,
        "seconds": time.perf_counter() - t0,
        "first_phase_seconds": first_seconds,
        "first_phase": first_phase,
        "second_phase": final.second_phase,
        "variants": len(first) + len(final.second),
        # Variants stopped early as hopelessly slow (``CUT_BELOW``), by name.
        "cut": sorted(n for n, r in {**rows, **final.second}.items() if r.get("cut")),
        "min_gain": min_gain,
        "tolerance": tolerance,
        "planned_batches": planned_batches,
    }
    return AutoResult(stack, record)


def _checked(min_gain: float, cut_below: float | None, candidates: Sequence[str]) -> list[str]:
    """:func:`auto_stack`'s candidates, once its bounds are checked (naming a bad one)."""
    if not min_gain >= 1.0:
        raise ConfigError(f"min_gain must be >= 1, got {min_gain!r}")
    if cut_below is not None and not 0 < cut_below < 1:
        raise ConfigError(f"cut_below must be in (0, 1) or None, got {cut_below!r}")
    out = list(candidates)
    if not out:
        raise ConfigError("auto_stack needs at least one candidate layer")
    return out


def _phase_words(done: int, calibration_batches: int) -> str:
    """How the first phase ended: ``"complete"``, or where the time budget stopped it."""
    if done >= calibration_batches:
        return "complete"
    return f"stopped at the time budget after {done} of {calibration_batches} batches"


def _record(
    device: torch.device,
    candidates: list[str],
    rows: dict[str, dict[str, Any]],
    decided: list[dict[str, Any]],
    final: _FinalChoice,
    stack: Stack,
    noise: dict[str, Any] | None,
) -> dict[str, Any]:
    """:class:`AutoResult`'s record of a calibration that timed layers, but for its
    ``calibration`` entry (how the run went), which :func:`auto_stack` adds."""
    chosen = [] if final.name == BASELINE else final.name.split("+")
    return {
        "schema": SCHEMA,
        "baseline": "fp32 eager, one process",
        "device": environment(device)["device"],
        **_waterfall(candidates, rows, chosen),
        "chosen": chosen,
        "chosen_multiplier": final.row.get("multiplier") if final.row else None,
        "chosen_from": final.chosen_from if chosen else None,
        "stack": stack.to_dict(),
        "candidates": decided,
        "final_run": final.final_run(),
        "noise": noise,
    }


def _nothing_timed(
    device: torch.device,
    candidates: list[str],
    base: Stack,
    calibration_batches: int,
    done: int,
    first_phase: str,
    t0: float,
) -> AutoResult:
    """The baseline, with a skipped record, when the first phase timed no layer (it
    stopped at the deadline after ``done`` batches, or every layer failed)."""
    why = "no layer was timed" if done >= calibration_batches else f"the first phase {first_phase}"
    record = skipped_record(device, f"{why}, so nothing was measured", candidates)
    record["stack"] = base.to_dict()
    record["calibration"] = {
        "batches": calibration_batches,
        "seconds": time.perf_counter() - t0,
        "first_phase": first_phase,
    }
    return AutoResult(base, record)


@dataclass(frozen=True)
class _FinalChoice:
    """The variant :func:`auto_stack` trains with, and the run that measured it.

    Attributes:
        pool: The measured rows it is chosen from, by variant.
        second: The second phase's rows by variant (empty where it did not run).
        chosen_from: ``"first phase"`` or ``"second phase"``.
        second_phase: What became of the second phase, in words.
        name: The chosen variant (``BASELINE``, or its layers joined by ``+``).
        row: Its measured row (``None`` for the baseline).
    """

    pool: dict[str, dict[str, Any]] = field(default_factory=dict)
    second: dict[str, dict[str, Any]] = field(default_factory=dict)
    chosen_from: str = "first phase"
    second_phase: str = "not run: no layer kept"
    name: str = BASELINE
    row: dict[str, Any] | None = None

    def choose(self, min_gain: float, planned: int | None) -> _FinalChoice:
        """The fastest variant of ``pool`` that clears ``min_gain`` (:func:`choose_final`)."""
        name = choose_final(self.pool, min_gain, planned)
        row = self.pool.get(name) if name != BASELINE else None
        return replace(self, name=name, row=row)

    def final_run(self) -> dict[str, dict[str, Any]]:
        """The second phase's multipliers by variant (the baseline and failures aside)."""
        return {
            name: {k: row.get(k) for k in ("multiplier", "multiplier_q25", "multiplier_q75")}
            for name, row in self.second.items()
            if name != BASELINE and not row.get("error")
        }


def _second_phase(
    kept: list[str],
    base: Stack,
    settings: dict[str, Any],
    rows: dict[str, dict[str, Any]],
    per_variant: float,
    deadline: float | None,
    measure: Callable[[dict[str, Stack]], tuple[dict[str, dict[str, Any]], int]],
) -> _FinalChoice:
    """Measure the kept layers together (and each alone, when several) against the
    baseline again; when that run (``per_variant`` seconds a variant, as in the first
    phase) would pass ``deadline``, choose among the first phase's variants made of kept
    layers only instead."""
    trial = {BASELINE: base, REPLICA: base, "+".join(kept): base.with_layers(kept, **settings)}
    if len(kept) > 1:
        trial.update({n: base.with_layers([n], **settings) for n in kept})
    need = per_variant * len(trial)
    if deadline is not None and time.perf_counter() + need > deadline:
        pool = {
            n: r
            for n, r in rows.items()
            if n == BASELINE or (n != REPLICA and set(n.split("+")) <= set(kept))
        }
        skipped = f"skipped: about {need:.0f}s more would pass the time budget"
        return _FinalChoice(pool, {}, "first phase", skipped)
    second, _ = measure(trial)
    return _FinalChoice(second, second, "second phase", "ran")


def _waterfall(
    candidates: list[str], rows: dict[str, dict[str, Any]], chosen: list[str]
) -> dict[str, Any]:
    """The first phase as the report's waterfall: each layer alone and stacked
    cumulatively, all stacked, the product of the layers alone and the interaction."""
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
    return {
        "layers": layers,
        "end_to_end": end_to_end,
        "product": product,
        "interaction": interaction,
    }


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
    cut = row.get("cut")
    if cut is not None and row.get("multiplier") is not None:
        out["reason"] = (
            f"cut after {row['rounds']} timed rounds, all below x{cut['below']:.2f} "
            f"(x{row['multiplier']:.2f}); needs x{min_gain:.2f}"
        )
    elif mult is None or mult < min_gain:
        out["reason"] = f"gain x{mult:.2f} < x{min_gain:.2f}" if mult else "no timing"
    elif delta is not None and costs_accuracy(delta, allowed):
        out["reason"] = f"accuracy {100 * delta:+.2f} points (allowed -{100 * allowed:.2f})"
    else:
        out.update(kept=True, reason=f"gain x{mult:.2f} >= x{min_gain:.2f}")
    return out


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
