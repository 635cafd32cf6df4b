"""Two real processes on the PostgreSQL server share the rung schedule: every candidate is
fine-tuned and trained from scratch by one of them, and the study's process decides."""

from __future__ import annotations

import re

import optuna
import pytest

from nasflow.pipeline._schedule._ladder import SUFFIX
from nasflow.record import RungEntry, study_kept, study_rungs
from tests._procs import NasflowProcess
from tests._study_template import write_study

EXTRA = """
from nasflow.search import Rungs
study = study.replace(rungs=Rungs(finetune=(1, 2), candidates=6, reduction=2))
"""


@pytest.mark.slow
def test_a_worker_takes_rung_trials_and_none_is_trained_twice(
    tmp_path, postgres_url, unique_name
) -> None:
    study_file = write_study(tmp_path, name=unique_name, n_trials=8, finetune=0, extra=EXTRA)
    out = tmp_path / "runs"
    common = ["--storage", postgres_url, "--runs", str(out), "--no-progress"]
    procs = [
        NasflowProcess([command, str(study_file), *common], tmp_path)
        for command in ("search", "worker")
    ]
    codes = [p.finish(timeout=600) for p in procs]
    outputs = [p.text for p in procs]
    try:
        for code, text in zip(codes, outputs, strict=True):
            assert code == 0, text
        study = optuna.load_study(study_name=unique_name, storage=postgres_url)
        rungs = optuna.load_study(study_name=unique_name + SUFFIX, storage=postgres_url)
        entries = [RungEntry.find(t) for t in rungs.trials]
        queued = sorted(e.screening_trial for e in entries if e is not None)
        assert len(queued) == 6
        # Each candidate left the schedule in exactly one process (its log says so).
        done = [
            [int(n) for n in re.findall(r"(?m)^rungs: trial (\d+) done here", text)]
            for text in outputs
        ]
        assert sorted(done[0] + done[1]) == queued
        # The study's process waited for the worker and read back everything it trained.
        record = study_rungs(study)
        assert record is not None and record.steps[1].reached == 6
        assert study_kept(study) is not None
        assert record.line() in outputs[0] and "rungs (validation" not in outputs[1]
        # One export command, the deciding process's; the worker says who decides.
        assert "nasflow export" in outputs[0] and "nasflow export" not in outputs[1]
        assert "worker done: the kept model is decided by the study's own process" in outputs[1]
    finally:
        for name in (unique_name, unique_name + SUFFIX):
            optuna.delete_study(study_name=name, storage=postgres_url)
