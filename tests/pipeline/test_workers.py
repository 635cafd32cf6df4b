"""Several real worker processes on the PostgreSQL server share one study."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests._study_template import write_study

REPO = Path(__file__).resolve().parents[2]


def _nasflow(*args: str) -> list[str]:
    return [sys.executable, "-m", "nasflow.cli", *args]


@pytest.mark.slow
def test_three_workers_on_postgresql_share_one_study(tmp_path, postgres_url, unique_name) -> None:
    n = 9
    study_file = write_study(tmp_path, name=unique_name, n_trials=n, finetune=1)
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    common = ["--storage", postgres_url, "--runs", str(out), "--no-progress"]
    procs = [
        subprocess.Popen(
            _nasflow("search", str(study_file), "--no-retrain", *common)
            if i == 0
            else _nasflow("worker", str(study_file), *common),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        for i in range(3)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    try:
        for p, text in zip(procs, outputs, strict=True):
            assert p.returncode == 0, text
        study = optuna.load_study(study_name=unique_name, storage=postgres_url)
        trials = study.get_trials()
        numbers = sorted(t.number for t in trials)
        assert numbers == list(range(len(trials)))  # unique and gap-free
        finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
        assert n <= len(finished) <= n + 2  # at most one trial in flight per other worker
        assert all(t.state != TrialState.RUNNING for t in trials)
        # No trial was run by two processes: each process logs the trials it ran.
        ran = []
        for text in outputs:
            ran.extend(int(v) for v in re.findall(r"(?m)^trial (\d+) [a-z]+\b", text))
        assert sorted(ran) == numbers
        # Only one process trained the supernet; the others loaded its checkpoint.
        assert sorted(p.name for p in (out / unique_name / "supernet").iterdir()) == ["epoch-1.pt"]
        # ... and said so (not "resumed", which is what an earlier run's checkpoint gets).
        loaded = "supernet: loaded the one another process trained (1 epoch)"
        assert sum(loaded in text for text in outputs) == 2
        assert not any("resumed supernet training" in text for text in outputs)
    finally:
        optuna.delete_study(study_name=unique_name, storage=postgres_url)


@pytest.mark.slow
def test_a_worker_started_after_the_supernet_finished_says_it_loaded_it(
    tmp_path, postgres_url, unique_name
) -> None:
    """A worker that joins once another process has finished the supernet did not resume
    anything: it says it loaded the one another process trained (it said "resumed
    supernet training" where it arrived after the last checkpoint was written)."""
    study_file = write_study(tmp_path, name=unique_name, n_trials=4, finetune=1)
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    common = ["--storage", postgres_url, "--runs", str(out), "--no-progress"]
    try:
        for command in ("search", "worker"):
            args = [command, str(study_file), *common]
            done = subprocess.run(
                _nasflow(*args, *(["--no-retrain"] if command == "search" else [])),
                capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
        text = done.stdout + done.stderr  # the worker's, started after the search ended
        assert "supernet: loaded the one another process trained (1 epoch)" in text, text
        assert "resumed supernet training" not in text
    finally:
        optuna.delete_study(study_name=unique_name, storage=postgres_url)
