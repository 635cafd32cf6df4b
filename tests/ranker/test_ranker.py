"""The pairwise ranker: fitted weights recover a known ordering, pairs stay within groups,
too few labels or a fit no better than the prior keep the prior, bad shapes are refused."""

from __future__ import annotations

import numpy as np
import pytest

from nasflow.ranker import PRIOR, Ranker
from nasflow.ranker._pairwise import Standardiser, concordance, pairs_of

NAMES = ("supernet_accuracy", "supernet_loss", "log_params", "log_flops")


def _pool(n: int = 200, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, len(NAMES))) * [0.1, 0.5, 2.0, 3.0]


@pytest.mark.slow
def test_a_fit_recovers_the_feature_that_orders_the_labels() -> None:
    pool = _pool()
    truth = Standardiser.of(pool)(pool)[:, 2]  # accuracy follows log_params alone
    labelled = np.arange(24)
    ranker = Ranker(NAMES, pool)
    record = ranker.fit(pool[labelled], truth[labelled], ["retrained"] * 24)
    assert record.source == "fitted" and record.labels == 24 and record.pairs == 24 * 23 // 2
    assert np.argmax(np.abs(record.weights)) == 2 and record.weights[2] > 0
    # It ranks the unlabelled rest as the truth does.
    rest = np.arange(24, 200)
    assert concordance(ranker.scores(pool[rest]), truth[rest], [0] * 176) > 0.95
    assert record.line().startswith("ranker: fitted on 24 labels (276 pairs): log_params +")


def test_pairs_are_formed_within_a_group_only() -> None:
    z = np.eye(4)
    diffs, targets = pairs_of(z, np.array([0.1, 0.9, 0.5, 0.2]), ["a", "a", "b", "b"])
    assert len(targets) == 4  # (0, 1) and (2, 3), each in both orders
    np.testing.assert_array_equal(diffs[0], z[0] - z[1])
    assert list(targets) == [0, 1, 1, 0]


def test_too_few_labels_keep_the_prior_and_say_why() -> None:
    pool = _pool()
    ranker = Ranker(NAMES, pool, min_labels=6)
    record = ranker.fit(pool[:5], np.arange(5.0), ["r"] * 4 + ["other"])
    assert record.source == "prior" and "4 labels in groups of two or more (< 6)" in record.note
    z = Standardiser.of(pool)(pool)
    want = z[:, 0] * PRIOR["supernet_accuracy"] + z[:, 1] * PRIOR["supernet_loss"]
    np.testing.assert_allclose(ranker.scores(pool), want)


def test_a_fit_no_better_than_the_prior_is_not_used() -> None:
    pool = _pool(seed=1)
    z = Standardiser.of(pool)(pool)
    truth = z[:, 0] - z[:, 1]  # exactly the prior's order
    ranker = Ranker(NAMES, pool)
    record = ranker.fit(pool[:12], truth[:12], ["r"] * 12)
    assert record.source == "prior" and "no better than the prior" in record.note


def test_a_missing_feature_counts_as_average_and_bad_shapes_are_refused() -> None:
    pool = _pool()
    pool[3, 2] = np.nan
    ranker = Ranker(NAMES, pool, prior={"log_params": 1.0})
    assert np.isfinite(ranker.scores(pool)).all() and ranker.scores(pool[3:4])[0] == 0.0
    with pytest.raises(ValueError, match=r"expected \(N, 4\)"):
        Ranker(NAMES, pool[:, :3])
    with pytest.raises(ValueError, match=r"not among"):
        Ranker(NAMES, pool, prior={"synflow": 1.0})
    with pytest.raises(ValueError, match="3 feature rows, 2 labels"):
        ranker.fit(pool[:3], [0.1, 0.2], ["a"] * 3)
