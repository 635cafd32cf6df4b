"""Non-dominated sorting and crowding distance for multi-objective ranking.

These are the ranking primitives of :class:`~nasflow.search.ParetoSuccessiveHalvingPruner`:
points are ordered by their Pareto front (0 = non-dominated), then by crowding distance
(descending, NSGA-II, Deb et al. 2002) inside a front.

The study's Pareto *set* is Optuna's own ``study.best_trials`` (see ``pareto_trials``).
What stays here has no public Optuna counterpart: ``best_trials`` gives the first front
only, while the pruner, the evolution sampler and the report rank every point into
fronts 0, 1, 2, ... and by crowding distance. Optuna computes those only in private
functions (``optuna.study._multi_objective._fast_non_domination_rank``, the NSGA-II
sampler's ``_calc_crowding_distance``), which may change in any release.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from optuna.study import StudyDirection

from nasflow.errors import ConfigError

__all__ = ["crowding_distance", "non_dominated_sort", "to_minimization"]


def _direction_sign(direction: StudyDirection | str) -> float:
    if isinstance(direction, str):
        key = direction.strip().lower()
        if key in ("minimize", "maximize"):
            return 1.0 if key == "minimize" else -1.0
    elif direction == StudyDirection.MINIMIZE:
        return 1.0
    elif direction == StudyDirection.MAXIMIZE:
        return -1.0
    raise ConfigError(
        f"Each direction must be 'minimize', 'maximize' or the matching StudyDirection, "
        f"got {direction!r}."
    )


def to_minimization(
    values: np.ndarray | Sequence[Sequence[float]],
    directions: Sequence[StudyDirection | str],
) -> np.ndarray:
    """Flip the sign of maximized objectives so that every objective is minimized.

    Args:
        values: Objective matrix of shape ``(N, M)``.
        directions: One direction per objective (``M`` entries).

    Returns:
        A float64 copy of ``values`` of shape ``(N, M)`` in which smaller is better everywhere.

    Raises:
        ValueError: If ``values`` is not 2-D, or the number of directions is not ``M``, or a
            direction is unknown.
    """
    arr = np.array(values, dtype=np.float64)
    if arr.ndim != 2:
        raise ConfigError(f"values must have shape (N, M), got shape {arr.shape}.")
    if len(directions) != arr.shape[1]:
        raise ConfigError(
            f"Got {len(directions)} directions for {arr.shape[1]} objectives (values shape "
            f"{arr.shape})."
        )
    signs = np.array([_direction_sign(d) for d in directions], dtype=np.float64)
    return arr * signs


def non_dominated_sort(
    values: np.ndarray | Sequence[Sequence[float]],
    directions: Sequence[StudyDirection | str],
) -> np.ndarray:
    """Pareto front rank of every point.

    Point ``i`` dominates ``j`` when it is no worse in every objective and strictly better in at
    least one. Front 0 holds the points dominated by no other point; front ``k`` holds the points
    that are non-dominated once fronts ``0..k-1`` are removed. Duplicate points share a front.
    Rows that contain NaN are treated as worst: they form one extra front after all NaN-free
    rows. ``+inf``/``-inf`` compare as usual.

    Args:
        values: Objective matrix of shape ``(N, M)``.
        directions: One direction per objective (``M`` entries): ``"minimize"``,
            ``"maximize"`` or a :class:`optuna.study.StudyDirection`.

    Returns:
        Integer array of shape ``(N,)`` with the front rank of each row (0 = Pareto front).

    Raises:
        ValueError: If the shapes of ``values`` and ``directions`` disagree.
    """
    loss = to_minimization(values, directions)
    n = loss.shape[0]
    ranks = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return ranks
    nan_rows = np.isnan(loss).any(axis=1)
    finite_idx = np.flatnonzero(~nan_rows)
    sub = loss[finite_idx]
    # dominates[i, j]: sub[i] dominates sub[j]. O(N^2 M) memory, fine for rung populations.
    leq = (sub[:, None, :] <= sub[None, :, :]).all(axis=2)
    lt = (sub[:, None, :] < sub[None, :, :]).any(axis=2)
    dominates = leq & lt
    n_dominators = dominates.sum(axis=0)
    remaining = np.ones(len(finite_idx), dtype=bool)
    front = 0
    while remaining.any():
        current = remaining & (n_dominators == 0)
        ranks[finite_idx[current]] = front
        remaining &= ~current
        n_dominators = n_dominators - dominates[current].sum(axis=0)
        front += 1
    ranks[nan_rows] = front
    return ranks


def _single_front_crowding(points: np.ndarray) -> np.ndarray:
    """Crowding distance of the NaN-free points of one front; duplicates get equal distances."""
    unique, inverse = np.unique(points, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    n_unique, n_obj = unique.shape
    dist = np.zeros(n_unique, dtype=np.float64)
    if n_unique <= 2:
        dist[:] = np.inf
        return dist[inverse]
    for j in range(n_obj):
        order = np.argsort(unique[:, j], kind="stable")
        col = unique[order, j]
        dist[order[0]] = dist[order[-1]] = np.inf
        with np.errstate(invalid="ignore"):
            span = col[-1] - col[0]
            if not np.isfinite(span) or span <= 0.0:
                continue
            gaps = (col[2:] - col[:-2]) / span
        dist[order[1:-1]] += np.where(np.isfinite(gaps), gaps, 0.0)
    return dist[inverse]


def crowding_distance(
    values: np.ndarray | Sequence[Sequence[float]],
    ranks: np.ndarray | Sequence[int] | None = None,
) -> np.ndarray:
    """NSGA-II crowding distance, computed separately inside each front.

    For every objective the points of a front are sorted; the two extreme points get ``inf`` and
    every other point adds the normalized gap between its two neighbours. A larger distance means
    a less crowded, more diverse point. Identical points are counted once, so duplicates share
    one distance and the result does not depend on the row order. Fronts with at most two
    distinct points get ``inf`` everywhere. Rows that contain NaN get 0. The distance does not
    depend on the optimization directions.

    Args:
        values: Objective matrix of shape ``(N, M)``.
        ranks: Front rank of each row, e.g. from :func:`non_dominated_sort`. ``None`` treats
            all rows as one front.

    Returns:
        Float array of shape ``(N,)``.

    Raises:
        ValueError: If ``values`` is not 2-D or ``ranks`` has the wrong length.
    """
    arr = np.array(values, dtype=np.float64)
    if arr.ndim != 2:
        raise ConfigError(f"values must have shape (N, M), got shape {arr.shape}.")
    n = arr.shape[0]
    rank_arr = np.zeros(n, dtype=np.int64) if ranks is None else np.asarray(ranks).reshape(-1)
    if rank_arr.shape[0] != n:
        raise ConfigError(f"Got {rank_arr.shape[0]} ranks for {n} points.")
    dist = np.zeros(n, dtype=np.float64)
    valid = ~np.isnan(arr).any(axis=1)
    for rank in np.unique(rank_arr[valid]):
        members = np.flatnonzero(valid & (rank_arr == rank))
        dist[members] = _single_front_crowding(arr[members])
    return dist
