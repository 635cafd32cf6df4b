"""``benchmarks/rung_trust.py``: the trust verdict from the rungs, replayed beside the probe."""

from __future__ import annotations

import pytest

from tests.benchmarks._load import load_benchmark


@pytest.fixture(scope="module")
def rt():  # type: ignore[no-untyped-def]
    return load_benchmark("rung_trust.py")


def _row(first_epoch: list[float], table_tau: float, probe: tuple[float, float, float]) -> dict:
    """A B6 run: six finalists scored 0.80-0.85 by the supernet, ``first_epoch`` their
    validation after one fine-tuning epoch; the probe's record and the table's tau."""
    cands = [
        {"supernet_accuracy": 0.80 + 0.01 * i, "val_curve": [v, v + 0.01], "status": "ready"}
        for i, v in enumerate(first_epoch)
    ]
    tau, low, high = probe
    return {
        "name": "g",
        "seed": 0,
        "supernet_tau": table_tau,
        "trust": {"tau": tau, "low": low, "high": high},
        "finetuned": {"candidates": cands},
    }


def test_the_rungs_tau_orders_rung_one_by_rung_zero(rt) -> None:
    tau, low, high = rt.rung_tau(
        _row([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], 0.7, (0.7, 0.4, 1.0))["finetuned"], 0
    )
    assert tau == pytest.approx(1.0) and high == 1.0 and low <= 1.0 - rt.MARGIN
    reverse = rt.rung_tau(_row([0.6, 0.5, 0.4, 0.3, 0.2, 0.1], 0.7, (0, 0, 0))["finetuned"], 0)
    assert reverse[0] == pytest.approx(-1.0)
    assert rt.rung_tau({"candidates": [{"supernet_accuracy": 0.8, "val_curve": [0.5]}]}, 0) is None


def test_coverage_and_verdicts_are_judged_against_the_table(rt) -> None:
    rows = [
        # The table ranks well (0.7: "trust"); the probe covers it and says trust (low 0.4),
        # the rungs order the finalists backwards: not covered, "weak".
        _row([0.6, 0.5, 0.4, 0.3, 0.2, 0.1], 0.7, (0.7, 0.4, 1.0)),
        {"name": "g", "supernet_tau": float("nan")},  # no table tau: left out
    ]
    per = rt.replay(rows)
    assert len(per["g"]) == 1
    e = per["g"][0]
    assert e["probe_covers"] and e["probe_right"]
    assert not e["rungs_covers"] and not e["rungs_right"]
    text = rt.report({"g": [e, e]})
    assert "| g | 2 | +0.70 | +0.70 | -1.00 | 2/2 | 0/2 | 2/2 | 0/2 |" in text
    assert rt.word(rt.verdict(0.7, 0.7)) == "trust" and rt.word(rt.verdict(0.1, 0.1)) == "weak"
