"""Figure data from the study-level records: supernet op counts, winners, speedup stack.

Every function here is pure: it reads study user attributes and returns a NamedTuple; the
drawing lives in ``_figures.py``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import optuna

from nasflow.errors import ConfigError
from nasflow.record import STACK_KEY, SUPERNET_KEY, StackRecord, retrain_records


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
        sampler: ``"fair"`` or ``"uniform"`` (``None`` without a supernet record).
        paths_per_step: ``M``, the paths trained per step (``max_l m_l`` when fair).
        steps: Optimizer steps the counts cover (total paths of a label / ``M``).
        labels: One entry per searchable label, in record order.
    """

    sampler: str | None
    paths_per_step: int | None
    steps: int | None
    labels: list[LabelCounts]


def fairness_data(study: optuna.Study) -> FairnessData:
    """Per-op counts from ``nasflow:supernet["op_counts"]`` rows ``(label, value, count)``.

    With strict-fair sampling and ``M`` paths per step, each choice of a label with ``m``
    choices is trained ``floor(M/m)`` or ``ceil(M/m)`` times per step (exactly ``M/m`` when
    ``m`` divides ``M``), so over ``S`` steps its count lies in ``[S*floor(M/m), S*ceil(M/m)]``.
    """
    record = study.user_attrs.get(SUPERNET_KEY)
    if not isinstance(record, dict):
        return FairnessData(None, None, None, [])
    grouped: dict[str, tuple[list[Any], list[int]]] = {}
    for row in record.get("op_counts", []):
        label, value, count = row
        vals, counts = grouped.setdefault(str(label), ([], []))
        vals.append(value)
        counts.append(int(count))
    sampler = record.get("sampler")
    m_paths = record.get("paths_per_step")
    totals = {sum(c) for _, c in grouped.values()}
    steps = None
    if isinstance(m_paths, int) and m_paths > 0 and len(totals) == 1:
        total = totals.pop()
        steps = total // m_paths if total % m_paths == 0 else None
    labels = []
    for label, (vals, counts) in grouped.items():
        low = high = None
        if sampler == "fair" and steps is not None:
            m = len(vals)
            low, high = steps * (m_paths // m), steps * -(-m_paths // m)
        labels.append(LabelCounts(label, vals, counts, low, high))
    return FairnessData(sampler, m_paths, steps, labels)


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
    """Cost-model predictions next to the winners' measured training cost."""

    points: list[CostPoint]


def costmodel_data(study: optuna.Study) -> CostModelData:
    """Predicted ``train_cost`` against phase 3's ``measured_train_cost``, per winner."""
    points = []
    for number, rec in retrain_records(study).items():
        pred, meas = rec.get("predicted_train_cost"), rec.get("measured_train_cost")
        if isinstance(pred, (int, float)) and isinstance(meas, (int, float)):
            points.append(CostPoint(number, float(pred), float(meas)))
    return CostModelData(points)


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


def _multiplier(value: Any, what: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{STACK_KEY}: {what} must be a positive finite number, got {value!r}")
    return float(value)


def stack_data(study: optuna.Study) -> StackData:
    """The stack's measured multipliers from study user attribute ``nasflow:stack``.

    The record (written by whatever measures the stack) is a JSON object::

        {"baseline": "fp32 eager",          # what every multiplier is relative to
         "device": "cpu, 2 cores",          # where it was measured
         "layers": [{"name": "channels_last", "alone": 1.12, "cumulative": 1.12}, ...],
         "end_to_end": 1.31}                # whole stack vs baseline; null if not measured

    A multiplier is baseline cost / cost with the layer on the same work, measured in the
    same run; ``null`` means not measured (such a layer is named, never drawn, and no
    interaction is computed). Other keys are ignored. Without the record nothing is drawn
    but a "not measured" panel: no number is ever made up.

    Raises:
        ValueError: A malformed record, naming the bad value.
    """
    rec = study.user_attrs.get(STACK_KEY)
    if rec is None:
        return StackData(False, "", "", [], None)
    if not isinstance(rec, dict) or not isinstance(rec.get("layers"), list):
        raise ConfigError(f"{STACK_KEY} must be an object with a 'layers' list, got {rec!r}")
    baseline, device = str(rec.get("baseline", "baseline")), str(rec.get("device", ""))
    if rec.get("skipped"):
        note = f"The stack calibration was skipped: {rec['skipped']}. Training ran as {baseline}."
        return StackData(False, baseline, device, [], None, [], None, note)
    layers = []
    for i, layer in enumerate(rec["layers"]):
        if not isinstance(layer, dict) or not isinstance(layer.get("name"), str):
            raise ConfigError(f"{STACK_KEY}: layer {i} must have a string 'name', got {layer!r}")
        alone, cum = layer.get("alone"), layer.get("cumulative")
        layers.append(
            StackLayerRow(
                layer["name"],
                None if alone is None else _multiplier(alone, f"layer {layer['name']!r} 'alone'"),
                None if cum is None else _multiplier(cum, f"layer {layer['name']!r} 'cumulative'"),
            )
        )
    e2e = rec.get("end_to_end")
    chosen = rec.get("chosen")
    chosen = [str(c) for c in chosen] if isinstance(chosen, list) else None
    typed = StackRecord.from_dict(rec)
    mult = typed.chosen_multiplier if typed.all_layers else None
    return StackData(
        True,
        baseline,
        device,
        layers,
        None if e2e is None else _multiplier(e2e, "'end_to_end'"),
        chosen,
        None if mult is None else _multiplier(mult, "'chosen_multiplier'"),
        _origin(rec.get("origin")),
    )


def _origin(origin: Any) -> str:
    """Where a ``stack="auto"`` record's numbers come from, in words."""
    if not isinstance(origin, dict):
        return ""
    when = str(origin.get("measured_at", ""))[:19].replace("T", " ")
    if origin.get("kind") == "reused":
        return f"Measured on this device on {when} UTC and reused: no calibration ran here."
    if origin.get("kind") == "calibrated":
        return f"Calibrated on this device for this study ({when} UTC)."
    return ""
