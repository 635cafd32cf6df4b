"""The study's speedup stack reaches every phase; "auto" is measured once and stored."""

from __future__ import annotations

import pytest
from optuna.trial import TrialState

from nasflow.search import StudyFileError, StudyRunner, load_study_file, summary_table
from nasflow.search._multipliers import MULTIPLIERS_KEY
from nasflow.train import load_checkpoint
from nasflow.train.stack import Stack
from tests.search._study_template import write_study

IMPORT = "from nasflow.train.stack import Stack\n"


def _runner(tmp_path, extra: str, **kw) -> StudyRunner:
    spec = load_study_file(write_study(tmp_path, extra=extra, **kw))
    return StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)


def test_a_fixed_stack_trains_every_phase_and_stores_no_measurement(tmp_path) -> None:
    extra = IMPORT + "study = study.replace(stack=Stack(accumulation=2))"
    runner = _runner(tmp_path, extra, n_trials=4, finetune=2)
    result = runner.run()
    study = result.study
    assert runner.stack == Stack(accumulation=2)
    state = load_checkpoint(tmp_path / "runs" / "tiny" / "supernet" / "epoch-1.pt")
    assert state["stack"]["ks"] == [2, 2, 2, 2]  # 8 batches of 50, two per optimizer step
    assert '"accumulation": 2' in state["identity"]
    assert "nasflow:stack" not in study.user_attrs  # nothing was measured
    assert result.winners and result.winners[0].measured_train_cost > 0
    m = study.user_attrs[MULTIPLIERS_KEY]
    done = (TrialState.COMPLETE, TrialState.PRUNED)
    evaluated = [t for t in study.trials if t.state in done and "skipped" not in t.user_attrs]
    assert m["one_shot"]["candidates"] == len(evaluated) == 4
    cost = sum(t.user_attrs["train_cost"] for t in evaluated)
    assert m["one_shot"]["estimated_standalone_seconds"] == pytest.approx(cost)
    seconds = study.user_attrs["nasflow:seconds"]
    assert m["one_shot"]["actual_seconds"] == pytest.approx(
        seconds["supernet"] + seconds["search"]
    )
    trained = sum(t.user_attrs.get("epochs_trained", 0) for t in evaluated)
    assert m["early_stopping"]["epochs_trained"] == trained
    assert m["early_stopping"]["epochs_without_pruning"] == 2 * 4
    assert m["stack"]["multiplier"] is None and m["stack"]["note"] == "not measured"
    assert "search-level multipliers" in summary_table(result, runner.spec)


def test_auto_stack_is_calibrated_once_stored_and_reused_on_resume(tmp_path) -> None:
    runner = _runner(tmp_path, "study = study.replace(stack='auto')", n_trials=2, finetune=0)
    first = runner.run(retrain=False)
    record = first.study.user_attrs["nasflow:stack"]
    assert record["schema"] == 1 and record["baseline"] == "fp32 eager, one process"
    assert runner.stack == Stack.from_dict(record["stack"])
    assert set(record["chosen"]) <= {"amp", "accumulation", "denormal", "threads"}
    assert {c["name"] for c in record["candidates"]} == {
        "amp",
        "accumulation",
        "denormal",
        "threads",
    }  # on a CPU compile's warm-up alone is over the calibration budget
    # The run's calibration phase contains the calibration the record measured.
    assert 0 < record["calibration"]["seconds"] <= first.seconds["calibration"]
    m = first.study.user_attrs[MULTIPLIERS_KEY]
    assert m["stack"]["multiplier"] == record["end_to_end"]
    # Resumed: the stored choice is reused (so the supernet checkpoint still matches).
    again = _runner(tmp_path, "study = study.replace(stack='auto')", n_trials=3, finetune=0)
    second = again.run(retrain=False)
    assert "calibration" not in second.seconds
    assert second.study.user_attrs["nasflow:stack"] == record
    assert again.stack == runner.stack


@pytest.mark.parametrize("bad", ["'fast'", "{'amp': 'bf16'}"])
def test_a_bad_stack_is_refused_naming_it(tmp_path, bad) -> None:
    with pytest.raises(StudyFileError, match="stack must be a Stack, 'auto' or None, got"):
        _runner(tmp_path, f"study = study.replace(stack={bad})")
    with pytest.raises(StudyFileError, match="'fast'"):
        _runner(tmp_path, "study = study.replace(stack='fast')")
