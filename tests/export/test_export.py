from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
import torch
from torch import nn

from nasflow.cli import main
from nasflow.export import ExportError, ExportInfo, export_arch, load_exported
from nasflow.pipeline import pareto_trials
from nasflow.space import Arch, SearchSpace, op_choice
from nasflow.supernet import LayerChoice, Supernet, SuperSequential, recalibrate_bn
from nasflow.train import load_latest
from tests.export.conftest import TinyRun, export_args

REPO = Path(__file__).resolve().parents[2]


def _study(run: TinyRun) -> optuna.Study:
    return optuna.load_study(study_name=run.name, storage=f"sqlite:///{run.runs}/tiny/study.db")


def _supernet_outputs(run: TinyRun, arch: Arch, x: torch.Tensor, recalibrate: bool) -> Any:
    """The searched supernet's output on ``arch``'s path, BN as the search scored it."""
    space = run.spec.space
    found = load_latest(run.runs / run.name / "supernet")
    assert found is not None
    supernet = space.supernet()
    supernet.load_state_dict(found[1]["model"])
    path = space.path(arch)
    if recalibrate:
        batches = run.spec.data().batches("train", run.spec.train.batch_size, run.spec.seed)
        recalibrate_bn(supernet, batches.epoch(0), run.spec.bn_batches, arch=path)
    supernet.eval()
    with torch.no_grad():
        return supernet(x, path)


def _winner_record(run: TinyRun, number: int) -> dict[str, Any]:
    folder = run.runs / run.name / "winners" / f"trial-{number}"
    return json.loads((folder / "record.json").read_text())


@pytest.mark.slow
def test_export_writes_every_file_with_a_complete_record(tiny_run, exported) -> None:
    names = {p.name for p in exported.iterdir()}
    assert names == {"arch.json", "model.safetensors", "model.pt2", "model.onnx", "README.md"}
    info = ExportInfo.read(exported)
    study = _study(tiny_run)
    best = pareto_trials(study)[0]
    assert info.space == "mnist1d" and info.fingerprint == tiny_run.spec.space.fingerprint()
    assert info.space_config == json.loads(json.dumps(tiny_run.spec.space.config))
    assert info.arch == Arch.from_json(best.user_attrs["arch"])
    assert info.study["trial"] == best.number and info.study["name"] == "tiny"
    assert info.study["params"] == best.user_attrs["params"]
    assert info.study["train_cost_predicted_s"] == best.user_attrs["train_cost"]
    # The search retrained the winner: --best exports those weights, and reports only
    # what was measured with them (never the supernet's or the fine-tuned accuracy).
    record = _winner_record(tiny_run, best.number)
    assert info.kind == "retrained" and info.weights["seed"] == tiny_run.spec.seed
    assert info.weights["recipe"] == record["recipe"]
    assert info.metrics == {
        "test_accuracy": record["test_accuracy"],
        "val_accuracy": record["val_accuracy"],
        "train_seconds_measured": record["measured_train_cost"],
    }
    assert set(info.notes) == set(info.metrics)
    assert "retrained from scratch" in info.notes["test_accuracy"]
    assert "test split" in info.notes["test_accuracy"]
    assert "validation split" in info.notes["val_accuracy"]
    assert info.input_shape == (1, 40)
    assert info.checks["onnx_max_abs_diff"] <= 1e-4
    readme = (exported / "README.md").read_text()
    assert "nasflow.load_exported(" in readme and "onnxruntime" in readme
    assert "**Weights: retrained from scratch**" in readme
    assert f"`test_accuracy`: {record['test_accuracy']:.4f}" in readme
    assert "supernet_accuracy" not in readme and "supernet weights" not in readme


@pytest.mark.slow
def test_supernet_export_records_only_its_own_validation_accuracy(
    tiny_run, exported_supernet
) -> None:
    info = ExportInfo.read(exported_supernet)
    best = pareto_trials(_study(tiny_run))[0]
    assert info.kind == "supernet" and info.study["trial"] == best.number
    assert "recalibrated on" in info.weights["batch_norm"]
    # Scored the same way as the search (same BN batches, same validation split).
    assert info.metrics == {"val_accuracy": pytest.approx(best.user_attrs["supernet_accuracy"])}
    assert "supernet's" in info.notes["val_accuracy"]
    assert "validation split" in info.notes["val_accuracy"]
    readme = (exported_supernet / "README.md").read_text()
    assert "**Weights: the supernet's**" in readme
    assert "test_accuracy" not in readme and "retrained from scratch in" not in readme


@pytest.mark.slow
def test_onnx_and_program_match_the_loaded_model(exported) -> None:
    import onnxruntime as ort

    model = load_exported(exported)
    x = torch.randn(5, 1, 40, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = model(x)
    session = ort.InferenceSession(str(exported / "model.onnx"))
    (got,) = session.run(["logits"], {"input": x.numpy()})
    assert np.abs(got - want.numpy()).max() <= 1e-4
    program = torch.export.load(exported / "model.pt2")  # our own file, trusted here
    assert torch.allclose(program.module()(x), want, atol=1e-6, rtol=0)


_FRESH = """
import json, pickle, sys
import torch, nasflow

def refuse(*args, **kwargs):
    raise RuntimeError("pickle was used")

pickle.load = pickle.loads = refuse
pickle.Unpickler = refuse
torch.load = refuse
model = nasflow.load_exported(sys.argv[1])
torch.manual_seed(0)
x = torch.randn(4, 1, 40)
with torch.no_grad():
    print(json.dumps({"training": model.training, "y": model(x).tolist()}))
"""


@pytest.mark.slow
def test_round_trip_in_a_fresh_process_equals_the_supernet_path(
    tiny_run, exported_supernet
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _FRESH, str(exported_supernet)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["training"] is False
    torch.manual_seed(0)
    x = torch.randn(4, 1, 40)
    info = ExportInfo.read(exported_supernet)
    want = _supernet_outputs(tiny_run, info.arch, x, recalibrate=True)
    assert (torch.tensor(got["y"]) - want).abs().max() <= 1e-6


@pytest.mark.slow
def test_without_recalibration_the_export_is_the_plain_supernet_path(tiny_run, tmp_path) -> None:
    out = tmp_path / "raw"
    argv = ["--trial", "2", "--weights", "supernet", "--no-recalibrate", "--no-onnx"]
    assert main(export_args(tiny_run, out, *argv)) == 0
    info = ExportInfo.read(out)
    assert info.study["trial"] == 2 and "not recalibrated" in info.weights["batch_norm"]
    assert info.kind == "supernet" and "not recalibrated" in info.notes["val_accuracy"]
    assert not (out / "model.onnx").exists() and (out / "model.pt2").is_file()
    x = torch.randn(6, 1, 40, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        got = load_exported(out)(x)
    assert (got - _supernet_outputs(tiny_run, info.arch, x, recalibrate=False)).abs().max() <= 1e-6


@pytest.mark.slow
def test_pareto_export_writes_one_folder_per_pareto_trial(tiny_run, tmp_path) -> None:
    out = tmp_path / "front"
    assert main(export_args(tiny_run, out, "--pareto", "--no-onnx")) == 0
    front = [t.number for t in pareto_trials(_study(tiny_run))]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"trial-{n}" for n in front)
    retrained = {p.name for p in (tiny_run.runs / tiny_run.name / "winners").iterdir()}
    for n in front:
        info = ExportInfo.read(out / f"trial-{n}")
        assert info.study["trial"] == n
        # Retrained weights where phase 3 saved them, the supernet's elsewhere.
        assert info.kind == ("retrained" if f"trial-{n}" in retrained else "supernet")
        load_exported(out / f"trial-{n}")
    with pytest.raises(ExportError, match=r"no arch.json; it holds one export per trial"):
        load_exported(out)


@pytest.mark.slow
def test_force_replaces_only_an_existing_export(tiny_run, tmp_path, capsys) -> None:
    out = tmp_path / "again"
    assert main(export_args(tiny_run, out, "--trial", "0", "--no-onnx")) == 0
    capsys.readouterr()
    assert main(export_args(tiny_run, out, "--trial", "1", "--no-onnx")) == 2
    assert "pass --force" in capsys.readouterr().err
    assert main(export_args(tiny_run, out, "--trial", "1", "--no-onnx", "--force")) == 0
    assert ExportInfo.read(out).study["trial"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again"]  # no temp folders left


def _bad_cases(run: TinyRun, tmp: Path) -> dict[str, tuple[list[str], str]]:
    other = tmp / "not-an-export"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    nosupernet = tmp / "runs-copy"
    (nosupernet / run.name).mkdir(parents=True)
    db = run.runs / run.name / "study.db"
    (nosupernet / run.name / "study.db").write_bytes(db.read_bytes())
    out = tmp / "out"
    retrained = ["--weights", "retrained"]
    study = _study(run)
    best = pareto_trials(study)[0].number
    loser = next(t.number for t in study.trials if t.state.name == "COMPLETE" and t.number != best)
    corrupt = tmp / "runs-corrupt"
    shutil.copytree(run.runs / run.name, corrupt / run.name)
    weights = corrupt / run.name / "winners" / f"trial-{best}" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    return {
        "unknown study": (
            ["export", "nope", "--runs", str(run.runs), "--out", str(out)],
            "no study file",
        ),
        "missing trial": (export_args(run, out, "--trial", "99"), "has no trial 99"),
        "negative trial": (export_args(run, out, "--trial", "-1"), "--trial must be"),
        "bad storage": (export_args(run, out, "--storage", "mysql://x/y"), "unknown storage"),
        "not empty": (export_args(run, other), "is not empty"),
        "force on a foreign folder": (export_args(run, other, "--force"), "not a nasflow export"),
        "no checkpoint": (
            ["export", run.name, "--runs", str(nosupernet), "--out", str(out)],
            "no valid supernet checkpoint",
        ),
        "no retrained weights": (
            export_args(run, out, "--trial", str(loser), "--weights", "retrained"),
            f"trial {loser} of study 'tiny' has no retrained weights",
        ),
        "retrained weights but no phase 3": (
            ["export", run.name, "--runs", str(nosupernet), "--out", str(out), *retrained],
            f"trial {best} of study 'tiny' has no retrained weights",
        ),
        "corrupt retrained weights": (
            ["export", run.name, "--runs", str(corrupt), "--out", str(out)],
            "model.safetensors' has SHA-256",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "unknown study",
        "missing trial",
        "negative trial",
        "bad storage",
        "not empty",
        "force on a foreign folder",
        "no checkpoint",
        "no retrained weights",
        "retrained weights but no phase 3",
        "corrupt retrained weights",
    ],
)
def test_cli_errors_are_one_line_exit_2_and_write_nothing(tiny_run, tmp_path, capsys, case):
    argv, message = _bad_cases(tiny_run, tmp_path)[case]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nasflow: error:") and message in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


class _SignFlip(nn.Module):
    """Data-dependent control flow: torch.export cannot trace it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.sum() > 0 else -x


class _ScriptSpace(SearchSpace):
    """A space defined in a script (not registered)."""

    def __init__(self) -> None:
        super().__init__(
            [op_choice("op", ["flip", "id"])], name="script-space", config={"input_shape": [1, 8]}
        )

    def supernet(self) -> Supernet:
        ops: Mapping[str, nn.Module] = {"flip": _SignFlip(), "id": nn.Identity()}
        return Supernet(
            self, SuperSequential(LayerChoice("op", ops), nn.Flatten(), nn.Linear(8, 3))
        )


def test_a_failed_export_leaves_nothing_behind(tmp_path) -> None:
    space = _ScriptSpace()
    out = tmp_path / "deep" / "export"
    with pytest.raises(ExportError, match=r"torch\.export failed"):
        export_arch(space, space.supernet(), {"op": "flip"}, out, onnx=False)
    assert list(tmp_path.iterdir()) == []  # neither the folder, its parents nor temp files


@pytest.mark.slow
def test_unregistered_space_exports_and_loads_only_when_given(tmp_path) -> None:
    space = _ScriptSpace()
    supernet = space.supernet().eval()
    info = export_arch(space, supernet, {"op": "id"}, tmp_path / "e", onnx=True)
    assert info.checks["onnx_max_abs_diff"] <= 1e-4
    with pytest.raises(ExportError, match="unknown space 'script-space'"):
        load_exported(tmp_path / "e")
    x = torch.randn(2, 1, 8)
    with torch.no_grad():
        assert torch.equal(
            load_exported(tmp_path / "e", space=_ScriptSpace)(x), supernet(x, {"op": "id"})
        )
    with pytest.raises(ExportError, match="not in space"):
        export_arch(space, supernet, {"op": "conv"}, tmp_path / "f", onnx=False)
    assert not (tmp_path / "f").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "tiny", "--best", "--pareto", "--out", "x"],
        ["export", "tiny", "--out", "x", "--weights", "best"],
        ["retrain", "x", "--force", "--out"],
        ["export", "tiny"],
        ["retrain"],
        ["retrain", "x", "--epochs", "two"],
    ],
)
def test_bad_command_lines_are_one_line_errors(argv, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"nasflow: error: nasflow {argv[0]}:")
