from __future__ import annotations

import csv
import re
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.cli import main as cli_main
from nasflow.pipeline import StudyRunner
from nasflow.search import StudyFileError, StudySpec, load_study_file
from nasflow.search_spaces.nas_bench_201 import NASBench201Space
from nasflow.tabular import TabularBenchmark, tabular_outcome
from nasflow.train import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "studies" / "nb201_tabular.py"
METRIC = "cifar10_test_acc_200ep"


@pytest.fixture
def nb201_csv(shared_data_file, monkeypatch) -> Path:
    path = shared_data_file("nb201_cifar10.csv")
    monkeypatch.setenv("NASFLOW_NB201_CSV", str(path))
    return path


@pytest.mark.slow
def test_nasflow_search_runs_the_tabular_study_and_prints_the_regret(
    nb201_csv, tmp_path, capsys
) -> None:
    out = tmp_path / "runs"
    args = ["search", str(STUDY), "--runs", str(out), "--n-trials", "8", "--no-progress"]
    assert cli_main(args) == 0
    text = capsys.readouterr().out
    regret = float(re.search(r"regret to the optimum: ([0-9.]+)", text).group(1))
    study = optuna.load_study(
        study_name="nb201_tabular", storage=f"sqlite:///{out}/nb201_tabular/study.db"
    )
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(done) == 8
    table = load_study_file(STUDY).table
    for t in done:  # every value is the table's, for the arch the trial recorded
        assert t.values[0] == table.lookup(table.arch(t.user_attrs["table_key"]))
    assert regret == pytest.approx(table.optimum - max(t.values[0] for t in done), abs=1e-4)
    assert "94.3733" in text  # the table's optimum is printed next to the best found
    # Phases 1 and 3 were skipped: no supernet checkpoint, no retrained winner.
    assert not (out / "nb201_tabular" / "supernet").exists()
    assert not any(k.startswith("nasflow:retrain") for k in study.user_attrs)
    assert "nasflow:supernet" not in study.user_attrs

    # Resuming keeps the finished trials and adds the missing ones.
    before = {t.number: t.params for t in done}
    assert cli_main([*args[:-3], "--n-trials", "10", "--no-progress"]) == 0
    study = optuna.load_study(
        study_name="nb201_tabular", storage=f"sqlite:///{out}/nb201_tabular/study.db"
    )
    after = {t.number: t.params for t in study.get_trials(states=(TrialState.COMPLETE,))}
    assert len(after) == 10 and all(after[n] == p for n, p in before.items())


def test_a_missing_table_is_one_clear_error_line(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("NASFLOW_NB201_CSV", str(tmp_path / "nope.csv"))
    assert cli_main(["search", str(STUDY), "--runs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nope.csv' does not exist" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "nb201_tabular").exists()


def _partial_table(tmp_path: Path, full: Path) -> Path:
    """The rows whose first edge is not ``none`` (4/5 of the space)."""
    path = tmp_path / "partial.csv"
    with full.open(newline="") as src, path.open("w", newline="") as dst:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(dst, reader.fieldnames)
        writer.writeheader()
        writer.writerows(r for r in reader if not r["arch"].startswith("|none~0|"))
    return path


@pytest.mark.slow
def test_architectures_missing_from_a_partial_table_fail_and_the_study_goes_on(
    nb201_csv, tmp_path
) -> None:
    space = NASBench201Space()
    table = TabularBenchmark(
        _partial_table(tmp_path, nb201_csv), space, metric=METRIC, complete=False
    )
    spec = StudySpec(
        "partial",
        space,
        table=table,
        objectives=("accuracy",),
        sampler="random",
        n_trials=8,
        seed=3,
    )
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    study = runner.run().study
    failed = study.get_trials(states=(TrialState.FAIL,))
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert failed and done
    for t in failed:
        assert t.user_attrs["table_key"].startswith("|none~0|")
        assert t.user_attrs["fail_reason"] == "no row in partial.csv"
    outcome = tabular_outcome(study, table)
    assert outcome.trials == len(done) and outcome.regret >= 0


@pytest.mark.slow
def test_tabular_study_specs_are_checked(nb201_csv) -> None:
    space = NASBench201Space()
    table = TabularBenchmark(nb201_csv, space, metric=METRIC)
    with pytest.raises(StudyFileError, match=r"one objective, \('accuracy',\).*'train_cost'"):
        StudySpec("t", space, table=table)  # the default objectives are two
    with pytest.raises(
        StudyFileError, match=r"finetune=TrainConfig\(epochs=2.*\), but a tabular study"
    ):
        StudySpec(
            "t", space, table=table, objectives=("accuracy",), finetune=TrainConfig(epochs=2)
        )
    with pytest.raises(StudyFileError, match="the table was loaded for space 'nb201'"):
        StudySpec("t", NASBench201Space(channels=8), table=table, objectives=("accuracy",))
    with pytest.raises(StudyFileError, match=r"table must be a TabularBenchmark, got 'x\.csv'"):
        StudySpec("t", space, table="x.csv", objectives=("accuracy",))  # type: ignore[arg-type]
    with pytest.raises(StudyFileError, match="data must be a callable"):
        StudySpec("t", space)  # neither data nor a table
    spec = StudySpec("t", space, table=table, objectives=["accuracy"])  # type: ignore[arg-type]
    assert spec.directions == ["maximize"] and spec.resolved_pruner == "none"
