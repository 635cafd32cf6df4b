"""Deterministic mode (``StudySpec(deterministic=True)``, ``nasflow search
--deterministic``): nothing a clock measures decides anything, so two runs of one study
and seed keep the same model; and the summary line that says what a run's timings
decided (``nasflow.search.reproducibility_line``)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import torch

from nasflow.cli import main
from nasflow.cost import CostModel
from nasflow.pipeline import StudyRunner, reproducibility_line, reproducibility_record
from nasflow.pipeline._arch._ready import promote
from nasflow.record import (
    COST_TABLE_KEY,
    FINETUNED_KEY,
    KEPT_KEY,
    REPRODUCIBILITY_KEY,
    STACK_KEY,
    FineTuned,
    FineTuneResult,
    study_reproducibility,
    write_search_trials,
)
from nasflow.search import StudyFileError, load_study_file
from tests._study_template import write_study
from tests.cost.test_stability import _fit, _model

#: Fine-tuning under successive halving with two objectives (promotion by accuracy and a
#: cost), the stack calibrated by timing ("auto"), and a retrain of two finalists.
EXTRA = (
    "from nasflow.search import FineTuning\n"
    "study = study.replace(finetuning=FineTuning(finalists=3, rungs=(1, 2), keep=0.5, "
    "top=0), retrain_top=2, stack='auto', stack_budget=30.0{deterministic})"
)


def _spec(folder: Path, deterministic: bool = True):
    folder.mkdir(parents=True)
    extra = EXTRA.format(deterministic=", deterministic=True" if deterministic else "")
    return load_study_file(write_study(folder, n_trials=8, finetune=0, extra=extra))


@pytest.mark.slow
def test_two_deterministic_runs_keep_the_same_model_where_timings_would_differ(
    tmp_path: Path,
) -> None:
    runs, winners = [], []
    for name in ("a", "b"):
        spec = _spec(tmp_path / name)
        runner = StudyRunner(
            spec, out_dir=tmp_path / name / "runs", progress=False, log=lambda _m: None
        )
        result = runner.run()
        assert not torch.are_deterministic_algorithms_enabled()  # restored after the run
        runs.append(result.study)
        winners.append([(w.number, w.val_accuracy, w.test_accuracy) for w in result.winners])
        if name == "a":
            # The first run measured the shared cost table; say the machine looked loaded
            # meanwhile. A study that is not deterministic then measures it again (its
            # timings, other costs); a deterministic one takes it as stored.
            model = CostModel.for_space(spec.space, batch_size=spec.train.batch_size)
            assert model.shared is not None
            record = model.shared.load_stability(model.fingerprint, model.context_key)
            assert record is not None
            record = {**record, "loaded": True, "ratio": 3.0}
            model.shared.store_stability(model.fingerprint, model.context_key, record)
    first, second = runs
    assert second.user_attrs[COST_TABLE_KEY]["source"] == "shared table"
    assert second.user_attrs[COST_TABLE_KEY]["ops_measured_now"] == 0
    for study in runs:  # "auto" trained plain fp32, calibrating nothing
        assert STACK_KEY not in study.user_attrs
        why = study.user_attrs[REPRODUCIBILITY_KEY]
        assert why["deterministic"] and why["threads"] == torch.get_num_threads()
        assert "stack plain fp32 ('auto' not calibrated: deterministic mode)" in why["inputs"]
        assert "fine-tuning promoted by validation accuracy and predicted cost" in why["inputs"]
    # The first run on this device had no table to take: it measured one (on a machine
    # that looked loaded or not).
    (timed,) = first.user_attrs[REPRODUCIBILITY_KEY]["timed"]
    assert timed.startswith("cost table measured now")
    assert second.user_attrs[REPRODUCIBILITY_KEY]["timed"] == []
    assert "no clock decided anything" in reproducibility_line(study_reproducibility(second))

    def screened(study: optuna.Study) -> list[tuple[str, tuple[float, ...]]]:
        return [(t.user_attrs["arch"], tuple(t.values)) for t in study.trials if t.values]

    assert screened(first) == screened(second) and len(screened(first)) == 8
    ready = [FineTuneResult.from_dict(s.user_attrs[FINETUNED_KEY]).ready for s in runs]
    assert [(c.trial, c.val_accuracy, c.epochs) for c in ready[0]] == [
        (c.trial, c.val_accuracy, c.epochs) for c in ready[1]
    ]
    kept = [s.user_attrs[KEPT_KEY] for s in runs]
    assert kept[0] == kept[1] is not None  # the same kept model...
    assert winners[0] == winners[1] and winners[0]  # ...retrained to the same accuracies


def test_deterministic_refuses_what_measures_timings_now(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "s", deterministic=False)
    assert not spec.deterministic
    with pytest.raises(StudyFileError, match="deterministic must be True or False, got 1"):
        spec.replace(deterministic=1)
    for changes, named in (
        ({"cost": "measure"}, "cost='measure'"),
        ({"remeasure_costs": True}, "remeasure_costs=True"),
        ({"recalibrate_stack": True}, "recalibrate_stack=True"),
    ):
        with pytest.raises(StudyFileError, match=rf"deterministic=True decides nothing.*{named}"):
            spec.replace(deterministic=True, **changes)


def test_the_cli_flag_refuses_a_conflict_in_one_line(tmp_path: Path, capsys) -> None:
    study = write_study(tmp_path, n_trials=2, finetune=0)
    argv = ["search", str(study), "--runs", str(tmp_path / "runs"), "--remeasure-costs"]
    assert main([*argv, "--deterministic"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--deterministic:" in err and "remeasure_costs" in err
    assert not (tmp_path / "runs" / "tiny").exists()


def _tuned(trial: int, acc: float, seconds: float) -> FineTuned:
    return FineTuned(trial, "{}", 0.5, val_curve=[acc], epoch_seconds=[seconds])


def test_promotion_by_a_fixed_cost_ignores_the_measured_epoch_time() -> None:
    """Trial 1's epochs were slowed by a loaded machine: by measured time trial 2 goes on
    in its place; by the predicted costs (fixed before training) trial 1 does, whatever
    the clock measured."""
    cands = [_tuned(0, 0.90, 1.0), _tuned(1, 0.85, 9.0), _tuned(2, 0.60, 0.5)]
    assert [c.trial for c in promote(cands, 2 / 3, multi_objective=True)] == [0, 2]
    costs = {0: 3.0, 1: 1.0, 2: 2.0}
    by_cost = promote(cands, 2 / 3, multi_objective=True, costs=costs)
    assert [c.trial for c in by_cost] == [0, 1]
    quiet = [_tuned(0, 0.90, 1.0), _tuned(1, 0.85, 0.2), _tuned(2, 0.60, 0.5)]
    assert [c.trial for c in promote(quiet, 2 / 3, True, costs=costs)] == [0, 1]


def test_the_line_names_what_the_clock_decided_and_the_flag_that_fixes_it(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path / "s", deterministic=False)
    study = optuna.create_study(directions=spec.directions)
    calibrated = {"layers": [], "origin": {"kind": "calibrated", "measured_at": "x"}}
    study.set_user_attr(STACK_KEY, calibrated)
    study.set_user_attr(COST_TABLE_KEY, {"source": "measured now", "loaded": True})
    study.add_trial(optuna.trial.create_trial(values=[0.5, 1.0]))  # another process's
    record = reproducibility_record(study, spec, ran_trials=[], timeout=60.0)
    assert not record.deterministic and record.threads == torch.get_num_threads()
    line = reproducibility_line(record)
    assert line.startswith("reproducibility: seed fixed (")
    for part in (
        "stack calibrated now",
        "cost table measured now on a machine that looked loaded",
        "fine-tuning promoted by validation accuracy and measured epoch seconds",
        "1 trials scored by other processes",
        "a 60 s timeout",
        "`nasflow search --deterministic`",
    ):
        assert part in line, part
    quiet = {"layers": [], "origin": {"kind": "reused", "measured_at": "2025-01-02T03:04"}}
    study.set_user_attr(STACK_KEY, quiet)
    study.set_user_attr(COST_TABLE_KEY, {"source": "shared table", "measured_at": "2025-01"})
    done = reproducibility_record(study, spec, ran_trials=[0])
    assert done.timed == (
        "fine-tuning promoted by validation accuracy and measured epoch seconds",
    )
    # A finished study searched again scores nothing: its trials were an earlier run's,
    # recorded by that run, which no interleaving decided (it said "scored by other
    # processes, as they interleaved").
    write_search_trials(study, [0])
    again = reproducibility_record(study, spec, ran_trials=[])
    assert "1 trials scored by an earlier run of this study" in again.inputs
    assert again.timed == done.timed


@pytest.mark.slow
def test_a_cost_model_keeping_loaded_tables_reuses_one_flagged_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASFLOW_COST_CACHE", str(tmp_path / "shared" / "cost.db"))
    first = _fit(_model(tmp_path / "a" / "study.db"))
    assert first.shared is not None
    record = {**first.stability, "loaded": True, "ratio": 3.0}
    first.shared.store_stability(first.fingerprint, first.context_key, record)
    second = _model(tmp_path / "b" / "study.db")
    second.keep_loaded = True
    _fit(second)
    assert second.stats.measured_ops == 0 and second.stats.measured_steps == 0
    assert second.stability["source"] == "shared table"
    path = next(iter(first.space.enumerate()))
    assert second.predict_step_seconds(path) == first.predict_step_seconds(path)
