"""Every difference between Optuna 4.x and 5.x that nasflow touches, in one place."""

from __future__ import annotations

import warnings
from typing import Any

import optuna

OPTUNA_MAJOR = int(optuna.__version__.split(".")[0])


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
