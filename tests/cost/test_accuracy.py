"""Accuracy metrics: Kendall tau-b against a brute-force count, MAPE, hit rate."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nasflow.cost._accuracy import AccuracyReport, agreement, kendall_tau_b


def _brute_tau_b(x: list[float], y: list[float]) -> float:
    """Tau-b from its definition, one pair at a time."""
    concordant = discordant = tied_x = tied_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0:
            tied_x += 1
        if dy == 0:
            tied_y += 1
        if dx * dy > 0:
            concordant += 1
        elif dx * dy < 0:
            discordant += 1
    n0 = len(x) * (len(x) - 1) // 2
    return (concordant - discordant) / math.sqrt((n0 - tied_x) * (n0 - tied_y))


@pytest.mark.parametrize("seed", range(8))
def test_kendall_tau_b_equals_the_brute_force_count_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    x = rng.integers(0, 6, n).astype(float).tolist()  # many ties
    y = (np.asarray(x) * rng.uniform(-1, 1) + rng.integers(0, 4, n)).tolist()
    assert kendall_tau_b(x, y) == pytest.approx(_brute_tau_b(x, y), abs=1e-12)


def test_kendall_tau_b_known_values() -> None:
    assert kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # 6 pairs: 5 concordant, 1 discordant.
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="equal-length"):
        kendall_tau_b([1, 2], [1, 2, 3])


def test_kendall_tau_b_is_scipys_tau_b_and_propagates_nan() -> None:
    from scipy import stats

    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, 50), rng.integers(0, 5, 50)
    assert kendall_tau_b(x, y) == stats.kendalltau(x, y, variant="b").statistic
    assert math.isnan(kendall_tau_b([1.0, 2.0, float("nan")], [1.0, 2.0, 3.0]))


def test_agreement_mape_and_hit_rate() -> None:
    a = agreement([1.05, 2.5, 2.7, 3.0], [1.0, 2.0, 3.0, 4.0], tolerance=0.10)
    assert a.mape == pytest.approx((0.05 + 0.25 + 0.1 + 0.25) / 4)
    assert a.within == 0.5  # 5% and exactly 10% are in; 25% twice is out
    assert a.kendall_tau == 1.0 and a.n == 4
    with pytest.raises(ValueError, match="positive"):
        agreement([1.0, 2.0], [0.0, 1.0])


def test_report_targets_compare_against_the_noise_floor() -> None:
    a = [0.010, 0.020, 0.030, 0.040, 0.050]
    rows = {
        "cost model": agreement([0.0105, 0.019, 0.033, 0.041, 0.050], a),
        "re-measurement B": agreement([0.0102, 0.021, 0.036, 0.040, 0.049], a),
    }
    report = AccuracyReport([f"a{i}" for i in range(5)], a, a, a, [1] * 5, rows)
    assert report.hit_rate_ratio == pytest.approx(1.0 / 0.8)
    assert all(report.targets().values())
    d = report.to_dict()
    assert d["rows"]["cost model"]["within"] == 1.0 and d["hit_rate_ratio"] == 1.25
    assert "re-measurement B" in report.table()


def test_fit_line_recovers_a_line_and_keeps_the_intercept_nonnegative() -> None:
    from nasflow.cost._cover import fit_line

    assert fit_line([1, 2, 3], [5, 7, 9]) == pytest.approx((2.0, 3.0))
    assert fit_line([1, 2, 3], [1, 3, 5]) == pytest.approx((2.0, -1.0))
    slope, intercept = fit_line([1, 2, 3], [1, 3, 5], nonnegative_intercept=True)
    assert intercept == 0.0 and slope == pytest.approx((1 + 6 + 15) / 14)
    with pytest.raises(ValueError, match="distinct x"):
        fit_line([2, 2], [1, 3])
