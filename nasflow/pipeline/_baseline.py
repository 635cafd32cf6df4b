"""What a finished study is compared with and how it screened: the baseline tables of
random architectures (``StudySpec.baseline``) and the screening record."""

from __future__ import annotations

import os
from pathlib import Path

import optuna

from nasflow.record import BaselineRecord, ScreeningRecord, TrialRecord


def screening_record(study: optuna.Study) -> ScreeningRecord | None:
    """How many distinct candidates were scored from the supernet and the median time of one score
    (path extraction, BN recalibration and validation; cost prediction excluded)."""
    records = (TrialRecord.from_trial(t) for t in study.get_trials(deepcopy=False))
    # A repeat reuses its first score (``duplicate_of``) and its score_seconds: once each.
    times = [
        r.score_seconds for r in records if r.score_seconds is not None and r.duplicate_of is None
    ]
    if not times:
        return None
    times.sort()
    mid = len(times) // 2
    median = times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2
    return ScreeningRecord(len(times), 1000 * median)


def read_baseline(
    paths: tuple[str | os.PathLike, ...],
) -> tuple[list[float], list[float], list[str]]:
    """Test accuracies and measured stand-alone training seconds (column ``train_seconds``,
    where present) of the rows of a study's baseline tables, and the unreadable files."""
    import csv

    accs: list[float] = []
    secs: list[float] = []
    missing: list[str] = []
    for path in paths:
        try:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
            accs += [float(r["test_accuracy"]) for r in rows]
            secs += [float(r["train_seconds"]) for r in rows if r.get("train_seconds")]
        except (OSError, KeyError, ValueError):
            missing.append(str(Path(path).name))
    return accs, secs, missing


def baseline_record(paths: tuple[str | os.PathLike, ...]) -> BaselineRecord:
    """The study's ``BASELINE_KEY`` record: the test accuracies of its baseline tables
    (``read_baseline``), with the tables' file names."""
    accs, _, missing = read_baseline(paths)
    files = tuple(Path(p).name for p in paths if Path(p).name not in missing)
    return BaselineRecord(files, tuple(accs), tuple(missing))
