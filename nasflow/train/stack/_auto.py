"""``stack="auto"``: keep only the layers that measurably pay off on this machine.

Nothing is assumed: bf16 autocast and ``torch.compile`` are large wins on a modern GPU
and measured 0.5-0.9x for MNIST-1D-sized networks on a 2-core CPU. A short calibration
trains the candidate with each layer alone next to the plain baseline (interleaved, same
weights, same batches, plus a reseeded baseline replica for the noise floor), keeps the
layers that gain at least ``min_gain`` without losing accuracy, then measures the kept
combination against the baseline again, in the same run. The chosen stack is the fastest
measured variant that clears ``min_gain``; if none does, the baseline itself. So "auto"
is never slower than the baseline as measured in that run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from nasflow.space import SearchSpace
from nasflow.train._loop import Batches
from nasflow.train.stack._bench import (
    BASELINE,
    QUALITY_TOLERANCE,
    REPLICA,
    compare_to_baseline,
    costs_accuracy,
    noise_floor,
    variant_row,
)
from nasflow.train.stack._config import Stack
from nasflow.train.stack._interleave import RunConfig, run_interleaved
from nasflow.train.stack._measure import environment

#: Layers "auto" considers. Activation checkpointing is a memory layer (it always costs
#: time), so it is switched on by the memory fit, never by a speed calibration.
AUTO_LAYERS: tuple[str, ...] = ("amp", "accumulation", "denormal", "threads", "compile")


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
) -> dict[str, dict[str, Any]]:
    records = run_interleaved(
        variants, make_model, train, val, cfg, device, log, reseeded=(REPLICA,)
    )
    rows = [
        variant_row(r, records[BASELINE], train.batch_size, cfg.target_accuracy)
        for r in records.values()
    ]
    compare_to_baseline(rows, QUALITY_TOLERANCE)
    return {r["name"]: r for r in rows}


def _amortized(row: dict[str, Any], base: dict[str, Any], planned: int | None) -> float | None:
    """The multiplier with the variant's extra warm-up (compilation) spread over
    ``planned`` batches; the steady-state multiplier when ``planned`` is ``None``."""
    mult = row.get("multiplier")
    if mult is None or planned is None or "batch_seconds" not in row:
        return mult
    extra = max(0.0, row["warmup_seconds"] - base["warmup_seconds"])
    t_base = planned * base["batch_seconds"]
    return t_base / (planned * row["batch_seconds"] + extra)


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
    **settings: Any,
) -> AutoResult:
    """Calibrate the stack on this machine and return the layers worth keeping.

    The record (``AutoResult.record``, stored as study user attribute ``nasflow:stack``)
    extends the report's waterfall schema (``nasflow.report.stack_data``)::

        {"schema": 1,
         "baseline": "fp32 eager, one process",
         "device": "cpu: AMD EPYC (2 threads)",
         "layers": [                      # the chosen layers, in stacking order
             {"name": "amp", "alone": 1.31, "cumulative": null},
             {"name": "compile", "alone": 1.20, "cumulative": 1.52}],  # last = whole stack
         "end_to_end": 1.52,              # the chosen stack vs baseline; null if none chosen
         "product": 1.57,                 # product of the chosen layers' "alone"
         "chosen": ["amp", "compile"],
         "stack": {...},                  # Stack.to_dict() of the chosen stack
         "candidates": [                  # every layer considered, kept or not
             {"name": "amp", "alone": 1.31, "q25": 1.2, "q75": 1.4,
              "accuracy_delta": -0.001, "warmup_seconds": 0.4, "amortized": 1.3,
              "kept": true, "reason": "gain x1.31 >= x1.05"}, ...],
         "final_run": {"amp+compile": {"multiplier": 1.52, "multiplier_q25": 1.4,
                                       "multiplier_q75": 1.6}, ...},  # second phase
         "noise": {"multiplier": 1.0, "multiplier_q25": 0.95, "multiplier_q75": 1.04,
                   "accuracy_delta": 0.002},   # first phase: baseline vs its reseeded replica
         "calibration": {"batches": 48, "seconds": 95.0, "min_gain": 1.05,
                         "tolerance": 0.005, "planned_batches": null}}

    Every multiplier is baseline time / variant time per batch (median of paired
    per-round ratios), measured in this calibration. A layer is kept when its multiplier
    (amortized over ``planned_batches`` when given, so a compile that never pays back is
    dropped) is at least ``min_gain`` and its validation accuracy is not below the
    baseline's by more than ``max(tolerance, noise floor)``.

    Args:
        make_model: Builds the network to calibrate on (e.g. ``lambda: space.build(arch)``).
        train: Training batches.
        val: Validation batches.
        device: Where to train.
        candidates: Layers to consider.
        calibration_batches: Batches each variant trains per phase.
        planned_batches: Batches the real training will run (amortizes compilation).
        min_gain: Smallest multiplier worth keeping.
        tolerance: Largest accuracy drop tolerated (as a fraction, 0.005 = 0.5 points).
        cfg: Recipe of the calibration (``max_batches`` is set from
            ``calibration_batches``).
        base: The baseline stack (every layer off).
        log: Progress lines.
        settings: How layers are switched on (``amp="bf16"``, ``accumulation=2``).
    """
    if not min_gain >= 1.0:
        raise ValueError(f"min_gain must be >= 1, got {min_gain!r}")
    device = torch.device(device)
    base = base or Stack()
    cfg = replace(cfg or RunConfig(chunk=4), max_batches=calibration_batches)
    t0 = time.perf_counter()
    first = {BASELINE: base, REPLICA: base}
    first.update({n: base.with_layers([n], **settings) for n in candidates})
    rows = _measure(first, make_model, train, val, cfg, device, log)
    noise = noise_floor(list(rows.values()))
    acc_noise = abs((noise or {}).get("accuracy_delta") or 0.0)
    allowed = max(tolerance, acc_noise)
    decided = [
        decide_layer(rows.get(n), n, rows[BASELINE], planned_batches, min_gain, allowed)
        for n in candidates
    ]
    kept = [d["name"] for d in decided if d["kept"]]
    final_name, final_row, second = BASELINE, None, {}
    if kept:
        trial = {BASELINE: base, REPLICA: base, "+".join(kept): base.with_layers(kept, **settings)}
        if len(kept) > 1:
            trial.update({n: base.with_layers([n], **settings) for n in kept})
        second = _measure(trial, make_model, train, val, cfg, device, log)
        final_name = choose_final(second, min_gain, planned_batches)
        final_row = second.get(final_name) if final_name != BASELINE else None
    chosen = [] if final_name == BASELINE else final_name.split("+")
    stack = base.with_layers(chosen, **settings) if chosen else base
    layers = []
    for i, name in enumerate(chosen):
        alone = (second.get(name) or rows[name]).get("multiplier")
        cum = final_row.get("multiplier") if final_row and i == len(chosen) - 1 else None
        if len(chosen) == 1:
            alone = cum
        layers.append({"name": name, "alone": alone, "cumulative": cum})
    product = 1.0
    for layer in layers:
        product *= layer["alone"]
    record = {
        "schema": 1,
        "baseline": "fp32 eager, one process",
        "device": environment(device)["device"],
        "layers": layers,
        "end_to_end": final_row.get("multiplier") if final_row else None,
        "product": product if layers else None,
        "chosen": chosen,
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


def calibrate_for_space(
    space: SearchSpace,
    train: Batches,
    val: Batches,
    lr: float,
    weight_decay: float,
    planned_batches: int,
    device: torch.device | str = "cpu",
    seed: int = 0,
    calibration_batches: int = 16,
    log: Callable[[str], None] | None = None,
) -> AutoResult:
    """A study's short ``stack="auto"`` calibration, on a winner-sized candidate.

    Calibrates on the largest (by parameters) of ``CALIBRATION_SAMPLES`` architectures
    sampled with ``seed``: the candidates a search keeps tend to be the large ones, and a
    larger network is where a layer's gain or loss shows. Each variant trains
    ``calibration_batches`` batches in turns of 2 (about 15 s for a 135k-parameter
    MNIST-1D candidate on 2 CPU cores). On a CPU ``torch.compile`` is not a candidate: its
    inductor warm-up alone (about 30 s there) exceeds the whole budget; measure it with
    ``nasflow bench-stack`` and set it explicitly if it pays off over a long run.

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
    """
    import numpy as np

    device = torch.device(device)
    rng = np.random.default_rng(seed)
    archs = [space.sample(rng) for _ in range(CALIBRATION_SAMPLES)]
    sizes = [sum(p.numel() for p in space.build(a).parameters()) for a in archs]
    arch = archs[int(np.argmax(sizes))]
    candidates = (
        AUTO_LAYERS if device.type == "cuda" else tuple(n for n in AUTO_LAYERS if n != "compile")
    )
    cfg = RunConfig(lr=lr, weight_decay=weight_decay, chunk=2, evals_per_epoch=1, seed=seed)
    result = auto_stack(
        lambda: space.build(arch),
        train,
        val,
        device,
        candidates=candidates,
        calibration_batches=calibration_batches,
        planned_batches=planned_batches,
        cfg=cfg,
        log=log,
    )
    result.record["calibration"].update(arch=arch.to_json(), params=max(sizes))
    return result
