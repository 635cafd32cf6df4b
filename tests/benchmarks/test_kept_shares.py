"""``benchmarks/kept_shares.py``: the kept model's share per ground, recorded and replayed."""

from __future__ import annotations

import pytest

from nasflow.record import FineTuned, FineTuneResult
from tests.benchmarks._load import load_benchmark


@pytest.fixture(scope="module")
def ks():  # type: ignore[no-untyped-def]
    return load_benchmark("kept_shares.py")


def _row(seed: int, anchor_val: float, **extra: object) -> dict:
    """Trial 7 kept, retrained 0.85 / 0.86 test; fine-tuned 0.80 (never kept); one anchor
    validating ``anchor_val`` and testing 0.80; 100 validation samples (one standard
    error near 0.85 is about 3.6 points)."""
    tuned = FineTuned(7, "{}", 0.5, (0.5, 0.80), (1.0, 1.0), 0.90, "ready")
    row: dict = {
        "study": "unused.py",
        "name": "g",
        "seed": seed,
        "kept_trial": 7,
        "kept_val": 0.85,
        "kept_test": 0.86,
        "finetuned": FineTuneResult((tuned,), 2, val_samples=100).to_dict(),
        "anchors": [{"trial": 0, "val_accuracy": anchor_val, "test_accuracy": 0.80}],
    }
    row.update(extra)
    return row


def test_each_seed_is_read_as_recorded_and_under_the_replayed_rule(ks, monkeypatch) -> None:
    monkeypatch.setattr(ks, "table_test", lambda study: [0.79, 0.81, 0.85, 0.87])
    # Seed 0: the anchor validates 1 point higher, inside one standard error: recorded
    # (margin 1) keeps the retrain (0.86 beats 3 of 4), no margin keeps the anchor (0.80
    # beats 1 of 4). Seed 1: the anchor validates lower, both keep the retrain.
    rows = [_row(0, 0.86), _row(1, 0.80), {"kind": "header"}]
    per = ks.shares(rows, (0.0, 2.0))
    assert per == {"g": [(0, 0.75, 0.25), (1, 0.75, 0.75)]}
    text = ks.report(per, (0.0, 2.0))
    assert "| g | 2 | 75 75 | 75% | 50% |" in text and "anchor 0 / kept 2" in text


def test_a_row_the_replay_cannot_reproduce_stops_it_naming_the_row(ks, monkeypatch) -> None:
    monkeypatch.setattr(ks, "table_test", lambda study: [0.8])
    record = {"source": "anchor", "weights": "retrained", "trial": 0}
    with pytest.raises(ValueError, match="g seed 3: the recorded margins do not reproduce"):
        ks.shares([_row(3, 0.80, kept_record=record)], (0.0, 2.0))
    with pytest.raises(ValueError, match="g seed 4: no fine-tuning record"):
        ks.shares([_row(4, 0.80, finetuned=None)], (0.0, 2.0))
