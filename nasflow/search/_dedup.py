"""Never score an architecture twice in one study: reuse the earlier trial's result."""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow.search._compat import copy_constraints
from nasflow.space import Arch

#: User attribute of a trial whose architecture was already scored: the earlier trial.
DUPLICATE_KEY = "duplicate_of"
#: User attributes that describe one attempt, not the architecture's score.
_ATTEMPT_KEYS = frozenset({"arch", "traceback", "fail_reason", "resumed_at", DUPLICATE_KEY})


def scored_trial(study: optuna.Study, arch: Arch) -> FrozenTrial | None:
    """The earliest COMPLETE trial of ``study`` whose ``arch`` user attribute is ``arch``."""
    key = arch.to_json()
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.user_attrs.get("arch") == key:
            return t
    return None


def reuse_score(trial: optuna.Trial, arch: Arch) -> float | list[float] | None:
    """The values to return for ``trial`` if ``arch`` was already scored, else ``None``.

    The trial then gets the earlier trial's recorded numbers (parameters, cost,
    accuracies: every user attribute except per-attempt and ``nasflow:`` bookkeeping
    ones) and constraint values, and ``user_attrs["duplicate_of"]`` = the earlier trial's
    number. Call it after ``trial.set_user_attr("arch", ...)``.
    """
    earlier = scored_trial(trial.study, arch)
    if earlier is None or earlier.values is None:
        return None
    for key, value in earlier.user_attrs.items():
        if key not in _ATTEMPT_KEYS and not key.startswith("nasflow:"):
            trial.set_user_attr(key, value)
    copy_constraints(trial, earlier)
    trial.set_user_attr(DUPLICATE_KEY, int(earlier.user_attrs.get(DUPLICATE_KEY, earlier.number)))
    values = [float(v) for v in earlier.values]
    return values[0] if len(values) == 1 else values
