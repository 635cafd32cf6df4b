"""The typed records: one frozen dataclass per record nasflow writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import optuna
from optuna.trial import FrozenTrial

from nasflow.errors import NotFoundError
from nasflow.record._keys import (
    ANCHOR_ATTR,
    ARCH_ATTR,
    BASELINE_KEY,
    DUPLICATE_KEY,
    EPOCHS_TRAINED_ATTR,
    FAIL_REASON_ATTR,
    PARAMS_ATTR,
    RESUMED_AT_ATTR,
    SCORE_SECONDS_ATTR,
    SCREENED_OUT_ATTR,
    SKIPPED_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
    TABLE_KEY_ATTR,
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
        anchor: A zero-cost anchor's index among the anchors.
        table_key: A tabular study's table key of the architecture.
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
    anchor: int | None = None
    table_key: str | None = None

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
            anchor=_opt_int(attrs.get(ANCHOR_ATTR)),
            table_key=_opt_str(attrs.get(TABLE_KEY_ATTR)),
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
            ANCHOR_ATTR: self.anchor,
            TABLE_KEY_ATTR: self.table_key,
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

    KEY: ClassVar[str] = BASELINE_KEY

    files: tuple[str, ...] = ()
    test_accuracies: tuple[float, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

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

    def to_dict(self) -> dict[str, Any]:
        """The record as stored."""
        return {
            "files": list(self.files),
            "test_accuracies": list(self.test_accuracies),
            "missing": list(self.missing),
        }
