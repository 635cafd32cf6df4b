"""``nasflow export NAME --ready`` (``--weights fine-tuned``): a ready model of the fine-tuning
phase, exported with its fine-tuned weights exactly as saved, saying which weights it holds;
every export says so."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import nasflow
from nasflow.cli import main
from nasflow.export import ExportError, ExportInfo, export, load_exported
from nasflow.pipeline import read_ready
from nasflow.record import FINETUNED_KEY, open_stored_study
from nasflow.space import Arch
from nasflow.train import evaluate
from tests.export.conftest import TinyRun, deadline, export_args


def _candidates(run: TinyRun) -> list[dict]:
    """The fine-tuning phase's record of each finalist, as the study stored it."""
    study = open_stored_study(run.name, None, run.runs).study
    return study.user_attrs[FINETUNED_KEY]["candidates"]


def _ready_folder(run: TinyRun, trial: int, runs: Path | None = None) -> Path:
    return (runs or run.runs) / run.name / "ready" / f"trial-{trial}"


@pytest.fixture(scope="module")
def ready_export(ready_run: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The best ready model, exported through the CLI with every format (ONNX included)."""
    out = tmp_path_factory.mktemp("exports") / "ready-best"
    assert main(export_args(ready_run, out, "--ready", "best")) == 0
    return out


def test_the_loaded_export_computes_what_the_saved_fine_tuned_weights_compute(
    ready_run, ready_export
) -> None:
    best = max(_candidates(ready_run), key=lambda c: c["val_curve"][-1])
    info = ExportInfo.read(ready_export)
    assert info.kind == "fine-tuned" and info.study["trial"] == best["trial"]
    folder = _ready_folder(ready_run, best["trial"])
    saved, record = read_ready(folder)
    # The saved weights, as the fine-tuning phase wrote them, in a freshly built network.
    from safetensors.torch import load_file

    net = ready_run.spec.space.build(Arch.from_json(saved.arch))
    net.load_state_dict(load_file(folder / "model.safetensors"), strict=True)
    net.eval()
    model = load_exported(ready_export)  # arch.json + model.safetensors only
    x = torch.randn(16, 1, 40, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert torch.equal(model(x), net(x))  # nothing recalibrated: the same numbers
    assert info.weights["sha256"] == record["weights"]["sha256"]  # the very bytes
    test, _ = evaluate(model, ready_run.spec.data().batches("test"))
    assert test == info.metrics["test_accuracy"] == best["test_accuracy"]


def test_the_record_says_fine_tuned_weights_their_epochs_splits_and_cost(
    ready_run, ready_export
) -> None:
    best = max(_candidates(ready_run), key=lambda c: c["val_curve"][-1])
    info = ExportInfo.read(ready_export)
    epochs = len(best["val_curve"])
    assert info.weights["description"].startswith(
        f"fine-tuned from inherited supernet weights, {epochs} epochs, by the fine-tuning "
        "phase of study 'tinyft'"
    )
    assert info.weights["epochs"] == epochs and info.weights["val_curve"] == best["val_curve"]
    assert info.weights["recipe"]["epochs"] == 2 and "stack" in info.weights
    assert info.metrics == {
        "test_accuracy": best["test_accuracy"],
        "val_accuracy": best["val_curve"][-1],
        "train_seconds_measured": sum(best["epoch_seconds"]),
    }
    assert "test split" in info.notes["test_accuracy"]
    assert "validation split" in info.notes["val_accuracy"]
    assert "measured" in info.notes["train_seconds_measured"]
    readme = (ready_export / "README.md").read_text()
    assert "**Weights: fine-tuned from inherited supernet weights**" in readme
    assert info.weights["description"] in readme and "retrained from scratch in" not in readme


def test_a_trial_number_picks_that_ready_model_and_a_stopped_one_says_so(
    ready_run, tmp_path
) -> None:
    (stopped,) = [c for c in _candidates(ready_run) if c["status"] == "stopped"]
    (info,) = export(
        ready_run.name,
        tmp_path / "e",
        which=stopped["trial"],
        weights="fine-tuned",
        runs=ready_run.runs,
        study_file=str(ready_run.study_file),
        onnx=False,
        log=lambda _: None,
    )
    assert info.study["trial"] == stopped["trial"] and info.weights["epochs"] == 1
    assert "1 epoch, " in info.weights["description"]
    assert "successive halving stopped it" in info.weights["description"]
    assert ExportInfo.read(tmp_path / "e") == info


def test_the_python_facade_exports_the_best_ready_model(ready_run, tmp_path) -> None:
    info = nasflow.export_winner(
        ready_run.result, tmp_path / "e", weights="fine-tuned", onnx=False, log=None
    )
    best = max(_candidates(ready_run), key=lambda c: c["val_curve"][-1])
    assert info.kind == "fine-tuned" and info.study["trial"] == best["trial"]


def test_weights_fine_tuned_on_the_command_line_is_the_ready_export(
    ready_run, ready_export, tmp_path
) -> None:
    out = tmp_path / "e"
    assert main(export_args(ready_run, out, "--weights", "fine-tuned", "--no-onnx")) == 0
    info, ready = ExportInfo.read(out), ExportInfo.read(ready_export)
    assert info.kind == "fine-tuned" and info.study["trial"] == ready.study["trial"]
    assert info.weights["sha256"] == ready.weights["sha256"]


@pytest.mark.parametrize(
    ("fixture", "kind", "says"),
    [
        ("exported", "retrained", "retrained from scratch, 2 epochs, in phase 3"),
        ("exported_supernet", "supernet", "the supernet's weights (supernet checkpoint"),
        ("ready_export", "fine-tuned", "fine-tuned from inherited supernet weights, 2 epochs"),
    ],
    ids=["retrained", "supernet", "fine-tuned"],
)
def test_every_export_says_which_weights_it_holds(request, fixture, kind, says) -> None:
    folder = request.getfixturevalue(fixture)
    weights = json.loads((folder / "arch.json").read_text())["weights"]
    assert weights["kind"] == kind and weights["description"].startswith(says)
    assert (
        f"`weights.kind` is `{kind}`: {weights['description']}"
        in (folder / "README.md").read_text()
    )


def test_retrain_of_a_fine_tuned_export_trains_from_scratch(
    ready_run, ready_export, tmp_path, capsys
) -> None:
    out = tmp_path / "retrained"
    args = ["retrain", str(ready_export), "--epochs", "1", "--study", str(ready_run.study_file)]
    assert main([*args, "--out", str(out), "--no-onnx", "--quiet"]) == 0
    info = ExportInfo.read(out)
    assert info.kind == "retrained" and info.weights["recipe"]["epochs"] == 1
    assert info.weights["description"].startswith("retrained from scratch, 1 epoch, in ")
    assert info.arch == ExportInfo.read(ready_export).arch
    assert ExportInfo.read(ready_export).kind == "fine-tuned"  # the source is left alone
    assert "wrote the retrained weights" in capsys.readouterr().out


def test_force_replaces_only_a_complete_export(ready_run, ready_export, tmp_path) -> None:
    out = Path(shutil.copytree(ready_export, tmp_path / "e"))
    assert main(export_args(ready_run, out, "--ready", "best", "--no-onnx")) == 2
    assert main(export_args(ready_run, out, "--ready", "best", "--no-onnx", "--force")) == 0
    assert ExportInfo.read(out).kind == "fine-tuned" and not (out / "model.onnx").exists()
    (out / "notes.txt").write_text("mine")
    assert main(export_args(ready_run, out, "--ready", "best", "--force")) == 2
    assert (out / "notes.txt").read_text() == "mine"


def _one_line_error(args: list[str], capsys) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nasflow: error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_a_study_without_ready_models_says_so_in_one_line(tiny_run, tmp_path, capsys) -> None:
    err = _one_line_error(export_args(tiny_run, tmp_path / "e", "--ready", "best"), capsys)
    assert "study 'tiny' has no ready models" in err and "--best" in err
    assert not (tmp_path / "e").exists()


def test_an_unknown_trial_lists_the_ready_models(ready_run, tmp_path, capsys) -> None:
    err = _one_line_error(export_args(ready_run, tmp_path / "e", "--ready", "99"), capsys)
    assert "no ready model of trial 99" in err
    for c in _candidates(ready_run):
        assert f"trial {c['trial']} (validation accuracy {c['val_curve'][-1]:.4f}" in err
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--ready", "first"], "--ready must be 'best' or a trial number, got 'first'"),
        (["--ready", "best", "--weights", "supernet"], "--weights does not apply"),
        (["--ready", "best", "--no-recalibrate"], "--no-recalibrate does not apply"),
        (["--weights", "fine-tuned", "--no-recalibrate"], "--no-recalibrate does not apply"),
        (["--weights", "fine-tuned", "--pareto"], "which must be 'best' (the ready model"),
    ],
)
def test_bad_ready_arguments_are_one_line(ready_run, tmp_path, capsys, extra, says) -> None:
    assert says in _one_line_error(export_args(ready_run, tmp_path / "e", *extra), capsys)


def _fifo_for(name: str) -> Callable[[Path], None]:
    def put(folder: Path) -> None:
        (folder / name).unlink()
        os.mkfifo(folder / name)

    return put


def _corrupt_weights(folder: Path) -> None:
    with open(folder / "model.safetensors", "ab") as f:
        f.write(b"\0")


def _corrupt_record(folder: Path) -> None:
    (folder / "record.json").write_text('{"format": "nasflow-winner", ')


def _other_architecture(folder: Path) -> None:
    """Another ready model's weights, with a record whose checksum matches them."""
    other = next(p for p in sorted(folder.parent.iterdir()) if p != folder)
    shutil.copyfile(other / "model.safetensors", folder / "model.safetensors")
    record = json.loads((folder / "record.json").read_text())
    data = (folder / "model.safetensors").read_bytes()
    record["weights"]["sha256"] = hashlib.sha256(data).hexdigest()
    (folder / "record.json").write_text(json.dumps(record))


def _folder_is_fifo(folder: Path) -> None:
    shutil.rmtree(folder)
    os.mkfifo(folder)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (_fifo_for("model.safetensors"), "model.safetensors' is a FIFO (named pipe)"),
        (_fifo_for("record.json"), "record.json' is a FIFO (named pipe)"),
        (_corrupt_weights, "the weights are corrupt or were changed"),
        (_corrupt_record, "is not a readable JSON record"),
        (_other_architecture, "model.safetensors does not fit the recorded architecture"),
        (_folder_is_fifo, "is a FIFO (named pipe), not a folder"),
        (shutil.rmtree, "is recorded, but"),
    ],
    ids=["weights-fifo", "record-fifo", "weights", "record", "architecture", "folder", "gone"],
)
def test_a_damaged_ready_model_is_one_line_not_a_hang(
    ready_run, tmp_path, capsys, damage, says
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(ready_run.runs / ready_run.name, runs / ready_run.name)
    best = max(_candidates(ready_run), key=lambda c: c["val_curve"][-1])
    damage(_ready_folder(ready_run, best["trial"], runs))
    args = export_args(ready_run, tmp_path / "e", "--ready", "best", "--no-onnx")
    args[args.index("--runs") + 1] = str(runs)
    with deadline(60):
        err = _one_line_error(args, capsys)
    assert says in err and f"trial {best['trial']}" in err, err
    assert not (tmp_path / "e").exists()


def test_export_of_fine_tuned_weights_refuses_a_bad_choice_in_python(ready_run, tmp_path) -> None:
    missing = max(c["trial"] for c in _candidates(ready_run)) + 1
    with pytest.raises(ExportError, match=f"no ready model of trial {missing};"):
        export(
            ready_run.name,
            tmp_path / "e",
            which=missing,
            weights="fine-tuned",
            runs=ready_run.runs,
            onnx=False,
        )
    assert not (tmp_path / "e").exists()
