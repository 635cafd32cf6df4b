"""The fine-tuning phase's records: one fine-tuned candidate (:class:`FineTuned`, also the
``record.json`` of a ready model) and the phase's study record (:class:`FineTuneResult`,
``nasflow:finetuned``), each checked field by field where it is read."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, TypeGuard

import numpy as np

from nasflow.errors import NasflowError
from nasflow.record._keys import FINETUNED_KEY

#: A candidate's ``status`` values (see :class:`FineTuned`).
STATUSES = ("running", "ready", "stopped", "diverged")


class ReadyModelError(NasflowError, ValueError):
    """A fine-tuned candidate's record (in the study or beside its weights) is malformed,
    or is not a ready model."""


def _number(v: Any) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class FineTuned:
    """One fine-tuned candidate: what it scored after each epoch and what it cost.

    Attributes:
        trial: The screening trial it came from.
        arch: Its architecture (JSON).
        supernet_accuracy: Its screening score (supernet weights, validation split).
        val_curve: Validation accuracy of the fine-tuned weights after each epoch.
        epoch_seconds: Measured training seconds of each epoch (device-synchronised clock).
        test_accuracy: Test accuracy of the final weights (reported, never used to choose).
        status: ``"ready"`` (reached the last rung), ``"stopped"`` (not promoted; its
            weights are still a ready model of fewer epochs) or ``"diverged"``.
        trained_cpu_seconds: The process's CPU-seconds into the study run when its last
            epoch ended, so when its weights were final (``None``: not recorded; a resumed
            run's clock restarts).
    """

    trial: int
    arch: str
    supernet_accuracy: float
    val_curve: tuple[float, ...] = ()
    epoch_seconds: tuple[float, ...] = ()
    test_accuracy: float | None = None
    status: str = "running"
    trained_cpu_seconds: float | None = None

    def __post_init__(self) -> None:  # (lists given by hand are kept as tuples)
        object.__setattr__(self, "val_curve", tuple(self.val_curve))
        object.__setattr__(self, "epoch_seconds", tuple(self.epoch_seconds))

    @classmethod
    def from_dict(cls, data: Any, where: str = "fine-tuning record") -> FineTuned:
        """From a stored record (``asdict`` of one; other keys are ignored), every field
        checked.

        Raises:
            ReadyModelError: Not a mapping, or a field missing or of the wrong type,
                naming it and ``where`` the record was read from.
        """
        if not isinstance(data, Mapping):
            raise ReadyModelError(f"{where} is not a JSON object: {data!r:.80}")

        def bad(key: str, what: str) -> ReadyModelError:
            return ReadyModelError(f"{where}: {key} is {data.get(key)!r:.80}, not {what}")

        trial, arch, status = data.get("trial"), data.get("arch"), data.get("status")
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            raise bad("trial", "a trial number")
        if not isinstance(arch, str):
            raise bad("arch", "an architecture's JSON")
        if not _number(data.get("supernet_accuracy")):
            raise bad("supernet_accuracy", "a number")
        curve, seconds = data.get("val_curve"), data.get("epoch_seconds")
        if not isinstance(curve, list | tuple) or not all(_number(v) for v in curve):
            raise bad("val_curve", "a list of numbers")
        if (
            not isinstance(seconds, list | tuple)
            or len(seconds) != len(curve)
            or not all(_number(v) and v >= 0 for v in seconds)
        ):
            raise bad("epoch_seconds", f"{len(curve)} non-negative numbers (one per epoch)")
        test = data.get("test_accuracy")
        if test is not None and not _number(test):
            raise bad("test_accuracy", "a number")
        if status not in STATUSES:
            raise bad("status", f"one of {list(STATUSES)}")
        cpu = data.get("trained_cpu_seconds")
        if cpu is not None and not (_number(cpu) and cpu >= 0):
            raise bad("trained_cpu_seconds", "a non-negative number")
        return cls(
            trial,
            arch,
            float(data["supernet_accuracy"]),
            tuple(float(v) for v in curve),
            tuple(float(v) for v in seconds),
            None if test is None else float(test),
            status,
            None if cpu is None else float(cpu),
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as stored (JSON: the curves as lists)."""
        out = asdict(self)
        out["val_curve"], out["epoch_seconds"] = list(self.val_curve), list(self.epoch_seconds)
        return out

    @property
    def epochs(self) -> int:
        return len(self.val_curve)

    @property
    def val_accuracy(self) -> float:
        return self.val_curve[-1] if self.val_curve else float("nan")

    @property
    def train_seconds(self) -> float:
        return float(sum(self.epoch_seconds))


@dataclass(frozen=True)
class EarlyStopping:
    """What the fine-tuning phase's successive halving saved, measured.

    Attributes:
        multiplier: ``full_seconds / seconds`` (NaN when nothing was timed).
        seconds: Measured seconds of every epoch trained.
        full_seconds: What every finalist to the last rung would have taken (each epoch
            not trained at that candidate's own measured epoch time).
    """

    multiplier: float
    seconds: float
    full_seconds: float


@dataclass(frozen=True)
class FineTuneResult:
    """The fine-tuning phase's outcome and its study record (``nasflow:finetuned``): every
    candidate, the rungs, and what the early stopping saved.

    Attributes:
        candidates: Every fine-tuned finalist, in the order they were chosen.
        full_epochs: The last rung's epochs.
        val_samples: Samples in the validation split the accuracies were measured on
            (``None``: a record written before it was kept).
        rungs: The rungs' epochs (``()``: not recorded; the record stores
            ``[full_epochs]`` then).
        early_stopping: What the early stopping saved (``None``: not recorded yet).
        seconds: Measured seconds of the whole phase (``None``: not recorded yet).
    """

    KEY: ClassVar[str] = FINETUNED_KEY

    candidates: tuple[FineTuned, ...]
    full_epochs: int
    val_samples: int | None = None
    rungs: tuple[int, ...] = ()
    early_stopping: EarlyStopping | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "candidates", tuple(self.candidates))
        object.__setattr__(self, "rungs", tuple(self.rungs))

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Any, where: str = "the fine-tuning record") -> FineTuneResult:
        """From the study's record of the phase, every candidate checked.

        Raises:
            ReadyModelError: A malformed record, naming what is wrong.
        """
        if not isinstance(record, Mapping) or not isinstance(record.get("candidates"), list):
            raise ReadyModelError(f"{where} lists no candidates: {record!r:.80}")
        rungs = record.get("rungs")
        if not (isinstance(rungs, list) and rungs and all(isinstance(r, int) for r in rungs)):
            raise ReadyModelError(f"{where}: rungs is {rungs!r:.80}, not a list of epochs")
        cands = [
            FineTuned.from_dict(c, f"{where}, candidate {i}")
            for i, c in enumerate(record["candidates"])
        ]
        n = record.get("val_samples")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ReadyModelError(f"{where}: val_samples is {n!r:.80}, not a positive count")
        early = record.get("early_stopping")
        stopping = None
        if isinstance(early, Mapping):
            values = [early.get(k) for k in ("multiplier", "seconds", "full_seconds")]
            nums = [float(v) for v in values if _number(v)]
            if len(nums) == len(values):
                stopping = EarlyStopping(*nums)
        seconds = record.get("seconds")
        return cls(
            tuple(cands),
            int(rungs[-1]),
            n,
            tuple(int(r) for r in rungs),
            stopping,
            float(seconds) if _number(seconds) else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as stored."""
        out: dict[str, Any] = {
            "candidates": [c.to_dict() for c in self.candidates],
            "rungs": list(self.rungs or (self.full_epochs,)),
            "val_samples": self.val_samples,
        }
        if self.early_stopping is not None:
            out["early_stopping"] = asdict(self.early_stopping)
        if self.seconds is not None:
            out["seconds"] = self.seconds
        return out

    @property
    def ready(self) -> list[FineTuned]:
        """Candidates with weights (every one that did not diverge)."""
        return [c for c in self.candidates if c.status != "diverged" and c.val_curve]

    def candidate(self, trial: int) -> FineTuned | None:
        """The candidate of ``trial`` (``None``: not a finalist)."""
        return next((c for c in self.candidates if c.trial == trial), None)

    def best(self) -> FineTuned | None:
        """The most accurate on validation among those trained the most epochs."""
        ready = self.ready
        if not ready:
            return None
        most = max(c.epochs for c in ready)
        return max((c for c in ready if c.epochs == most), key=lambda c: c.val_accuracy)

    def early_stopping_multiplier(self) -> tuple[float, float, float]:
        """``(multiplier, seconds spent, seconds at full rungs)``: what fine-tuning every
        finalist for every epoch would have taken (each candidate's untrained epochs at its
        own measured epoch time) over the seconds measured."""
        spent = sum(c.train_seconds for c in self.candidates)
        full = sum(
            c.train_seconds + (self.full_epochs - c.epochs) * np.mean(c.epoch_seconds)
            for c in self.candidates
            if c.epoch_seconds
        )
        return (float(full / spent) if spent > 0 else float("nan")), float(spent), float(full)

    def finished(self, seconds: float) -> FineTuneResult:
        """The result as the phase records it: with its early stopping measured and the
        phase's ``seconds``."""
        return replace(
            self, early_stopping=EarlyStopping(*self.early_stopping_multiplier()), seconds=seconds
        )
