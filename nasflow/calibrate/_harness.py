"""The measurement harness: baseline, each layer alone and cumulatively, in one run.

Multipliers follow the product's definition: baseline cost / cost with the layer, on the
same work (the same samples, from the same initial weights), measured in the same run.
Speed is per sample (training throughput); time to a target validation accuracy is
reported next to it, because accumulation changes how many optimizer steps the same
samples make.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from nasflow.calibrate._interleave import (
    RunConfig,
    VariantRecord,
    paired_ratios,
    run_interleaved,
    summarize,
)
from nasflow.calibrate._measure import environment, quantiles
from nasflow.errors import ConfigError
from nasflow.train import Batches
from nasflow.train.stack import LAYERS, Stack

BASELINE = "baseline"
#: The baseline again from other initial weights: the run's noise floor.
REPLICA = "baseline-reseeded"
#: A layer that costs more than this much validation accuracy is flagged.
QUALITY_TOLERANCE = 0.005


def stack_variants(
    layers: Sequence[str], base: Stack | None = None, **settings: Any
) -> dict[str, Stack]:
    """Baseline, its replica, each layer alone, and the cumulative stacks ``layers[:2]``, ...

    The replica (``REPLICA``) is the baseline from other initial weights: its speed ratio
    and accuracy difference to the baseline are this run's noise floor.

    Args:
        layers: Layer names in the order they are added cumulatively.
        base: The baseline (``Stack()``); its non-layer settings carry over.
        settings: How layers are switched on (``amp="bf16"``, ``accumulation=2``).
    """
    base = base or Stack()
    if base.enabled:
        raise ConfigError(f"the baseline stack must have every layer off, got {base.enabled}")
    if len(set(layers)) != len(layers) or not layers:
        raise ConfigError(f"layers must be distinct names from {LAYERS}, got {list(layers)!r}")
    out = {BASELINE: base, REPLICA: base}
    for name in layers:
        out[name] = base.with_layers([name], **settings)
    for i in range(2, len(layers) + 1):
        out["+".join(layers[:i])] = base.with_layers(layers[:i], **settings)
    return out


@dataclass
class StackMeasurement:
    """What the harness measured; ``to_dict`` is the JSON output."""

    environment: dict[str, Any]
    config: dict[str, Any]
    candidate: dict[str, Any]
    layers: list[str]
    variants: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The waterfall data, in the ``nasflow:stack`` study-attribute schema.

        ``{"baseline", "device", "layers": [{"name", "alone", "cumulative"}], "end_to_end"}``
        (see ``nasflow.report.stack_data``); a layer whose variant failed is left out and
        listed under ``"failed"``.
        """
        return stack_record(self.variants, self.layers, self.environment["device"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "config": self.config,
            "candidate": self.candidate,
            "layers": self.layers,
            "variants": self.variants,
            "waterfall": self.record(),
        }

    def table(self) -> str:
        """A fixed-width text table, one row per variant."""
        return format_table(self.variants, self.record())


def stack_record(
    variants: Sequence[dict[str, Any]], layers: Sequence[str], device: str
) -> dict[str, Any]:
    """Waterfall data (``nasflow:stack`` schema) from per-variant rows."""
    by_name = {v["name"]: v for v in variants}
    rows, failed = [], []
    for i, name in enumerate(layers):
        alone = by_name.get(name, {}).get("multiplier")
        cum_name = "+".join(layers[: i + 1])
        cum = by_name.get(cum_name, {}).get("multiplier")
        if alone is None:
            failed.append(name)
            continue
        rows.append({"name": name, "alone": alone, "cumulative": cum})
    full = by_name.get("+".join(layers), {}).get("multiplier")
    return {
        "baseline": "fp32 eager, one process",
        "device": device,
        "layers": rows,
        "end_to_end": full if not failed else None,
        "product": math.prod(r["alone"] for r in rows) if rows else None,
        "failed": failed,
        "noise": noise_floor(variants),
    }


def noise_floor(variants: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The baseline replica's speed ratio (spread) and accuracy difference to the baseline."""
    rep = next((v for v in variants if v["name"] == REPLICA and not v.get("error")), None)
    if rep is None or rep.get("multiplier") is None:
        return None
    return {
        "multiplier": rep["multiplier"],
        "multiplier_q25": rep["multiplier_q25"],
        "multiplier_q75": rep["multiplier_q75"],
        "accuracy_delta": rep.get("accuracy_delta"),
    }


def variant_row(
    rec: VariantRecord, base: VariantRecord | None, batch_size: int, target: float
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": rec.name,
        "layers": list(rec.stack.enabled),
        "stack": rec.stack.to_dict(),
        "error": rec.error,
        "warmup_seconds": rec.warmup_seconds,
        "train_seconds": rec.train_seconds,
        "compilations": rec.compilations,
        "optimizer_steps": rec.optimizer_steps,
        "peak_memory_bytes": rec.peak_memory_bytes,
        "activation_bytes": rec.activation_bytes,
        **summarize(rec, target),
    }
    per_batch = [s / rec.chunk_batches[r] for r, s in rec.chunk_seconds.items()]
    if rec.error is None and per_batch:
        _, med, _ = quantiles(per_batch)
        k = rec.batches / max(1, rec.optimizer_steps)
        row.update(batch_seconds=med, step_seconds=med * k, samples_per_s=batch_size / med)
        # (the median over rounds, as batch_seconds is: the two can be set side by side)
        data = [s / rec.chunk_batches[r] for r, s in rec.chunk_data_seconds.items()]
        row["data_seconds_per_batch"] = quantiles(data)[1]
    ratios = paired_ratios(base, rec) if base is not None and rec.error is None else []
    if ratios:
        lo, med, hi = quantiles(ratios)
        row.update(multiplier=med, multiplier_q25=lo, multiplier_q75=hi, rounds=len(ratios))
    if rec.cut is not None:
        row["cut"] = {"below": rec.cut.below, "after_round": rec.cut.after_round}
    return row


def costs_accuracy(delta: float, tolerance: float) -> bool:
    """Whether an accuracy difference is a loss of more than ``tolerance`` (exactly the
    tolerance, e.g. 5 of 1,000 validation samples at 0.5 points, is not)."""
    return delta < -tolerance - 1e-9


def compare_to_baseline(rows: list[dict[str, Any]], tolerance: float) -> None:
    base = next((r for r in rows if r["name"] == BASELINE), None)
    base_acc = base.get("final_accuracy") if base else None
    for r in rows:
        acc = r.get("final_accuracy")
        delta = None if acc is None or base_acc is None else acc - base_acc
        r["accuracy_delta"] = delta
        r["quality_flag"] = delta is not None and costs_accuracy(delta, tolerance)
        t, tb = r.get("seconds_to_target"), (base or {}).get("seconds_to_target")
        r["time_to_target_multiplier"] = tb / t if t and tb else None


def measure_stack(
    make_model: Callable[[], nn.Module],
    train: Batches,
    val: Batches,
    cfg: RunConfig,
    layers: Sequence[str] = LAYERS,
    device: torch.device | str = "cpu",
    candidate: dict[str, Any] | None = None,
    base: Stack | None = None,
    **settings: Any,
) -> StackMeasurement:
    """Measure every layer of ``layers`` alone and cumulatively against the baseline.

    Args:
        make_model: Builds the candidate network (same weights for every variant).
        train: Training batches.
        val: Validation batches (time to target, final accuracy, quality flag).
        cfg: Recipe and measurement settings.
        layers: Layers to measure, in cumulative order.
        device: Where to train.
        candidate: Description of the candidate for the output (arch, params).
        base: The baseline stack (all layers off; e.g. a ``compile_backend``).
        settings: How layers are switched on (``amp="bf16"``, ``accumulation=2``).
    """
    device = torch.device(device)
    total = cfg.epochs * len(train)
    if cfg.max_batches is not None:
        total = min(total, cfg.max_batches)
    if total <= 2 * cfg.chunk:  # rounds 0 and 1 are warm-up and memory: nothing timed
        raise ConfigError(
            f"the harness times rounds of {cfg.chunk} batches after a warm-up round and a "
            f"memory round, but {cfg.epochs} epoch(s) of {len(train)} batches give {total}: "
            "use a smaller batch size, more epochs or more data"
        )
    variants = stack_variants(layers, base, **settings)
    records = run_interleaved(variants, make_model, train, val, cfg, device, reseeded=(REPLICA,))
    base_rec = records[BASELINE]
    rows = [
        variant_row(r, base_rec, train.batch_size, cfg.target_accuracy) for r in records.values()
    ]
    compare_to_baseline(rows, QUALITY_TOLERANCE)
    return StackMeasurement(
        environment=environment(device),
        config={**asdict(cfg), "batch_size": train.batch_size, **settings},
        candidate=candidate or {},
        layers=list(layers),
        variants=rows,
    )


def _fmt(v: Any, spec: str, none: str = "-") -> str:
    return none if v is None else format(v, spec)


def format_table(rows: Sequence[dict[str, Any]], record: dict[str, Any]) -> str:
    """Rows of variants, then the product of the layers against the measured stack."""
    head = (
        f"{'variant':<48} {'ms/batch':>8} {'samples/s':>9} {'x alone/cum':>16} "
        f"{'warmup s':>8} {'compiles':>8} {'mem MB':>7} {'final acc':>9} {'d acc':>6} "
        f"{'steps->tgt':>10} {'s->tgt':>7}  flag"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.get("error"):
            lines.append(f"{r['name']:<48} failed: {r['error'].splitlines()[0][:80]}")
            continue
        mult = r.get("multiplier")
        spread = (
            f"{mult:.2f} [{r['multiplier_q25']:.2f},{r['multiplier_q75']:.2f}]"
            if mult is not None
            else "1 (reference)"
        )
        mem = r.get("peak_memory_bytes")
        lines.append(
            f"{r['name']:<48} {_fmt(r.get('batch_seconds') and r['batch_seconds'] * 1e3, '8.1f')} "
            f"{_fmt(r.get('samples_per_s'), '9.0f')} {spread:>16} {r['warmup_seconds']:>8.1f} "
            f"{r['compilations']:>8} {_fmt(mem and mem / 1e6, '7.2f')} "
            f"{_fmt(r.get('final_accuracy'), '9.4f')} "
            f"{_fmt(r.get('accuracy_delta') and 100 * r['accuracy_delta'], '+6.2f')} "
            f"{_fmt(r.get('steps_to_target'), '10d')} {_fmt(r.get('seconds_to_target'), '7.1f')}"
            f"  {'QUALITY' if r.get('quality_flag') else ''}"
        )
    prod, e2e = record.get("product"), record.get("end_to_end")
    inter = e2e / prod if prod and e2e else None
    lines.append("")
    lines.append(
        f"product of the layers alone: x{_fmt(prod, '.2f')}   measured end to end: "
        f"x{_fmt(e2e, '.2f')}   interaction (measured / product): x{_fmt(inter, '.2f')}"
    )
    noise = record.get("noise")
    if noise:
        lines.append(
            f"noise floor (baseline vs its reseeded replica): x{noise['multiplier']:.2f} "
            f"[{noise['multiplier_q25']:.2f},{noise['multiplier_q75']:.2f}], accuracy "
            f"{_fmt(noise['accuracy_delta'] and 100 * noise['accuracy_delta'], '+.2f')} points"
        )
    base = next((r for r in rows if r["name"] == BASELINE and r.get("batch_seconds")), None)
    if base is not None and base.get("data_seconds_per_batch") is not None:
        data, whole = base["data_seconds_per_batch"], base["batch_seconds"]
        lines.append(
            f"producing the batches (reading, augmenting, copying to the device): "
            f"{1e3 * data:.1f} of the baseline's {1e3 * whole:.1f} ms per batch "
            f"({data / whole:.0%}), host time no layer shortens"
            + ("; DATA-BOUND: the multipliers say little about the layers" if data > whole / 2
               else "")
        )  # fmt: skip
    lines.append(
        "x = baseline time / variant time per batch (median of per-round paired ratios, "
        "[q25,q75]); d acc in points vs baseline; QUALITY = costs > "
        f"{100 * QUALITY_TOLERANCE:.1f} points"
    )
    return "\n".join(lines)
