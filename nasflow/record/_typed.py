"""The typed records: one frozen dataclass per record nasflow writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial

from nasflow.errors import NotFoundError
from nasflow.record._keys import (
    ARCH_ATTR,
    BASELINE_KEY,
    COST_TABLE_KEY,
    DUPLICATE_KEY,
    EPOCHS_TRAINED_ATTR,
    FAIL_REASON_ATTR,
    MULTIPLIERS_KEY,
    PARAMS_ATTR,
    RESUMED_AT_ATTR,
    SCORE_SECONDS_ATTR,
    SCREENED_OUT_ATTR,
    SKIPPED_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
    TRACEBACK_ATTR,
    TRAIN_COST_ATTR,
)

if TYPE_CHECKING:
    from nasflow.space import Arch

# One frozen dataclass per record nasflow writes, each with one ``from_dict`` (which reads
# every version written so far) and one ``to_dict`` (the current version, as stored).
# A new record (a fine-tuned model, a screening batch, a trust verdict) is added the same
# way: its keys as fields, its older versions migrated in ``from_dict``.


def _opt_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class TrialRecord:
    """What nasflow recorded on one trial (its user attributes), typed.

    Attributes:
        number: The trial's number (-1 when read from bare attributes).
        arch: The architecture as ``Arch.to_json()`` (``None``: not suggested yet).
        params: Parameter count.
        train_cost: Predicted training seconds.
        supernet_accuracy: Validation accuracy at the supernet's weights.
        supernet_loss: Validation cross-entropy at the supernet's weights.
        skipped: Why it was not scored (over budget).
        score_seconds: Seconds the one-shot score took.
        epochs_trained: Fine-tuning epochs trained.
        screened_out: Why screening stopped it.
        fail_reason: Why the attempt failed or was pruned.
        traceback: The failure's traceback.
        resumed_at: ``(epoch, batch)`` the fine-tuning resumed from.
        duplicate_of: The earlier trial whose score it reused.
    """

    number: int = -1
    arch: str | None = None
    params: int | None = None
    train_cost: float | None = None
    supernet_accuracy: float | None = None
    supernet_loss: float | None = None
    skipped: str | None = None
    score_seconds: float | None = None
    epochs_trained: int | None = None
    screened_out: str | None = None
    fail_reason: str | None = None
    traceback: str | None = None
    resumed_at: tuple[int, int] | None = None
    duplicate_of: int | None = None

    @classmethod
    def from_dict(cls, attrs: Mapping[str, Any], number: int = -1) -> TrialRecord:
        """From a trial's user attributes (other keys are ignored)."""
        resumed = attrs.get(RESUMED_AT_ATTR)
        return cls(
            number=number,
            arch=_opt_str(attrs.get(ARCH_ATTR)),
            params=_opt_int(attrs.get(PARAMS_ATTR)),
            train_cost=_opt_float(attrs.get(TRAIN_COST_ATTR)),
            supernet_accuracy=_opt_float(attrs.get(SUPERNET_ACCURACY_ATTR)),
            supernet_loss=_opt_float(attrs.get(SUPERNET_LOSS_ATTR)),
            skipped=_opt_str(attrs.get(SKIPPED_ATTR)),
            score_seconds=_opt_float(attrs.get(SCORE_SECONDS_ATTR)),
            epochs_trained=_opt_int(attrs.get(EPOCHS_TRAINED_ATTR)),
            screened_out=_opt_str(attrs.get(SCREENED_OUT_ATTR)),
            fail_reason=_opt_str(attrs.get(FAIL_REASON_ATTR)),
            traceback=_opt_str(attrs.get(TRACEBACK_ATTR)),
            resumed_at=(
                (int(resumed[0]), int(resumed[1]))
                if isinstance(resumed, list | tuple) and len(resumed) == 2
                else None
            ),
            duplicate_of=_opt_int(attrs.get(DUPLICATE_KEY)),
        )

    @classmethod
    def from_trial(cls, trial: FrozenTrial | optuna.Trial) -> TrialRecord:
        """From a (frozen or running) trial's user attributes."""
        return cls.from_dict(trial.user_attrs, trial.number)

    def to_dict(self) -> dict[str, Any]:
        """The user attributes, as stored (unset fields left out)."""
        values = {
            ARCH_ATTR: self.arch,
            PARAMS_ATTR: self.params,
            TRAIN_COST_ATTR: self.train_cost,
            SUPERNET_ACCURACY_ATTR: self.supernet_accuracy,
            SUPERNET_LOSS_ATTR: self.supernet_loss,
            SKIPPED_ATTR: self.skipped,
            SCORE_SECONDS_ATTR: self.score_seconds,
            EPOCHS_TRAINED_ATTR: self.epochs_trained,
            SCREENED_OUT_ATTR: self.screened_out,
            FAIL_REASON_ATTR: self.fail_reason,
            TRACEBACK_ATTR: self.traceback,
            RESUMED_AT_ATTR: list(self.resumed_at) if self.resumed_at is not None else None,
            DUPLICATE_KEY: self.duplicate_of,
        }
        return {k: v for k, v in values.items() if v is not None}

    @property
    def screened(self) -> bool:
        """Whether it was scored from the supernet (an architecture and its accuracy)."""
        return self.arch is not None and self.supernet_accuracy is not None

    def get_arch(self) -> Arch:
        """The architecture (raises ``KeyError`` when the trial records none)."""
        from nasflow.space import Arch

        if self.arch is None:
            raise NotFoundError(f"trial {self.number} records no {ARCH_ATTR!r}")
        return Arch.from_json(self.arch)


#: The current version of the ``nasflow:stack`` record (1: ``layers`` and ``end_to_end``
#: described the chosen stack only, and ``end_to_end`` was its multiplier).
STACK_SCHEMA = 2


@dataclass(frozen=True)
class StackRecord:
    """The ``nasflow:stack`` record (``stack="auto"``'s calibration), typed.

    The fields are the keys every reader uses; the record's other keys (the calibration's
    details: ``product``, ``interaction``, ``noise``, ``candidates``, ``calibration``...)
    stay in ``extra`` and come back with :meth:`to_dict`.

    Attributes:
        schema: The version written (``from_dict`` reads 1 and 2).
        stack: The ``Stack.to_dict()`` trained with (``None``: none recorded).
        chosen: The layers kept.
        chosen_multiplier: The chosen stack's measured multiplier against the baseline
            (schema 1 kept it in ``end_to_end``).
        layers: Per-layer rows (``name``, ``alone``, ``cumulative``, ``kept``); in schema 1
            the chosen layers only.
        end_to_end: Every candidate layer stacked, against the baseline (schema 2).
        skipped: Why the calibration did not run (trained with the baseline).
        origin: Where the numbers come from (``kind``: reused, calibrated, skipped).
        extra: Every other key, as stored.
    """

    schema: int = STACK_SCHEMA
    stack: dict[str, Any] | None = None
    chosen: tuple[str, ...] = ()
    chosen_multiplier: float | None = None
    layers: tuple[dict[str, Any], ...] = ()
    end_to_end: float | None = None
    skipped: str | None = None
    origin: dict[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _FIELDS = ("schema", "stack", "chosen", "chosen_multiplier", "layers", "end_to_end",
               "skipped", "origin")  # fmt: skip

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> StackRecord:
        """From a stored record of any schema (a schema 1 record is migrated: its
        ``end_to_end`` is the chosen multiplier, and no all-layers figure exists)."""
        schema = int(record.get("schema", 1))
        e2e = _opt_float(record.get("end_to_end"))
        if schema >= 2:
            mult, end_to_end = _opt_float(record.get("chosen_multiplier")), e2e
        else:
            mult, end_to_end = e2e, None
        chosen = record.get("chosen")
        stack = record.get("stack")
        origin = record.get("origin")
        skipped = record.get("skipped")
        return cls(
            schema=schema,
            stack=dict(stack) if isinstance(stack, Mapping) else None,
            chosen=tuple(str(c) for c in chosen) if isinstance(chosen, list | tuple) else (),
            chosen_multiplier=mult,
            layers=tuple(dict(x) for x in record.get("layers") or () if isinstance(x, Mapping)),
            end_to_end=end_to_end,
            skipped=str(skipped) if skipped else None,
            origin=dict(origin) if isinstance(origin, Mapping) else None,
            extra={k: v for k, v in record.items() if k not in cls._FIELDS},
        )

    @property
    def all_layers(self) -> bool:
        """Whether ``layers`` and ``end_to_end`` describe every candidate layer (schema 2),
        not only the chosen ones."""
        return self.schema >= 2

    def to_dict(self) -> dict[str, Any]:
        """The record as stored, in its own schema (``None`` fields left out)."""
        out: dict[str, Any] = {"schema": self.schema, **self.extra}
        if self.schema >= 2:
            out["chosen_multiplier"] = self.chosen_multiplier
            out["end_to_end"] = self.end_to_end
        else:
            out["end_to_end"] = self.chosen_multiplier
        values = {
            "stack": self.stack,
            "chosen": list(self.chosen),
            "layers": [dict(x) for x in self.layers],
            "skipped": self.skipped,
            "origin": self.origin,
        }
        out.update({k: v for k, v in values.items() if v is not None})
        return out


#: The identity keys of a winner's record: they must equal what a run would train for a
#: saved winner to be reused.
WINNER_IDENTITY = ("space", "fingerprint", "arch", "recipe", "seed", "stack", "data")


@dataclass(frozen=True)
class WinnerRecord:
    """A retrained winner's ``record.json`` (``RunFolder.winner(n) / "record.json"``), typed.

    Attributes:
        identity: What was trained (``WINNER_IDENTITY`` keys: space, fingerprint, arch as a
            dict, recipe, seed, stack, data).
        study: The study's name.
        trial: The trial's number.
        test_accuracy: Accuracy of the retrained weights on the test split.
        val_accuracy: The same on the validation split.
        measured_train_cost: Measured seconds of the from-scratch training.
        predicted_train_cost: The search's predicted seconds.
        params: Parameter count.
        device: Where it trained.
        extra: Every other key as stored (format, checksum of the weights...).
    """

    identity: Mapping[str, Any]
    study: str | None = None
    trial: int | None = None
    test_accuracy: float | None = None
    val_accuracy: float | None = None
    measured_train_cost: float | None = None
    predicted_train_cost: float | None = None
    params: int | None = None
    device: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _FIELDS = ("study", "trial", "test_accuracy", "val_accuracy", "measured_train_cost",
               "predicted_train_cost", "params", "device")  # fmt: skip

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> WinnerRecord:
        """From a stored ``record.json``."""
        known = set(WINNER_IDENTITY) | set(cls._FIELDS)
        return cls(
            identity={k: record[k] for k in WINNER_IDENTITY if k in record},
            study=_opt_str(record.get("study")),
            trial=_opt_int(record.get("trial")),
            test_accuracy=_opt_float(record.get("test_accuracy")),
            val_accuracy=_opt_float(record.get("val_accuracy")),
            measured_train_cost=_opt_float(record.get("measured_train_cost")),
            predicted_train_cost=_opt_float(record.get("predicted_train_cost")),
            params=_opt_int(record.get("params")),
            device=_opt_str(record.get("device")),
            extra={k: v for k, v in record.items() if k not in known},
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as written (identity keys first; ``None`` fields left out)."""
        values = {k: getattr(self, k) for k in self._FIELDS}
        return {
            **self.identity,
            **{k: v for k, v in values.items() if v is not None},
            **self.extra,
        }


#: The parts of the ``nasflow:multipliers`` record (``MULTIPLIERS_KEY``), in the order the
#: summary prints them and the report stacks them.
MULTIPLIER_PARTS = ("one_shot", "early_stopping", "gate", "stack", "ddp")
#: What a multiplier's number is: measured in this run, estimated, or neither.
MEASURED, ESTIMATE, NOT_AVAILABLE = "MEASURED", "ESTIMATE", "n/a"


@dataclass(frozen=True)
class MultiplierPart:
    """One technique's multiplier in the ``nasflow:multipliers`` record, typed.

    Attributes:
        key: The part's key (one of ``MULTIPLIER_PARTS``, or ``"compounded"``).
        multiplier: Cost without the technique / cost with it; ``None``: not measured or
            not applicable (``note`` says why).
        label: ``MEASURED``, ``ESTIMATE`` or ``NOT_AVAILABLE`` (``"n/a"``); a record
            written before parts carried a label gets ``ESTIMATE`` when it says
            ``estimate``, else ``MEASURED``, and ``n/a`` without a multiplier.
        note: What the number comes from, or why there is none.
        fields: Every key of the part as stored (the basis figures: seconds, counts...).
    """

    key: str
    multiplier: float | None
    label: str
    note: str = ""
    fields: Mapping[str, Any] = field(default_factory=dict)

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
        return cls(key, mult, label, _opt_str(data.get("note")) or "", data)

    @property
    def measured(self) -> bool:
        """Whether the multiplier was measured in this run."""
        return self.label == MEASURED and self.multiplier is not None


@dataclass(frozen=True)
class MultipliersRecord:
    """The search-level multipliers of a finished run (study user attribute
    ``MULTIPLIERS_KEY``, written by ``nasflow.search``'s ``search_multipliers``), typed.

    Attributes:
        parts: One per ``MULTIPLIER_PARTS`` key, in that order (a part the record lacks
            reads as ``n/a``).
        compounded: The product of the parts with a multiplier (an estimate: it assumes
            the techniques are independent); ``compounded_of`` names them.
        compounded_of: The part keys multiplied into ``compounded``.
        run_seconds: Measured wall time of the whole run.
        search_seconds: Measured wall time of the supernet and the search.
        without_nasflow_seconds: Training the same candidates stand-alone, from the
            one-shot part's basis (labelled as that part is), or ``None``.
        extra: Every key as stored.
    """

    parts: tuple[MultiplierPart, ...]
    compounded: MultiplierPart
    compounded_of: tuple[str, ...] = ()
    run_seconds: float | None = None
    search_seconds: float | None = None
    without_nasflow_seconds: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> MultipliersRecord:
        """From the stored record."""
        comp = MultiplierPart.from_dict("compounded", record.get("compounded"))
        e2e = record.get("end_to_end")
        e2e = e2e if isinstance(e2e, Mapping) else {}
        of = comp.fields.get("of")
        return cls(
            parts=tuple(MultiplierPart.from_dict(k, record.get(k)) for k in MULTIPLIER_PARTS),
            compounded=comp,
            compounded_of=tuple(str(k) for k in of) if isinstance(of, list | tuple) else (),
            run_seconds=_opt_float(e2e.get("seconds")),
            search_seconds=_opt_float(e2e.get("search_seconds")),
            without_nasflow_seconds=_opt_float(e2e.get("without_nasflow_seconds")),
            extra=dict(record),
        )

    @classmethod
    def from_study(cls, study: optuna.Study) -> MultipliersRecord | None:
        """The study's record, or ``None`` when it holds none (a run that did not finish,
        a tabular study)."""
        record = study.user_attrs.get(MULTIPLIERS_KEY)
        return cls.from_dict(record) if isinstance(record, Mapping) else None

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
    from, how steady the machine was, and the fit), typed.

    Attributes:
        device: The device the table describes.
        clock: What the table's seconds are (``"thread CPU time"``, ``"wall time"``...).
        source: ``"measured now"``, ``"shared table"`` or ``"stored"``.
        batch_size: The batch size the model predicts.
        calibration: The fit and its measured steps (``None``: a record written before
            studies recorded it).
        extra: Every key as stored.
    """

    device: str | None = None
    clock: str | None = None
    source: str | None = None
    batch_size: int | None = None
    calibration: CostCalibration | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> CostTableRecord:
        """From the stored record."""
        return cls(
            device=_opt_str(record.get("device")),
            clock=_opt_str(record.get("clock")),
            source=_opt_str(record.get("source")),
            batch_size=_opt_int(record.get("batch_size")),
            calibration=CostCalibration.from_dict(record.get("calibration")),
            extra=dict(record),
        )

    @classmethod
    def from_study(cls, study: optuna.Study) -> CostTableRecord | None:
        """The study's record, or ``None`` when it holds none (its cost estimator timed
        every candidate, or the study is tabular)."""
        record = study.user_attrs.get(COST_TABLE_KEY)
        return cls.from_dict(record) if isinstance(record, Mapping) else None

    def to_dict(self) -> dict[str, Any]:
        """The record as stored (the calibration as :meth:`CostCalibration.to_dict`)."""
        out = dict(self.extra)
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_dict()
        return out


@dataclass(frozen=True)
class BaselineRecord:
    """The study's table of random architectures of its space, each trained stand-alone
    with the study's recipe and scored on its test split (``StudySpec.baseline``), as the
    finished run read it (``BASELINE_KEY``), typed.

    Attributes:
        files: The tables read (file names only: no machine's paths are stored).
        test_accuracies: Test accuracy of each row of those tables.
        missing: The tables that could not be read.
    """

    files: tuple[str, ...] = ()
    test_accuracies: tuple[float, ...] = ()
    missing: tuple[str, ...] = ()

    def beaten(self, accuracy: float) -> float:
        """The share of the table's architectures whose test accuracy is below
        ``accuracy`` (ties are not beaten); 0 for an empty table."""
        if not self.test_accuracies:
            return 0.0
        return sum(a < accuracy for a in self.test_accuracies) / len(self.test_accuracies)

    @property
    def median(self) -> float | None:
        """The median test accuracy of the table (``None``: empty)."""
        import statistics

        return statistics.median(self.test_accuracies) if self.test_accuracies else None

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> BaselineRecord:
        """From the stored record (rows that are not numbers are dropped)."""

        def strings(key: str) -> tuple[str, ...]:
            values = record.get(key)
            return tuple(str(v) for v in values) if isinstance(values, list | tuple) else ()

        accs = record.get("test_accuracies")
        accs = accs if isinstance(accs, list | tuple) else ()
        return cls(
            files=strings("files"),
            test_accuracies=tuple(a for a in map(_opt_float, accs) if a is not None),
            missing=strings("missing"),
        )

    @classmethod
    def from_study(cls, study: optuna.Study) -> BaselineRecord | None:
        """The study's record, or ``None`` when it holds none (no table was given, or the
        study predates the record)."""
        record = study.user_attrs.get(BASELINE_KEY)
        return cls.from_dict(record) if isinstance(record, Mapping) else None

    def to_dict(self) -> dict[str, Any]:
        """The record as stored."""
        return {
            "files": list(self.files),
            "test_accuracies": list(self.test_accuracies),
            "missing": list(self.missing),
        }
