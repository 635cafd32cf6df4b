"""Real processes killed and stopped mid-trial: nothing completed is lost, the trial in
flight is retried once (killed) or resumed (stopped) from its fine-tuning checkpoint.

Each test prints its measured recovery time (``-s`` shows it); nothing asserts on time.
"""

from __future__ import annotations

import datetime
import fcntl
import signal
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.train import list_checkpoints
from tests._procs import NasflowProcess
from tests._study_template import write_study

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
# No pruner (a trial is never cut between the log line the test waits for and the kill),
# and 16 fine-tuning steps per epoch, so a trial is mid-epoch for a while.
FINETUNE_EPOCHS = 3
EXTRA = (
    "study = study.replace(pruner='none', "
    f"finetune=TrainConfig(epochs={FINETUNE_EPOCHS}, batch_size=25))"
)


def _study(storage: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=storage)


def _snapshot(study: optuna.Study) -> dict[int, tuple]:
    return {t.number: (t.params, t.values, t.state) for t in study.trials if t.state in FINISHED}


def _retries_of(study: optuna.Study, number: int) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.trials if t.system_attrs.get("failed_trial") == number]


@pytest.mark.slow
def test_sigkill_mid_finetune_on_sqlite_is_swept_retried_once_and_resumed(tmp_path) -> None:
    n, name = 4, "killed"
    study_file = write_study(
        tmp_path, name=name, n_trials=n, finetune=FINETUNE_EPOCHS, extra=EXTRA
    )
    args = ["search", str(study_file), "--no-retrain", "--no-progress", "--runs", "runs"]
    storage = f"sqlite:///{tmp_path / 'runs' / name / 'study.db'}"

    first = NasflowProcess(args, tmp_path)
    first.wait_for(r"^trial 0 complete")
    victim = int(first.wait_for(r"^trial (\d+): fine-tuned epoch 1/").group(1))
    first.kill()
    killed_at = time.perf_counter()
    study = _study(storage, name)
    assert study.trials[victim].state == TrialState.RUNNING  # what SIGKILL leaves behind
    before = _snapshot(study)
    assert 0 in before
    folder = tmp_path / "runs" / name / "finetune" / f"trial-{victim}"
    assert (folder / "epoch-1.pt").is_file()

    second = NasflowProcess(args, tmp_path)
    assert second.finish() == 0, second.text
    recovered = time.perf_counter() - killed_at
    assert f"trial {victim} was left running by a dead worker: failed it, retrying it once" in (
        second.text
    )
    assert f"resumed fine-tuning from trial-{victim} at epoch 1, batch 0" in second.text
    study = _study(storage, name)
    trials = study.trials
    assert trials[victim].state == TrialState.FAIL
    [retry] = _retries_of(study, victim)
    assert retry.params == trials[victim].params and retry.state == TrialState.COMPLETE
    assert retry.user_attrs["resumed_at"] == [1, 0]  # epoch 1 was not trained again
    assert retry.system_attrs["retry_history"] == [victim]
    after = _snapshot(study)
    assert all(after[k] == v for k, v in before.items())  # completed trials unchanged
    assert len(after) == n and not any(t.state == TrialState.RUNNING for t in trials)
    assert not folder.exists()  # the finished retry removed its checkpoints
    print(f"\n[sqlite kill -9] restart to study finished: {recovered:.1f}s (1 epoch kept)")


@pytest.mark.slow
def test_sigkill_of_one_of_two_postgresql_workers(tmp_path, postgres_url, unique_name) -> None:
    # Enough trials that the surviving worker still starts new ones after the grace period
    # (stale trials are swept when a live worker starts its next trial). The tiny space
    # repeats architectures, and a repeat is answered at once from the earlier score
    # (``duplicate_of``), so 16 trials could all finish inside the grace period.
    n = 32
    study_file = write_study(
        tmp_path, name=unique_name, n_trials=n, finetune=FINETUNE_EPOCHS, extra=EXTRA
    )
    common = ["--storage", postgres_url, "--runs", "runs", "--no-progress"]
    env = {"NASFLOW_HEARTBEAT_INTERVAL": "1", "NASFLOW_GRACE_PERIOD": "2"}
    main = NasflowProcess(["search", str(study_file), "--no-retrain", *common], tmp_path, env)
    other = NasflowProcess(["worker", str(study_file), *common], tmp_path, env)
    try:
        other.wait_for(r"^trial \d+ complete")
        victim = int(other.wait_for(r"^trial (\d+): fine-tuned epoch 1/").group(1))
        other.kill()
        killed_at, killed_clock = time.perf_counter(), datetime.datetime.now()
        study = _study(postgres_url, unique_name)
        # RUNNING, or already FAIL where the main worker's sweep found its heartbeat late
        # (a loaded machine, a 2 s grace period) while it still trained: either way the
        # retry must resume from the checkpoint (test_swept_trial.py).
        assert study.trials[victim].state in (TrialState.RUNNING, TrialState.FAIL)
        before = _snapshot(study)
        assert main.finish() == 0, main.text
        study = _study(postgres_url, unique_name)
        trials = study.trials
        assert trials[victim].state == TrialState.FAIL
        [retry] = _retries_of(study, victim)
        assert retry.params == trials[victim].params and retry.state == TrialState.COMPLETE
        assert retry.user_attrs["resumed_at"][0] >= 1  # resumed from its checkpoint
        assert f"resumed fine-tuning from trial-{victim}" in main.text
        after = _snapshot(study)
        assert all(after[k] == v for k, v in before.items())
        assert len(after) == n and not any(t.state == TrialState.RUNNING for t in trials)
        numbers = sorted(t.number for t in trials)
        assert numbers == list(range(len(trials)))
        restarted = (retry.datetime_start - killed_clock).total_seconds()
        done = (retry.datetime_complete - retry.datetime_start).total_seconds()
        print(
            f"\n[postgresql kill -9, grace 2s] kill -> retry started {restarted:.1f}s, retry ran "
            f"{done:.1f}s; kill -> study finished {time.perf_counter() - killed_at:.1f}s"
        )
    finally:
        other.kill()
        main.kill()
        optuna.delete_study(study_name=unique_name, storage=postgres_url)


@pytest.mark.slow
def test_graceful_stop_checkpoints_requeues_and_a_second_signal_exits_at_once(
    tmp_path: Path,
) -> None:
    n, name = 3, "stopped"
    study_file = write_study(
        tmp_path, name=name, n_trials=n, finetune=FINETUNE_EPOCHS, extra=EXTRA
    )
    args = ["search", str(study_file), "--no-retrain", "--no-progress", "--runs", "runs"]
    storage = f"sqlite:///{tmp_path / 'runs' / name / 'study.db'}"
    out = tmp_path / "runs" / name

    # 1. SIGTERM mid-epoch: finish the step, checkpoint, queue the trial, exit 143.
    first = NasflowProcess(args, tmp_path)
    victim = int(first.wait_for(r"^trial (\d+): fine-tuned epoch 1/").group(1))
    first.signal(signal.SIGTERM)
    t0 = time.perf_counter()
    assert first.finish() == 128 + signal.SIGTERM, first.text
    stop_seconds = time.perf_counter() - t0
    assert "SIGTERM: finishing the current step" in first.text
    assert "run the same command again to resume" in first.text
    study = _study(storage, name)
    stopped = study.trials[victim]
    assert stopped.state == TrialState.FAIL  # not left RUNNING
    assert stopped.user_attrs["fail_reason"] == "stopped on request; queued to be resumed"
    [queued] = _retries_of(study, victim)
    assert queued.state == TrialState.WAITING and queued.params == stopped.params
    assert queued.system_attrs["retry_history"] == []  # a stop does not spend the retry
    # Stopped after a step of epoch 2, or at the end of epoch 1 if the signal came first.
    [(at, _), *_] = list_checkpoints(out / "finetune" / f"trial-{victim}")
    assert at.epoch == 1, at
    batch = at.batch

    # 2. Two signals while blocked (waiting for the supernet lock): the second exits at once.
    with open(out / "supernet.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        blocked = NasflowProcess(args, tmp_path)
        blocked.wait_for(r"^study 'stopped' in")
        time.sleep(1.0)  # now it waits for the supernet lock
        blocked.signal(signal.SIGINT)
        blocked.wait_for(r"SIGINT: finishing the current step")
        blocked.signal(signal.SIGINT)
        t1 = time.perf_counter()
        assert blocked.finish(timeout=30) == 128 + signal.SIGINT, blocked.text
        second_seconds = time.perf_counter() - t1
        assert "second signal (SIGINT): exiting now" in blocked.text

    # 3. The next run resumes the stopped trial mid-epoch and finishes the study.
    third = NasflowProcess(args, tmp_path)
    assert third.finish() == 0, third.text
    assert f"resumed fine-tuning from trial-{victim} at epoch 1, batch {batch}" in third.text
    study = _study(storage, name)
    [resumed] = _retries_of(study, victim)
    assert resumed.state == TrialState.COMPLETE and resumed.params == stopped.params
    assert resumed.user_attrs["resumed_at"] == [1, batch]
    assert len(_snapshot(study)) == n
    assert not any(t.state == TrialState.RUNNING for t in study.trials)
    print(
        f"\n[graceful stop] SIGTERM -> exit {stop_seconds:.2f}s (lost 0 steps); "
        f"second SIGINT -> exit {second_seconds:.2f}s"
    )
