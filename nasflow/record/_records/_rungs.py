"""The rung schedule's records: the study's (``nasflow:rungs``, :class:`RungsRecord`) and
what each candidate's trial in the rung study holds (:func:`rung_outcome`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import optuna

from nasflow.errors import StudyRecordError
from nasflow.record._keys import (
    ANCHOR_ATTR,
    ARCH_ATTR,
    RUNG_READY_ATTR,
    RUNG_RETRAINED_ATTR,
    RUNG_SCORE_ATTR,
    RUNG_SCREENED_ATTR,
    RUNG_TOP_ATTR,
    RUNGS_KEY,
    step_key,
)
from nasflow.record._records._finetuned import FineTuned
from nasflow.record._records._phases import RetrainRecord
from nasflow.record._typed import _opt_float, _opt_int


@dataclass(frozen=True)
class RungStep:
    """One rung of the schedule and how well it ranked the next.

    Attributes:
        step: The rung's report step (0: the screening score; then cumulative fine-tuning
            epochs; the last: the top rung).
        what: The rung in words (``"screening score"``, ``"2 epochs fine-tuned"``...).
        reached: Candidates measured at this rung.
        tau: Kendall tau between this rung and the next over the candidates measured at
            both (``None``: the top rung, or fewer than 3 such candidates).
        low: The 90% bootstrap interval's low end (``None`` with ``tau``).
        high: Its high end.
    """

    step: int
    what: str
    reached: int
    tau: float | None = None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class RungsRecord:
    """The rung schedule of a finished run (``nasflow:rungs``).

    Attributes:
        top: What the top rung trains: ``"scratch"`` or ``"inherited"``.
        reduction: Each rung kept ``1 / reduction`` of the one before.
        candidates: Candidates that entered the schedule (in the study's ranking order).
        steps: Each rung, the screening score first and the top rung last.
        seconds: Measured seconds of the schedule (this process's part).
    """

    KEY: ClassVar[str] = RUNGS_KEY

    top: str
    reduction: int
    candidates: int
    steps: tuple[RungStep, ...]
    seconds: float

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Any) -> RungsRecord:
        """The stored record, checked.

        Raises:
            StudyRecordError: Not a rung record.
        """
        if not isinstance(record, Mapping) or not isinstance(record.get("steps"), list):
            raise StudyRecordError(f"{RUNGS_KEY}: {record!r:.80} is not a rung record")
        steps = []
        for s in record["steps"]:
            step, reached = _opt_int(s.get("step")), _opt_int(s.get("reached"))
            if step is None or reached is None:
                raise StudyRecordError(f"{RUNGS_KEY}: a rung without step or count: {s!r:.80}")
            steps.append(
                RungStep(
                    step,
                    str(s.get("what", "")),
                    reached,
                    _opt_float(s.get("tau")),
                    _opt_float(s.get("low")),
                    _opt_float(s.get("high")),
                )
            )
        return cls(
            str(record.get("top", "scratch")),
            _opt_int(record.get("reduction")) or 2,
            _opt_int(record.get("candidates")) or 0,
            tuple(steps),
            _opt_float(record.get("seconds")) or 0.0,
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as stored."""
        return {
            "top": self.top,
            "reduction": self.reduction,
            "candidates": self.candidates,
            "steps": [s.__dict__ for s in self.steps],
            "seconds": self.seconds,
        }

    def line(self) -> str:
        """The schedule in one line: how many reached each rung, and each rung's tau with
        the next (the trust verdict read from the schedule)."""
        parts = []
        for s in self.steps:
            tau = "" if s.tau is None else f" (tau {s.tau:+.2f} [{s.low:+.2f}, {s.high:+.2f}])"
            parts.append(f"{s.reached} {s.what}{tau}")
        head = f"rungs (validation accuracy at each; keep 1/{self.reduction}): "
        return head + " -> ".join(parts)


@dataclass(frozen=True)
class RungEntry:
    """A candidate's trial in the rung study (``NAME:rungs``), as queued.

    Attributes:
        arch: Its architecture (``Arch.to_json()``).
        top: The top rung's report step.
        anchor: A zero-cost anchor (trained at the top rung only).
        score: Its screening score (rung 0; ``None``: an anchor).
        screening_trial: Its trial in the screening study (``None``: an anchor).
    """

    arch: str
    top: int
    anchor: bool = False
    score: float | None = None
    screening_trial: int | None = None

    def to_attrs(self) -> dict[str, Any]:
        """The trial user attributes it is queued with."""
        attrs: dict[str, Any] = {ARCH_ATTR: self.arch, ANCHOR_ATTR: self.anchor}
        attrs[RUNG_TOP_ATTR] = self.top
        if self.score is not None:
            attrs[RUNG_SCORE_ATTR] = float(self.score)
        if self.screening_trial is not None:
            attrs[RUNG_SCREENED_ATTR] = int(self.screening_trial)
        return attrs

    @classmethod
    def from_trial(cls, trial: optuna.trial.FrozenTrial | optuna.Trial) -> RungEntry:
        """The entry a rung-study trial was queued with.

        Raises:
            StudyRecordError: A trial without an architecture (not queued by nasflow).
        """
        entry = cls.find(trial)
        if entry is None:
            raise StudyRecordError(f"rung trial {trial.number} has no architecture")
        return entry

    @classmethod
    def find(cls, trial: optuna.trial.FrozenTrial | optuna.Trial) -> RungEntry | None:
        """The entry a rung-study trial was queued with, or ``None`` for a trial Optuna
        created when a worker asked for one as the last waiting trial was taken by
        another (it is pruned at once and holds nothing)."""
        attrs = trial.user_attrs
        arch = attrs.get(ARCH_ATTR)
        if not isinstance(arch, str):
            return None
        return cls(
            arch,
            _opt_int(attrs.get(RUNG_TOP_ATTR)) or 1,
            bool(attrs.get(ANCHOR_ATTR)),
            _opt_float(attrs.get(RUNG_SCORE_ATTR)),
            _opt_int(attrs.get(RUNG_SCREENED_ATTR)),
        )


def rung_value(trial: optuna.trial.FrozenTrial, step: int) -> float | None:
    """The first objective a rung-study trial reported at ``step`` (0: its screening
    score), or ``None`` where it reached no such rung."""
    if step == 0:
        entry = RungEntry.find(trial)
        return None if entry is None else entry.score
    v = trial.intermediate_values.get(step)
    if v is not None:
        return float(v)
    vector = trial.user_attrs.get(step_key(step))  # several objectives
    return _opt_float(vector[0]) if isinstance(vector, list) and vector else None


def study_rungs(study: optuna.Study) -> RungsRecord | None:
    """The rung schedule's record, or ``None`` where the study ran none."""
    stored = study.user_attrs.get(RUNGS_KEY)
    return None if stored is None else RungsRecord.from_dict(stored)


def rung_outcome(
    trial: optuna.trial.FrozenTrial,
) -> tuple[FineTuned | None, RetrainRecord | None]:
    """What a rung-study trial holds: its fine-tuned record and its top rung's training
    from scratch (each ``None`` where it has none)."""
    ready = trial.user_attrs.get(RUNG_READY_ATTR)
    retrained = trial.user_attrs.get(RUNG_RETRAINED_ATTR)
    tuned = FineTuned.from_dict(ready, f"rung trial {trial.number}") if ready else None
    winner = None
    if isinstance(retrained, Mapping) and _opt_int(retrained.get("number")) is not None:
        winner = RetrainRecord.from_dict(retrained, int(retrained["number"]))
    return tuned, winner
