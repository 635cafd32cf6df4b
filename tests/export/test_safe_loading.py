"""Tampered exports and exports carrying pickles are refused, and nothing is unpickled."""

from __future__ import annotations

import json
import pickle
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from nasflow.cli import main
from nasflow.export import ExportError, ExportInfo, load_exported, read_export
from nasflow.export._format import sha256_file
from tests.export.conftest import TinyRun


class _Payload:
    """Unpickling this creates ``marker`` (what a malicious pickle could do instead)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.marker, "w"))


@pytest.fixture
def copy(exported: Path, tmp_path: Path) -> Path:
    """A private copy of the session's export to tamper with."""
    return Path(shutil.copytree(exported, tmp_path / "export"))


def _edit_arch(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads((folder / "arch.json").read_text())
    change(data)
    (folder / "arch.json").write_text(json.dumps(data))


def test_the_untouched_copy_loads(copy) -> None:
    model = load_exported(copy)
    assert not model.training
    assert model(torch.randn(2, 1, 40)).shape == (2, 10)


def _set_space_name(d: dict[str, Any]) -> None:
    d["space"]["name"] = "no-such-space"


def _set_fingerprint(d: dict[str, Any]) -> None:
    d["space"]["fingerprint"] = "0123456789abcdef"


def _set_config(d: dict[str, Any]) -> None:
    d["space"]["config"]["base_channels"] = 9


def _set_choice(d: dict[str, Any]) -> None:
    d["arch"]["s1/l0"] = "k9_e9"


def _set_width(d: dict[str, Any]) -> None:
    d["arch"]["width"] = 0.6


def _drop_choice(d: dict[str, Any]) -> None:
    del d["arch"]["width"]


def _set_version(d: dict[str, Any]) -> None:
    d["format_version"] = 99


def _set_shape(d: dict[str, Any]) -> None:
    d["input_shape"] = [1, 41]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set_space_name, r"unknown space 'no-such-space'; registered spaces: \[.*'mnist1d'"),
        (_set_fingerprint, r"not the recorded '0123456789abcdef'"),
        (_set_config, r"has fingerprint '\w+', not the recorded"),
        (_set_choice, r"value 'k9_e9' for 's1/l0' is not in space 'mnist1d'"),
        (_set_width, r"value 0.6 for 'width' is not in space"),
        (_drop_choice, r"missing label 'width'"),
        (_set_version, r"format_version 99"),
        (_set_shape, r"input_shape \[1, 41\] differs"),
    ],
)
def test_a_tampered_arch_json_is_refused(copy, change, message) -> None:
    _edit_arch(copy, change)
    with pytest.raises(ExportError, match=message):
        load_exported(copy)


def test_arch_json_that_is_not_json_is_refused(copy) -> None:
    (copy / "arch.json").write_text("{not json")
    with pytest.raises(ExportError, match="is not valid JSON"):
        read_export(copy)


def test_changed_weights_are_refused(copy) -> None:
    data = bytearray((copy / "model.safetensors").read_bytes())
    data[-1] ^= 0xFF  # one flipped bit of one weight
    (copy / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ExportError, match=r"SHA-256 .* the weights were changed"):
        load_exported(copy)


def test_weights_that_do_not_fit_the_arch_are_refused(copy) -> None:
    from safetensors.torch import load_file, save_file

    state = load_file(copy / "model.safetensors")
    state.pop(sorted(state)[0])
    save_file(state, str(copy / "model.safetensors"))
    digest = sha256_file(copy / "model.safetensors")
    _edit_arch(copy, lambda d: d["weights"].__setitem__("sha256", digest))
    with pytest.raises(ExportError, match="does not fit the recorded architecture"):
        load_exported(copy)


def _write_pickle(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps({"weights": _Payload(marker)}))


def _write_torch_save(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"weights": _Payload(marker)}, path)


def test_the_payload_is_live(tmp_path) -> None:
    """The malicious files below really do run code when unpickled (in another process)."""
    marker = tmp_path / "pwned"
    _write_pickle(tmp_path / "evil.pkl", marker)
    code = "import pickle, sys; pickle.loads(open(sys.argv[1], 'rb').read())"
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "evil.pkl")], check=True)
    assert marker.exists()


@pytest.mark.parametrize(
    ("name", "write"),
    [
        ("evil.pkl", _write_pickle),
        ("pytorch_model.bin", _write_torch_save),
        ("model.pt", _write_torch_save),
        ("sub/weights.pth", _write_torch_save),
        ("notes", _write_pickle),  # no suffix: found by its header
        ("checkpoint", _write_torch_save),
    ],
)
def test_a_directory_carrying_a_pickle_is_refused(copy, tmp_path, name, write) -> None:
    marker = tmp_path / "pwned"
    write(copy / name, marker)
    with pytest.raises(ExportError, match=rf"contains '{name}', which may be a pickle"):
        load_exported(copy)
    with pytest.raises(ExportError, match="may be a pickle"):
        read_export(copy)
    assert not marker.exists()


def test_a_pickle_in_place_of_the_weights_is_never_unpickled(copy, tmp_path) -> None:
    marker = tmp_path / "pwned"
    _write_torch_save(copy / "model.safetensors", marker)
    digest = sha256_file(copy / "model.safetensors")
    _edit_arch(copy, lambda d: d["weights"].__setitem__("sha256", digest))
    with pytest.raises(ExportError, match="is not a valid safetensors file"):
        load_exported(copy)
    assert not marker.exists()


def test_other_files_are_ignored(copy) -> None:
    (copy / "NOTES.txt").write_text("retrained on 2026-01-01\n")
    assert load_exported(copy) is not None


@pytest.mark.slow
def test_a_malicious_supernet_checkpoint_is_skipped_not_unpickled(
    tiny_run: TinyRun, tmp_path, capsys
) -> None:
    runs = Path(shutil.copytree(tiny_run.runs, tmp_path / "runs"))
    marker = tmp_path / "pwned"
    _write_torch_save(runs / tiny_run.name / "supernet" / "epoch-9.pt", marker)
    out = tmp_path / "e"
    argv = ["export", tiny_run.name, "--runs", str(runs), "--study", str(tiny_run.study_file)]
    assert main([*argv, "--out", str(out), "--no-onnx", "--weights", "supernet"]) == 0
    assert re.search(r"skipping checkpoint .*epoch-9\.pt", capsys.readouterr().out)
    assert ExportInfo.read(out).weights["source"] == "supernet checkpoint epoch-1.pt"
    assert not marker.exists()
