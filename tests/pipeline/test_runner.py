from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.pipeline import StudyRunner
from nasflow.record import StudyMismatchError, get_constraints
from nasflow.search import StudyFileError, load_study_file
from nasflow.space import Arch
from nasflow.storage import SQLiteLock, StorageError
from tests._study_template import write_study


def _run(tmp_path, **kw):
    spec = load_study_file(write_study(tmp_path, **kw))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    return spec, runner


@pytest.mark.slow
def test_end_to_end_multi_objective_study_on_sqlite(tmp_path) -> None:
    spec, runner = _run(tmp_path, n_trials=8, finetune=3)
    result = runner.run()
    study = result.study
    assert (tmp_path / "runs" / "tiny" / "study.db").is_file()
    assert (tmp_path / "runs" / "tiny" / "supernet" / "epoch-1.pt").is_file()
    trials = study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED))
    assert len(trials) == 8
    for t in trials:
        arch = Arch.from_json(t.user_attrs["arch"])
        assert spec.space.validate(arch) == arch
        assert t.user_attrs["params"] > 0 and t.user_attrs["train_cost"] > 0
        assert 0.0 <= t.user_attrs["supernet_accuracy"] <= 1.0
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    # Optuna's own tools name the objectives as nasflow does (not "Objective 0").
    assert study.metric_names == ["fine-tuned validation accuracy", "predicted training cost (s)"]
    fig = optuna.visualization.plot_pareto_front(study)
    assert fig.layout.xaxis.title.text == "fine-tuned validation accuracy"
    assert fig.layout.yaxis.title.text == "predicted training cost (s)"
    # The Pareto set is non-dominated and the winner was retrained with a test score.
    assert result.pareto and result.winners
    w = result.winners[0]
    assert w.number == result.pareto[0].number
    assert 0.0 <= w.test_accuracy <= 1.0 and w.measured_train_cost > 0
    stored = study.user_attrs[f"nasflow:retrain:{w.number}"]
    assert stored["test_accuracy"] == w.test_accuracy
    counts = study.user_attrs["nasflow:supernet"]["op_counts"]
    per_label: dict[str, list[int]] = {}
    for label, _value, n in counts:
        per_label.setdefault(label, []).append(n)
    assert all(len(set(ns)) == 1 for ns in per_label.values())  # strictly fair: all equal


@pytest.mark.slow
def test_single_objective_study_uses_optunas_hyperband(tmp_path) -> None:
    spec, runner = _run(tmp_path, objectives=("accuracy",), n_trials=10, finetune=3)
    assert spec.resolved_pruner == "hyperband"
    result = runner.run(retrain=False)
    assert isinstance(result.study.pruner, optuna.pruners.HyperbandPruner)
    trials = result.study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED))
    assert len(trials) == 10
    scored = [t for t in trials if "duplicate_of" not in t.user_attrs]  # (reused: no epochs)
    assert all(t.intermediate_values for t in scored)  # reported every epoch
    assert max(max(t.intermediate_values) for t in scored) == 3


@pytest.mark.slow
def test_over_budget_candidates_are_recorded_and_skipped(tmp_path) -> None:
    _spec, runner = _run(tmp_path, n_trials=8, finetune=1, max_params=900)
    study = runner.run(retrain=False).study
    skipped = [t for t in study.trials if "skipped" in t.user_attrs]
    kept = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert skipped and kept
    for t in skipped:
        assert t.state == TrialState.PRUNED
        assert t.user_attrs["params"] > 900
        assert "supernet_accuracy" not in t.user_attrs  # no evaluation, no training
        assert get_constraints(t)[0] > 0
    for t in kept:
        assert t.user_attrs["params"] <= 900 and get_constraints(t)[0] <= 0


@pytest.mark.slow
def test_resume_continues_and_keeps_completed_trials(tmp_path) -> None:
    _, runner = _run(tmp_path, n_trials=4, finetune=1)
    first = runner.run(retrain=False).study
    before = {t.number: (t.params, t.values, t.state) for t in first.trials}
    _, runner = _run(tmp_path, n_trials=7, finetune=1)
    study = runner.run(retrain=False).study
    assert len(study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED))) == 7
    after = {t.number: (t.params, t.values, t.state) for t in study.trials}
    assert all(after[n] == v for n, v in before.items())


def test_a_second_process_on_the_same_sqlite_file_is_refused(tmp_path) -> None:
    _, runner = _run(tmp_path, n_trials=2, finetune=0)
    lock = SQLiteLock(runner.storage.path)
    lock.acquire()  # what a running `nasflow search` holds
    try:
        with pytest.raises(StorageError, match=r"SQLite supports one worker.*postgresql"):
            runner.run()
    finally:
        lock.release()
    assert not runner.storage.path.exists()  # refused before anything was written
    with pytest.raises(StorageError, match="shared storage"):
        runner.run(worker=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"channels": 6}, "fingerprint"),
        ({"objectives": ("accuracy", "params")}, "objectives"),
        # Fine-tuning changes what the first objective measures: not comparable either.
        ({"finetune": 1}, "fine-tuned validation accuracy"),
    ],
)
def test_resuming_with_another_space_or_objectives_is_refused(tmp_path, change, what) -> None:
    _, runner = _run(tmp_path, n_trials=2, finetune=0)
    runner.run(retrain=False)
    db = runner.storage.path
    size = db.stat().st_size
    _, other = _run(tmp_path, n_trials=4, **{"finetune": 0, **change})
    with pytest.raises(StudyMismatchError, match=what):
        other.run()
    study = optuna.load_study(study_name="tiny", storage=f"sqlite:///{db}")
    assert len(study.trials) == 2 and db.stat().st_size == size


def test_bad_study_files(tmp_path) -> None:
    with pytest.raises(StudyFileError, match="does not exist"):
        load_study_file(tmp_path / "nope.py")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(StudyFileError, match="must bind `study = StudySpec"):
        load_study_file(empty)
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(StudyFileError, match="RuntimeError: boom"):
        load_study_file(broken)
    nospace = write_study(tmp_path, extra="study = StudySpec(name='x', space=None, data=data)")
    with pytest.raises(StudyFileError, match="space must be a SearchSpace"):
        load_study_file(nospace)
    badobj = write_study(tmp_path, extra="study = study.replace(objectives=('latency',))")
    with pytest.raises(StudyFileError, match="unknown objective 'latency'"):
        load_study_file(badobj)


@pytest.mark.slow
def test_study_records_identity_for_later_checks(tmp_path) -> None:
    spec, runner = _run(tmp_path, n_trials=1, finetune=0)
    study = runner.run(retrain=False).study
    assert study.user_attrs["nasflow:fingerprint"] == spec.space.fingerprint()
    assert json.loads(study.user_attrs["nasflow:objectives"]) == list(spec.objectives)
