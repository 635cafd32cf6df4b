"""The result of a run, stated from the study's records: which model is kept and which
weights, its test accuracy, the share of random architectures it beats, the anchors' and
the trust verdicts and the export command, in at most six lines.

The studies are built through Optuna's ask/tell API with the records a finished run
writes (their numbers are test data); a real run's result is checked in
``tests/report/test_result.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasflow import names
from nasflow.names import set_metric_names
from nasflow.pipeline import headline, headline_lines, study_location
from nasflow.record import (
    ANCHORS_KEY,
    BASELINE_KEY,
    FINETUNED_KEY,
    KEPT_KEY,
    TRUST_KEY,
    BaselineRecord,
    retrain_key,
)
from nasflow.storage import StorageSpec
from tests.report._studies import arch_json, make_study

TRUST = {
    "tau": 0.52,
    "low": 0.2,
    "high": 0.75,
    "archs": ["a"] * 8,
    "supernet_scores": [0.5] * 8,
    "short_accuracies": [0.5] * 8,
    "epochs": 2,
    "seconds": 10.0,
    "verdict": "screen more: the ranking is only roughly right here",
    "proxy": "finetune",
    "margin": 0.15,
}


def _retrain(val: float, test: float, seconds: float) -> dict[str, Any]:
    return {
        "val_accuracy": val,
        "test_accuracy": test,
        "measured_train_cost": seconds,
        "predicted_train_cost": 1.0,
    }


def _candidate(trial: int, curve: list[float], test: float) -> dict[str, Any]:
    return {
        "trial": trial,
        "arch": arch_json(["k5", "k3"]),
        "supernet_accuracy": 0.5,
        "val_curve": curve,
        "epoch_seconds": [1.0] * len(curve),
        "test_accuracy": test,
        "status": "ready",
    }


def _study(kept: dict[str, Any], anchor_val: float = 0.80, **attrs: Any):
    """Trial 0 a zero-cost anchor, trials 1 and 2 retrained (1 validates higher)."""
    trials = [
        {
            "values": [0.6 + 0.1 * i, 1.0 + i],
            "attrs": {"arch": arch_json([op]), "params": 100 * (i + 1)},
        }
        for i, op in enumerate(["k3", "k5", "k7"])
    ]
    anchor = {
        "index": 0,
        "trial": 0,
        "val_accuracy": anchor_val,
        "test_accuracy": anchor_val - 0.01,
        "measured_train_cost": 1.5,
        "arch": arch_json(["k3"]),
    }
    records = {
        KEPT_KEY: kept,
        retrain_key(1): _retrain(0.90, 0.89, 3.0),
        retrain_key(2): _retrain(0.88, 0.87, 2.0),
        ANCHORS_KEY: {"anchors": [anchor]},
        TRUST_KEY: TRUST,
        BASELINE_KEY: {"files": ["t.csv"], "test_accuracies": [0.5, 0.8, 0.88, 0.9, 0.95]},
        **attrs,
    }
    study = make_study(trials, user_attrs=records)
    set_metric_names(study, [names.SUPERNET_SCORE, names.PREDICTED_COST])
    return study


SEARCH = {"trial": 1, "weights": "retrained", "source": "search"}


def test_the_kept_retrain_is_stated_with_its_test_accuracy_and_what_it_beats() -> None:
    h = headline(_study(SEARCH), ("--runs", "out"))
    assert (h.trial, h.test_accuracy, h.val_accuracy, h.seconds) == (1, 0.89, 0.90, 3.0)
    assert h.weights.startswith("retrained from scratch") and h.params == 200
    assert h.beaten == pytest.approx(3 / 5)  # 0.5, 0.8 and 0.88 are below 0.89
    assert h.export == "nasflow export " + h.study + " --runs out --best --out DIR"
    # No validation count recorded: no margin, so any lead is a lead.
    assert "ahead by 10.00 points" in h.anchors and "(trial 0, from scratch) 0.8000" in h.anchors
    assert h.trust.startswith("Kendall tau +0.52 (interval +0.20 to +0.75;")
    assert h.trust.endswith("screen more: the ranking is only roughly right here")
    lines = headline_lines(h, summarize=lambda arch: "ARCH", report="`nasflow report x`")
    assert len(lines) == 6 and lines[0].startswith(
        f"result: study {h.study!r} keeps trial 1 (ARCH)"
    )
    text = "\n".join(lines)
    said = (
        "test accuracy 0.8900 (test split; validation 0.9000 chose it)",
        "200 parameters",
        "3.0 s measured (wall time",
        "beats 60% of 5 stand-alone trainings of random architectures",
        "(rows of 1 table; test accuracy",
        "median 0.8800",
        h.anchors,
        h.trust,
        f"`{h.export}`",
        "`nasflow report x`",
    )
    for part in said:
        assert part in text, part


def test_kept_fine_tuned_weights_are_named_and_exported_as_a_ready_model() -> None:
    tuned = {
        "candidates": [_candidate(1, [0.91, 0.95], 0.94), _candidate(2, [0.9], 0.9)],
        "rungs": [1, 2],
    }
    study = _study(
        {"trial": 1, "weights": "fine-tuned", "source": "search"}, **{FINETUNED_KEY: tuned}
    )
    h = headline(study)
    assert h.weights == "fine-tuned from inherited supernet weights, 2 epochs"
    assert (h.test_accuracy, h.val_accuracy, h.seconds) == (0.94, 0.95, 2.0)
    assert "fine-tuning epochs" in h.seconds_what and "supernet" in h.seconds_what
    assert h.export == f"nasflow export {h.study} --ready 1 --out DIR"
    # The anchors are compared with the weights the search keeps: the fine-tuned ones.
    assert "the search's choice (fine-tuned) validates 0.9500" in h.anchors


def test_a_kept_anchor_is_stated_as_the_anchor_that_beat_the_search() -> None:
    kept = {"trial": 0, "weights": "retrained", "source": "anchor"}
    h = headline(_study(kept, anchor_val=0.97))
    assert h.weights.startswith("a zero-cost anchor") and h.test_accuracy == 0.96
    assert h.seconds == 1.5 and h.beaten == 1.0  # above all five
    assert h.anchors.startswith("an anchor is kept: the best zero-cost anchor (trial 0")
    assert "against 0.9000 for the search's choice (retrained), higher by 7.00 points" in h.anchors
    assert "the best validation is kept" in h.anchors
    assert h.export.endswith("--best --out DIR")


def test_an_anchor_below_or_level_with_the_search_leaves_the_search_choice() -> None:
    # One point ahead on 100 samples is well inside a standard error (~3 points), and
    # enough: two full trainings are compared with no margin.
    tuned = {"candidates": [_candidate(2, [0.5], 0.5)], "rungs": [1], "val_samples": 100}
    study = _study(SEARCH, anchor_val=0.89, **{FINETUNED_KEY: tuned})
    h = headline(study)
    assert h.anchors.endswith("the search is ahead by 1.00 points")
    level = headline(_study(SEARCH, anchor_val=0.90, **{FINETUNED_KEY: tuned}))
    assert level.anchors.endswith("tied; the search's choice stays")


def test_without_a_kept_model_the_headline_says_why_and_names_the_best_screened_trial() -> None:
    study = _study(SEARCH)
    study.set_user_attr(KEPT_KEY, None)
    h = headline(study)
    assert h.kept is None and "--no-retrain" in h.why_none
    assert h.trial == 2 and h.score == (names.SUPERNET_SCORE, pytest.approx(0.8))  # Pareto best
    lines = headline_lines(h)
    assert len(lines) <= 6 and lines[0].startswith(f"result: study {h.study!r} keeps no model")
    assert lines[1] == (
        "  best by supernet score: trial 2, 0.8000 (validation accuracy with inherited "
        "supernet weights: not a trained model's accuracy)"
    )
    assert lines[-1].startswith(f"  export: `nasflow export {h.study} --best --out DIR`")


def test_missing_records_are_said_not_left_out() -> None:
    study = make_study(
        [{"values": [0.5, 1.0], "attrs": {"arch": arch_json(["k3"])}}],
        user_attrs={KEPT_KEY: SEARCH | {"trial": 0}, retrain_key(0): _retrain(0.6, 0.55, 2.0)},
    )
    lines = headline_lines(headline(study))
    assert len(lines) == 6
    assert "no table of random architectures" in lines[2] and "StudySpec.baseline" in lines[2]
    assert "none trained (StudySpec.anchors)" in lines[3]
    assert "no trust probe ran (StudySpec.trust)" in lines[4]


def test_the_export_command_finds_the_study_where_the_run_put_it(tmp_path: Path) -> None:
    default = Path("runs") / "s"
    sqlite = StorageSpec("sqlite:///runs/s/study.db", "sqlite", default / "study.db")
    assert study_location(default, sqlite) == ()
    other = tmp_path / "elsewhere" / "s"
    here = StorageSpec(f"sqlite:///{other}/study.db", "sqlite", other / "study.db")
    assert study_location(other, here) == ("--runs", str(other.parent))
    pg = StorageSpec("postgresql://u:secret@h/db", "postgresql")
    location = study_location(default, pg)
    assert location[0] == "--storage" and "secret" not in location[1]


def test_the_baseline_record_counts_ties_as_not_beaten_and_reads_back() -> None:
    record = BaselineRecord(("a.csv",), (0.5, 0.7, 0.7, 0.9))
    assert record.beaten(0.7) == 0.25 and record.beaten(0.95) == 1.0 and record.median == 0.7
    assert BaselineRecord.from_dict(record.to_dict()) == record
    assert BaselineRecord().beaten(0.9) == 0.0 and BaselineRecord().median is None


def test_with_the_top_rung_from_inherited_weights_the_anchors_meet_the_fine_tuned_choice() -> None:
    """``retrain_top=0``: the search's choice is a fine-tuned finalist with no retrain; the
    anchors are compared with its fine-tuned validation, never with a spread retrain (not a
    candidate), whether the search's choice or an anchor is kept."""
    tuned = {
        "candidates": [_candidate(1, [0.5, 0.92], 0.91), _candidate(2, [0.4], 0.40)],
        "rungs": [1, 2],
        "val_samples": 100,
    }
    spread = _retrain(0.97, 0.96, 2.0) | {"spread": True}

    def study(kept: dict[str, Any], anchor_val: float):
        s = _study(kept, anchor_val=anchor_val, **{FINETUNED_KEY: tuned})
        s.set_user_attr(retrain_key(1), None)
        s.set_user_attr(retrain_key(2), spread)
        return s

    fine_tuned = {"trial": 1, "weights": "fine-tuned", "source": "search"}
    h = headline(study(fine_tuned, 0.80))
    assert h.anchors == (
        "the search's choice (fine-tuned, the full recipe) validates 0.9200, the best "
        "zero-cost anchor (trial 0, from scratch) 0.8000: the search is ahead by 12.00 points"
    )
    anchor = {"trial": 0, "weights": "retrained", "source": "anchor"}
    h = headline(study(anchor, 0.95))
    assert h.anchors.startswith(
        "an anchor is kept: the best zero-cost anchor (trial 0, from scratch) validates "
        "0.9500 against 0.9200 for the search's choice (fine-tuned, the full recipe)"
    )
