"""The Python façade and Optuna objects where Optuna users hold them."""

from __future__ import annotations

import optuna
import pytest

import nasflow
from nasflow.record import StudyMismatchError
from nasflow.search import ParetoSuccessiveHalvingPruner, StudyFileError, load_study_file
from nasflow.train import Batches, evaluate
from tests._study_template import write_study


def _spec(tmp_path, **kw):
    return load_study_file(write_study(tmp_path, n_trials=4, finetune=0, **kw))


@pytest.mark.slow
def test_optimize_and_export_winner_with_optuna_objects(tmp_path) -> None:
    storage = optuna.storages.InMemoryStorage()
    sampler = optuna.samplers.RandomSampler(seed=3)
    spec = _spec(tmp_path).replace(
        storage=storage, sampler=sampler, pruner=optuna.pruners.NopPruner()
    )
    result = nasflow.optimize(spec, out_dir=tmp_path / "runs", log=None)
    study = result.study
    assert isinstance(study, optuna.Study) and study.sampler is sampler
    assert isinstance(study.pruner, optuna.pruners.NopPruner)
    assert (
        result.storage.kind == "memory" and not (tmp_path / "runs" / "tiny" / "study.db").exists()
    )
    # The study is in the user's storage object, named as nasflow names its numbers.
    again = optuna.load_study(study_name="tiny", storage=storage)
    assert len(again.trials) == 4
    assert again.metric_names == ["supernet score", "predicted training cost (s)"]
    # The `analysis` extra's pandas table names the columns the same way.
    frame = again.trials_dataframe()
    assert {"values_supernet score", "values_predicted training cost (s)"} <= set(frame.columns)
    assert len(frame) == 4
    (winner,) = result.winners
    info = nasflow.export_winner(result, tmp_path / "winner", onnx=False, log=None)
    assert info.weights["kind"] == "retrained" and info.arch == winner.arch
    model = nasflow.load_exported(tmp_path / "winner")
    test_accuracy, _ = evaluate(model, Batches(spec.data().test, 512, shuffle=False))
    assert test_accuracy == info.metrics["test_accuracy"] == winner.test_accuracy


@pytest.mark.slow
def test_an_existing_optuna_study_is_adopted_and_resumed(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'mine.db'}"
    mine = optuna.create_study(study_name="tiny", storage=url, directions=["maximize", "minimize"])
    spec = _spec(tmp_path).replace(study=mine)
    result = nasflow.optimize(spec, out_dir=tmp_path / "runs", retrain=False, log=None)
    assert result.storage.kind == "sqlite" and result.storage.path == tmp_path / "mine.db"
    assert len(optuna.load_study(study_name="tiny", storage=url).trials) == 4
    # Resuming through the same object runs only what is missing.
    result = nasflow.optimize(spec, n_trials=6, out_dir=tmp_path / "runs", retrain=False, log=None)
    assert len(result.study.trials) == 6 and len(result.ran_trials) == 2


def test_a_study_holding_foreign_trials_is_refused(tmp_path) -> None:
    mine = optuna.create_study(study_name="tiny", directions=["maximize", "minimize"])
    mine.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=2)
    spec = _spec(tmp_path).replace(study=mine)
    with pytest.raises(StudyMismatchError, match="2 trials that nasflow did not make"):
        nasflow.optimize(spec, out_dir=tmp_path / "runs", log=None)
    assert len(mine.trials) == 2


def test_optuna_objects_that_cannot_fit_are_refused_at_construction(tmp_path) -> None:
    spec = _spec(tmp_path)
    with pytest.raises(StudyFileError, match=r"MedianPruner reads trial\.report"):
        spec.replace(pruner=optuna.pruners.MedianPruner())
    spec.replace(pruner=ParetoSuccessiveHalvingPruner())  # fits several objectives
    single = _spec(tmp_path, objectives=("accuracy",))
    single.replace(pruner=optuna.pruners.MedianPruner())  # fits one
    other = optuna.create_study(study_name="other", directions=["maximize", "minimize"])
    with pytest.raises(StudyFileError, match="named 'other'"):
        spec.replace(study=other)
    wrong = optuna.create_study(study_name="tiny", directions=["maximize"])
    with pytest.raises(StudyFileError, match=r"directions \['maximize'\]"):
        spec.replace(study=wrong)
    with pytest.raises(StudyFileError, match="storage must be a URL or an Optuna storage"):
        spec.replace(storage=42)
    with pytest.raises(StudyFileError, match="not both"):
        spec.replace(
            study=optuna.create_study(study_name="tiny", directions=["maximize", "minimize"]),
            storage="sqlite:///x.db",
        )
