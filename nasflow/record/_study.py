"""A study's records, read and written through their types: one reader per record
(``study_<record>(study)``: the typed record, ``None`` where the study holds none, checked
once: a malformed record raises, naming what is wrong) and one writer for all
(:func:`write_record`). Nothing outside ``nasflow.record`` reads a study's user
attributes (a test guards it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from nasflow.errors import StudyRecordError
from nasflow.record._keys import RETRAIN_PREFIX, SEARCH_TRIALS_KEY, SECONDS_KEY
from nasflow.record._records._finetuned import FineTuneResult
from nasflow.record._records._measured import CostTableRecord, MultipliersRecord, StackRecord
from nasflow.record._records._phases import (
    AnchorsRecord,
    KeptRecord,
    ReproducibilityRecord,
    RetrainRecord,
    ScreeningRecord,
    SupernetRecord,
    TrustRecord,
)
from nasflow.record._records._ranker import RankerRecord
from nasflow.record._typed import BaselineRecord

if TYPE_CHECKING:
    import optuna


class StudyRecord(Protocol):
    """A typed study record: its attribute's key and its stored form."""

    @property
    def key(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


def write_record(study: optuna.Study, record: StudyRecord) -> None:
    """Store ``record`` in ``study`` under its key (``record.key``), as ``to_dict`` gives it."""
    study.set_user_attr(record.key, record.to_dict())


def _read(study: optuna.Study, cls: Any) -> Any:
    stored = study.user_attrs.get(cls.KEY)
    return None if stored is None else cls.from_dict(stored)


def _read_mapping(study: optuna.Study, cls: Any) -> Any:
    stored = study.user_attrs.get(cls.KEY)
    if stored is None:
        return None
    if not isinstance(stored, Mapping):
        raise StudyRecordError(f"{cls.KEY} must be a JSON object, got {stored!r:.80}")
    return cls.from_dict(stored)


def study_stack(study: optuna.Study) -> StackRecord | None:
    """The speedup stack's record (``stack="auto"``'s calibration), or ``None``."""
    return _read(study, StackRecord)


def study_supernet(study: optuna.Study) -> SupernetRecord | None:
    """Phase 1's record of the supernet, or ``None``."""
    return _read(study, SupernetRecord)


def study_screening(study: optuna.Study) -> ScreeningRecord | None:
    """The screening's record, or ``None`` (written when a run finishes)."""
    return _read(study, ScreeningRecord)


def study_finetuned(study: optuna.Study, where: str | None = None) -> FineTuneResult | None:
    """The fine-tuning phase's record, or ``None`` where the phase did not run.

    Raises:
        ReadyModelError: A malformed record (``where`` names it in the message).
    """
    stored = study.user_attrs.get(FineTuneResult.KEY)
    if stored is None:
        return None
    return FineTuneResult.from_dict(stored, where or "the fine-tuning record")


def study_anchors(study: optuna.Study) -> AnchorsRecord | None:
    """Phase 0's record of the zero-cost anchors, or ``None``."""
    return _read(study, AnchorsRecord)


def study_trust(study: optuna.Study) -> TrustRecord | None:
    """The trust probe's record, or ``None``."""
    return _read(study, TrustRecord)


def study_ranker(study: optuna.Study) -> RankerRecord | None:
    """The record of the ranker that chose the finalists, or ``None``."""
    return _read(study, RankerRecord)


def study_retrains(study: optuna.Study) -> dict[int, RetrainRecord]:
    """Phase 3's records, by trial number (``nasflow:retrain:N``), in trial order."""
    out: dict[int, RetrainRecord] = {}
    for key, record in study.user_attrs.items():
        suffix = key[len(RETRAIN_PREFIX) :]
        if key.startswith(RETRAIN_PREFIX) and suffix.isdigit() and isinstance(record, Mapping):
            out[int(suffix)] = RetrainRecord.from_dict(record, int(suffix))
    return dict(sorted(out.items()))


def study_kept(study: optuna.Study) -> KeptRecord | None:
    """The study's record of the model it keeps, or ``None`` where it has none (nothing
    was retrained, or the study predates the record). A record this version cannot read
    is ignored like a missing one: the callers fall back to the most accurate Pareto
    trial, as before the record existed."""
    try:
        return _read(study, KeptRecord)
    except StudyRecordError:
        return None


def study_multipliers(study: optuna.Study) -> MultipliersRecord | None:
    """The search-level multipliers, or ``None`` (a run that did not finish, a tabular
    study)."""
    return _read_mapping(study, MultipliersRecord)


def study_cost_table(study: optuna.Study) -> CostTableRecord | None:
    """The cost table's record, or ``None`` (its cost estimator timed every candidate, or
    the study is tabular)."""
    return _read_mapping(study, CostTableRecord)


def study_baseline(study: optuna.Study) -> BaselineRecord | None:
    """The baseline table's record, or ``None`` (no table was given, or the study
    predates the record)."""
    return _read_mapping(study, BaselineRecord)


def study_reproducibility(study: optuna.Study) -> ReproducibilityRecord | None:
    """What a rerun reproduces, or ``None`` (written when a run finishes)."""
    return _read(study, ReproducibilityRecord)


def study_seconds(study: optuna.Study) -> dict[str, float]:
    """The seconds each phase took, by phase, summed over the study's finished runs
    (``{}``: none finished): what the study cost, not what its last run did (a finished
    study run again trains nothing and adds seconds only)."""
    stored = study.user_attrs.get(SECONDS_KEY)
    if not isinstance(stored, Mapping):
        return {}
    return {
        str(k): float(v)
        for k, v in stored.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def write_seconds(study: optuna.Study, seconds: Mapping[str, float]) -> None:
    """Add the seconds each phase of a finished run took to the study's record (a phase
    this run did not reach adds nothing). Overwriting would let a run that only reads a
    finished study replace the supernet's and the screening's cost with its own ~0 s,
    and every ratio built on them (the one-shot multiplier, the regime) with nonsense."""
    total = study_seconds(study)
    for phase, secs in seconds.items():
        total[phase] = total.get(phase, 0.0) + float(secs)
    if "total" in total:  # (last, as a run's own record has it)
        total["total"] = total.pop("total")
    study.set_user_attr(SECONDS_KEY, total)


def study_search_trials(study: optuna.Study) -> set[int]:
    """The trials scored by the study's own finished ``nasflow search`` runs (not by a
    ``nasflow worker``, nor by a run stopped before it finished: those are unknown)."""
    stored = study.user_attrs.get(SEARCH_TRIALS_KEY)
    if not isinstance(stored, list):
        return set()
    out: set[int] = set()
    for pair in stored:
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) for v in pair):
            out.update(range(pair[0], pair[1] + 1))
    return out


def write_search_trials(study: optuna.Study, numbers: Iterable[int]) -> None:
    """Add the trials a finished ``nasflow search`` run scored to the study's record, kept
    as ranges (a 10,000-trial screening is one pair)."""
    ranges: list[list[int]] = []
    for n in sorted(study_search_trials(study) | set(numbers)):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    study.set_user_attr(SEARCH_TRIALS_KEY, ranges)
