"""A pairwise ranker over cheap features: which of two candidates trains to the better model.

The model is RankNet's linear case (Burges et al. 2005; RankSVM's with a logistic loss): a
score ``w . z(x)`` of standardised features ``z``, fitted by L2-regularised logistic
regression on the differences ``z(a) - z(b)`` of every pair of labelled candidates that
were trained alike (one *group*: the same fidelity, e.g. "retrained from scratch" or "one
epoch of fine-tuning"), the label saying which one trained better. Pairs never cross
groups: a one-epoch fine-tuning and a full training are not on one scale.

Features are standardised over the *pool* (every screened candidate of the study, or every
architecture of a table), so the weights do not depend on a ground's units: weights fitted
on some grounds apply to another (the prior, :data:`nasflow.ranker.PRIOR`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from nasflow.errors import ConfigError


@dataclass
class Standardiser:
    """Per-feature mean and standard deviation of a pool (constant features get 1)."""

    mean: np.ndarray
    scale: np.ndarray = field(repr=False)

    @classmethod
    def of(cls, pool: np.ndarray) -> Standardiser:
        pool = _matrix(pool)
        seen = np.isfinite(pool).any(axis=0)  # a feature no candidate has: mean 0, scale 1
        mean, scale = np.zeros(pool.shape[1]), np.ones(pool.shape[1])
        if seen.any():
            pool = np.where(np.isfinite(pool), pool, np.nan)
            mean[seen] = np.nanmean(pool[:, seen], axis=0)
            scale[seen] = np.nanstd(pool[:, seen], axis=0)
        scale[~np.isfinite(scale) | (scale == 0)] = 1.0
        return cls(mean, scale)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        z = (_matrix(x) - self.mean) / self.scale
        return np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)  # a missing feature: average


def _matrix(x: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 2:
        raise ConfigError(f"features must be a 2-d array (candidates x features), got {a.shape}")
    return a


def pairs_of(
    z: np.ndarray, labels: np.ndarray, groups: Sequence[object], min_gap: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """The pairwise training set: for every pair of one group whose labels differ by more
    than ``min_gap``, the feature difference in both orders with targets 1 and 0.

    Returns:
        ``(differences (P, F), targets (P,))``.
    """
    by_group: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    rows, targets = [], []
    for members in by_group.values():
        for i, j in itertools.combinations(members, 2):
            if abs(labels[i] - labels[j]) <= min_gap:
                continue
            better = 1 if labels[i] > labels[j] else 0
            rows += [z[i] - z[j], z[j] - z[i]]
            targets += [better, 1 - better]
    width = z.shape[1]
    return np.asarray(rows, dtype=float).reshape(-1, width), np.asarray(targets, dtype=int)


def fit_pairwise(
    z: np.ndarray,
    labels: Sequence[float] | np.ndarray,
    groups: Sequence[object],
    c: float = 1.0,
    min_gap: float = 0.0,
) -> tuple[np.ndarray, int]:
    """Weights of a linear pairwise ranker on standardised features ``z`` (``(N, F)``).

    scikit-learn's ``LogisticRegression`` (lbfgs, L2, no intercept: a pair and its
    mirror cancel any offset) on :func:`pairs_of`.

    Returns:
        ``(weights (F,), number of ordered pairs)``.

    Raises:
        ConfigError: No pair of one group has different labels.
    """
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels, dtype=float)
    diffs, targets = pairs_of(z, y, groups, min_gap)
    if len(targets) == 0:
        raise ConfigError("no two labelled candidates of one group differ: nothing to fit")
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=1000)
    model.fit(diffs, targets)
    return model.coef_[0].astype(float), len(targets) // 2


def concordance(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[float] | np.ndarray,
    groups: Sequence[object],
) -> float:
    """Share of the pairs of one group with different labels that ``scores`` orders like
    the labels (ties in ``scores`` count half); NaN without such a pair."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    agree = total = 0.0
    by_group: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    for members in by_group.values():
        for i, j in itertools.combinations(members, 2):
            if y[i] == y[j]:
                continue
            total += 1
            d = (s[i] - s[j]) * (y[i] - y[j])
            agree += 1.0 if d > 0 else 0.5 if d == 0 else 0.0
    return agree / total if total else float("nan")


def prior_weights(names: Sequence[str], prior: Mapping[str, float]) -> np.ndarray:
    """The prior's weight of each feature (0 for a feature the prior does not weigh)."""
    return np.array([float(prior.get(n, 0.0)) for n in names])
