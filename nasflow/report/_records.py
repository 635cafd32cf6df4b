"""Figure data from the study-level records: supernet op counts, winners and the cost
model's fit, speedup stack, search-level multipliers, ready models.

Every function here is pure: it reads study user attributes and returns a NamedTuple; the
drawing lives in ``_figures.py``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import optuna

from nasflow.pipeline import MULTIPLIER_TITLES, multiplier_basis
from nasflow.record import (
    CostCalibration,
    ReadyModelError,
    StackOrigin,
    TrialRecord,
    study_anchors,
    study_cost_table,
    study_finetuned,
    study_multipliers,
    study_retrains,
    study_stack,
    study_supernet,
)
from nasflow.report._study import Summarizer, generic_summary
from nasflow.sampling import STRICTLY_FAIR


# ---------------------------------------------------------------------- fairness
class LabelCounts(NamedTuple):
    """How often each choice of one searchable label was trained in the supernet.

    Attributes:
        label: The choice label.
        values: The label's choices.
        counts: Paths that trained each choice, aligned with ``values``.
        low: Fewest trainings the strict-fair rule allows per choice
            (``steps * floor(M / m)``), or ``None`` when the rule does not apply.
        high: Most it allows (``steps * ceil(M / m)``), or ``None``.
    """

    label: str
    values: list[Any]
    counts: list[int]
    low: int | None
    high: int | None

    @property
    def within_rule(self) -> bool | None:
        """Whether every count lies in ``[low, high]`` (``None`` if no rule applies)."""
        if self.low is None or self.high is None:
            return None
        return all(self.low <= n <= self.high for n in self.counts)


class FairnessData(NamedTuple):
    """Per-op training counts of the supernet.

    Attributes:
        sampler: The supernet's path sampler (``"fair"``, ``"fair-depth"``, ``"uniform"``;
            ``None`` without a supernet record).
        paths_per_step: ``M``, the paths trained per step (``max_l m_l`` when fair).
        steps: Optimizer steps the counts cover (total paths of a label / ``M``).
        labels: One entry per searchable label, in record order.
        split: The choice the supernet was split on (few-shot), or ``None``.
        split_epoch: The epoch it was split at.
    """

    sampler: str | None
    paths_per_step: int | None
    steps: int | None
    labels: list[LabelCounts]
    split: str | None = None
    split_epoch: int | None = None


def fairness_data(study: optuna.Study) -> FairnessData:
    """Per-op counts from ``nasflow:supernet["op_counts"]`` rows ``(label, value, count)``.

    With strict-fair sampling and ``M`` paths per step, each choice of a label with ``m``
    choices is trained ``floor(M/m)`` or ``ceil(M/m)`` times per step (exactly ``M/m`` when
    ``m`` divides ``M``), so over ``S`` steps its count lies in ``[S*floor(M/m), S*ceil(M/m)]``.
    """
    record = study_supernet(study)
    if record is None:
        return FairnessData(None, None, None, [])
    grouped: dict[str, tuple[list[Any], list[int]]] = {}
    for label, value, count in record.op_counts:
        vals, counts = grouped.setdefault(label, ([], []))
        vals.append(value)
        counts.append(count)
    sampler = record.sampler
    m_paths = record.paths_per_step
    totals = {sum(c) for _, c in grouped.values()}
    steps = None
    if isinstance(m_paths, int) and m_paths > 0 and len(totals) == 1:
        total = totals.pop()
        steps = total // m_paths if total % m_paths == 0 else None
    labels = []
    for label, (vals, counts) in grouped.items():
        low = high = None
        if sampler in STRICTLY_FAIR and steps is not None:
            m = len(vals)
            low, high = steps * (m_paths // m), steps * -(-m_paths // m)
        labels.append(LabelCounts(label, vals, counts, low, high))
    return FairnessData(sampler, m_paths, steps, labels, record.split, record.split_epoch)


# ---------------------------------------------------------------------- cost model
class CostPoint(NamedTuple):
    """One retrained winner: predicted against measured training cost (seconds)."""

    number: int
    predicted: float
    measured: float

    @property
    def ratio(self) -> float:
        """measured / predicted."""
        return self.measured / self.predicted if self.predicted > 0 else math.inf


class CostModelData(NamedTuple):
    """Cost-model predictions next to the winners' measured training cost, and the
    measured steps the model was fitted on.

    Attributes:
        points: The retrained winners (whole trainings, seconds).
        calibration: The fit and its measured steps, from the study's cost-table record
            (``None``: the study records none; ``why`` says why).
        clock: What the cost table's seconds are (``"thread CPU time"``...), if recorded.
        device: The device the table describes, if recorded.
        why: Why no calibration is shown (empty when one is).
    """

    points: list[CostPoint]
    calibration: CostCalibration | None = None
    clock: str | None = None
    device: str | None = None
    why: str = ""


def costmodel_data(study: optuna.Study) -> CostModelData:
    """Predicted ``train_cost`` against phase 3's ``measured_train_cost``, per winner, and
    the cost model's calibration steps (``CostTableRecord.calibration``)."""
    points = []
    for number, rec in study_retrains(study).items():
        pred, meas = rec.predicted_train_cost, rec.measured_train_cost
        if pred is not None and meas is not None:
            points.append(CostPoint(number, pred, meas))
    table = study_cost_table(study)
    if table is None:
        why = (
            "the study records no cost model (its cost estimator timed every candidate, "
            "or it is scored from a table)"
        )
        return CostModelData(points, why=why)
    why = (
        ""
        if table.calibration
        else ("the study's cost-table record predates the recording of the fit's steps")
    )
    return CostModelData(points, table.calibration, table.clock, table.device, why)


# ---------------------------------------------------------------------- speedup stack
class StackLayerRow(NamedTuple):
    """One layer of the speedup stack.

    Attributes:
        name: What the layer is (``"bf16 autocast"``).
        alone: Baseline cost / cost with only this layer on, same work, same run; ``None``
            when it was not measured.
        cumulative: Baseline cost / cost with this and every earlier layer on, or ``None``.
    """

    name: str
    alone: float | None
    cumulative: float | None


class StackData(NamedTuple):
    """The speedup-multiplier waterfall; ``measured`` is false when no record exists.

    Attributes:
        measured: Whether the study holds a ``nasflow:stack`` record with measurements
            (a calibration that was skipped has none).
        baseline: What the multipliers are relative to.
        device: Where they were measured.
        layers: The layers, in the order they were stacked.
        end_to_end: Baseline cost / cost with the whole stack, measured, or ``None``.
        chosen: The layers the study trained with (``[]``: the baseline), or ``None``
            when the record does not say.
        chosen_multiplier: The chosen stack's measured multiplier, or ``None``.
        note: Where the numbers come from, or why nothing was measured.
    """

    measured: bool
    baseline: str
    device: str
    layers: list[StackLayerRow]
    end_to_end: float | None
    chosen: list[str] | None = None
    chosen_multiplier: float | None = None
    note: str = ""

    @property
    def measured_layers(self) -> list[StackLayerRow]:
        """The layers with an ``alone`` multiplier."""
        return [x for x in self.layers if x.alone is not None]

    @property
    def product(self) -> float | None:
        """Product of the measured layers' individual (``alone``) multipliers."""
        alone = [x.alone for x in self.measured_layers if x.alone is not None]
        return math.prod(alone) if alone else None

    @property
    def interaction(self) -> float | None:
        """``end_to_end / product``: 1 when layers compound independently; ``None`` unless
        the end-to-end figure and every layer's own multiplier were measured."""
        if self.end_to_end is None or self.product is None:
            return None
        if len(self.measured_layers) != len(self.layers):
            return None
        return self.end_to_end / self.product


def stack_data(study: optuna.Study) -> StackData:
    """The stack's measured multipliers from the study's stack record
    (:class:`~nasflow.record.StackRecord`).

    A multiplier is baseline cost / cost with the layer on the same work, measured in the
    same run; ``None`` means not measured (such a layer is named, never drawn, and no
    interaction is computed). Without the record nothing is drawn but a "not measured"
    panel: no number is ever made up.

    Raises:
        ValueError: A malformed record, naming the bad value (``StudyRecordError``).
    """
    rec = study_stack(study)
    if rec is None:
        return StackData(False, "", "", [], None)
    baseline = "baseline" if rec.baseline is None else rec.baseline
    device = "" if rec.device is None else rec.device
    if rec.skipped:
        note = f"The stack calibration was skipped: {rec.skipped}. Training ran as {baseline}."
        return StackData(False, baseline, device, [], None, [], None, note)
    layers = [StackLayerRow(x.name, x.alone, x.cumulative) for x in rec.layers]
    # (A schema 1 record's ``end_to_end`` is its chosen stack's multiplier.)
    end_to_end = rec.end_to_end if rec.all_layers else rec.chosen_multiplier
    chosen = None if rec.chosen is None else list(rec.chosen)
    return StackData(
        True,
        baseline,
        device,
        layers,
        end_to_end,
        chosen,
        rec.chosen_multiplier if rec.all_layers else None,
        _origin(rec.origin),
    )


def _origin(origin: StackOrigin | None) -> str:
    """Where a ``stack="auto"`` record's numbers come from, in words."""
    if origin is None:
        return ""
    when = str(origin.measured_at or "")[:19].replace("T", " ")
    if origin.kind == "reused":
        return f"Measured on this device on {when} UTC and reused: no calibration ran here."
    if origin.kind == "calibrated":
        return f"Calibrated on this device for this study ({when} UTC)."
    return ""


# ---------------------------------------------------------------------- multipliers
class MultiplierStep(NamedTuple):
    """One technique's multiplier, as the search summary prints it.

    Attributes:
        key: The record's part key (``"one_shot"``...; ``"compounded"``).
        title: Its name (``"one-shot"``).
        multiplier: Cost without / cost with; ``None``: not measured or not applicable.
        label: ``"MEASURED"``, ``"ESTIMATE"`` or ``"n/a"``.
        basis: What the number comes from, or why there is none (the summary's text).
    """

    key: str
    title: str
    multiplier: float | None
    label: str
    basis: str


class MultipliersData(NamedTuple):
    """The search-level multipliers of the run (study record ``MultipliersRecord``).

    Attributes:
        recorded: Whether the study holds the record (a finished search run writes it).
        steps: One per technique, in the summary's order.
        compounded: Their product (``None`` multiplier: nothing to multiply).
        run_seconds: Measured wall time of the study's finished runs, summed.
        search_seconds: Measured wall time of the supernet and the search.
        without_nasflow_seconds: Training the same candidates stand-alone (labelled as
            the one-shot step is), or ``None``.
    """

    recorded: bool
    steps: list[MultiplierStep]
    compounded: MultiplierStep | None = None
    run_seconds: float | None = None
    search_seconds: float | None = None
    without_nasflow_seconds: float | None = None

    @property
    def available(self) -> list[MultiplierStep]:
        """The steps with a multiplier."""
        return [s for s in self.steps if s.multiplier is not None]


def multipliers_data(study: optuna.Study) -> MultipliersData:
    """The record the search summary's multiplier lines are printed from, with the same
    basis text (``nasflow.search.multiplier_basis``)."""
    record = study_multipliers(study)
    if record is None:
        return MultipliersData(False, [])
    basis = multiplier_basis(record)

    def step(p: Any) -> MultiplierStep:
        return MultiplierStep(p.key, MULTIPLIER_TITLES[p.key], p.multiplier, p.label, basis[p.key])

    return MultipliersData(
        True,
        [step(p) for p in record.parts],
        step(record.compounded),
        record.run_seconds,
        record.search_seconds,
        record.without_nasflow_seconds,
    )


# ---------------------------------------------------------------------- ready models
class ReadyRow(NamedTuple):
    """One ready model of the fine-tuning phase.

    Attributes:
        number: Its trial.
        epochs: Epochs fine-tuned from the inherited supernet weights.
        val_accuracy: Validation accuracy of the fine-tuned weights (measured).
        test_accuracy: Test accuracy of the same weights, if measured.
        seconds: Measured seconds of its fine-tuning epochs (their sum).
        train_cost: The trial's predicted stand-alone training cost, if recorded.
        params: The trial's parameter count, if recorded.
        status: How its fine-tuning ended (the phase's status).
        arch: Its architecture, in one line (the report's summarizer).
    """

    number: int
    epochs: int
    val_accuracy: float
    test_accuracy: float | None
    seconds: float
    train_cost: float | None
    params: int | None
    status: str
    arch: str


class ReadyModels(NamedTuple):
    """The fine-tuning phase's ready models; ``recorded`` is false without the phase."""

    recorded: bool
    rows: list[ReadyRow]
    error: str = ""


def ready_models(study: optuna.Study, summarize: Summarizer = generic_summary) -> ReadyModels:
    """The ready models (``FineTuneResult.ready``) from the study's fine-tuning record,
    each with its trial's predicted cost and parameters (for the trade-off figures);
    ``summarize`` names an architecture from its JSON."""
    try:
        result = study_finetuned(study)
    except ReadyModelError as e:
        return ReadyModels(True, [], str(e))
    if result is None:
        return ReadyModels(False, [])
    trials = {t.number: TrialRecord.from_trial(t) for t in study.get_trials(deepcopy=False)}
    rows = []
    for c in result.ready:
        trial = trials.get(c.trial, TrialRecord())
        rows.append(
            ReadyRow(
                c.trial,
                c.epochs,
                c.val_accuracy,
                c.test_accuracy,
                c.train_seconds,
                trial.train_cost,
                trial.params,
                c.status,
                summarize(c.arch),
            )
        )
    return ReadyModels(True, sorted(rows, key=lambda r: (-r.val_accuracy, r.number)))


# ---------------------------------------------------------------------- zero-cost anchors
class AnchorRow(NamedTuple):
    """One zero-cost anchor of phase 0, trained from scratch before the supernet.

    Attributes:
        number: Its trial.
        val_accuracy: Validation accuracy of its from-scratch weights (measured).
        test_accuracy: Test accuracy of the same weights, if measured.
        seconds: Measured seconds of its from-scratch training.
        train_cost: The trial's predicted stand-alone training cost, if recorded.
        params: Its parameter count.
        arch: Its architecture, in one line (the report's summarizer).
    """

    number: int
    val_accuracy: float
    test_accuracy: float | None
    seconds: float
    train_cost: float | None
    params: int | None
    arch: str


def anchor_models(study: optuna.Study, summarize: Summarizer = generic_summary) -> list[AnchorRow]:
    """The trained zero-cost anchors (``nasflow:anchors``), each with its trial's predicted
    cost (for the trade-off figures); none where the study has no such record."""
    record = study_anchors(study)
    if record is None:
        return []
    trials = {t.number: TrialRecord.from_trial(t) for t in study.get_trials(deepcopy=False)}
    rows = []
    for a in record.trained:
        trial = trials.get(a.trial, TrialRecord())
        rows.append(
            AnchorRow(
                a.trial,
                float(a.val_accuracy or 0.0),
                a.test_accuracy,
                float(a.measured_train_cost or 0.0),
                trial.train_cost,
                trial.params if trial.params is not None else a.params,
                summarize(a.arch),
            )
        )
    return rows
