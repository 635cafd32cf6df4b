"""Pareto-aware asynchronous successive halving (MOASHA-style) for Optuna studies.

Optuna raises ``NotImplementedError`` on ``trial.report``/``trial.should_prune`` in
multi-objective studies (optuna#3450). This pruner is an Optuna ``BasePruner`` that any
study can use, multi-objective ones through two small helpers that stand in for the two
refused calls::

    import optuna
    from nasflow.search import ParetoSuccessiveHalvingPruner, report_values, should_prune

    study = optuna.create_study(
        directions=["maximize", "minimize"],
        pruner=ParetoSuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
    )

    def objective(trial):
        for epoch in range(1, 10):
            accuracy, latency = train_one_epoch(...)
            report_values(trial, (accuracy, latency), epoch)   # trial.report(...)
            if should_prune(trial):                     # trial.should_prune()
                raise optuna.TrialPruned()
        return accuracy, latency

The reported vectors and the rung records live in trial user attributes, so it works with
any storage (in-memory, SQLite, PostgreSQL, journal) and any number of objectives, in the
spirit of Syne Tune's MOASHA (Schmucker et al. 2021). In a single-objective study it also
reads the values of plain ``trial.report`` calls, so ``trial.should_prune()`` works as with
any Optuna pruner.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from nasflow._checks import check_int
from nasflow.errors import ConfigError, ConfigTypeError
from nasflow.record import LAST_STEP_KEY, LAST_VALUES_KEY, rung_key, trial_rung
from nasflow.search._pareto import crowding_distance, non_dominated_sort

__all__ = ["ParetoSuccessiveHalvingPruner", "report_values", "should_prune"]

_COMPETING_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)


def report_values(trial: optuna.Trial, values: Sequence[float], step: int) -> None:
    """``trial.report`` for any study, multi-objective included: record the objective
    vector ``values`` (one value per study direction) at ``step`` (an epoch, say) for the
    study's :class:`ParetoSuccessiveHalvingPruner` (user attributes ``nasflow:last_step``
    and ``nasflow:last_values``).

    Raises:
        ValueError: ``step`` is not an int >= 0, or ``values`` has a length other than the
            number of study directions.
    """
    check_int("step", step, 0)
    vector = [float(v) for v in values]
    n_directions = len(trial.study.directions)
    if len(vector) != n_directions:
        raise ConfigError(
            f"Got {len(vector)} values for a study with {n_directions} directions "
            f"(values={vector})."
        )
    trial.set_user_attr(LAST_STEP_KEY, step)
    trial.set_user_attr(LAST_VALUES_KEY, vector)


def should_prune(trial: optuna.Trial) -> bool:
    """``trial.should_prune()`` for any study, multi-objective included: ask the study's
    pruner about the vector last given to :func:`report_values`.

    Raises:
        TypeError: The study's pruner cannot decide on reported vectors (any pruner other
            than :class:`ParetoSuccessiveHalvingPruner` or ``NopPruner`` reads
            ``trial.report`` values, which Optuna refuses in multi-objective studies).
    """
    pruner = trial.study.pruner
    if isinstance(pruner, optuna.pruners.NopPruner):
        return False
    if not isinstance(pruner, ParetoSuccessiveHalvingPruner):
        raise ConfigTypeError(
            f"should_prune(trial) needs the study's pruner to be a ParetoSuccessiveHalvingPruner "
            f"or a NopPruner, got {type(pruner).__name__}"
        )
    frozen = next(t for t in trial.study.get_trials(deepcopy=False) if t.number == trial.number)
    return pruner.prune(trial.study, frozen)


def _set_user_attr(
    study: optuna.Study, trial: optuna.trial.FrozenTrial, key: str, value: Any
) -> None:
    """Store a rung record on a running trial from ``BasePruner.prune``, which Optuna hands
    a frozen copy: through the storage, as Optuna's own ``SuccessiveHalvingPruner`` stores
    its rung records (Optuna has no public call for it)."""
    study._storage.set_trial_user_attr(trial._trial_id, key, value)


class ParetoSuccessiveHalvingPruner(optuna.pruners.BasePruner):
    """Asynchronous successive halving that promotes by Pareto rank.

    Rung ``k`` sits at resource ``r_k = min_resource * reduction_factor**(k +
    min_early_stopping_rate)`` (a resource is a step, e.g. the number of finished epochs). When a
    trial first reaches a step ``>= r_k`` its objective vector is stored in the user attribute
    ``nasflow:rung_{k}`` (``record.rung_key``) and compared with every COMPLETE, PRUNED or
    RUNNING trial that stored that rung. The trial is promoted (kept running) when, in this order:

    1. its vector has no NaN (otherwise it is pruned: NaN counts as worst);
    2. at least ``bootstrap_count`` other trials already reached the rung (otherwise pruned,
       as in Optuna's ``SuccessiveHalvingPruner``);
    3. fewer than ``reduction_factor`` trials reached the rung (not enough information), or it
       is on the first Pareto front of the rung (MOASHA: the whole front is kept, even when it
       holds more than ``1/reduction_factor`` of the rung), or fewer than ``n //
       reduction_factor`` of the ``n`` rung trials rank strictly ahead of it, ranking by
       (non-dominated front, crowding distance descending).

    With one objective this is Optuna's ``SuccessiveHalvingPruner`` (same promotion quantile,
    ties promoted), except that a trial among the first ``reduction_factor - 1`` at a rung is
    always promoted instead of only when it is the best so far. Objective directions come from
    ``trial.study.directions``.

    Use it as the study's pruner with :func:`report_values` and :func:`should_prune` (module
    docstring), or, without making it the study's pruner, call :meth:`check` on it::

        for epoch in range(1, max_epochs + 1):
            acc, latency = train_one_epoch(...)
            pruner.check(trial, (acc, latency), epoch)

    Args:
        min_resource: Resource of the first rung (before ``min_early_stopping_rate``).
        reduction_factor: ``eta``: rungs are ``eta`` times apart and about ``1/eta`` of each
            rung is promoted.
        min_early_stopping_rate: Shifts the first rung to ``min_resource * eta**rate``.
        bootstrap_count: Trials pruned at a rung until this many other trials reached it.
        max_resource: Resource at which trials complete; rungs at ``>= max_resource`` are never
            decision points. ``None`` means no upper rung limit.

    Raises:
        ValueError: On an invalid argument; the message contains the bad value.
    """

    def __init__(
        self,
        min_resource: int = 1,
        reduction_factor: int = 3,
        min_early_stopping_rate: int = 0,
        bootstrap_count: int = 0,
        max_resource: int | None = None,
    ) -> None:
        check_int("min_resource", min_resource, 1)
        check_int("reduction_factor", reduction_factor, 2)
        check_int("min_early_stopping_rate", min_early_stopping_rate, 0)
        check_int("bootstrap_count", bootstrap_count, 0)
        if max_resource is not None:
            check_int("max_resource", max_resource, 1)
            if max_resource < min_resource:
                raise ConfigError(
                    f"max_resource ({max_resource}) must be >= min_resource ({min_resource})."
                )
        self._min_resource = min_resource
        self._reduction_factor = reduction_factor
        self._min_early_stopping_rate = min_early_stopping_rate
        self._bootstrap_count = bootstrap_count
        self._max_resource = max_resource

    def rung_resource(self, rung: int) -> int:
        """Step (resource) at which rung ``rung`` is reached."""
        exponent = rung + self._min_early_stopping_rate
        return self._min_resource * self._reduction_factor**exponent

    def report(self, trial: optuna.Trial, values: Sequence[float], step: int) -> None:
        """Record the objective vector of ``trial`` at ``step``: :func:`report_values`."""
        report_values(trial, values, step)

    def should_prune(self, trial: optuna.Trial, step: int) -> bool:
        """Whether ``trial`` should stop at ``step``, given the vector last reported at ``step``.

        Returns ``False`` at steps that reach no new rung. A rung decision is stored, so asking
        twice at the same step decides once.

        Args:
            trial: The running trial.
            step: The step passed to the latest :meth:`report`.

        Returns:
            ``True`` if the trial should be pruned.

        Raises:
            ValueError: If nothing was reported at ``step``.
        """
        attrs = trial.user_attrs
        if attrs.get(LAST_STEP_KEY) != step or LAST_VALUES_KEY not in attrs:
            raise ConfigError(
                f"should_prune(step={step}) needs report(..., step={step}) first; last reported "
                f"step is {attrs.get(LAST_STEP_KEY)!r}."
            )
        vector = [float(v) for v in attrs[LAST_VALUES_KEY]]
        return self._decide(trial.study, trial.number, attrs, vector, step, trial.set_user_attr)

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        """Optuna's pruner interface: decide on the vector last given to :func:`report_values`, or,
        in a single-objective study, on the last ``trial.report`` value.

        Args:
            study: The trial's study.
            trial: A frozen copy of the running trial.

        Returns:
            ``True`` if the trial should be pruned; ``False`` when nothing was reported.
        """
        # Optuna hands a copy whose user attributes are cached in the trial's process and
        # miss the rung records stored below through the storage: read them fresh.
        attrs = study._storage.get_trial(trial._trial_id).user_attrs
        if LAST_VALUES_KEY in attrs and isinstance(attrs.get(LAST_STEP_KEY), int):
            step, vector = attrs[LAST_STEP_KEY], [float(v) for v in attrs[LAST_VALUES_KEY]]
        elif trial.last_step is not None and len(study.directions) == 1:
            step, vector = trial.last_step, [float(trial.intermediate_values[trial.last_step])]
        else:
            return False

        def store(key: str, value: Any) -> None:
            _set_user_attr(study, trial, key, value)

        return self._decide(study, trial.number, attrs, vector, step, store)

    def _decide(
        self,
        study: optuna.Study,
        number: int,
        attrs: dict[str, Any],
        vector: list[float],
        step: int,
        store: Any,
    ) -> bool:
        """Walk the rungs ``step`` reaches that ``attrs`` holds no record of yet."""
        rung = 0
        while rung_key(rung) in attrs:
            rung += 1
        trials: list[optuna.trial.FrozenTrial] | None = None
        while True:
            resource = self.rung_resource(rung)
            if step < resource or (
                self._max_resource is not None and resource >= self._max_resource
            ):
                return False
            if any(math.isnan(v) for v in vector):
                return True
            if trials is None:
                trials = study.get_trials(deepcopy=False, states=_COMPETING_STATES)
            store(rung_key(rung), vector)
            if not self._is_promoted(study, number, trials, rung, vector):
                return True
            rung += 1

    def check(self, trial: optuna.Trial, values: Sequence[float], step: int) -> None:
        """:meth:`report`, then raise :class:`optuna.TrialPruned` if :meth:`should_prune`.

        Args:
            trial: The running trial.
            values: One value per study direction.
            step: Resource consumed so far, e.g. the number of finished epochs.

        Raises:
            optuna.TrialPruned: If the trial is not promoted at a rung reached at ``step``.
            ValueError: As :meth:`report`.
        """
        self.report(trial, values, step)
        if self.should_prune(trial, step):
            raise optuna.TrialPruned(f"Pruned by Pareto successive halving at step {step}.")

    def _is_promoted(
        self,
        study: optuna.Study,
        number: int,
        trials: list[optuna.trial.FrozenTrial],
        rung: int,
        vector: list[float],
    ) -> bool:
        others = [trial_rung(other, rung) for other in trials if other.number != number]
        return promoted(
            vector, others, study.directions, self._reduction_factor, self._bootstrap_count
        )


def promoted(
    vector: Sequence[float],
    others: Sequence[Any],
    directions: Sequence[Any],
    reduction_factor: int,
    bootstrap_count: int = 0,
    keep_front: bool = True,
) -> bool:
    """Whether ``vector`` goes on among the objective vectors ``others`` reached at the
    same rung (entries that are not lists of finite numbers of the same length are
    ignored): never with a NaN, never before ``bootstrap_count`` others, always while
    fewer than ``reduction_factor`` compete, always on the first Pareto front (MOASHA; not
    with ``keep_front=False``, which bounds the share promoted), else when fewer than
    ``n // reduction_factor`` of the ``n`` rank strictly ahead (front, then crowding
    distance descending)."""
    n_obj = len(vector)
    if any(math.isnan(float(v)) for v in vector):
        return False
    valid = []
    for stored in others:
        if not isinstance(stored, list) or len(stored) != n_obj:
            continue
        if not any(math.isnan(float(v)) for v in stored):
            valid.append([float(v) for v in stored])
    if len(valid) < bootstrap_count:
        return False
    n = len(valid) + 1
    if n < reduction_factor:
        return True
    points = np.array([list(vector), *valid], dtype=np.float64)  # (n, objectives)
    ranks = non_dominated_sort(points, directions)
    if ranks[0] == 0 and keep_front:
        return True
    crowding = crowding_distance(points, ranks)
    ahead = (ranks < ranks[0]) | ((ranks == ranks[0]) & (crowding > crowding[0]))
    return int(ahead.sum()) < n // reduction_factor
