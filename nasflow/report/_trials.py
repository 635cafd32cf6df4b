"""Figure data from the study's trials: trade-offs, history, budgets, the Pareto table.

Every function here is pure: it reads a study and returns a NamedTuple; the drawing lives
in ``_figures.py`` (the split Optuna's ``visualization`` package uses).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow import names
from nasflow._checks import check_choice
from nasflow.record import (
    FINETUNED_KEY,
    PARAMS_ATTR,
    TRAIN_COST_ATTR,
    KeptRecord,
    TrialRecord,
    get_constraints,
    kept_record,
    retrain_records,
    study_metric_names,
)
from nasflow.report._study import Summarizer, generic_summary
from nasflow.search import FineTuneResult, ReadyModelError, non_dominated_sort, pareto_trials

#: Point statuses of a trade-off figure.
FRONT, DOMINATED, INFEASIBLE, OVER_BUDGET = "front", "dominated", "infeasible", "over budget"

#: Trade-off axes: trial user attribute -> axis title.
AXES = {TRAIN_COST_ATTR: names.PREDICTED_COST, PARAMS_ATTR: names.PARAMS}


class TrialPoint(NamedTuple):
    """One trial on an accuracy trade-off plane.

    Attributes:
        number: Trial number.
        accuracy: The first objective (named by ``TradeoffData.y_title``): the supernet
            score or the fine-tuned validation accuracy; ``None`` for a trial skipped
            before evaluation.
        x: The trade-off value (``train_cost`` or ``params`` user attribute).
        status: ``FRONT``, ``DOMINATED``, ``INFEASIBLE`` (evaluated, violates a constraint)
            or ``OVER_BUDGET`` (skipped before any training).
        winner: The trial was retrained from scratch in phase 3.
        arch: One-line architecture summary.
        note: Why a trial was skipped (empty otherwise).
        test_accuracy: A winner's retrained test accuracy (phase 3), else ``None``.
    """

    number: int
    accuracy: float | None
    x: float
    status: str
    winner: bool
    arch: str
    note: str
    test_accuracy: float | None = None


class TradeoffData(NamedTuple):
    """Accuracy against ``x_attr``; the front is the non-dominated set in this plane.
    ``kept`` is the model the finished run keeps (``nasflow:kept``), ``None`` where the
    study records none."""

    x_attr: str
    x_title: str
    points: list[TrialPoint]
    left_out: int
    y_title: str = "accuracy"
    kept: KeptRecord | None = None


def _violates(trial: FrozenTrial) -> bool:
    values = get_constraints(trial)
    return values is not None and any(v > 0 for v in values)


def _arch(trial: FrozenTrial, summarize: Summarizer) -> str:
    raw = TrialRecord.from_trial(trial).arch
    return summarize(raw) if raw is not None else ""


def tradeoff_data(
    study: optuna.Study, x_attr: str = TRAIN_COST_ATTR, summarize: Summarizer = generic_summary
) -> TradeoffData:
    """Completed trials (and over-budget skipped ones) on the accuracy vs ``x_attr`` plane.

    Args:
        study: The study.
        x_attr: ``"train_cost"`` (predicted seconds) or ``"params"``.
        summarize: Names an architecture from its JSON.

    Raises:
        ValueError: ``x_attr`` is not one of ``AXES``.
    """
    check_choice("x_attr", x_attr, sorted(AXES))
    winners = retrain_records(study)
    points: list[TrialPoint] = []
    left_out = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        x = t.user_attrs.get(x_attr)
        skipped = TrialRecord.from_trial(t).skipped
        if t.state == TrialState.PRUNED and not skipped:
            continue  # stopped early by the pruner: shown in the budget figure
        if not isinstance(x, (int, float)) or (t.state == TrialState.COMPLETE and not t.values):
            left_out += 1
            continue
        arch = _arch(t, summarize)
        if t.state == TrialState.PRUNED:
            points.append(TrialPoint(t.number, None, float(x), OVER_BUDGET, False, arch, skipped))
            continue
        status = INFEASIBLE if _violates(t) else DOMINATED
        acc = float(t.values[0])
        test = _num(winners.get(t.number, {}), "test_accuracy")
        won = t.number in winners
        points.append(TrialPoint(t.number, acc, float(x), status, won, arch, "", test))
    feasible = [i for i, p in enumerate(points) if p.status == DOMINATED]
    if feasible:
        values = np.array([[points[i].accuracy, points[i].x] for i in feasible])  # (N, 2)
        ranks = non_dominated_sort(values, ["maximize", "minimize"])
        for i, rank in zip(feasible, ranks, strict=True):
            if rank == 0:
                points[i] = points[i]._replace(status=FRONT)
    return TradeoffData(
        x_attr, AXES[x_attr], points, left_out, study_metric_names(study)[0], kept_record(study)
    )


class HistoryData(NamedTuple):
    """Accuracy of completed trials in trial order, and the best so far."""

    numbers: list[int]
    accuracy: list[float]
    best: list[float]
    y_title: str = "accuracy"


def history_data(study: optuna.Study) -> HistoryData:
    """Optimization history of the first objective (accuracy, maximized)."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    done = sorted((t for t in done if t.values), key=lambda t: t.number)
    numbers = [t.number for t in done]
    acc = [float(t.values[0]) for t in done]
    best = np.maximum.accumulate(acc).tolist() if acc else []
    return HistoryData(numbers, acc, best, study_metric_names(study)[0])


#: Budget-figure trial states.
COMPLETED, PRUNED, SKIPPED, FAILED = "completed", "pruned", "skipped (over budget)", "failed"


class BudgetData(NamedTuple):
    """Fine-tuning epochs each trial received before it finished or was pruned.

    Attributes:
        numbers: Trial numbers.
        epochs: Epochs each was fine-tuned during the search.
        states: How each ended.
        finetuned: Finalists the fine-tuning phase trained after the search (0: none).
    """

    numbers: list[int]
    epochs: list[int]
    states: list[str]
    finetuned: int = 0


def budget_data(study: optuna.Study) -> BudgetData:
    """Epochs trained (user attribute ``epochs_trained``; 0 when never fine-tuned)."""
    states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    numbers, epochs, labels = [], [], []
    for t in sorted(study.get_trials(deepcopy=False, states=states), key=lambda t: t.number):
        numbers.append(t.number)
        rec = TrialRecord.from_trial(t)
        epochs.append(rec.epochs_trained or 0)
        if t.state == TrialState.COMPLETE:
            labels.append(COMPLETED)
        elif t.state == TrialState.FAIL:
            labels.append(FAILED)
        else:
            labels.append(SKIPPED if rec.skipped else PRUNED)
    try:
        finetuned = len(FineTuneResult.from_record(study.user_attrs.get(FINETUNED_KEY)).candidates)
    except ReadyModelError:  # no fine-tuning phase (or a record the ready table reports)
        finetuned = 0
    return BudgetData(numbers, epochs, labels, finetuned)


class ParetoRow(NamedTuple):
    """One trial of the study's Pareto set, with its retraining record if any."""

    number: int
    values: list[float]
    train_cost: float | None
    params: int | None
    arch: str
    test_accuracy: float | None
    measured_train_cost: float | None


class ParetoTable(NamedTuple):
    """The study's Pareto set over its own objectives, best accuracy first."""

    objectives: list[str]
    rows: list[ParetoRow]


def _num(record: dict[str, Any], key: str) -> float | None:
    v = record.get(key)
    return float(v) if isinstance(v, (int, float)) else None


def pareto_table(study: optuna.Study, summarize: Summarizer = generic_summary) -> ParetoTable:
    """The non-dominated completed trials (``nasflow.search.pareto_trials``)."""
    records = retrain_records(study)
    rows = []
    for t in pareto_trials(study):
        rec = records.get(t.number, {})
        trial = TrialRecord.from_trial(t)
        cost, params = trial.train_cost, trial.params
        rows.append(
            ParetoRow(
                t.number,
                [float(v) for v in t.values],
                float(cost) if isinstance(cost, (int, float)) else None,
                int(params) if isinstance(params, int) else None,
                _arch(t, summarize),
                _num(rec, "test_accuracy"),
                _num(rec, "measured_train_cost"),
            )
        )
    return ParetoTable(study_metric_names(study), rows)
