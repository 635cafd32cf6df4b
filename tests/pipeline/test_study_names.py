"""A study name is also a folder name and a word of the suggested commands: shell
metacharacters and over-long names are refused in one line; the hints quote it."""

from __future__ import annotations

import pytest

from nasflow.cli import main
from nasflow.pipeline import StudyRunner, summary_table
from nasflow.pipeline._result._summary import trial_numbers
from nasflow.search import StudyFileError, load_study_file
from tests._study_template import write_study


@pytest.mark.parametrize("name", ["a;rm -rf x;$(id)", "a|b", "a`id`", "a>b", "x&", "n'q"])
def test_shell_metacharacters_are_refused(tmp_path, name) -> None:
    spec = load_study_file(write_study(tmp_path, n_trials=1, finetune=0))
    with pytest.raises(StudyFileError, match="shell") as info:
        spec.replace(name=name)
    assert "\n" not in str(info.value)


def test_an_over_long_name_is_one_line(tmp_path, capsys) -> None:
    extra = f"study = study.replace(name={'n' * 300!r})"
    study_file = write_study(tmp_path, n_trials=1, finetune=0, extra=extra)
    assert main(["search", str(study_file), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "at most 100 bytes" in err, err
    assert not (tmp_path / "runs").exists()


def test_a_name_is_measured_in_bytes_as_a_folder_name_is(tmp_path, capsys) -> None:
    # 100 emoji are 100 characters but 400 bytes: over the 255 bytes a folder name may
    # have ("File name too long" once the run folder is made).
    extra = f"study = study.replace(name={'😀' * 100!r})"
    study_file = write_study(tmp_path, n_trials=1, finetune=0, extra=extra)
    assert main(["search", str(study_file), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is 400 bytes long in UTF-8 (100 characters)" in err, err
    assert not (tmp_path / "runs").exists()
    spec = load_study_file(write_study(tmp_path, n_trials=1, finetune=0))
    assert spec.replace(name="😀" * 25).name == "😀" * 25  # 100 bytes: accepted


def test_the_next_hint_quotes_the_name_and_the_trials_are_ranges(tmp_path) -> None:
    spec = load_study_file(write_study(tmp_path, name="my study", n_trials=2, finetune=0))
    spec = spec.replace(cost="measure")
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    text = summary_table(runner.run(retrain=False), spec)
    assert "`nasflow report 'my study'`" in text
    assert "`nasflow export 'my study' --best --out DIR`" in text
    assert "trials run by this process: 0-1 (2 trials)" in text


def test_trial_numbers_are_ranges_or_a_count() -> None:
    assert trial_numbers([]) == "none"
    assert trial_numbers([3]) == "3 (1 trial)"
    assert trial_numbers([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8 (6 trials)"
    assert trial_numbers(list(range(300))) == "0-299 (300 trials)"
    assert trial_numbers(list(range(0, 600, 2))) == "300 trials, numbers 0 to 598"
