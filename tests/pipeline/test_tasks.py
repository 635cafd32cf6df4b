"""The trainings after screening as tasks: in order in one process, or shared by every
process of a study through its storage (real SQLite and PostgreSQL, a real second
process)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.errors import StateError
from nasflow.pipeline._schedule._tasks import (
    MAX_TRIES,
    SUFFIX,
    LocalTasks,
    SharedTasks,
    Task,
    process_name,
)
from nasflow.record import TASK_ATTR, task_key

REPO = Path(__file__).resolve().parents[2]

# A worker process: serves the study's "square" tasks, marking each it runs.
WORKER = r"""
import os, sys, time
from pathlib import Path
import optuna
from nasflow.pipeline._schedule._tasks import SharedTasks

url, name, folder, marks = sys.argv[1:5]
study = optuna.load_study(study_name=name, storage=url)
tasks = SharedTasks(study, Path(folder), lambda: False)


def square(args):
    (Path(marks) / f"{args['i']}-{os.getpid()}").touch()
    time.sleep(0.2)
    return {"square": args["i"] ** 2}


print(f"served {tasks.serve({'square': square}, idle_limit=120)}")
"""


def _recorded_square():
    """A "square" task's handler, and the list of the ``i`` it was run with."""
    calls: list[int] = []

    def square(args):
        calls.append(args["i"])
        return {"square": args["i"] ** 2}

    return calls, square


def _study(tmp_path: Path) -> optuna.Study:
    return optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")


def test_local_tasks_run_in_order_and_tell_each_result_as_it_comes() -> None:
    seen: list[int] = []
    told: list[tuple[int, int]] = []

    def square(args):
        assert len(told) == len(seen)  # (the one before was told before this one ran)
        seen.append(args["i"])
        return {"square": args["i"] ** 2}

    tasks = [Task("square", {"i": i}) for i in (3, 1, 2)]
    out = LocalTasks().run(tasks, {"square": square}, lambda i, r: told.append((i, r["square"])))
    assert [r["square"] for r in out] == [9, 1, 4] and seen == [3, 1, 2]
    assert told == [(0, 9), (1, 1), (2, 4)]
    assert {r["by"] for r in out} == {process_name()}


def test_shared_tasks_alone_run_every_task_once_in_order(tmp_path) -> None:
    study = _study(tmp_path)
    shared = SharedTasks(study, tmp_path / "runs", lambda: False)
    shared.start()
    calls, square = _recorded_square()

    out = shared.run([Task("square", {"i": i}) for i in range(5)], {"square": square})
    assert [r["square"] for r in out] == [0, 1, 4, 9, 16] and calls == [0, 1, 2, 3, 4]
    # Asked again in the same run (a phase resumed in-process): nothing trains twice.
    again = shared.run([Task("square", {"i": 2})], {"square": square})
    assert again[0]["square"] == 4 and calls == [0, 1, 2, 3, 4]
    assert dict(shared.done) == {"square": 5}


def test_a_task_an_earlier_run_left_waiting_is_dropped_not_run(tmp_path) -> None:
    study = _study(tmp_path)
    tasks_study = optuna.create_study(study_name="s" + SUFFIX, storage=study._storage)
    stale = Task("square", {"i": 7}, run="killedrun").key
    tasks_study.enqueue_trial({}, user_attrs={TASK_ATTR: stale})
    shared = SharedTasks(study, tmp_path / "runs", lambda: False)
    shared.start()
    calls, square = _recorded_square()

    assert shared.run([Task("square", {"i": 2})], {"square": square})[0]["square"] == 4
    assert calls == [2]
    left = [t for t in tasks_study.get_trials() if task_key(t) == stale]
    assert [t.state for t in left] == [TrialState.PRUNED]


def test_a_task_that_failed_elsewhere_is_retried_here_then_named_once_it_failed_too_often(
    tmp_path,
) -> None:
    study = _study(tmp_path)
    shared = SharedTasks(study, tmp_path / "runs", lambda: False)
    run = shared.start()
    failed = optuna.trial.create_trial(
        state=TrialState.FAIL, user_attrs={TASK_ATTR: Task("square", {"i": 3}, run).key}
    )
    shared.study.add_trial(failed)  # (a worker's training raised there)
    out = shared.run([Task("square", {"i": 3})], {"square": lambda a: {"square": 9}})
    assert out[0]["square"] == 9
    hopeless = Task("square", {"i": 4}, run).key
    for _ in range(MAX_TRIES):
        shared.study.add_trial(
            optuna.trial.create_trial(state=TrialState.FAIL, user_attrs={TASK_ATTR: hopeless})
        )
    with pytest.raises(StateError, match=r"square \{'i': 4\} failed 3 times"):
        shared.run([Task("square", {"i": 4})], {"square": lambda a: {"square": 16}})


def test_a_worker_with_another_runs_folder_takes_nothing_and_says_why(tmp_path, caplog) -> None:
    study = _study(tmp_path)
    SharedTasks(study, tmp_path / "runs", lambda: False).start()
    worker = SharedTasks(study, tmp_path / "elsewhere", lambda: False)
    with caplog.at_level(logging.INFO, logger="nasflow"):
        assert worker.serve({"square": lambda a: {}}, idle_limit=1) == 0
    assert "start the worker with the same --runs" in caplog.text
    assert str((tmp_path / "runs").resolve()) in caplog.text


def test_closing_the_run_sends_a_serving_worker_home(tmp_path) -> None:
    study = _study(tmp_path)
    shared = SharedTasks(study, tmp_path / "runs", lambda: False)
    shared.start()
    worker = SharedTasks(study, tmp_path / "runs", lambda: False)
    served: list[int] = []
    thread = threading.Thread(target=lambda: served.append(worker.serve({}, idle_limit=60)))
    thread.start()
    time.sleep(0.5)
    assert thread.is_alive()  # (waiting for trainings to be queued)
    shared.close()
    thread.join(timeout=10)
    assert not thread.is_alive() and served == [0]


@pytest.mark.slow
def test_two_processes_on_postgresql_share_the_tasks_and_none_runs_twice(
    tmp_path, postgres_url, unique_name
) -> None:
    study = optuna.create_study(study_name=unique_name, storage=postgres_url)
    runs, marks = tmp_path / "runs", tmp_path / "marks"
    marks.mkdir()
    shared = SharedTasks(study, runs, lambda: False)
    shared.start()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    args = [postgres_url, unique_name, str(runs), str(marks)]
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    me = os.getpid()

    def square(args):
        (marks / f"{args['i']}-{me}").touch()
        # The first training here waits until the worker has taken one: both share.
        deadline = time.monotonic() + 120
        while args["i"] == 0 and time.monotonic() < deadline:
            if any(not p.name.endswith(f"-{me}") for p in marks.iterdir()):
                break
            time.sleep(0.1)
        time.sleep(0.2)
        return {"square": args["i"] ** 2}

    try:
        out = shared.run([Task("square", {"i": i}) for i in range(10)], {"square": square})
    finally:
        shared.close()
        text = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, text
    assert [r["square"] for r in out] == [i * i for i in range(10)]
    # Each task ran in exactly one process; both processes ran some.
    ran = sorted(int(p.name.split("-")[0]) for p in marks.iterdir())
    assert ran == list(range(10))
    served = int(text.split("served ")[-1])
    assert served >= 1 and shared.done["square"] == 10 - served
    assert {r["by"] for r in out} == {process_name(), f"{process_name().split(':')[0]}:{proc.pid}"}


def test_a_task_a_worker_cannot_run_is_left_to_the_study_process(tmp_path) -> None:
    study = _study(tmp_path)
    shared = SharedTasks(study, tmp_path / "runs", lambda: False)
    shared.start()
    worker = SharedTasks(study, tmp_path / "runs", lambda: False)
    shared._queue([Task("square", {"i": 5}, shared.current or "").key])
    assert worker.drain({}) == 0  # (it took the task and pruned it: no handler there)
    out = shared.run([Task("square", {"i": 5})], {"square": lambda a: {"square": 25}})
    assert out[0]["square"] == 25 and dict(shared.done) == {"square": 1}
    states = sorted(t.state.name for t in shared.study.get_trials())
    assert states == ["COMPLETE", "PRUNED"]
