"""``benchmarks/margins.py``: the two validates-higher rules replayed under one margin."""

from __future__ import annotations

import pytest

from nasflow.record import FineTuned, FineTuneResult
from tests.benchmarks._load import load_benchmark


@pytest.fixture(scope="module")
def margins():  # type: ignore[no-untyped-def]
    return load_benchmark("margins.py")


def _row(ft_val: float, anchor_val: float | None, **extra: object) -> dict:
    """A run keeping trial 7: retrained 0.85 validation / 0.86 test, fine-tuned ``ft_val``
    / 0.90 test, one anchor validating ``anchor_val`` / testing 0.95; 100 validation
    samples (one standard error near 0.88 is 0.0325)."""
    tuned = FineTuned(7, "{}", 0.5, (0.5, ft_val), (1.0, 1.0), 0.90, "ready")
    row: dict = {
        "study": "unused.py",
        "name": "g",
        "seed": 0,
        "kept_trial": 7,
        "kept_val": 0.85,
        "kept_test": 0.86,
        "finetuned": FineTuneResult((tuned,), 2, val_samples=100).to_dict(),
        "anchors": []
        if anchor_val is None
        else [{"trial": 0, "val_accuracy": anchor_val, "test_accuracy": 0.95}],
    }
    row.update(extra)
    return row


def test_each_margin_decides_between_retrain_fine_tuned_weights_and_anchor(margins) -> None:
    # Fine-tuned 0.90 against the retrain's 0.85: a lead of 1.5 standard errors (0.0331
    # at 0.875), kept under a margin of 1, not of 2.
    row = _row(0.90, None)
    assert margins.decide(row, 1.0, 1.0) == margins.Kept("fine-tuned", 0.90)
    assert margins.decide(row, 1.0, 2.0) == margins.Kept("retrained", 0.86)
    # An anchor validating 0.925 leads the retrain by 2.4 standard errors but the
    # fine-tuned weights by 0.9: which weights the search keeps decides whether the anchor
    # replaces them.
    row = _row(0.90, 0.925)
    assert margins.decide(row, 1.0, 2.0) == margins.Kept("anchor", 0.95)
    assert margins.decide(row, 1.0, 1.0) == margins.Kept("fine-tuned", 0.90)
    assert margins.decide(row, 3.0, 3.0) == margins.Kept("retrained", 0.86)


def test_rows_another_rule_decides_are_left_out_and_a_disagreeing_replay_is_caught(
    margins,
) -> None:
    assert margins.replayable(_row(0.9, None)) is None
    assert margins.replayable(_row(0.9, None, overrides={"finetuning.rank_by": "ranker"})) is None
    for overrides in ({"anchors.fallback": "largest"}, {"finetuning": None}, {"rungs": {}}):
        assert margins.replayable(_row(0.9, None, overrides=overrides)) is not None
    assert margins.replayable(_row(0.9, None, config_kind="baseline")) == "not a study run"
    assert margins.replayable(_row(0.9, None, finetuned=None)) == "no fine-tuning record"
    assert margins.replayable(_row(0.9, None, kept_trial=8)) is not None
    kept = margins.Kept("anchor", 0.95)
    assert margins.agrees(_row(0.9, None, kept_record={"source": "anchor"}), kept)
    record = {"source": "search", "weights": "retrained"}
    assert not margins.agrees(_row(0.9, None, kept_record=record), kept)


def test_the_registered_rule_needs_no_ground_worse_and_the_pooled_means_not_below(
    margins,
) -> None:
    same = [(0.5, 0.5), (0.6, 0.6), (0.7, 0.7)]
    up = [(0.5, 0.6), (0.6, 0.6), (0.7, 0.7)]
    down = [(0.5, 0.4), (0.6, 0.5), (0.7, 0.6)]
    _, ok = margins.report(
        {"share:a": same, "share:b": up, "test:a": same, "test:b": up}, (1.0, 1.0)
    )
    assert ok
    text, ok = margins.report(
        {"share:a": down, "share:b": up, "test:a": same, "test:b": up}, (1.5, 1.5)
    )
    assert not ok  # ground a is worse in every pair: its interval lies below zero
    assert "| a | 3 | -10.0 [-10.0, -10.0] (0/0/3) |" in text
    _, ok = margins.report(
        {"share:a": same, "share:b": same, "test:a": down, "test:b": same}, (2.0, 2.0)
    )
    assert not ok  # the test accuracy's pooled mean is below zero


def test_the_replay_pairs_each_ground_and_seed_once(margins, monkeypatch) -> None:
    monkeypatch.setattr(margins, "table_test", lambda study: [0.80, 0.87, 0.89, 0.92])
    rows = [_row(0.90, None), _row(0.90, None), _row(0.90, None, seed=1), {"kind": "header"}]
    pairs, skipped, kinds = margins.replay(rows, [(1.0, 1.0)])
    assert skipped == {"used": 3, "not a study run": 1}
    # Shipped keeps the retrain (0.86 beats 1 of 4), a margin of 1 the fine-tuned weights
    # (0.90 beats 3 of 4); the two runs of seed 0 are one pair.
    one = pairs[(1.0, 1.0)]
    assert one["share:g"] == [(0.25, 0.75), (0.25, 0.75)]
    assert one["test:g"] == [(0.86, 0.90), (0.86, 0.90)]
    assert kinds["recorded"] == {"retrained": 3} and kinds["m = 1"] == {"fine-tuned": 3}
    assert margins.report(one, (1.0, 1.0))[1] is True  # better in both pairs, worse in none


def test_a_rule_of_two_margins_never_keeping_the_fine_tuned_weights(margins, monkeypatch) -> None:
    """``--rules 1/inf``: the anchor rule as shipped, the fine-tuned weights never kept
    (the kept model is the best training from scratch)."""
    assert margins.parse_rule("1/inf") == (1.0, float("inf"))
    for bad in ("1", "1/2/3", "-1/2", "nan/1", "a/1"):
        with pytest.raises(ValueError, match="rule"):
            margins.parse_rule(bad)
    assert margins.rule_name((1.0, float("inf"))) == "anchor 1 / kept inf"
    # A fine-tuned lead of 10 standard errors is still not kept; the anchor rule acts.
    assert margins.decide(_row(0.99, None), 1.0, float("inf")) == margins.Kept("retrained", 0.86)
    assert margins.decide(_row(0.99, 0.925), 1.0, float("inf")) == margins.Kept("anchor", 0.95)
    monkeypatch.setattr(margins, "table_test", lambda study: [0.80, 0.87, 0.89, 0.92])
    rows = [_row(0.95, None), _row(0.95, None, seed=1)]
    pairs, _, kinds = margins.replay(rows, [(1.0, float("inf"))])
    # Shipped keeps the fine-tuned weights (a lead of 3.2 standard errors): the rule that
    # never does is worse in both pairs and fails the registered rule.
    assert kinds["recorded"] == {"fine-tuned": 2}
    assert kinds["anchor 1 / kept inf"] == {"retrained": 2}
    assert margins.report(pairs[(1.0, float("inf"))], (1.0, float("inf")))[1] is False


def test_a_base_other_than_the_recorded_rule_is_what_the_candidates_are_paired_with(
    margins, monkeypatch
) -> None:
    """``--base 0/2``: candidates are paired with today's rule, the rows still checked
    against the rule they were recorded under."""
    monkeypatch.setattr(margins, "table_test", lambda study: [0.80, 0.87, 0.89, 0.92])
    # Fine-tuned 0.88 against the retrain's 0.85 on 100 samples: under one standard error
    # (~3.3 points), so the recorded rule and the base keep the retrain; 0/0 keeps the
    # fine-tuned weights (test 0.90).
    rows = [_row(0.88, None), _row(0.88, None, seed=1)]
    base = (0.0, 2.0)
    pairs, _, kinds = margins.replay(rows, [(0.0, 0.0)], base)
    assert kinds["recorded"] == {"retrained": 2} and kinds["base (anchor 0 / kept 2)"]
    assert pairs[(0.0, 0.0)]["test:g"] == [(0.86, 0.90), (0.86, 0.90)]
    text, ok = margins.report(pairs[(0.0, 0.0)], (0.0, 0.0), base)
    assert ok and text.startswith("m = 0 − base (anchor 0, kept 2)")


def test_rows_recorded_under_todays_rule_are_checked_against_it(margins, monkeypatch) -> None:
    """``--recorded 0/2``: a run recorded after the anchor margin went (an anchor kept by
    a lead under one standard error) replays; checked against 1/2 it is left out."""
    monkeypatch.setattr(margins, "table_test", lambda study: [0.80, 0.87, 0.89, 0.92])
    # The anchor validates 0.86 against the retrain's 0.85: ahead, by less than 1 SE.
    record = {"source": "anchor", "weights": "retrained"}
    rows = [_row(0.80, 0.86, kept_record=record), _row(0.80, 0.86, kept_record=record, seed=1)]
    _, skipped, _ = margins.replay(rows, [(0.0, 0.0)])
    assert skipped == {
        "used": 0,
        "the recorded margins do not reproduce the recorded kept model": 2,
    }
    pairs, skipped, kinds = margins.replay(rows, [(0.0, 0.0)], (0.0, 2.0), (0.0, 2.0))
    assert skipped == {"used": 2} and kinds["recorded"] == {"anchor": 2}
    assert pairs[(0.0, 0.0)]["test:g"] == [(0.95, 0.95), (0.95, 0.95)]


def test_config_keeps_one_configurations_rows(margins, tmp_path, monkeypatch, capsys) -> None:
    import json

    monkeypatch.setattr(margins, "table_test", lambda study: [0.80, 0.87, 0.89, 0.92])
    path = tmp_path / "runs.jsonl"
    rows = [_row(0.95, None, config="a"), _row(0.80, None, config="b")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    margins.main(["--runs", str(path), "--config", "b", "--margins", "--rules", "0/0"])
    out = capsys.readouterr().out
    assert "replayed 1" in out and "recorded: kept retrained 1" in out
    with pytest.raises(SystemExit):
        margins.main(["--runs", str(path), "--config", "c", "--margins", "--rules", "0/0"])
    assert "--config 'c': no run of that configuration" in capsys.readouterr().err
