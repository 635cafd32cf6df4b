"""Work any process of a study can take: the trainings of the phases after screening.

Within a phase the trainings after screening are independent of one another: the trust
probe's short trainings, each finalist's fine-tuning up to the rung's epochs, phase 3's
retrains. On a storage several processes share (PostgreSQL, a journal file) each is queued
as a *task*: a waiting trial of the study's task study (``NAME:tasks``, beside the study)
that names what to train in a user attribute. Every process of the study (``nasflow
search`` and each ``nasflow worker``) takes the waiting tasks through Optuna's
``study.optimize``, which claims a waiting trial atomically in the storage, so no training
runs twice; the process writes what it measured into the trial. The study's own process
takes tasks too, then waits for the rest before it decides anything from them
(:meth:`SharedTasks.run`). A worker killed mid-task stops its heartbeat: the storage fails
the task and queues it once more (``RetryFailedTrialCallback``, ``nasflow.storage``), and
the retry resumes from the training's checkpoint.

Each run of the study's process has its own run id (:meth:`SharedTasks.start`); a task an
earlier, killed run left waiting is dropped when taken. When the study's process has
decided it closes the run (:meth:`SharedTasks.close`), which sends the workers home
(:meth:`SharedTasks.serve`). Trained weights and checkpoints are files in the runs folder,
so a worker must use the study's runs folder (one machine, or a shared file system): a
worker whose folder is another takes no task and says so.

On a storage only one process may use (SQLite), and in a data-parallel run (whose every
rank trains each model together), :class:`LocalTasks` runs the same tasks in order in the
process, without a queue.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import optuna
from optuna.trial import TrialState

from nasflow.errors import StateError
from nasflow.record import (
    TASK_ATTR,
    TASK_RESULT_ATTR,
    TASKS_CLOSED_KEY,
    TASKS_FOLDER_KEY,
    TASKS_RUN_KEY,
    TasksState,
    task_key,
    task_result,
)
from nasflow.train import TrainingInterrupted

_LOG = logging.getLogger(__name__)

#: The task study of study ``NAME`` is ``NAME`` followed by this.
SUFFIX = ":tasks"
#: Seconds between looks at the task study while other processes train.
POLL_SECONDS = 1.0
#: Seconds a worker waits without a task before it leaves (the study's process died).
IDLE_LIMIT = 600.0
#: A task that failed this many times (its trainer raised in every process that took it)
#: ends the run with an error naming it.
MAX_TRIES = 3

#: A task's training: its arguments in, what it measured out (JSON-serialisable).
Handler = Callable[[Mapping[str, Any]], dict[str, Any]]
#: Told each task's result as soon as it is known: its index among the tasks, the result.
OnResult = Callable[[int, dict[str, Any]], None]


def process_name() -> str:
    """This process, as a task's result names the process that trained it."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Task:
    """One training of a phase.

    Attributes:
        kind: Which phase's training (a key of the handlers).
        args: What to train (JSON-serialisable: trial numbers, architectures, epochs).
        run: The run of the study's process that queued it.
    """

    kind: str
    args: Mapping[str, Any] = field(default_factory=dict)
    run: str = ""

    @property
    def key(self) -> str:
        """The task as stored (one string: equal tasks of one run have equal keys)."""
        return json.dumps({"run": self.run, "kind": self.kind, "args": self.args}, sort_keys=True)

    @classmethod
    def from_key(cls, key: str) -> Task:
        raw = json.loads(key)
        return cls(str(raw["kind"]), dict(raw["args"]), str(raw["run"]))


class Tasks(Protocol):
    """Where a phase's trainings run (:class:`LocalTasks` or :class:`SharedTasks`)."""

    def run(
        self,
        tasks: Sequence[Task],
        handlers: Mapping[str, Handler],
        on_result: OnResult | None = None,
    ) -> list[dict[str, Any]]:
        """Train every task (here or in other processes); what each measured, in order
        (``on_result`` is told each as it comes, so a stopped phase keeps what is done)."""


class LocalTasks:
    """The tasks, run in order in this process (no queue). A stop request is the
    trainings' own to honour: each checks it after every step and checkpoints there."""

    def run(
        self,
        tasks: Sequence[Task],
        handlers: Mapping[str, Handler],
        on_result: OnResult | None = None,
    ) -> list[dict[str, Any]]:
        me, out = process_name(), []
        for i, t in enumerate(tasks):
            out.append({"by": me, **handlers[t.kind](t.args)})
            if on_result is not None:
                on_result(i, out[-1])
        return out


class SharedTasks:
    """The tasks of a study, queued in its task study for every process to take.

    Args:
        study: The study (its storage holds the task study).
        folder: This process's runs folder for the study (``RUNS/NAME``).
        stop: Set to stop: checked between tasks and while waiting.
    """

    def __init__(self, study: optuna.Study, folder: Path, stop: Callable[[], bool]) -> None:
        self.study = optuna.create_study(
            study_name=study.study_name + SUFFIX,
            storage=study._storage,  # (Optuna keeps a study's storage private)
            load_if_exists=True,
            sampler=optuna.samplers.RandomSampler(seed=0),
        )
        self.folder = str(Path(folder).resolve())
        self.stop = stop
        self.me = process_name()
        #: The tasks this process ran, by kind.
        self.done: Counter[str] = Counter()

    # ---------------------------------------------------------------- the study's process
    def start(self) -> str:
        """Open a new run (the study's process, before its phases): its id."""
        run = uuid.uuid4().hex[:12]
        self.study.set_user_attr(TASKS_FOLDER_KEY, self.folder)
        self.study.set_user_attr(TASKS_RUN_KEY, run)
        return run

    def close(self) -> None:
        """The run has decided: workers waiting for tasks go home."""
        run = TasksState.of(self.study).run
        if run is not None:
            self.study.set_user_attr(TASKS_CLOSED_KEY, run)

    @property
    def current(self) -> str | None:
        """The run in progress (``None``: none was started)."""
        return TasksState.of(self.study).run

    def run(
        self,
        tasks: Sequence[Task],
        handlers: Mapping[str, Handler],
        on_result: OnResult | None = None,
    ) -> list[dict[str, Any]]:
        """Queue ``tasks`` in the current run, take them with every other process of the
        study, and wait for the rest: what each measured, in the order given
        (``on_result`` is told each as it is found finished).

        Raises:
            TrainingInterrupted: A stop was requested (the tasks in flight elsewhere go on).
            StateError: A task failed ``MAX_TRIES`` times.
        """
        run = self.current
        assert run is not None, "SharedTasks.start() opens a run first"
        tasks = [Task(t.kind, t.args, run) for t in tasks]
        keys = [t.key for t in tasks]
        self._queue(keys)
        said, told = False, set()
        while True:
            self.drain(handlers)
            with warnings.catch_warnings():  # (experimental since Optuna 2.9, unchanged)
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(self.study)
            results, pending = self._results(keys)
            for i, key in enumerate(keys):
                if key in results and i not in told and on_result is not None:
                    on_result(i, results[key])
                    told.add(i)
            if self.stop():
                raise TrainingInterrupted("waiting for trainings other workers run")
            if not pending:
                return [results[k] for k in keys]
            if any(s == TrialState.WAITING for s in pending.values()):
                continue
            if not said:
                running = sum(s == TrialState.RUNNING for s in pending.values())
                _LOG.info(f"waiting for {running} trainings other workers are running")
                said = True
            time.sleep(POLL_SECONDS)

    def _queue(self, keys: Sequence[str]) -> None:
        held = {task_key(t) for t in self.study.get_trials(deepcopy=False)}
        for key in keys:
            if key not in held:
                self.study.enqueue_trial({}, user_attrs={TASK_ATTR: key}, skip_if_exists=False)
                held.add(key)

    def _results(
        self, keys: Sequence[str]
    ) -> tuple[dict[str, dict[str, Any]], dict[str, TrialState]]:
        """The finished tasks' results, and the state of each task not finished (a task
        that failed is queued again, until it failed ``MAX_TRIES`` times)."""
        wanted = set(keys)
        tries: dict[str, list[optuna.trial.FrozenTrial]] = {}
        for t in self.study.get_trials(deepcopy=False):
            key = task_key(t)
            if key in wanted:
                tries.setdefault(key, []).append(t)
        results: dict[str, dict[str, Any]] = {}
        pending: dict[str, TrialState] = {}
        for key in keys:
            held = tries.get(key, [])
            done = [t for t in held if t.state == TrialState.COMPLETE]
            if done:
                results[key] = task_result(done[0]) or {}
                continue
            live = [t.state for t in held if t.state in (TrialState.WAITING, TrialState.RUNNING)]
            if live:
                pending[key] = TrialState.WAITING if TrialState.WAITING in live else live[0]
                continue
            # (a try a process pruned, a training it does not run, is queued again freely:
            # the study's process takes it in the end)
            failed = sum(t.state == TrialState.FAIL for t in held)
            if failed >= MAX_TRIES:
                task = Task.from_key(key)
                raise StateError(
                    f"the training {task.kind} {dict(task.args)} failed {failed} times; see "
                    "the log of the processes that ran it"
                )
            self.study.enqueue_trial({}, user_attrs={TASK_ATTR: key}, skip_if_exists=False)
            pending[key] = TrialState.WAITING
        return results, pending

    # ---------------------------------------------------------------- every process
    def drain(self, handlers: Mapping[str, Handler]) -> int:
        """Take waiting tasks of the current run until none waits; how many ran here."""
        before = self.done.total()

        def objective(trial: optuna.Trial) -> float:
            key = task_key(trial)
            if key is None:  # the last waiting task was taken by another process
                trial.study.stop()
                raise optuna.TrialPruned("no task was waiting")
            task = Task.from_key(key)
            if task.run != self.current:
                raise optuna.TrialPruned("queued by an earlier run of the study")
            handler = handlers.get(task.kind)
            if handler is None:
                raise optuna.TrialPruned(f"{task.kind!r}: not a training this process runs")
            result = {"by": self.me, **handler(task.args)}
            trial.set_user_attr(TASK_RESULT_ATTR, result)
            self.done[task.kind] += 1
            return 0.0

        def halt(s: optuna.Study, _: optuna.trial.FrozenTrial) -> None:
            if self.stop():
                s.stop()

        while not self.stop():
            waiting = self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
            if not waiting:
                break
            self.study.optimize(
                objective, n_trials=len(waiting), callbacks=[halt], gc_after_trial=False
            )
        return self.done.total() - before

    def serve(self, handlers: Mapping[str, Handler], idle_limit: float = IDLE_LIMIT) -> int:
        """A worker: take the tasks of the study's run until the study's process closes it
        (or nothing comes for ``idle_limit`` seconds); how many ran here."""
        folder = TasksState.of(self.study).folder
        if folder is not None and folder != self.folder:
            _LOG.info(
                f"worker: takes no training after screening: the study's runs folder is "
                f"{folder}, this worker's {self.folder} (trained weights are files there: "
                "start the worker with the same --runs)"
            )
            return 0
        before, last = self.done.total(), time.monotonic()
        while not self.stop():
            if TasksState.of(self.study).done:
                break
            if self.drain(handlers):
                last = time.monotonic()
            elif time.monotonic() - last > idle_limit:
                _LOG.info(f"worker: no training queued for {idle_limit:.0f}s; leaving")
                break
            time.sleep(POLL_SECONDS)
        return self.done.total() - before
