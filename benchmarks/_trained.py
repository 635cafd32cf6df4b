"""What a finished study run trained and kept, read from the study's own records.

A run's trained models, each with its measured test accuracy, its training cost and when
in the run it was ready (process CPU-seconds from the run's start):

- the zero-cost anchors (``nasflow:anchors``): trained from scratch with the study's
  recipe; cost measured (``measured_train_cost``), ready at ``ready_cpu_seconds``;
- the fine-tuning phase's ready models (``nasflow:finetuned``, read by
  ``nasflow.record.study_finetuned``): fine-tuned from inherited weights; their cost on the
  hypervolume's axis, the architecture's stand-alone training cost, is an ESTIMATE (the
  mean measured fine-tuning epoch times the recipe's epochs, as B1 counts them); ready at
  ``trained_cpu_seconds``, else at the run's end;
- phase 3's retrained winners (``nasflow:retrain:N``, read by
  ``nasflow.record.study_retrains``): trained from scratch;
  cost measured; ready at ``ready_cpu_seconds`` where the record keeps it (runs from
  2026-11-28 on), else at the run's end (a winner reused from an anchor's training is the
  anchor, counted once).

Training costs are the seconds the study measures (``TrainResult.seconds``: the training
steps, on the device-synchronised wall clock), so the baselines that a study is paired
with are measured on the same clock.

The kept model (``nasflow:kept``, read by ``nasflow.record.study_kept``): the anchor, the
retrain or the fine-tuned weights the run keeps, with their accuracies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import optuna

from nasflow.record import (
    AnchorEntry,
    TrialRecord,
    study_anchors,
    study_finetuned,
    study_kept,
    study_retrains,
)


def _anchors(study: optuna.Study) -> list[AnchorEntry]:
    record = study_anchors(study)
    entries = record.anchors if record is not None else ()
    return [e for e in entries if e.test_accuracy is not None]


def trained_models(study: optuna.Study, recipe_epochs: int, run_cpu: float) -> list[dict]:
    """Every model the run trained: ``kind`` (``anchor``, ``fine-tuned``, ``retrained``),
    ``trial``, ``arch``, ``val``, ``test`` (measured), ``cost`` (training seconds),
    ``cost_measured`` (false: an estimate), ``ready_cpu`` (CPU-seconds into the run).

    Args:
        study: The finished run's study.
        recipe_epochs: The study recipe's epochs (a fine-tuned model's estimated cost).
        run_cpu: The run's process CPU-seconds (when a model without a time was ready).
    """
    models = []
    anchor_trials = set()
    for a in _anchors(study):
        anchor_trials.add(a.trial)
        models.append(
            _model("anchor", a.trial, a.arch, a.val_accuracy, a.test_accuracy,
                   a.measured_train_cost, True, a.ready_cpu_seconds, run_cpu)
        )  # fmt: skip
    finetuned = study_finetuned(study)
    for c in finetuned.ready if finetuned is not None else []:
        if c.test_accuracy is None:
            continue
        cost = float(np.mean(c.epoch_seconds)) * recipe_epochs
        models.append(
            _model("fine-tuned", c.trial, c.arch, c.val_accuracy, c.test_accuracy, cost,
                   False, c.trained_cpu_seconds, run_cpu)
        )  # fmt: skip
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    for number, w in study_retrains(study).items():
        if number in anchor_trials or w.test_accuracy is None or w.measured_train_cost is None:
            continue
        arch = TrialRecord.from_trial(trials[number]).arch if number in trials else None
        models.append(
            _model("retrained", number, arch, w.val_accuracy, w.test_accuracy,
                   w.measured_train_cost, True, w.ready_cpu_seconds, run_cpu)
        )  # fmt: skip
    return models


def _model(
    kind: str,
    trial: int,
    arch: str | None,
    val: float,
    test: float,
    cost: float,
    measured: bool,
    ready: float | None,
    run_cpu: float,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "trial": int(trial),
        "arch": arch,
        "val": float(val),
        "test": float(test),
        "cost": float(cost),
        "cost_measured": measured,
        "ready_cpu": float(run_cpu if ready is None else min(ready, run_cpu)),
    }


def kept_model(study: optuna.Study) -> dict[str, Any] | None:
    """The model the run keeps (``trial``, ``weights``, ``source``, ``val``, ``test``), or
    ``None`` where the run records none (nothing was retrained)."""
    kept = study_kept(study)
    if kept is None:
        return None
    out: dict[str, Any] = kept.to_dict()
    if kept.source == "anchor":
        entry = next(a for a in _anchors(study) if a.trial == kept.trial)
        val, test = entry.val_accuracy, entry.test_accuracy
    elif kept.weights == "fine-tuned":
        finetuned = study_finetuned(study)
        assert finetuned is not None, "fine-tuned weights kept without a fine-tuning record"
        c = next(c for c in finetuned.ready if c.trial == kept.trial)
        val, test = c.val_accuracy, c.test_accuracy
    else:
        w = study_retrains(study)[kept.trial]
        val, test = w.val_accuracy, w.test_accuracy
    return {
        **out,
        "val": None if val is None else float(val),
        "test": None if test is None else float(test),
    }


_COST_TABLE = re.compile(r"^cost table \((.*?)\): (?:.*?\(measured ([^)]+)\))?")


def cost_table_of(row: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """The cost table a study run predicted with: its device and when it was measured
    (``None`` where the run measured it itself), from the summary's cost-table line;
    ``None`` for a baseline or an older row."""
    for line in row.get("summary") or ():
        m = _COST_TABLE.match(str(line))
        if m:
            return m.group(1), m.group(2)
    return None


def other_tables(a: tuple[str, str | None] | None, b: tuple[str, str | None] | None) -> bool:
    """Whether two runs' cost tables are known to differ (another device, or two
    measurements of one)."""
    if a is None or b is None:
        return False
    return a[0] != b[0] or (a[1] is not None and b[1] is not None and a[1] != b[1])
