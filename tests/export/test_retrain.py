from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from nasflow.cli import main
from nasflow.export import ExportError, ExportInfo, load_exported, retrain_exported
from nasflow.train import Batches, evaluate
from nasflow.train.stack import Stack
from tests.export.conftest import TinyRun

_CELL_STUDY = """
import torch
from torch.utils.data import TensorDataset

from nasflow.data import DataBundle
from nasflow.search import StudySpec
from nasflow.train import TrainConfig
from tests._spaces import CellSpace


def data():
    x, y = torch.randn(64, 1, 40), torch.randint(0, 10, (64,))
    return DataBundle(*(TensorDataset(x, y),) * 3, (1, 40), 10, "noise")


study = StudySpec(name="cells", space=CellSpace(), data=data, finetune=TrainConfig(epochs=1))
"""


@pytest.mark.slow
def test_retrain_prints_test_accuracy_and_writes_the_retrained_weights(
    tiny_run: TinyRun, exported, tmp_path, capsys
) -> None:
    out = tmp_path / "retrained"
    argv = ["retrain", str(exported), "--epochs", "1", "--study", str(tiny_run.study_file)]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    m = re.search(r"for 1 epochs .*test accuracy (\d\.\d+) .*measured ([0-9.e+-]+)s", printed)
    assert m is not None, printed
    assert 0.0 <= float(m.group(1)) <= 1.0 and float(m.group(2)) > 0
    assert "epoch 1: loss" in printed and "predicted training cost during search" in printed
    assert f"to {out}" in printed
    # The written export holds the retrained weights and reports only their metrics.
    info = ExportInfo.read(out)
    assert info.kind == "retrained" and info.weights["recipe"]["epochs"] == 1
    assert set(info.metrics) == {"test_accuracy", "val_accuracy", "train_seconds_measured"}
    assert "`nasflow retrain`" in info.notes["test_accuracy"]
    assert (out / "model.onnx").is_file()  # like the export it retrained
    test = Batches(tiny_run.spec.data().test, 512, shuffle=False)
    accuracy, _ = evaluate(load_exported(out), test)
    assert accuracy == info.metrics["test_accuracy"]
    assert abs(accuracy - float(m.group(1))) <= 5e-5
    readme = (out / "README.md").read_text()
    assert "**Weights: retrained from scratch** in `nasflow retrain`" in readme
    assert f"`test_accuracy`: {accuracy:.4f}" in readme
    assert ExportInfo.read(exported).kind == "retrained"  # the source is left alone


@pytest.mark.slow
def test_retrain_without_out_updates_the_export_in_place(
    tiny_run: TinyRun, exported_supernet, tmp_path, capsys
) -> None:
    folder = Path(shutil.copytree(exported_supernet, tmp_path / "e"))
    old = ExportInfo.read(folder)
    argv = ["retrain", str(folder), "--epochs", "1", "--study", str(tiny_run.study_file)]
    assert main([*argv, "--quiet", "--no-onnx"]) == 0
    capsys.readouterr()
    new = ExportInfo.read(folder)
    assert (old.kind, new.kind) == ("supernet", "retrained")
    assert new.weights["sha256"] != old.weights["sha256"] and new.arch == old.arch
    assert "test_accuracy" in new.metrics and "supernet" not in new.notes["val_accuracy"]
    assert not (folder / "model.onnx").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e"]  # no temporary folders
    load_exported(folder)


@pytest.mark.parametrize(
    ("where", "message"),
    [("mine", "is not empty; pass --force"), ("e/sub", "is inside the export")],
)
def test_retrain_refuses_a_bad_out_before_training(
    tiny_run: TinyRun, exported, tmp_path, capsys, where, message
) -> None:
    folder = Path(shutil.copytree(exported, tmp_path / "e"))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("mine")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    argv = ["retrain", str(folder), "--epochs", "1", "--study", str(tiny_run.study_file)]
    assert main([*argv, "--out", str(tmp_path / where)]) == 2
    captured = capsys.readouterr()
    assert "epoch" not in captured.out  # refused before any training
    assert captured.err.count("\n") == 1 and message in captured.err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_retrain_uses_the_study_recipe_and_fresh_weights(tiny_run: TinyRun, exported) -> None:
    done = retrain_exported(exported, epochs=1, study_file=str(tiny_run.study_file))
    assert done.recipe.epochs == 1
    assert done.recipe.batch_size == tiny_run.spec.train.batch_size
    assert done.result.seconds > 0 and len(done.result.losses) == 1
    again = retrain_exported(exported, epochs=1, study_file=str(tiny_run.study_file))
    assert again.result.losses == done.result.losses  # seeded by the study, reproducible


def test_retrain_refuses_a_study_of_another_space(tiny_run: TinyRun, exported, tmp_path) -> None:
    study = tmp_path / "cells.py"
    study.write_text(_CELL_STUDY)
    with pytest.raises(ExportError, match=r"the given space 'test-cell' .* is not the recorded"):
        retrain_exported(exported, epochs=1, study_file=str(study))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--epochs", "0"], "--epochs must be >= 1, got 0"),
        (["--study", "no/such/study.py"], "does not exist"),
    ],
)
def test_retrain_cli_errors(tiny_run: TinyRun, exported, capsys, extra, message) -> None:
    assert main(["retrain", str(exported), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_retrain_refuses_a_tampered_export(tiny_run: TinyRun, exported, tmp_path, capsys):
    copy = Path(shutil.copytree(exported, tmp_path / "e"))
    data = json.loads((copy / "arch.json").read_text())
    data["arch"]["width"] = 3.0
    (copy / "arch.json").write_text(json.dumps(data))
    argv = ["retrain", str(copy), "--epochs", "1", "--study", str(tiny_run.study_file)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "value 3.0 for 'width' is not in space" in err


def test_without_study_file_another_study_of_the_space_is_not_used(exported) -> None:
    # The export's study ("tiny") is not registered; its space ("mnist1d") has a ready
    # study, whose data is not tiny's: it is not used, the user is asked for --study.
    with pytest.raises(ExportError, match="pass --study STUDY_FILE") as info:
        retrain_exported(exported, epochs=1)
    assert "mnist1d" not in str(info.value) and "\n" not in str(info.value)


def test_retrain_trains_the_run_phase_3_trained(tiny_run: TinyRun, exported) -> None:
    # `nasflow retrain` and the search's phase 3 train through the same code: with the
    # study's own epochs they reproduce the winner phase 3 saved, weight for weight.
    done = retrain_exported(exported, study_file=str(tiny_run.study_file))
    info = ExportInfo.read(exported)
    assert asdict(done.recipe) == info.weights["recipe"] and done.seed == info.weights["seed"]
    assert done.stack == Stack.from_dict(info.weights["stack"])
    assert done.result.test_accuracy == info.metrics["test_accuracy"]
    assert done.result.val_accuracy == info.metrics["val_accuracy"]
    saved = load_exported(exported).state_dict()
    for name, tensor in done.net.state_dict().items():
        assert torch.equal(tensor, saved[name]), name


@pytest.mark.slow
def test_a_supernet_export_of_an_auto_stack_study_retrains_through_the_studys_stack(
    tiny_run: TinyRun, tmp_path
) -> None:
    # A `stack="auto"` study records the stack it resolved to; an export of supernet
    # weights carries it, so `nasflow retrain` trains through the stack the search used,
    # not plain fp32 (the stack here is written into the record; calibrating one is
    # tested with the runner).
    import optuna

    from nasflow.record import STACK_KEY, RunFolder
    from tests._study_template import write_study

    runs = Path(shutil.copytree(tiny_run.runs, tmp_path / "runs"))
    stack = Stack(amp="bf16", accumulation=2)
    study = optuna.load_study(
        study_name="tiny", storage=f"sqlite:///{RunFolder.of(runs, 'tiny').database}"
    )
    study.set_user_attr(STACK_KEY, {"stack": stack.to_dict(), "layers": []})
    auto = write_study(
        tmp_path,
        name="tiny",
        channels=4,
        n_trials=4,
        finetune=0,
        extra="study = study.replace(stack='auto')",
    )
    out = tmp_path / "supernet-export"
    argv = ["export", "tiny", "--runs", str(runs), "--study", str(auto), "--out", str(out)]
    assert main([*argv, "--weights", "supernet", "--no-onnx"]) == 0
    info = ExportInfo.read(out)
    assert info.kind == "supernet" and Stack.from_dict(info.weights["stack"]) == stack
    done = retrain_exported(out, epochs=1, study_file=str(auto))
    assert done.stack == stack
    # The tiny study itself (plain, no stack record) exports no stack and retrains plain.
    plain = tmp_path / "plain-export"
    argv = ["export", "tiny", "--runs", str(tiny_run.runs), "--study", str(tiny_run.study_file)]
    assert main([*argv, "--out", str(plain), "--weights", "supernet", "--no-onnx"]) == 0
    assert "stack" not in ExportInfo.read(plain).weights
    assert retrain_exported(plain, epochs=1, study_file=str(tiny_run.study_file)).stack == Stack()
