"""Figure data from the study's trials: trade-offs, history, budgets, the Pareto table.

Every function here is pure: it reads a study and returns a NamedTuple; the drawing lives
in ``_figures.py`` (the split Optuna's ``visualization`` package uses).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow import names
from nasflow._checks import check_choice
from nasflow.pipeline import pareto_trials
from nasflow.record import (
    PARAMS_ATTR,
    TRAIN_COST_ATTR,
    KeptRecord,
    ReadyModelError,
    TrialRecord,
    get_constraints,
    study_cost_table,
    study_finetuned,
    study_kept,
    study_metric_names,
    study_retrains,
    study_scoring,
)
from nasflow.report._records import anchor_models, ready_models
from nasflow.report._study import Summarizer, generic_summary
from nasflow.search import non_dominated_sort

#: Point statuses of a trade-off figure.
FRONT, DOMINATED, INFEASIBLE, OVER_BUDGET = "front", "dominated", "infeasible", "over budget"

#: Trade-off axes: trial user attribute -> axis title (the cost's is qualified by
#: :func:`cost_basis` with what the prediction is).
AXES = {TRAIN_COST_ATTR: names.PREDICTED_COST, PARAMS_ATTR: names.PARAMS}


class CostBasis(NamedTuple):
    """What a study's predicted training cost is.

    Attributes:
        title: The axis title: ``names.PREDICTED_COST`` and the clock it counts.
        what: One sentence: how the number is made, and how it differs from a measured one.
    """

    title: str
    what: str


def cost_basis(study: optuna.Study) -> CostBasis:
    """What the ``train_cost`` of the study's trials is: the cost model's seconds of one
    undisturbed training step (its clock, from the study's cost-table record) times the
    recipe's steps, or a step timed during the search (``StudySpec.cost="measure"``)."""
    table = study_cost_table(study)
    if table is not None and table.clock:
        return CostBasis(
            f"{names.PREDICTED_COST}: {table.clock} of undisturbed steps",
            f"predicted training cost: the cost model's {table.clock} of one undisturbed "
            "training step (the fastest of several rounds, fitted on measured whole-network "
            "steps) times the recipe's steps; a training measured on this machine counts wall "
            "time, longer when other work shares the cores",
        )
    if study_scoring(study).get("cost") == "measure":
        return CostBasis(
            f"{names.PREDICTED_COST}: timed steps x recipe steps",
            "predicted training cost: each candidate's median training step, timed during "
            "the search through the study's stack, times the recipe's steps",
        )
    return CostBasis(
        names.PREDICTED_COST,
        "predicted training cost: the cost model's seconds (this study does not record "
        "which clock they count)",
    )


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
    x_basis: str = ""


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
    winners = study_retrains(study)
    points: list[TrialPoint] = []
    left_out = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        rec = TrialRecord.from_trial(t)
        x = rec.train_cost if x_attr == TRAIN_COST_ATTR else rec.params
        skipped = rec.skipped
        if t.state == TrialState.PRUNED and not skipped:
            continue  # stopped early by the pruner: shown in the budget figure
        if x is None or (t.state == TrialState.COMPLETE and not t.values):
            left_out += 1
            continue
        arch = _arch(t, summarize)
        if t.state == TrialState.PRUNED:
            points.append(TrialPoint(t.number, None, float(x), OVER_BUDGET, False, arch, skipped))
            continue
        status = INFEASIBLE if _violates(t) else DOMINATED
        acc = float(t.values[0])
        won = t.number in winners
        test = winners[t.number].test_accuracy if won else None
        points.append(TrialPoint(t.number, acc, float(x), status, won, arch, "", test))
    feasible = [i for i, p in enumerate(points) if p.status == DOMINATED]
    if feasible:
        values = np.array([[points[i].accuracy, points[i].x] for i in feasible])  # (N, 2)
        ranks = non_dominated_sort(values, ["maximize", "minimize"])
        for i, rank in zip(feasible, ranks, strict=True):
            if rank == 0:
                points[i] = points[i]._replace(status=FRONT)
    basis = cost_basis(study) if x_attr == TRAIN_COST_ATTR else None
    return TradeoffData(
        x_attr,
        basis.title if basis else AXES[x_attr],
        points,
        left_out,
        study_metric_names(study)[0],
        study_kept(study),
        basis.what if basis else "",
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
        tuned = study_finetuned(study)
    except ReadyModelError:  # a record the ready table reports
        tuned = None
    finetuned = 0 if tuned is None else len(tuned.candidates)
    return BudgetData(numbers, epochs, labels, finetuned)


class ParetoRow(NamedTuple):
    """One trial of the study's Pareto set (or the kept trial where it is not in it).

    Attributes:
        number: Its trial.
        values: Its objective values (the search's: a supernet score is not a trained
            model's accuracy).
        train_cost: Its predicted training cost (``ParetoTable.cost_basis`` says what it is).
        params: Its parameter count.
        arch: Its architecture, in one line.
        test_accuracy: Test accuracy of a from-scratch training with the study's recipe
            (phase 3's retrain, else the trial's zero-cost anchor), if it had one.
        measured_train_cost: Measured seconds of that training.
        trained: How the trial was trained, in words ("screened only: not trained" when it
            was not); the kept model's weights first.
        kept: It is the model the run keeps.
        on_front: It is in the Pareto set (false for a kept trial outside it).
    """

    number: int
    values: list[float]
    train_cost: float | None
    params: int | None
    arch: str
    test_accuracy: float | None
    measured_train_cost: float | None
    trained: str = ""
    kept: bool = False
    on_front: bool = True


class ParetoTable(NamedTuple):
    """The study's Pareto set over its own objectives, best accuracy first, with the kept
    trial first where it is not in the set; ``cost_basis`` says what the predicted cost is."""

    objectives: list[str]
    rows: list[ParetoRow]
    cost_basis: str = ""


def _trainings(study: optuna.Study) -> tuple[dict[int, list[str]], dict[int, tuple]]:
    """Per trial: how it was trained, in words, and its from-scratch ``(test, seconds)``
    (phase 3's retrain before an anchor's training)."""
    words: dict[int, list[str]] = {}
    scratch: dict[int, tuple] = {}
    for r in ready_models(study).rows:
        test = "" if r.test_accuracy is None else f", test {r.test_accuracy:.4f}"
        words.setdefault(r.number, []).append(
            f"fine-tuned {r.epochs} epoch{'s' * (r.epochs != 1)}: validation "
            f"{r.val_accuracy:.4f}{test}"
        )
    for a in anchor_models(study):
        words.setdefault(a.number, []).insert(0, "zero-cost anchor, from scratch")
        scratch[a.number] = (a.test_accuracy, a.seconds)
    for number, rec in study_retrains(study).items():
        words.setdefault(number, []).insert(0, "retrained from scratch (phase 3)")
        scratch[number] = (rec.test_accuracy, rec.measured_train_cost)
    return words, scratch


def _kept_words(kept: KeptRecord) -> str:
    if kept.weights == "fine-tuned":
        return "kept: its fine-tuned weights"
    if kept.source == "anchor":
        return "kept: the zero-cost anchor's weights"
    return "kept: its retrained weights"


def pareto_table(study: optuna.Study, summarize: Summarizer = generic_summary) -> ParetoTable:
    """The non-dominated completed trials (``nasflow.search.pareto_trials``), each with how
    it was trained, and the kept trial marked (added first where it is not in the set)."""
    kept = study_kept(study)
    words, scratch = _trainings(study)
    front = pareto_trials(study)
    numbers = {t.number for t in front}
    if kept is not None and kept.trial not in numbers:
        extra = [t for t in study.get_trials(deepcopy=False) if t.number == kept.trial]
        front = [t for t in extra if t.values] + front
    rows = []
    for t in front:
        trial = TrialRecord.from_trial(t)
        test, seconds = scratch.get(t.number, (None, None))
        how = words.get(t.number) or ["screened only: not trained"]
        is_kept = kept is not None and kept.trial == t.number
        if is_kept and kept is not None:
            how = [_kept_words(kept), *how]
        rows.append(
            ParetoRow(
                t.number,
                [float(v) for v in t.values],
                trial.train_cost,
                trial.params,
                _arch(t, summarize),
                test,
                seconds,
                "; ".join(how),
                is_kept,
                t.number in numbers,
            )
        )
    return ParetoTable(study_metric_names(study), rows, cost_basis(study).what)
