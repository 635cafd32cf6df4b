"""Search-level multipliers: a pure function of the trials, the phase times and the stack."""

from __future__ import annotations

import dataclasses
import math

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState

from nasflow.pipeline._multipliers import format_multipliers, format_stack, search_multipliers
from nasflow.record import (
    EarlyStopping,
    FineTuned,
    FineTuneResult,
    MultipliersRecord,
    StackRecord,
)


def _stored(record: MultipliersRecord) -> dict:
    """The record as the study stores it."""
    return record.to_dict()


def _stack(record: dict) -> StackRecord:
    return StackRecord.from_dict(record)


def _trial(state: TrialState, cost: float, epochs: int | None = None, skipped: bool = False):
    attrs: dict = {"train_cost": cost}
    if epochs is not None:
        attrs["epochs_trained"] = epochs
    if skipped:
        attrs["skipped"] = "over budget: params +20% over the limit"
    return optuna.trial.create_trial(
        state=state,
        values=[0.5, cost] if state == TrialState.COMPLETE else None,
        params={"x": 1},
        distributions={"x": IntDistribution(0, 2)},
        user_attrs=attrs,
    )


TRIALS = [
    _trial(TrialState.COMPLETE, 100.0, epochs=3),
    _trial(TrialState.COMPLETE, 60.0, epochs=3),
    _trial(TrialState.PRUNED, 40.0, epochs=1),  # stopped early by the pruner
    _trial(TrialState.PRUNED, 50.0, skipped=True),  # the gate: never evaluated
    _trial(TrialState.FAIL, 999.0, epochs=2),  # not a finished candidate
]
SECONDS = {"supernet": 30.0, "search": 20.0, "total": 70.0}


def test_each_multiplier_is_computed_from_its_own_records() -> None:
    m = _stored(search_multipliers(TRIALS, SECONDS, finetune_epochs=3))
    assert m["one_shot"]["estimate"] is True
    assert m["one_shot"]["estimated_standalone_seconds"] == 200.0  # evaluated: 100+60+40
    assert m["one_shot"]["actual_seconds"] == 50.0
    assert m["one_shot"]["multiplier"] == pytest.approx(4.0)
    assert "train_cost" in m["one_shot"]["note"]  # says what it was estimated from
    assert m["early_stopping"]["epochs_trained"] == 7
    assert m["early_stopping"]["epochs_without_pruning"] == 9  # 3 epochs x 3 evaluated
    assert m["early_stopping"]["multiplier"] == pytest.approx(9 / 7)
    assert m["gate"]["skipped"] == 1 and m["gate"]["skipped_predicted_seconds"] == 50.0
    assert m["gate"]["multiplier"] == pytest.approx(250 / 200)
    assert m["stack"]["multiplier"] is None and m["stack"]["label"] == "n/a"
    assert m["stack"]["note"].startswith("not measured")
    labels = {n: m[n]["label"] for n in ("one_shot", "early_stopping", "gate", "ddp")}
    assert labels == {
        "one_shot": "ESTIMATE",
        "early_stopping": "ESTIMATE",
        "gate": "ESTIMATE",
        "ddp": "n/a",
    }
    assert "epoch counts" in m["early_stopping"]["note"]  # what it was estimated from
    assert "cost model" in m["gate"]["note"]
    assert m["compounded"]["of"] == ["one_shot", "early_stopping", "gate"]
    assert m["compounded"]["multiplier"] == pytest.approx(4.0 * 9 / 7 * 1.25)
    assert m["end_to_end"]["seconds"] == 70.0 and m["end_to_end"]["multiplier"] is None


def test_a_measured_stack_joins_the_product_and_the_summary_names_it() -> None:
    record = {"end_to_end": 1.2, "product": 1.25, "chosen": ["threads", "amp"], "layers": []}
    m = _stored(
        search_multipliers(TRIALS, SECONDS, finetune_epochs=3, stack_record=_stack(record))
    )
    assert m["stack"]["multiplier"] == 1.2 and m["stack"]["chosen"] == ["threads", "amp"]
    assert m["stack"]["label"] == "MEASURED"
    assert m["compounded"]["of"][-1] == "stack" and m["compounded"]["measured"] == ["stack"]
    assert m["compounded"]["multiplier"] == pytest.approx(4.0 * 9 / 7 * 1.25 * 1.2)
    text = "\n".join(format_multipliers(MultipliersRecord.from_dict(m)))
    assert "ESTIMATE" in text and "x1.20  MEASURED" in text and "threads+amp" in text
    assert f"x{4.0 * 9 / 7 * 1.25 * 1.2:.2f}" in text
    # The measured wall time of the search stands beside the compounded estimate.
    compounded = next(x for x in text.splitlines() if "compounded" in x)
    assert "search 50s (supernet + search), the study's runs 70s" in compounded


#: A ``stack="auto"`` record as the calibration writes it (schema 2), reused from the
#: device's record: every layer alone and cumulatively, threads kept.
AUTO = {
    "schema": 2,
    "baseline": "fp32 eager, one process",
    "device": "cpu: test",
    "layers": [
        {"name": "amp", "alone": 0.8, "cumulative": 0.8, "kept": False},
        {"name": "threads", "alone": 1.5, "cumulative": 1.1, "kept": True},
    ],
    "end_to_end": 1.1,
    "product": 1.2,
    "interaction": 1.1 / 1.2,
    "chosen": ["threads"],
    "chosen_multiplier": 1.4,
    "chosen_from": "second phase",
    "candidates": [
        {"name": "amp", "kept": False, "reason": "gain x0.80 < x1.05"},
        {"name": "threads", "kept": True, "reason": "gain x1.50 >= x1.05"},
    ],
    "noise": {"multiplier": 0.97},
    "calibration": {"seconds": 12.0, "budget_seconds": 60.0, "min_gain": 1.05},
    "origin": {"kind": "reused", "measured_at": "2026-11-23T10:00:00+00:00"},
}


def test_the_stack_multiplier_is_the_chosen_stack_and_the_summary_shows_the_waterfall() -> None:
    m = _stored(search_multipliers(TRIALS, SECONDS, 3, stack_record=_stack(AUTO)))
    assert m["stack"]["multiplier"] == 1.4  # the chosen stack, not all layers stacked
    assert "reused: no calibration ran" in m["stack"]["note"]
    text = "\n".join(format_stack(_stack(AUTO)))
    assert "reused: no calibration ran for this study" in text
    amp = next(x for x in text.splitlines() if x.strip().startswith("amp"))
    assert "x0.80" in amp and "no" in amp and "gain x0.80 < x1.05" in amp
    assert "product of the layers alone" in text and "x1.20  ESTIMATE" in text
    assert "x1.10  MEASURED" in text  # end to end, all stacked
    assert "interaction" in text and "x0.92" in text
    assert "trained with: threads x1.40 MEASURED" in text and "12s of a 60s budget" in text
    nothing = {**AUTO, "chosen": [], "chosen_multiplier": None, "chosen_from": None}
    m = _stored(search_multipliers(TRIALS, SECONDS, 3, stack_record=_stack(nothing)))
    assert m["stack"]["multiplier"] is None and m["stack"]["label"] == "n/a"
    assert "no layer kept" in m["stack"]["note"]
    assert "MEASURED alone: amp x0.80, threads x1.50" in m["stack"]["note"]
    assert "trained with: the baseline" in "\n".join(format_stack(_stack(nothing)))


def test_a_skipped_calibration_is_not_a_measurement_and_says_how_to_run_it() -> None:
    skipped = {"schema": 2, "skipped": "estimated 900s exceeds the 60s budget", "layers": []}
    m = _stored(search_multipliers(TRIALS, SECONDS, 3, stack_record=_stack(skipped)))
    assert m["stack"]["multiplier"] is None and m["stack"]["label"] == "n/a"
    assert "stack" not in m["compounded"]["of"]
    text = "\n".join(
        format_stack(_stack(skipped)) + format_multipliers(MultipliersRecord.from_dict(m))
    )
    assert "calibration SKIPPED: estimated 900s exceeds the 60s budget" in text
    assert "--recalibrate-stack" in text and "measure-stack --auto" in text
    assert format_stack(None) == []


def test_nothing_to_measure_gives_no_made_up_numbers() -> None:
    m = _stored(search_multipliers([], {"supernet": 0.0, "search": 0.0}, finetune_epochs=0))
    for name in ("one_shot", "early_stopping", "gate", "stack", "ddp", "compounded"):
        assert m[name]["multiplier"] is None, name
    assert "n/a" in "\n".join(format_multipliers(MultipliersRecord.from_dict(m)))
    calibrated_nothing = {"end_to_end": None, "product": None, "chosen": [], "layers": []}
    m = _stored(search_multipliers(TRIALS, SECONDS, 0, stack_record=_stack(calibrated_nothing)))
    assert m["stack"]["multiplier"] is None and "baseline" in m["stack"]["note"]
    assert m["early_stopping"]["multiplier"] is None  # no fine-tuning at all
    assert all(math.isfinite(m[n]["multiplier"]) for n in ("one_shot", "gate"))


def test_a_baseline_sample_times_the_candidates_without_nasflow() -> None:
    def scored(arch: str, cost: float, duplicate: bool = False):
        t = _trial(TrialState.COMPLETE, cost)
        t.user_attrs["arch"] = arch
        if duplicate:
            t.user_attrs["duplicate_of"] = 0
        return t

    trials = [scored("a", 100.0), scored("b", 60.0), scored("c", 40.0), scored("a", 100.0, True)]
    m = _stored(search_multipliers(trials, SECONDS, 0, measured_standalone=[10.0, 30.0, 20.0]))
    one = m["one_shot"]
    # 3 distinct candidates (the duplicate reused a score) x the sample's median 20 s.
    assert one["distinct_candidates"] == 3 and one["median_measured_seconds"] == 20.0
    assert one["measured_standalone_seconds"] == 60.0
    # Timed when the tables were made, not in this run: an estimate from measurements.
    assert one["multiplier"] == pytest.approx(60.0 / 50.0) and one["label"] == "ESTIMATE"
    assert "when the study's baseline tables were made" in one["note"]
    # The cost model's, kept beside it; the repeat of "a" is not counted again.
    assert one["estimated_standalone_seconds"] == 200.0
    assert "one_shot" in m["compounded"]["of"] and "one_shot" not in m["compounded"]["measured"]
    assert m["end_to_end"]["without_nasflow_seconds"] == 60.0
    text = "\n".join(format_multipliers(MultipliersRecord.from_dict(m)))
    assert "measured on 3 random architectures" in text
    assert "without nasflow" in text and "60s" in text
    # Without a sample it stays an estimate, and no "without nasflow" figure is invented.
    plain = _stored(search_multipliers(trials, SECONDS, 0))
    assert plain["one_shot"]["label"] == "ESTIMATE"
    assert plain["end_to_end"]["without_nasflow_seconds"] is None
    assert "without nasflow" not in "\n".join(
        format_multipliers(MultipliersRecord.from_dict(plain))
    )


def test_the_fine_tuning_phase_early_stopping_is_measured_and_joins_the_product() -> None:
    """A study whose candidates are scored one-shot and whose finalists are fine-tuned in
    their own phase: the phase's timed epochs give the early-stopping multiplier, MEASURED,
    and the summary line says what was measured instead of "nothing to stop early"."""
    finetuned = FineTuneResult(
        tuple(FineTuned(n, "{}", 0.5) for n in range(3)),
        4,
        rungs=(1, 2, 4),
        early_stopping=EarlyStopping(1.25, 40.0, 50.0),
    )
    m = _stored(search_multipliers(TRIALS, SECONDS, finetune_epochs=0, finetuned=finetuned))
    early = m["early_stopping"]
    assert early["label"] == "MEASURED" and early["estimate"] is False
    assert early["multiplier"] == pytest.approx(50.0 / 40.0)  # from the seconds, not copied
    assert early["finalists"] == 3
    assert "early_stopping" in m["compounded"]["of"]
    line = next(
        x for x in format_multipliers(MultipliersRecord.from_dict(m)) if "early stopping" in x
    )
    assert "x1.25" in line and "MEASURED" in line and "3 finalists" in line
    assert "nothing to stop early" not in line
    # Without the phase (or with fine-tuning per candidate, counted) nothing changes.
    assert search_multipliers(TRIALS, SECONDS, 0).part("early_stopping").multiplier is None
    counted = search_multipliers(TRIALS, SECONDS, 3, finetuned=finetuned).part("early_stopping")
    assert counted.label == "ESTIMATE" and counted.epochs_trained == 7
    # A phase that trained nothing measured nothing.
    idle = dataclasses.replace(finetuned, early_stopping=EarlyStopping(math.nan, 0.0, 0.0))
    assert search_multipliers(TRIALS, SECONDS, 0, finetuned=idle).part("early_stopping").label == (
        "n/a"
    )
