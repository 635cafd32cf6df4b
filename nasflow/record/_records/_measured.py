"""The records of what a run measured about the machine and the search: the speedup stack
(``nasflow:stack``), the cost table (``nasflow:cost_table``) and the search-level
multipliers (``nasflow:multipliers``), typed.

The stack's and the cost table's records are made by the packages that measure
(``nasflow.calibrate``, ``nasflow.cost``) and copied into the study as they are: these
types read them, checked once, and hand them back unchanged (``to_dict``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from nasflow.errors import NotFoundError, StudyRecordError
from nasflow.record._keys import COST_TABLE_KEY, MULTIPLIERS_KEY, STACK_KEY
from nasflow.record._typed import _opt_float, _opt_int, _opt_str


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# ---------------------------------------------------------------------- the speedup stack
#: The current version of the ``nasflow:stack`` record (1: ``layers`` and ``end_to_end``
#: described the chosen stack only, and ``end_to_end`` was its multiplier).
STACK_SCHEMA = 2


@dataclass(frozen=True)
class StackLayer:
    """One layer of a stack calibration: its multipliers against the baseline.

    Attributes:
        name: What the layer is (``"amp"``...).
        alone: Baseline cost / cost with only this layer on (``None``: not measured).
        cumulative: Baseline cost / cost with this and every earlier layer on.
        kept: Whether the stack trained with uses it.
    """

    name: str
    alone: float | None
    cumulative: float | None
    kept: bool = False


@dataclass(frozen=True)
class StackDecision:
    """The calibration's decision on one candidate layer, and why."""

    name: str | None
    kept: bool
    reason: str


@dataclass(frozen=True)
class StackOrigin:
    """Where a stack record's numbers come from.

    Attributes:
        kind: ``"reused"`` (this device's stored record), ``"calibrated"`` (now) or
            ``"skipped"`` (``None``: not said).
        measured_at: When they were measured (ISO 8601, UTC).
        not_stored: Why a calibration just taken was not stored for the device.
    """

    kind: str | None = None
    measured_at: str | None = None
    not_stored: str | None = None


@dataclass(frozen=True)
class StackCalibration:
    """How the calibration ran: its seconds, its budget and its phases."""

    seconds: float | None = None
    budget_seconds: float | None = None
    min_gain: float | None = None
    first_phase: str | None = None
    second_phase: str | None = None


def _multiplier(value: Any, what: str) -> float | None:
    """``None``, or a positive finite multiplier (else the record is refused)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise StudyRecordError(
            f"{STACK_KEY}: {what} must be a positive finite number, got {value!r}"
        )
    return float(value)


@dataclass(frozen=True)
class StackRecord:
    """The ``nasflow:stack`` record (``stack="auto"``'s calibration, made by
    ``nasflow.calibrate``), typed.

    Attributes:
        schema: The version written (``from_dict`` reads 1 and 2).
        stack: The ``Stack.to_dict()`` trained with (``None``: none recorded).
        chosen: The layers kept (``None``: the record does not say).
        chosen_multiplier: The chosen stack's measured multiplier against the baseline
            (schema 1 kept it in ``end_to_end``).
        chosen_from: Which phase of the calibration chose it.
        layers: Every candidate layer (schema 1: the chosen layers only).
        end_to_end: Every candidate layer stacked, against the baseline (schema 2).
        product: The product of the layers' own multipliers (an estimate).
        interaction: ``end_to_end / product``.
        noise_multiplier: The baseline against its reseeded replica (the noise floor).
        baseline: What every multiplier is relative to.
        device: Where they were measured.
        skipped: Why the calibration did not run (trained with the baseline).
        candidates: The decision on each candidate layer.
        calibration: How the calibration ran.
        origin: Where the numbers come from (``None``: not said).
        stored: The record as stored (what :meth:`to_dict` gives back).
    """

    KEY: ClassVar[str] = STACK_KEY

    schema: int = STACK_SCHEMA
    stack: Mapping[str, Any] | None = None
    chosen: tuple[str, ...] | None = None
    chosen_multiplier: float | None = None
    chosen_from: str | None = None
    layers: tuple[StackLayer, ...] = ()
    end_to_end: float | None = None
    product: float | None = None
    interaction: float | None = None
    noise_multiplier: float | None = None
    baseline: str | None = None
    device: str | None = None
    skipped: str | None = None
    candidates: tuple[StackDecision, ...] = ()
    calibration: StackCalibration = field(default_factory=StackCalibration)
    origin: StackOrigin | None = None
    stored: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Any) -> StackRecord:
        """From a stored record of any schema (a schema 1 record is migrated: its
        ``end_to_end`` is the chosen multiplier, and no all-layers figure exists).

        Raises:
            StudyRecordError: Not an object with a ``layers`` list, a layer without a
                string ``name``, or a multiplier that is not a positive finite number,
                naming the value.
        """
        if not isinstance(record, Mapping) or not isinstance(record.get("layers"), list):
            raise StudyRecordError(
                f"{STACK_KEY} must be an object with a 'layers' list, got {record!r}"
            )
        layers = []
        for i, layer in enumerate(record["layers"]):
            if not isinstance(layer, Mapping) or not isinstance(layer.get("name"), str):
                raise StudyRecordError(
                    f"{STACK_KEY}: layer {i} must have a string 'name', got {layer!r}"
                )
            name = layer["name"]
            layers.append(
                StackLayer(
                    name,
                    _multiplier(layer.get("alone"), f"layer {name!r} 'alone'"),
                    _multiplier(layer.get("cumulative"), f"layer {name!r} 'cumulative'"),
                    bool(layer.get("kept")),
                )
            )
        schema = _opt_int(record.get("schema")) or 1
        e2e = _multiplier(record.get("end_to_end"), "'end_to_end'")
        if schema >= 2:
            mult = _multiplier(record.get("chosen_multiplier"), "'chosen_multiplier'")
            end_to_end = e2e
        else:
            mult, end_to_end = e2e, None
        origin, cal = record.get("origin"), _mapping(record.get("calibration"))
        stack, skipped, chosen = record.get("stack"), record.get("skipped"), record.get("chosen")
        return cls(
            schema=schema,
            stack=dict(stack) if isinstance(stack, Mapping) else None,
            chosen=_strings(chosen) if isinstance(chosen, list | tuple) else None,
            chosen_multiplier=mult,
            chosen_from=_opt_str(record.get("chosen_from")),
            layers=tuple(layers),
            end_to_end=end_to_end,
            product=_opt_float(record.get("product")),
            interaction=_opt_float(record.get("interaction")),
            noise_multiplier=_opt_float(_mapping(record.get("noise")).get("multiplier")),
            baseline=_opt_str(record.get("baseline")),
            device=_opt_str(record.get("device")),
            skipped=str(skipped) if skipped else None,
            candidates=tuple(
                StackDecision(
                    _opt_str(c.get("name")), bool(c.get("kept")), str(c.get("reason", ""))
                )
                for c in record.get("candidates") or ()
                if isinstance(c, Mapping)
            ),
            calibration=StackCalibration(
                _opt_float(cal.get("seconds")),
                _opt_float(cal.get("budget_seconds")),
                _opt_float(cal.get("min_gain")),
                _opt_str(cal.get("first_phase")),
                _opt_str(cal.get("second_phase")),
            ),
            origin=(
                StackOrigin(
                    _opt_str(origin.get("kind")),
                    None if origin.get("measured_at") is None else str(origin["measured_at"]),
                    _opt_str(origin.get("not_stored")) or None,
                )
                if isinstance(origin, Mapping)
                else None
            ),
            stored=dict(record),
        )

    @property
    def all_layers(self) -> bool:
        """Whether ``layers`` and ``end_to_end`` describe every candidate layer (schema 2),
        not only the chosen ones."""
        return self.schema >= 2

    def decision(self, name: str) -> StackDecision | None:
        """The calibration's decision on layer ``name`` (``None``: not recorded)."""
        return next((c for c in self.candidates if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """The record as stored (the calibration's, unchanged)."""
        return dict(self.stored)


# ---------------------------------------------------------------------- the cost table
@dataclass(frozen=True)
class CalibrationStep:
    """One whole-network training step the cost model was fitted on.

    Attributes:
        ops: Sum of the path's measured op seconds (the fit's input).
        measured: The step's measured seconds (best of rounds, the cost table's clock).
        arch: The path, as ``Arch.to_json()``.
    """

    ops: float
    measured: float
    arch: str = ""


@dataclass(frozen=True)
class CostCalibration:
    """The cost model's fit, as the study records it inside its cost-table record
    (``COST_TABLE_KEY``, key ``"calibration"``): ``step = slope * ops + intercept``.

    Attributes:
        slope: Seconds of a step per second of summed op latency.
        intercept: Fixed seconds per step.
        steps: The measured steps the line was fitted on.
        batch_size: The batch size of the steps.
    """

    slope: float
    intercept: float
    steps: tuple[CalibrationStep, ...] = ()
    batch_size: int | None = None

    def predict(self, ops: float) -> float:
        """The fitted step seconds of a path whose op seconds sum to ``ops``."""
        return max(0.0, self.slope * ops + self.intercept)

    @classmethod
    def from_dict(cls, record: Any) -> CostCalibration | None:
        """From a stored ``"calibration"`` object (``None``: missing or malformed)."""
        if not isinstance(record, Mapping):
            return None
        slope, intercept = _opt_float(record.get("slope")), _opt_float(record.get("intercept"))
        if slope is None or intercept is None:
            return None
        steps = []
        for p in record.get("points") or ():
            if not isinstance(p, Mapping):
                continue
            ops, measured = _opt_float(p.get("ops")), _opt_float(p.get("measured"))
            if ops is not None and measured is not None:
                steps.append(CalibrationStep(ops, measured, _opt_str(p.get("arch")) or ""))
        return cls(slope, intercept, tuple(steps), _opt_int(record.get("batch_size")))

    def to_dict(self) -> dict[str, Any]:
        """As stored in the cost-table record."""
        return {
            "slope": self.slope,
            "intercept": self.intercept,
            "batch_size": self.batch_size,
            "points": [{"ops": s.ops, "measured": s.measured, "arch": s.arch} for s in self.steps],
        }


@dataclass(frozen=True)
class CostTableRecord:
    """The study's cost-table record (``COST_TABLE_KEY``: where the cost model's table came
    from, how steady the machine was, and the fit; ``nasflow.cost``'s stability record
    with the batch size and the fit), typed.

    Attributes:
        device: The device the table describes.
        clock: What the table's seconds are (``"thread CPU time"``, ``"wall time"``...).
        source: ``"measured now"``, ``"shared table"`` or ``"stored"``.
        batch_size: The batch size the model predicts.
        calibration: The fit and its measured steps (``None``: a record written before
            studies recorded it).
        measured_at: When the table was measured.
        calibrated_at: When the fit's steps were measured.
        remeasured: Why the table was measured again (``None``: it was not).
        shared_table: The shared table it came from or was shared with.
        precision: The training precision it predicts.
        reference_seconds: The reference op's best measured seconds.
        ratio: The reference op's typical round over its best.
        rounds: Rounds of the reference op.
        calibration_ratio: The calibration steps' typical round over their best.
        core_share: The share of a core a busy thread got while measuring.
        loaded: Whether the machine looked loaded while it was measured.
        extra: Every key as stored.
    """

    KEY: ClassVar[str] = COST_TABLE_KEY

    device: str | None = None
    clock: str | None = None
    source: str | None = None
    batch_size: int | None = None
    calibration: CostCalibration | None = None
    measured_at: str | None = None
    calibrated_at: str | None = None
    remeasured: str | None = None
    shared_table: str | None = None
    precision: str | None = None
    reference_seconds: float | None = None
    ratio: float | None = None
    rounds: int | None = None
    calibration_ratio: float | None = None
    core_share: float | None = None
    loaded: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> CostTableRecord:
        """From the stored record."""
        return cls(
            device=_opt_str(record.get("device")),
            clock=_opt_str(record.get("clock")),
            source=_opt_str(record.get("source")),
            batch_size=_opt_int(record.get("batch_size")),
            calibration=CostCalibration.from_dict(record.get("calibration")),
            measured_at=_opt_str(record.get("measured_at")),
            calibrated_at=_opt_str(record.get("calibrated_at")),
            remeasured=_opt_str(record.get("remeasured")),
            shared_table=_opt_str(record.get("shared_table")),
            precision=_opt_str(record.get("precision")),
            reference_seconds=_opt_float(record.get("reference_seconds")),
            ratio=_opt_float(record.get("ratio")),
            rounds=_opt_int(record.get("rounds")),
            calibration_ratio=_opt_float(record.get("calibration_ratio")),
            core_share=_opt_float(record.get("core_share")),
            loaded=bool(record.get("loaded")),
            extra=dict(record),
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as stored (the calibration as :meth:`CostCalibration.to_dict`)."""
        out = dict(self.extra)
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_dict()
        return out


# ---------------------------------------------------------------------- multipliers
#: The parts of the ``nasflow:multipliers`` record (``MULTIPLIERS_KEY``), in the order the
#: summary prints them and the report stacks them.
MULTIPLIER_PARTS = ("one_shot", "early_stopping", "gate", "stack", "ddp")
#: What a multiplier's number is: measured in this run, estimated, or neither.
MEASURED, ESTIMATE, NOT_AVAILABLE = "MEASURED", "ESTIMATE", "n/a"


@dataclass(frozen=True)
class MultiplierPart:
    """One technique's multiplier in the ``nasflow:multipliers`` record, typed: its number,
    its label and the figures it comes from (each ``None`` where the part has none).

    Attributes:
        key: The part's key (one of ``MULTIPLIER_PARTS``, or ``"compounded"``).
        multiplier: Cost without the technique / cost with it; ``None``: not measured or
            not applicable (``note`` says why).
        label: ``MEASURED``, ``ESTIMATE`` or ``NOT_AVAILABLE`` (``"n/a"``); a record
            written before parts carried a label gets ``ESTIMATE`` when it says
            ``estimate``, else ``MEASURED``, and ``n/a`` without a multiplier.
        note: What the number comes from, or why there is none.
        candidates: One-shot: the distinct evaluated candidates (the cost model's basis).
        estimated_standalone_seconds: One-shot: their summed predicted training cost.
        actual_seconds: One-shot: the measured supernet + search seconds.
        distinct_candidates: One-shot, from measurements: the candidates counted.
        measured_standalone_seconds: One-shot, from measurements: training them
            stand-alone.
        median_measured_seconds: One-shot, from the baseline tables: their median.
        sample: One-shot, from measurements: the trainings measured.
        sample_measured_seconds: One-shot, measured in this run: their seconds.
        sample_sources: One-shot, measured in this run: where they come from.
        scale: One-shot, measured in this run: measured over predicted seconds.
        epochs_trained: Early stopping, counted: the fine-tuning epochs trained.
        epochs_without_pruning: Early stopping, counted: the epochs without pruning.
        seconds: Early stopping, measured: the fine-tuning phase's seconds.
        full_seconds: Early stopping, measured: every finalist to the last rung.
        finalists: Early stopping, measured: the finalists.
        last_rung: Early stopping, measured: the last rung's epochs.
        skipped: Gate: the distinct candidates skipped.
        skipped_predicted_seconds: Gate: their predicted training cost.
        of: Compounded: the parts multiplied.
        fields: Every key of the part as stored.
    """

    key: str
    multiplier: float | None
    label: str
    note: str = ""
    candidates: int | None = None
    estimated_standalone_seconds: float | None = None
    actual_seconds: float | None = None
    distinct_candidates: int | None = None
    measured_standalone_seconds: float | None = None
    median_measured_seconds: float | None = None
    sample: int | None = None
    sample_measured_seconds: float | None = None
    sample_sources: tuple[str, ...] = ()
    scale: float | None = None
    epochs_trained: int | None = None
    epochs_without_pruning: int | None = None
    seconds: float | None = None
    full_seconds: float | None = None
    finalists: int | None = None
    last_rung: int | None = None
    skipped: int | None = None
    skipped_predicted_seconds: float | None = None
    of: tuple[str, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)

    _FLOATS: ClassVar[tuple[str, ...]] = (
        "estimated_standalone_seconds", "actual_seconds", "measured_standalone_seconds",
        "median_measured_seconds", "sample_measured_seconds", "scale", "seconds",
        "full_seconds", "skipped_predicted_seconds",
    )  # fmt: skip
    _INTS: ClassVar[tuple[str, ...]] = (
        "candidates", "distinct_candidates", "sample", "epochs_trained",
        "epochs_without_pruning", "finalists", "last_rung", "skipped",
    )  # fmt: skip

    @classmethod
    def from_dict(cls, key: str, part: Any) -> MultiplierPart:
        """From one part of the record (a missing or malformed part reads as ``n/a``)."""
        data = dict(part) if isinstance(part, Mapping) else {}
        mult = _opt_float(data.get("multiplier"))
        label = _opt_str(data.get("label"))
        if label is None:
            label = ESTIMATE if data.get("estimate") else MEASURED
        if mult is None:
            label = NOT_AVAILABLE
        figures: dict[str, Any] = {k: _opt_float(data.get(k)) for k in cls._FLOATS}
        figures.update({k: _opt_int(data.get(k)) for k in cls._INTS})
        return cls(
            key,
            mult,
            label,
            _opt_str(data.get("note")) or "",
            sample_sources=_strings(data.get("sample_sources")),
            of=_strings(data.get("of")),
            fields=data,
            **figures,
        )

    @property
    def measured(self) -> bool:
        """Whether the multiplier was measured in this run."""
        return self.label == MEASURED and self.multiplier is not None


@dataclass(frozen=True)
class MultipliersRecord:
    """The search-level multipliers of a finished run (study user attribute
    ``MULTIPLIERS_KEY``, made by ``nasflow.pipeline``'s ``search_multipliers``), typed.

    Attributes:
        parts: One per ``MULTIPLIER_PARTS`` key, in that order (a part the record lacks
            reads as ``n/a``).
        compounded: The product of the parts with a multiplier (an estimate: it assumes
            the techniques are independent); ``compounded_of`` names them.
        compounded_of: The part keys multiplied into ``compounded``.
        run_seconds: Measured wall time of the study's finished runs, summed.
        search_seconds: Measured wall time of the supernet and the search.
        without_nasflow_seconds: Training the same candidates stand-alone, from the
            one-shot part's basis (labelled as that part is), or ``None``.
        extra: Every key as stored.
    """

    KEY: ClassVar[str] = MULTIPLIERS_KEY

    parts: tuple[MultiplierPart, ...]
    compounded: MultiplierPart
    compounded_of: tuple[str, ...] = ()
    run_seconds: float | None = None
    search_seconds: float | None = None
    without_nasflow_seconds: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> MultipliersRecord:
        """From the stored record."""
        comp = MultiplierPart.from_dict("compounded", record.get("compounded"))
        e2e = _mapping(record.get("end_to_end"))
        return cls(
            parts=tuple(MultiplierPart.from_dict(k, record.get(k)) for k in MULTIPLIER_PARTS),
            compounded=comp,
            compounded_of=comp.of,
            run_seconds=_opt_float(e2e.get("seconds")),
            search_seconds=_opt_float(e2e.get("search_seconds")),
            without_nasflow_seconds=_opt_float(e2e.get("without_nasflow_seconds")),
            extra=dict(record),
        )

    def part(self, key: str) -> MultiplierPart:
        """The part ``key`` (one of ``MULTIPLIER_PARTS``).

        Raises:
            NotFoundError: Not a part's key (a ``KeyError`` too).
        """
        for p in self.parts:
            if p.key == key:
                return p
        raise NotFoundError(f"no multiplier part {key!r}; parts: {[p.key for p in self.parts]}")

    def to_dict(self) -> dict[str, Any]:
        """The record as stored."""
        return dict(self.extra)
