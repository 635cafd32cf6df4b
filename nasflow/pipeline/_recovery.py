"""Trials whose worker died or was stopped: heartbeat settings, zombie sweep, retry, resume.

A trial is retried *at most once* after its worker died (Optuna's retry-history
convention: the retry's ``system_attrs["failed_trial"]`` is the original number and
``retry_history`` lists the failed attempts). A trial stopped on request (SIGINT/SIGTERM)
is not a failure: it is queued again with the same parameters without spending its retry,
and resumes from its fine-tuning checkpoint, which is keyed by the original number."""

from __future__ import annotations

import contextlib
import datetime
import logging
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import optuna
from filelock import Timeout
from optuna.trial import FrozenTrial, TrialState

from nasflow import settings
from nasflow._compat import retry_callback_kwargs
from nasflow._files import file_lock
from nasflow.errors import ConfigError, NasflowError
from nasflow.record import PER_ATTEMPT_ATTRS, STOPS_KEY
from nasflow.storage import GRACE_PERIOD, HEARTBEAT_INTERVAL
from nasflow.train import TrainingInterrupted

_LOG = logging.getLogger(__name__)

if TYPE_CHECKING:
    from nasflow.pipeline._context import RunContext

#: Environment variables that override the heartbeat settings of a run.
ENV_HEARTBEAT_INTERVAL = settings.HEARTBEAT_INTERVAL_ENV


ENV_GRACE_PERIOD = settings.GRACE_PERIOD_ENV


#: User attributes of a finished attempt that must not leak into its retry.
_PER_ATTEMPT_ATTRS = PER_ATTEMPT_ATTRS


class TrialInterrupted(TrainingInterrupted):
    """A trial stopped on request; it was checkpointed and must be queued again.

    Attributes:
        trial_number: The stopped trial.
    """

    def __init__(self, trial_number: int, what: str, checkpoint: Path | None = None) -> None:
        super().__init__(what, checkpoint)
        self.trial_number = trial_number


class TrialSwept(NasflowError):
    """This worker's trial was failed by another worker's sweep (its heartbeat came late,
    a loaded machine) while this worker still fine-tuned it; its retry resumes from the
    checkpoint (internal: ends this attempt).

    Attributes:
        trial_number: The swept trial.
    """

    def __init__(self, trial_number: int) -> None:
        super().__init__(f"trial {trial_number} was failed by another worker's sweep")
        self.trial_number = trial_number


def was_swept(trial: optuna.Trial) -> bool:
    """Whether ``trial`` (running here) was failed meanwhile by another worker's sweep."""
    return trial.study._storage.get_trial(trial._trial_id).state == TrialState.FAIL


@contextlib.contextmanager
def claim_folder(folder: Path | None) -> Iterator[None]:
    """Hold a trial's fine-tuning checkpoint folder while this attempt trains it: another
    attempt of the trial (a retry queued while a worker whose heartbeat came late still
    trains it) waits until this one stops, then resumes from its newest checkpoint instead
    of training from scratch beside it. The lock (``trial-N.lock`` beside the folder) is
    released when the attempt ends, however it ends (a killed worker's too)."""
    if folder is None:
        yield
        return
    lock = file_lock(folder.with_name(folder.name + ".lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        _LOG.info(f"{folder.name}: another worker still fine-tunes it; waiting for its checkpoint")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def heartbeat_settings(
    interval: int | None = None, grace_period: int | None = None
) -> tuple[int, int]:
    """``(heartbeat interval, grace period)`` in seconds: arguments, else the environment
    (``NASFLOW_HEARTBEAT_INTERVAL``, ``NASFLOW_GRACE_PERIOD``), else the defaults.

    Raises:
        ValueError: A value is not an int >= 1, or the grace period is not longer than
            the interval (live trials would be failed).
    """
    values = []
    for given, env, default in (
        (interval, ENV_HEARTBEAT_INTERVAL, HEARTBEAT_INTERVAL),
        (grace_period, ENV_GRACE_PERIOD, GRACE_PERIOD),
    ):
        stored = settings.raw(env)
        raw = given if given is not None else (stored if stored is not None else default)
        try:
            value = int(raw)
        except (TypeError, ValueError):
            value = -1
        if isinstance(raw, bool) or value < 1 or str(value) != str(raw).strip():
            raise ConfigError(f"{env.lower().split('_', 1)[1]} must be an int >= 1, got {raw!r}")
        values.append(value)
    if values[1] <= values[0]:
        raise ConfigError(
            f"grace period {values[1]}s must be longer than the heartbeat interval {values[0]}s"
        )
    return values[0], values[1]


def original_number(trial: FrozenTrial | optuna.Trial) -> int:
    """The number of the first attempt of a (possibly retried or resumed) trial."""
    if isinstance(trial, optuna.Trial):
        attrs = trial.study._storage.get_trial_system_attrs(trial._trial_id)
    else:
        attrs = trial.system_attrs
    return int(attrs.get("failed_trial", trial.number))


def _retry_once(study: optuna.Study, trial: FrozenTrial) -> None:
    """Queue a failed trial again unless it already was retried (Optuna's own callback)."""
    callback = next(iter(retry_callback_kwargs(max_retry=1).values()))
    callback(study, trial)


def _fail(study: optuna.Study, trial_id: int) -> bool:
    """Mark a RUNNING trial FAIL; ``False`` when another process finished it first."""
    try:
        return study._storage.set_trial_state_values(trial_id, TrialState.FAIL)
    except optuna.exceptions.UpdateFinishedTrialError:
        return False


def _fail_stale(study: optuna.Study) -> list[int]:
    """Optuna's public ``fail_stale_trials``: RUNNING trials whose last heartbeat is older
    than the storage's grace period are failed and retried once (by the storage's
    ``RetryHeartbeatStaleTrialCallback``, see ``open_storage``). Returns the ids of the
    trials that were RUNNING before and are FAIL now (a trial another worker's sweep
    failed at the same moment may be reported by both; it is failed and retried once)."""
    running = {t._trial_id for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
    return sorted(t._trial_id for t in failed if t._trial_id in running)


def _never_beaten_trial_ids(study: optuna.Study, grace_period: int) -> list[int]:
    """RUNNING trials of an RDB study that started longer than ``grace_period`` ago and
    never sent a heartbeat: their worker died between ``ask`` and its first heartbeat
    (``ask`` samples, which can take seconds).

    ``fail_stale_trials`` does not see them: ``RDBStorage._get_stale_trial_ids`` skips a
    trial without a heartbeat row (measured with Optuna 5.0: a trial asked and never
    beaten, 3.5 s into a 2 s grace period, stays RUNNING after ``fail_stale_trials``,
    while one that beat once is failed and requeued; ``test_recovery``'s PostgreSQL
    test). No public API tells whether a trial ever sent a heartbeat, so this reads
    Optuna's heartbeat table through its private ORM model.
    """
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    storage = getattr(study._storage, "_backend", study._storage)  # under Optuna's cache
    limit = datetime.datetime.now() - datetime.timedelta(seconds=grace_period)
    old = [
        t._trial_id
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if t.datetime_start is not None and t.datetime_start <= limit
    ]
    if not old:
        return []
    with _create_scoped_session(storage.scoped_session) as session:  # type: ignore[attr-defined]
        return [i for i in old if models.TrialHeartbeatModel.where_trial_id(i, session) is None]


def sweep_zombies(study: optuna.Study, kind: str, grace_period: int) -> list[int]:
    """Fail trials left RUNNING by dead workers and retry each at most once.

    Args:
        study: The loaded study.
        kind: Storage kind. On ``"sqlite"`` the caller holds the file's only lock, so every
            RUNNING trial has lost its worker. On ``"postgresql"`` a trial is dead when its
            heartbeat is older than the storage's grace period (Optuna's
            ``fail_stale_trials``) or it never sent one in ``grace_period`` seconds.
            Journal files keep no heartbeats: nothing is swept there.
        grace_period: Seconds of silence after which a trial's worker counts as dead (the
            storage was opened with the same, ``open_storage``).

    Returns:
        The numbers of the trials failed here.
    """
    if kind == "sqlite":
        ids = [t._trial_id for t in study.get_trials(states=(TrialState.RUNNING,))]
    elif kind == "postgresql":
        ids = _never_beaten_trial_ids(study, grace_period)
    else:
        return []
    numbers = []
    for trial_id in ids:
        if _fail(study, trial_id):
            numbers.append(_log_dead(study, trial_id))
            _retry_once(study, study._storage.get_trial(trial_id))
    if kind == "postgresql":
        numbers += [_log_dead(study, i) for i in _fail_stale(study)]  # Optuna retried
    return numbers


def _log_dead(study: optuna.Study, trial_id: int) -> int:
    """Say that a trial was failed for its dead worker; its number."""
    trial = study._storage.get_trial(trial_id)
    tries = len(trial.system_attrs.get("retry_history", [])) + 1
    again = "retrying it once" if tries <= 1 else "not retrying it again"
    _LOG.info(f"trial {trial.number} was left running by a dead worker: failed it, {again}")
    return trial.number


def requeue_interrupted(study: optuna.Study, trial_number: int) -> None:
    """Queue a trial stopped on request again, with the same parameters, to be resumed.

    The new trial points at the original (``failed_trial``) so it finds the fine-tuning
    checkpoint, and keeps the retry history: a stop does not spend the trial's retry.
    """
    [trial] = [t for t in study.get_trials(deepcopy=False) if t.number == trial_number]
    system_attrs = {**trial.system_attrs, "failed_trial": original_number(trial)}
    system_attrs.setdefault("retry_history", [])
    system_attrs[STOPS_KEY] = int(system_attrs.get(STOPS_KEY, 0)) + 1
    user_attrs = {k: v for k, v in trial.user_attrs.items() if k not in _PER_ATTEMPT_ATTRS}
    study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.WAITING,
            params=trial.params,
            distributions=trial.distributions,
            user_attrs=user_attrs,
            system_attrs=system_attrs,
        )
    )


def kept_words(ctx: RunContext, n: int, what: str) -> str:
    """``n`` screened ``what`` this process found in the study, in words that say who
    scored them: an earlier run (``resuming: ...``) or other workers while this one
    started (a fresh multi-worker study resumes nothing)."""
    started = datetime.datetime.now() - datetime.timedelta(
        seconds=time.perf_counter() - ctx.started
    )
    done = ctx.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
    earlier = sum(t.datetime_complete is not None and t.datetime_complete < started for t in done)
    if earlier == 0:
        return f"{n} {what} already scored by other workers"
    if earlier >= len(done):
        return f"resuming: {n} {what} kept from an earlier run"
    return (
        f"resuming: {n} {what} kept ({earlier} trials from an earlier run, "
        f"{len(done) - earlier} scored by other workers since this one started)"
    )
