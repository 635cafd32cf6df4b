"""Saying when a study's budget excludes every candidate proposed."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow.record import TrialRecord
from nasflow.search import Budget, StudySpec

_LOG = logging.getLogger(__name__)

#: Over-budget skips, with nothing feasible, after which the run says so.
SKIPS_BEFORE_NOTE = 3


def _smallest(skipped: Sequence[TrialRecord], key: str) -> float | None:
    values = [v for t in skipped if (v := getattr(t, key)) is not None]
    return min(values) if values else None


def budget_excludes(trials: Sequence[FrozenTrial], budget: Budget) -> str | None:
    """One line when every finished trial was skipped as over ``budget`` (none completed),
    with the smallest proposed candidate's figures against the limits; else ``None``."""
    if any(t.state == TrialState.COMPLETE for t in trials):
        return None
    skipped = [r for t in trials if (r := TrialRecord.from_trial(t)).skipped is not None]
    if not skipped:
        return None
    parts = []
    params = _smallest(skipped, "params")
    if budget.max_params is not None and params is not None:
        parts.append(f"{int(params):,} parameters (max_params={budget.max_params:,})")
    cost = _smallest(skipped, "train_cost")
    if budget.max_train_cost is not None and cost is not None:
        parts.append(
            f"a predicted training cost of {cost:.1f}s (max_train_cost={budget.max_train_cost}s)"
        )
    return (
        f"the budget excludes every candidate proposed: {len(skipped)} skipped as over it, "
        f"none feasible; the smallest proposed has {' and '.join(parts) or 'no figures'}: "
        "raise the limit or search a space of smaller candidates"
    )


class BudgetNote:
    """Says once (on ``log``), after the first few over-budget skips with nothing
    feasible, that the study's budget excludes what is proposed, with the smallest
    candidate's figures."""

    def __init__(self, spec: StudySpec) -> None:
        self.spec = spec
        self.said = False

    def after(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Look again after ``trial`` finished (nothing once said)."""
        if self.said or TrialRecord.from_trial(trial).skipped is None:
            return
        trials = study.get_trials(deepcopy=False)
        skipped = sum(TrialRecord.from_trial(t).skipped is not None for t in trials)
        if skipped < min(SKIPS_BEFORE_NOTE, self.spec.n_trials):
            return
        note = budget_excludes(trials, self.spec.budget)
        if note is not None:
            self.said = True
            _LOG.info(f"warning: {note}")
