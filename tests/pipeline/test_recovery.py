"""Start-up sweeps of trials left RUNNING by dead processes, on real storages."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasflow._logging import lines_to
from nasflow.pipeline import StudyRunner
from nasflow.pipeline._recovery import heartbeat_settings, sweep_zombies
from nasflow.search import load_study_file
from nasflow.storage import open_storage, resolve_storage
from tests._study_template import write_study

REPO = Path(__file__).resolve().parents[2]


def _die_holding_trials(url: str, name: str, heartbeat: bool) -> None:
    """A real process asks for a trial (RUNNING), optionally sends one heartbeat, and is
    killed with SIGKILL before it can finish or report anything."""
    script = textwrap.dedent(
        f"""
        import os, signal
        import optuna
        from nasflow.storage import open_storage, resolve_storage
        storage = open_storage(resolve_storage({url!r}, "unused"), 1, 2)
        study = optuna.load_study(study_name={name!r}, storage=storage)
        trial = study.ask()
        trial.suggest_float("x", 0.0, 1.0)
        if {heartbeat!r}:
            study._storage.record_heartbeat(trial._trial_id)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, timeout=120)
    assert proc.returncode == -9


def _running(study: optuna.Study) -> list[int]:
    return [t.number for t in study.get_trials(states=(TrialState.RUNNING,))]


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
def test_a_trial_is_retried_at_most_once_on_sqlite(tmp_path) -> None:
    spec = resolve_storage(None, tmp_path / "study.db")
    study = optuna.create_study(study_name="s", storage=open_storage(spec))
    study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})  # its worker "died"
    logs: list[str] = []
    with lines_to(logs.append):  # (the nasflow logger's lines)
        assert sweep_zombies(study, "sqlite", 2) == [0]
    assert "failed it, retrying it once" in logs[0]
    retry = study.ask()  # the queued retry, with the same parameter
    assert retry.number == 1 and retry.params == study.trials[0].params
    with lines_to(logs.append):
        assert sweep_zombies(study, "sqlite", 2) == [1]  # its worker died too
    assert "not retrying it again" in logs[1]
    states = [t.state for t in study.trials]
    assert states == [TrialState.FAIL, TrialState.FAIL]  # no third attempt was queued


@pytest.mark.slow
def test_postgresql_start_up_fails_trials_of_workers_that_died(
    tmp_path, postgres_url, unique_name
) -> None:
    """One trial never sent a heartbeat (its worker died right after ``ask``), one went
    silent; both are failed and retried once by the start-up of the next worker."""
    spec = load_study_file(write_study(tmp_path, name=unique_name, n_trials=2, finetune=0))
    runner = StudyRunner(spec, postgres_url, tmp_path / "runs", log=lambda _: None)
    runner.open_study(worker=True)  # creates the study with nasflow's identity
    runner.close()
    for heartbeat in (False, True):
        _die_holding_trials(postgres_url, unique_name, heartbeat)
    storage = open_storage(resolve_storage(postgres_url, "unused"), 1, 2)
    study = optuna.load_study(study_name=unique_name, storage=storage)
    assert _running(study) == [0, 1]
    logs: list[str] = []
    patient = StudyRunner(spec, postgres_url, tmp_path / "runs", log=logs.append, grace_period=600)
    patient.open_study(worker=True)  # within its grace period the workers may be alive
    assert _running(study) == [0, 1] and not logs
    time.sleep(2.5)
    t0 = time.perf_counter()
    late = StudyRunner(
        spec,
        postgres_url,
        tmp_path / "runs",
        log=logs.append,
        heartbeat_interval=1,
        grace_period=2,
    )
    late.open_study(worker=True)
    swept = time.perf_counter() - t0
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.FAIL] * 2 + [TrialState.WAITING] * 2
    assert [t.system_attrs["failed_trial"] for t in trials[2:]] == [0, 1]
    assert [t.params for t in trials[2:]] == [t.params for t in trials[:2]]
    assert sum("left running by a dead worker" in m for m in logs) == 2
    print(f"\n[postgresql start-up sweep] 2 dead trials failed and requeued in {swept:.2f}s")
    optuna.delete_study(study_name=unique_name, storage=storage)


def test_heartbeat_settings_are_validated(monkeypatch) -> None:
    monkeypatch.setenv("NASFLOW_HEARTBEAT_INTERVAL", "3")
    monkeypatch.setenv("NASFLOW_GRACE_PERIOD", "7")
    assert heartbeat_settings() == (3, 7)
    assert heartbeat_settings(1, 2) == (1, 2)
    with pytest.raises(ValueError, match="'soon'"):
        heartbeat_settings("soon", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="0"):
        heartbeat_settings(0, 2)
    with pytest.raises(ValueError, match="grace period 2s must be longer"):
        heartbeat_settings(5, 2)


def test_screened_trials_found_say_who_scored_them(tmp_path) -> None:
    import threading
    import time

    from nasflow.pipeline._context import RunContext
    from nasflow.pipeline._recovery import kept_words
    from nasflow.record import RunFolder
    from nasflow.search import load_study_file
    from nasflow.storage import resolve_storage
    from tests._study_template import write_study

    spec = load_study_file(write_study(tmp_path))
    study = optuna.create_study()
    for v in (0.5, 0.6):
        study.add_trial(optuna.trial.create_trial(value=v))
    storage = resolve_storage(None, tmp_path / "study.db")

    def ctx(started: float) -> RunContext:
        return RunContext(
            spec, RunFolder(tmp_path), storage, study, "cpu", False,
            threading.Event(), started=started,
        )  # fmt: skip

    # Finished before this process started: an earlier run's, resumed.
    assert kept_words(ctx(time.perf_counter() + 5), 2, "trials") == (
        "resuming: 2 trials kept from an earlier run"
    )
    # Finished since it started: another worker's, in a fresh multi-worker study.
    assert kept_words(ctx(time.perf_counter() - 60), 2, "trials") == (
        "2 trials already scored by other workers"
    )
