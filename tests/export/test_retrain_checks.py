"""``nasflow retrain`` refuses, before training, a study file whose data is not the data
the export's study was searched on (as ``nasflow export`` does) and an in-place update of
an export edited since it was written; a retrained export names no path of this machine.
``load_exported`` takes a registered space's name, and refuses anything else in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import nasflow
from nasflow.cli import main
from nasflow.errors import NasflowError
from nasflow.export import ExportInfo
from tests.export.conftest import TinyRun


def test_retrain_refuses_a_study_file_with_other_data(
    tiny_run: TinyRun, exported, tmp_path, capsys
) -> None:
    other = tmp_path / "other_data.py"
    text = tiny_run.study_file.read_text()
    assert "manual_seed(0)" in text
    other.write_text(text.replace("manual_seed(0)", "manual_seed(1)"))  # other samples
    argv = ["retrain", str(exported), "--epochs", "1", "--study", str(other)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert "epoch" not in captured.out  # refused before any training
    assert captured.err.count("\n") == 1
    assert "is not the data study 'tiny' was searched on" in captured.err
    assert not (tmp_path / "out").exists()


def test_an_edited_export_is_not_retrained_in_place(
    tiny_run: TinyRun, exported, tmp_path, capsys
) -> None:
    folder = Path(shutil.copytree(exported, tmp_path / "e"))
    (folder / "README.md").write_text("my notes\n")
    argv = ["retrain", str(folder), "--epochs", "1", "--study", str(tiny_run.study_file)]
    assert main([*argv, "--no-onnx"]) == 2
    captured = capsys.readouterr()
    assert "epoch" not in captured.out  # refused before any training
    assert captured.err.count("\n") == 1 and "cannot be updated in place" in captured.err
    assert "'README.md' was changed after it was exported" in captured.err
    assert (folder / "README.md").read_text() == "my notes\n"


@pytest.mark.slow
def test_a_retrained_export_names_no_path_of_this_machine(
    tiny_run: TinyRun, exported, tmp_path, capsys
) -> None:
    out = tmp_path / "retrained"
    study = tiny_run.study_file.resolve()
    argv = ["retrain", str(exported), "--epochs", "1", "--study", str(study), "--no-onnx"]
    assert main([*argv, "--out", str(out)]) == 0
    capsys.readouterr()
    for name in ("arch.json", "README.md"):
        assert str(study) not in (out / name).read_text(), name  # (the study file's path)
    info = ExportInfo.read(out)
    assert info.study["data"] == f"study file {study.name!r}"


def test_load_exported_takes_a_registered_space_name_or_refuses_it(exported) -> None:
    assert nasflow.load_exported(exported, space="mnist1d") is not None
    with pytest.raises(NasflowError, match="the export is of space 'mnist1d', not 'nb201'"):
        nasflow.load_exported(exported, space="nb201")
    with pytest.raises(NasflowError, match="space must be a SearchSpace, a SearchSpace class"):
        nasflow.load_exported(exported, space=5)  # type: ignore[arg-type]


def test_loading_weights_that_hold_nan_warns(exported, tmp_path) -> None:
    import json

    from safetensors.torch import load_file, save_file

    from nasflow.export import NonFiniteWeightsWarning
    from nasflow.export._format import sha256_file

    copy = Path(shutil.copytree(exported, tmp_path / "e"))
    state = load_file(copy / "model.safetensors")
    name = next(k for k, v in state.items() if v.is_floating_point() and v.numel() > 1)
    state[name].view(-1)[0] = float("nan")  # a training that diverged, saved and checksummed
    save_file(state, str(copy / "model.safetensors"), metadata={"format": "pt"})
    record = json.loads((copy / "arch.json").read_text())
    record["weights"]["sha256"] = sha256_file(copy / "model.safetensors")
    (copy / "arch.json").write_text(json.dumps(record))
    with pytest.warns(NonFiniteWeightsWarning, match=rf"1 of \d+ weights are NaN .*'{name}'"):
        nasflow.load_exported(copy)
