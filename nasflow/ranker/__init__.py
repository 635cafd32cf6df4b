"""Ranking candidates by what the study has learned: a pairwise ranker over cheap features.

One entry point, :class:`Ranker`: built on the pool of screened candidates' features, fitted
on the candidates the study has trained (each label the trained model's validation
accuracy, grouped by how it was trained), it scores every candidate. With too few labels,
or where the fit predicts the study's own labels no better than the prior (leave one
candidate out), the prior's weights are used: :data:`PRIOR`, fitted on the generalisation
suite's tables. :class:`RankerRecord` says which, on how many labels, with which weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nasflow._checks import check_int
from nasflow.errors import ConfigError
from nasflow.ranker._pairwise import (
    Standardiser,
    concordance,
    fit_pairwise,
    pairs_of,
    prior_weights,
)
from nasflow.record import RankerRecord

#: The features a study computes for every screened candidate, in this order.
FEATURES = (
    "supernet_accuracy",  # validation accuracy at the supernet's weights (BN re-estimated)
    "supernet_loss",  # validation cross-entropy of the same forward passes
    "log_params",  # log of the stand-alone network's parameters
    "log_flops",  # log of one training step's FLOPs (the cost model's tracer)
)

#: The choices read as a candidate's ``width`` feature, the first a space has with a
#: number (the width multiplier of the CNN spaces, GPT-2's embedding size): on the suite's
#: tables the width choice alone ranks the architectures better than any other free
#: number (``benchmarks/results/b2-ranking.md``).
WIDTH_LABELS = ("width", "n_embd")

#: The class's default weights before it has labels of its own: the rank sum of the
#: supernet's accuracy and cross-entropy (``FineTuning.rank_by="rank_sum"``, the study's
#: default ranking) as a linear score of standardised features.
PRIOR: Mapping[str, float] = {"supernet_accuracy": 1.0, "supernet_loss": -1.0}

#: The ranker's weights before the study has labels of its own (standardised features):
#: fitted on the proving ground's and ``hard``'s tables (200 architectures x 2 training
#: seeds, three supernets each; ``python benchmarks/ranker.py --scores
#: benchmarks/data/b2_scores/proving_fair12_plain.jsonl
#: benchmarks/data/b2_scores/hard_fair12_plain.csv --features supernet_accuracy log_params
#: width``). Left out of the fit: the other grounds, on which it is checked
#: (``benchmarks/results/b2-ranking.md``, "the pairwise ranker left one ground out").
#: Features outside it weigh 0. A study's ranker starts from these
#: (``FineTuning.rank_by="ranker"``, opt-in).
SUITE_PRIOR: Mapping[str, float] = {
    "supernet_accuracy": 0.627,
    "log_params": 0.266,
    "width": 2.373,
}


class Ranker:
    """Scores candidates from their features; fitted on the study's trained candidates.

    Args:
        names: The feature names (columns of every matrix passed in).
        pool: Features of every candidate of the study, ``(N, F)``: they fix the
            standardisation (weights then transfer between grounds).
        prior: Weight per feature name used without a usable fit.
        c: Inverse L2 regularisation strength of the fit (scikit-learn's ``C``).
        min_labels: Labelled candidates needed (in groups of at least two) before a fit is
            tried.
    """

    def __init__(
        self,
        names: Sequence[str],
        pool: np.ndarray,
        prior: Mapping[str, float] = PRIOR,
        c: float = 1.0,
        min_labels: int = 6,
    ) -> None:
        self.names = tuple(names)
        pool = np.asarray(pool, dtype=float)
        if pool.ndim != 2 or pool.shape[1] != len(self.names):
            raise ConfigError(
                f"the pool's features have shape {pool.shape}, expected (N, {len(self.names)})"
            )
        unknown = sorted(set(prior) - set(self.names))
        if unknown:
            raise ConfigError(f"the prior weighs features {unknown} not among {self.names}")
        self.standardise = Standardiser.of(pool)
        self.c = c
        self.min_labels = check_int("min_labels", min_labels, 2)
        self.prior = prior_weights(self.names, prior)
        source = "prior" if np.any(self.prior) else "fallback"
        self.weights = self.prior if source == "prior" else _first_feature(len(self.names))
        self.record = RankerRecord(self.names, tuple(map(float, self.weights)), source)

    def scores(self, features: np.ndarray) -> np.ndarray:
        """The score of each row of ``features`` (higher ranks higher)."""
        return self.standardise(features) @ self.weights

    def fit(
        self, features: np.ndarray, labels: Sequence[float], groups: Sequence[object]
    ) -> RankerRecord:
        """Fit on labelled candidates, keep the fit where it predicts them better than the
        prior (leave one candidate out), and return what was kept.

        Args:
            features: ``(L, F)`` features of the labelled candidates.
            labels: Their measured validation accuracies (higher is better).
            groups: How each was trained (pairs are formed within a group only).
        """
        z = self.standardise(features)
        y = np.asarray(labels, dtype=float)
        groups = list(groups)
        if len(y) != len(z) or len(groups) != len(z):
            raise ConfigError(
                f"{len(z)} feature rows, {len(y)} labels and {len(groups)} groups differ"
            )
        usable = _in_pairs(groups)
        if usable < self.min_labels:
            return self._keep(f"{usable} labels in groups of two or more (< {self.min_labels})")
        if not np.isfinite(y).all():
            return self._keep("a label is not finite")
        if len(pairs_of(z, y, groups)[1]) == 0:
            return self._keep("no two labels of one group differ")
        weights, n_pairs = fit_pairwise(z, y, groups, self.c)
        fitted, prior = self._loo(z, y, groups), concordance(z @ self.weights, y, groups)
        if not fitted > prior:
            return self._keep(
                f"the fit orders the labels no better than the prior (left-out concordance "
                f"{fitted:.2f} vs {prior:.2f})"
            )
        self.weights = weights
        self.record = RankerRecord(
            self.names, tuple(map(float, weights)), "fitted", usable, n_pairs
        )
        return self.record

    def _keep(self, why: str) -> RankerRecord:
        r = self.record
        self.record = RankerRecord(r.features, r.weights, r.source, r.labels, r.pairs, why)
        return self.record

    def _loo(self, z: np.ndarray, y: np.ndarray, groups: list[object]) -> float:
        """Concordance of the fit on pairs with one left-out candidate, fitted without it."""
        agree = total = 0.0
        for i in range(len(y)):
            rest = [j for j in range(len(y)) if j != i]
            try:
                w, _ = fit_pairwise(z[rest], y[rest], [groups[j] for j in rest], self.c)
            except ConfigError:
                continue
            s = z @ w
            for j in rest:
                if groups[j] == groups[i] and y[j] != y[i]:
                    d = (s[i] - s[j]) * (y[i] - y[j])
                    agree += 1.0 if d > 0 else 0.5 if d == 0 else 0.0
                    total += 1
        return agree / total if total else float("nan")


def _in_pairs(groups: Sequence[object]) -> int:
    """Labelled candidates that share their group with at least one other."""
    counts: dict[object, int] = {}
    for g in groups:
        counts[g] = counts.get(g, 0) + 1
    return sum(n for n in counts.values() if n >= 2)


def _first_feature(n: int) -> np.ndarray:
    w = np.zeros(n)
    w[0] = 1.0
    return w


__all__ = ["FEATURES", "PRIOR", "SUITE_PRIOR", "WIDTH_LABELS", "Ranker", "RankerRecord"]
