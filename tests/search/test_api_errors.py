"""Python API mistakes get one clear ``NasflowError``, never a bare built-in error."""

from __future__ import annotations

import pytest

import nasflow
from nasflow.cli import main
from nasflow.errors import NasflowError
from nasflow.search import load_study_file
from tests._study_template import write_study


@pytest.fixture
def spec(tmp_path):
    return load_study_file(write_study(tmp_path, n_trials=1, finetune=0))


def test_a_single_objective_string_is_accepted(spec) -> None:
    assert spec.replace(objectives="accuracy").objectives == ("accuracy",)


def test_optimize_refuses_what_is_not_a_study_spec() -> None:
    with pytest.raises(NasflowError, match="StudySpec") as info:
        nasflow.optimize("not a spec")  # type: ignore[arg-type]
    assert "'not a spec'" in str(info.value)


def test_replace_with_a_bad_baseline_is_one_clear_error(spec) -> None:
    with pytest.raises(NasflowError, match="baseline must be"):
        spec.replace(baseline=None)


def test_the_study_file_is_named_before_it_runs(tmp_path, capsys) -> None:
    extra = "raise SystemExit('stop here')"  # (stands for a study file that never returns)
    study_file = write_study(tmp_path, n_trials=1, finetune=0, extra=extra)
    with pytest.raises(SystemExit):
        main(["search", str(study_file), "--runs", str(tmp_path / "runs")])
    assert f"loading study file {str(study_file)!r}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_trials": "3"}, "n_trials must be an int >= 1 or None, got '3'"),
        ({"n_trials": 0}, "n_trials must be an int >= 1 or None, got 0"),  # as --n-trials 0
        ({"timeout": -1}, "timeout must be a number of seconds > 0 or None, got -1"),
        ({"storage": 5}, "storage must be a URL"),
        ({"device": "banana"}, "device must be a torch device such as 'cpu'"),
    ],
)
def test_optimize_refuses_bad_arguments_before_anything_is_written(
    spec, tmp_path, kwargs, message
) -> None:
    with pytest.raises(NasflowError) as info:
        nasflow.optimize(spec, out_dir=tmp_path / "runs", log=None, **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "runs").exists()  # no study was created


def test_exporting_what_is_not_a_run_result_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(NasflowError, match=r"takes the RunResult that nasflow\.optimize returned"):
        nasflow.export_winner(None, tmp_path / "out")  # type: ignore[arg-type]


def test_catch_takes_one_exception_class_as_optuna_does(spec) -> None:
    assert spec.replace(catch=ValueError).catch == (ValueError,)
    with pytest.raises(NasflowError, match="catch must be an Exception subclass or a tuple"):
        spec.replace(catch=5)
