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
