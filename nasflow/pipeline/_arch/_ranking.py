"""The finalists ranked by the pairwise ranker (``FineTuning.rank_by="ranker"``).

Every screened candidate is described by what its screening trial recorded -- its
supernet accuracy and cross-entropy, its parameter count and its predicted training cost
-- and, where the space has one, its width choice (:data:`WIDTH_LABELS`) -- and scored by
``nasflow.ranker.Ranker``: with ``nasflow.ranker.SUITE_PRIOR``'s weights (fitted on two
suite grounds' tables, ``benchmarks/ranker.py``), refitted on the study's own labels where
it has enough of them (the zero-cost anchors' validation accuracies after their training
from scratch, phase 0) and where the refit orders them better than the prior.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from nasflow.ranker import SUITE_PRIOR, WIDTH_LABELS, Ranker
from nasflow.record import RankerRecord, TrialRecord, study_anchors

#: The features of a screened candidate, in this order (each read from its trial).
STUDY_FEATURES = ("supernet_accuracy", "supernet_loss", "log_params", "log_cost", "width")

#: The label group of the anchors (trained from scratch with the study's recipe).
ANCHOR_GROUP = "from scratch"


def _log(value: float | int | None) -> float:
    if value is None or not math.isfinite(value) or value <= 0:
        return math.nan  # (standardised to the pool's mean: a missing feature weighs 0)
    return math.log(value)


def _width(rec: TrialRecord) -> float:
    arch = rec.get_arch() if rec.arch is not None else {}
    for label in WIDTH_LABELS:
        value = arch.get(label)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return math.nan


def candidate_features(rec: TrialRecord) -> list[float]:
    """``STUDY_FEATURES`` of one screened candidate (NaN where its trial lacks one)."""
    loss = rec.supernet_loss
    return [
        math.nan if rec.supernet_accuracy is None else float(rec.supernet_accuracy),
        math.nan if loss is None else float(loss),
        _log(rec.params),
        _log(rec.train_cost),
        _width(rec),
    ]


@dataclass(frozen=True)
class Ranked:
    """Screened trials, best first, and the record of the ranker that ordered them."""

    trials: list[FrozenTrial]
    record: RankerRecord


def rank_candidates(
    trials: Sequence[FrozenTrial], labels: Mapping[int, float] | None = None
) -> Ranked:
    """Order the screened ``trials`` (those with a supernet accuracy) by the ranker.

    Args:
        trials: Screened trials.
        labels: Measured validation accuracy by trial number, of candidates trained from
            scratch with the study's recipe (the anchors); the ranker is refitted on those
            among ``trials`` (kept only where it orders them better than the prior).

    Returns:
        The trials, best score first (ties: the higher supernet accuracy), and the record.
    """
    recs = [(t, TrialRecord.from_trial(t)) for t in trials]
    recs = [(t, r) for t, r in recs if r.supernet_accuracy is not None]
    pool = np.array([candidate_features(r) for _, r in recs], dtype=float).reshape(
        len(recs), len(STUDY_FEATURES)
    )  # (candidates, features)
    ranker = Ranker(STUDY_FEATURES, pool, prior=SUITE_PRIOR)
    labelled = [i for i, (t, _) in enumerate(recs) if t.number in (labels or {})]
    if labelled:
        y = [float((labels or {})[recs[i][0].number]) for i in labelled]
        record = ranker.fit(pool[labelled], y, [ANCHOR_GROUP] * len(labelled))
    else:
        record = RankerRecord(
            ranker.record.features, ranker.record.weights, ranker.record.source,
            note="no candidate trained from scratch yet",
        )  # fmt: skip
    scores = ranker.scores(pool) if len(recs) else np.zeros(0)
    acc = [float(r.supernet_accuracy) for _, r in recs]  # type: ignore[arg-type]
    order = sorted(range(len(recs)), key=lambda i: (-scores[i], -acc[i]))
    return Ranked([recs[i][0] for i in order], record)


def anchor_labels(study: optuna.Study) -> dict[int, float]:
    """The trained anchors' validation accuracies, by trial number."""
    anchors = study_anchors(study)
    if anchors is None:
        return {}
    return {e.trial: e.val_accuracy for e in anchors.trained if e.val_accuracy is not None}
