"""The task study's records (``NAME:tasks``): what each queued training is and what it
measured (trial attributes), and which run of the study's process is in progress (study
attributes). The pipeline queues the tasks and takes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna

from nasflow.record._keys import (
    TASK_ATTR,
    TASK_RESULT_ATTR,
    TASKS_CLOSED_KEY,
    TASKS_FOLDER_KEY,
    TASKS_RUN_KEY,
)


def task_key(trial: optuna.trial.FrozenTrial | optuna.Trial) -> str | None:
    """The task a trial of the task study was queued with (``None``: a trial Optuna made
    when the last waiting one was taken by another process; it holds nothing)."""
    key = trial.user_attrs.get(TASK_ATTR)
    return key if isinstance(key, str) else None


def task_result(trial: optuna.trial.FrozenTrial) -> dict[str, Any] | None:
    """What a finished task measured, with ``"by"``: the process that ran it."""
    result = trial.user_attrs.get(TASK_RESULT_ATTR)
    return dict(result) if isinstance(result, dict) else None


@dataclass(frozen=True)
class TasksState:
    """The task study's state, as the study's process left it.

    Attributes:
        run: The run in progress, or the last one (``None``: none was started).
        closed: The last run the study's process closed (its workers go home).
        folder: The study's runs folder (absolute).
    """

    run: str | None
    closed: str | None
    folder: str | None

    @property
    def done(self) -> bool:
        """The run was closed: nothing more will be queued in it."""
        return self.run is not None and self.closed == self.run

    @classmethod
    def of(cls, study: optuna.Study) -> TasksState:
        attrs = study.user_attrs
        return cls(
            *(
                None if attrs.get(k) is None else str(attrs[k])
                for k in (TASKS_RUN_KEY, TASKS_CLOSED_KEY, TASKS_FOLDER_KEY)
            )
        )
