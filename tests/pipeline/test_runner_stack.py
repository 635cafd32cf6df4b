"""The study's speedup stack reaches every phase; "auto" is measured once per device and
context, stored in the study's database and reused by every study there."""

from __future__ import annotations

import pytest
import torch
from optuna.trial import TrialState

from nasflow.calibrate._store import StackCalibrationTable
from nasflow.pipeline import StudyRunner, summary_table
from nasflow.record import MULTIPLIERS_KEY
from nasflow.report import stack_data
from nasflow.search import StudyFileError, load_study_file
from nasflow.train import load_checkpoint
from nasflow.train.stack import Stack
from tests._busy import steady_machine  # noqa: F401 (a fixture)
from tests._study_template import write_study

# Stored and reused records: whether this machine is loaded meanwhile is not these tests'
# to control (a calibration under load is not stored: tests/calibrate/test_stack_load.py).
pytestmark = pytest.mark.usefixtures("steady_machine")

IMPORT = "from nasflow.train.stack import Stack\n"


def _runner(tmp_path, extra: str, **kw) -> StudyRunner:
    spec = load_study_file(write_study(tmp_path, extra=extra, **kw))
    return StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)


@pytest.mark.slow
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
    assert m["stack"]["multiplier"] is None and m["stack"]["note"].startswith("not measured")
    assert "search-level multipliers" in summary_table(result, runner.spec)


@pytest.fixture
def one_thread():
    """Two intra-op threads on a busy 2-core machine make tiny convolutions crawl, and the
    calibration's budget probe would then skip it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


AUTO = "study = study.replace(stack='auto', stack_budget=600.0)\n"


def _auto(tmp_path, name: str, storage: str | None = None, extra: str = ""):
    """A tiny ``stack="auto"`` study and the lines it logs."""
    spec = load_study_file(
        write_study(tmp_path, name=name, extra=AUTO + extra, n_trials=2, finetune=0)
    )
    lines: list[str] = []
    runner = StudyRunner(
        spec, storage, out_dir=tmp_path / "runs", progress=False, log=lines.append
    )
    return runner, lines


def _calibrated(lines: list[str]) -> list[str]:
    """The calibration's progress lines (one per interleaved round): none when reused."""
    return [m for m in lines if m.startswith("stack calibration:")]


@pytest.mark.slow
def test_auto_stack_is_calibrated_once_stored_and_reused_on_resume(tmp_path, one_thread) -> None:
    runner, lines = _auto(tmp_path, "tiny")
    first = runner.run(retrain=False)
    record = first.study.user_attrs["nasflow:stack"]
    assert _calibrated(lines) and record["origin"]["kind"] == "calibrated"
    assert record["schema"] == 2 and record["baseline"] == "fp32 eager, one process"
    assert runner.stack == Stack.from_dict(record["stack"])
    assert set(record["chosen"]) <= {"amp", "accumulation", "denormal", "threads"}
    assert [x["name"] for x in record["layers"]] == [
        "amp",
        "accumulation",
        "denormal",
        "threads",
    ]  # on a CPU compile's warm-up alone is over the calibration budget
    # The run's calibration phase contains the calibration the record measured.
    assert 0 < record["calibration"]["seconds"] <= first.seconds["calibration"]
    m = first.study.user_attrs[MULTIPLIERS_KEY]
    assert m["stack"]["multiplier"] == record["chosen_multiplier"]
    # Resumed: the stored choice is reused (so the supernet checkpoint still matches).
    again, lines = _auto(tmp_path, "tiny", extra="study = study.replace(n_trials=3)")
    second = again.run(retrain=False)
    assert "calibration" not in second.seconds and _calibrated(lines) == []
    assert second.study.user_attrs["nasflow:stack"] == record
    assert again.stack == runner.stack


@pytest.mark.slow
def test_another_study_in_the_database_reuses_the_device_record(tmp_path, one_thread) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    a, lines_a = _auto(tmp_path, "first", url)
    ra = a.run(retrain=False)
    rec_a = ra.study.user_attrs["nasflow:stack"]
    assert _calibrated(lines_a) and rec_a["origin"]["kind"] == "calibrated"
    with StackCalibrationTable(url) as table:
        assert table.count() == 1  # the device record, in the study's own database
    # Another study (another name), same database, device and context: no calibration step.
    b, lines_b = _auto(tmp_path, "second", url)
    rb = b.run(retrain=False)
    rec_b = rb.study.user_attrs["nasflow:stack"]
    assert _calibrated(lines_b) == [] and "calibration" not in rb.seconds
    assert rec_b["origin"]["kind"] == "reused"
    assert {k: v for k, v in rec_b.items() if k != "origin"} == {
        k: v for k, v in rec_a.items() if k != "origin"
    }  # the same measurements, copied into the second study for its report
    assert b.stack == a.stack
    summary = summary_table(rb, b.spec)
    assert "reused: no calibration ran for this study" in summary
    assert "product of the layers alone" in summary and "end to end, all 4 stacked" in summary
    # A changed context (another batch size) calibrates again, stored next to the first.
    bigger = "study = study.replace(train=TrainConfig(epochs=2, batch_size=40))"
    c, lines_c = _auto(tmp_path, "third", url, extra=bigger)
    rc = c.run(retrain=False)
    assert _calibrated(lines_c) and rc.study.user_attrs["nasflow:stack"]["origin"]["kind"] == (
        "calibrated"
    )
    with StackCalibrationTable(url) as table:
        assert table.count() == 2


@pytest.mark.slow
def test_a_calibration_over_budget_is_skipped_and_the_summary_says_how_to_run_it(
    tmp_path, one_thread
) -> None:
    runner, lines = _auto(tmp_path, "tiny", extra="study = study.replace(stack_budget=1e-6)")
    result = runner.run(retrain=False)
    record = result.study.user_attrs["nasflow:stack"]
    assert _calibrated(lines) == [] and runner.stack == Stack()
    assert "exceeds the 1e-06s budget" in record["skipped"]
    with StackCalibrationTable(result.storage.url) as table:
        assert table.count() == 0  # nothing measured, nothing stored for other studies
    summary = summary_table(result, runner.spec)
    assert "calibration SKIPPED" in summary and "--recalibrate-stack" in summary
    stack_line = next(x for x in summary.splitlines() if "training stack" in x)
    assert "n/a" in stack_line and "skipped" in stack_line
    data = stack_data(result.study)  # the report: a "not measured" panel with the reason
    assert not data.measured and "skipped" in data.note


@pytest.mark.parametrize("bad", ["'fast'", "{'amp': 'bf16'}"])
def test_a_bad_stack_is_refused_naming_it(tmp_path, bad) -> None:
    with pytest.raises(StudyFileError, match="stack must be a Stack, 'auto' or None, got"):
        _runner(tmp_path, f"study = study.replace(stack={bad})")
    with pytest.raises(StudyFileError, match="'fast'"):
        _runner(tmp_path, "study = study.replace(stack='fast')")


@pytest.mark.slow
def test_recalibrate_stack_calibrates_again_and_replaces_the_device_record(
    tmp_path, one_thread, capsys
) -> None:
    from nasflow.cli import main

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first, _ = _auto(tmp_path, "first", url)
    first.run(retrain=False)
    with StackCalibrationTable(url) as table:
        assert table.count() == 1
    capsys.readouterr()
    study = write_study(tmp_path, name="second", extra=AUTO, n_trials=2, finetune=0)
    argv = ["search", str(study), "--storage", url, "--runs", str(tmp_path / "runs")]
    assert main([*argv, "--no-progress", "--no-retrain", "--recalibrate-stack"]) == 0
    out = capsys.readouterr().out
    assert "stack calibration: round" in out  # calibrated although a record was stored
    assert "calibrated on this device for this study" in out and "reused" not in out
    with StackCalibrationTable(url) as table:
        assert table.count() == 1  # replaced, not added


@pytest.mark.parametrize("bad", ["0", "-5", "float('inf')", "'60'", "True"])
def test_a_bad_stack_budget_is_refused_naming_it(tmp_path, bad) -> None:
    with pytest.raises(StudyFileError, match="stack_budget must be a positive number"):
        _runner(tmp_path, f"study = study.replace(stack='auto', stack_budget={bad})")
