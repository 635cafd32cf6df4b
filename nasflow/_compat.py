"""Every difference between Optuna 4.x and 5.x that nasflow touches, in one place."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from nasflow.record import CONSTRAINTS_KEY

OPTUNA_MAJOR = int(optuna.__version__.split(".")[0])


def set_constraints(trial: optuna.Trial, values: dict[str, float]) -> None:
    """Record constraint values (feasible when every value is <= 0) on a trial.

    Optuna 5 stores them with ``Trial.set_constraint``; on 4.x they go to a user attribute
    that :func:`sampler_constraints_kwargs` hands to the sampler as ``constraints_func``.
    """
    if OPTUNA_MAJOR >= 5:
        for key, value in values.items():
            trial.set_constraint(key, float(value))
    else:  # pragma: no cover - exercised only on Optuna 4.x
        trial.set_user_attr(CONSTRAINTS_KEY, [float(v) for v in values.values()])


def get_constraints(trial: FrozenTrial) -> tuple[float, ...] | None:
    """The constraint values of a finished trial, whichever Optuna stored them."""
    if OPTUNA_MAJOR >= 5:
        keys = sorted(k for k in trial.system_attrs if k.startswith("constraints:"))
        if keys:
            return tuple(float(trial.system_attrs[k]) for k in keys)
        legacy = trial.system_attrs.get("constraints")
        return tuple(legacy) if legacy is not None else None
    values = trial.user_attrs.get(CONSTRAINTS_KEY)  # pragma: no cover
    return tuple(values) if values is not None else None  # pragma: no cover


def copy_constraints(trial: optuna.Trial, source: FrozenTrial) -> None:
    """Give ``trial`` the constraint values recorded on the finished trial ``source``."""
    if OPTUNA_MAJOR >= 5:
        for key, value in source.system_attrs.items():
            if key.startswith("constraints:"):
                trial.set_constraint(key.split(":", 1)[1], float(value))
    elif CONSTRAINTS_KEY in source.user_attrs:  # pragma: no cover - Optuna 4.x
        trial.set_user_attr(CONSTRAINTS_KEY, list(source.user_attrs[CONSTRAINTS_KEY]))


def _constraints_func(trial: FrozenTrial) -> Sequence[float]:  # pragma: no cover - 4.x
    return trial.user_attrs.get(CONSTRAINTS_KEY, [0.0])


def sampler_constraints_kwargs() -> dict[str, Callable[[FrozenTrial], Sequence[float]]]:
    """Extra sampler arguments that make it constraint-aware on this Optuna version."""
    if OPTUNA_MAJOR >= 5:
        return {}
    return {"constraints_func": _constraints_func}  # pragma: no cover


def retry_callback_kwargs(max_retry: int = 1) -> dict[str, Any]:
    """``RDBStorage`` keyword arguments that re-enqueue a stale (dead-worker) trial once."""
    if OPTUNA_MAJOR >= 5:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            callback = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=max_retry)
        return {"heartbeat_stale_trial_callback": callback}
    return {  # pragma: no cover
        "failed_trial_callback": optuna.storages.RetryFailedTrialCallback(max_retry=max_retry)
    }
