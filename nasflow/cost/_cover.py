"""Choosing architectures: a pairwise covering set, spread picks, and a line fit."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from nasflow._checks import check_int
from nasflow.errors import ConfigError
from nasflow.space import Arch, SearchSpace


def covering_archs(space: SearchSpace, seed: int = 0, candidates: int = 32) -> list[Arch]:
    """Paths in which every pair of values of every two path choices appears at least once.

    An op's instance depends on its own choice and on the choices that set its input
    (a width, an upstream stride), so covering all pairs reaches every op instance whose
    shape depends on one other choice (all of the default space's). Instances that depend
    on three or more choices at once are measured when a prediction first needs them.
    Greedy construction (AETG-style): each new path is the best of ``candidates`` random
    completions, scored by how many uncovered pairs it covers.

    Args:
        space: The space (its path choices are covered; hyper-parameters are ignored).
        seed: Seeds the random completions.
        candidates: Random completions tried per new path.

    Returns:
        The paths, as ``Arch`` over the path labels only.
    """
    check_int("candidates", candidates)
    choices = space.path_choices
    rng = np.random.default_rng(seed)
    uncovered = {
        (i, a, j, b)
        for i, j in itertools.combinations(range(len(choices)), 2)
        for a in range(len(choices[i].values))
        for b in range(len(choices[j].values))
    }
    rows: list[list[int]] = []
    limit = len(uncovered) + 1  # every new row covers at least one pair
    while uncovered and len(rows) < limit:
        # Seed each candidate with one uncovered pair so that every row makes progress.
        seed_pairs = sorted(uncovered)
        best: list[int] = []
        best_gain = -1
        for _ in range(candidates):
            row = [int(rng.integers(len(c.values))) for c in choices]
            i, a, j, b = seed_pairs[int(rng.integers(len(seed_pairs)))]
            row[i], row[j] = a, b
            gain = sum(
                (i, row[i], j, row[j]) in uncovered
                for i, j in itertools.combinations(range(len(choices)), 2)
            )
            if gain > best_gain:
                best, best_gain = row, gain
        rows.append(best)
        for i, j in itertools.combinations(range(len(choices)), 2):
            uncovered.discard((i, best[i], j, best[j]))
    if not rows:  # fewer than two path choices: no pairs to cover
        rows = [[int(rng.integers(len(c.values))) for c in choices]]
        if len(choices) == 1:
            rows = [[v] for v in range(len(choices[0].values))]
    return [
        Arch({c.label: c.values[v] for c, v in zip(choices, row, strict=True)}) for row in rows
    ]


def spread_indices(values: Sequence[float], n: int) -> list[int]:
    """Indices of ``n`` values at evenly spaced ranks (lowest and highest included)."""
    order = np.argsort(np.asarray(values, dtype=float), kind="stable")
    if n >= len(order):
        return [int(i) for i in order]
    picks = np.unique(np.round(np.linspace(0, len(order) - 1, n)).astype(int))
    return [int(order[p]) for p in picks]


def fit_line(
    x: Sequence[float], y: Sequence[float], *, nonnegative_intercept: bool = False
) -> tuple[float, float]:
    """Least-squares ``y = slope * x + intercept``.

    Args:
        x: Predictor values.
        y: Targets.
        nonnegative_intercept: If the free fit's intercept is negative, fit the line
            through the origin instead (a per-step overhead cannot be negative).

    Raises:
        ValueError: Fewer than two points, or all ``x`` equal (the slope is undetermined).
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.size < 2:
        raise ConfigError(f"a line fit needs >= 2 (x, y) points, got {xs.size} and {ys.size}")
    if np.ptp(xs) == 0:
        raise ConfigError(f"a line fit needs distinct x values, got all x = {xs[0]!r}")
    slope, intercept = np.polyfit(xs, ys, 1)
    if nonnegative_intercept and intercept < 0:
        return float(np.dot(xs, ys) / np.dot(xs, xs)), 0.0
    return float(slope), float(intercept)
