"""Saying when a study's budget excludes every candidate proposed."""

from __future__ import annotations

from collections.abc import Sequence

from optuna.trial import FrozenTrial, TrialState

from nasflow.record import PARAMS_ATTR, SKIPPED_ATTR, TRAIN_COST_ATTR
from nasflow.search import Budget

#: Over-budget skips, with nothing feasible, after which the run says so.
SKIPS_BEFORE_NOTE = 3


def _smallest(skipped: Sequence[FrozenTrial], key: str) -> float | None:
    values = [t.user_attrs[key] for t in skipped if isinstance(t.user_attrs.get(key), int | float)]
    return min(values) if values else None


def budget_excludes(trials: Sequence[FrozenTrial], budget: Budget) -> str | None:
    """One line when every finished trial was skipped as over ``budget`` (none completed),
    with the smallest proposed candidate's figures against the limits; else ``None``."""
    if any(t.state == TrialState.COMPLETE for t in trials):
        return None
    skipped = [t for t in trials if SKIPPED_ATTR in t.user_attrs]
    if not skipped:
        return None
    parts = []
    params = _smallest(skipped, PARAMS_ATTR)
    if budget.max_params is not None and params is not None:
        parts.append(f"{int(params):,} parameters (max_params={budget.max_params:,})")
    cost = _smallest(skipped, TRAIN_COST_ATTR)
    if budget.max_train_cost is not None and cost is not None:
        parts.append(
            f"a predicted training cost of {cost:.1f}s (max_train_cost={budget.max_train_cost}s)"
        )
    return (
        f"the budget excludes every candidate proposed: {len(skipped)} skipped as over it, "
        f"none feasible; the smallest proposed has {' and '.join(parts) or 'no figures'}: "
        "raise the limit or search a space of smaller candidates"
    )
