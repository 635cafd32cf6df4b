"""The model card of an export whose space is registered nowhere: its loading snippets
run as written (the torch.export program, and ``load_exported`` with the space given),
where ``load_exported(dir)`` alone fails with "unknown space"."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

import nasflow
from nasflow.export import ExportError, export_arch
from nasflow.search import load_study_file
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import SearchSpace, is_registered
from tests._spaces import CellSpace
from tests.test_custom_space_cli import STUDY


def _export(space: SearchSpace, out: Path, input_shape: tuple[int, ...]) -> str:
    torch.manual_seed(0)
    supernet = space.supernet().eval()
    arch = space.sample(np.random.default_rng(0))
    export_arch(space, supernet, arch, out, onnx=False, input_shape=input_shape)
    return (out / "README.md").read_text()


def _run_python_blocks(card: str, out: Path, study_file: Path | None) -> list[torch.Tensor]:
    """Every ``python`` block of the card that loads the PyTorch model, run as written
    with the placeholders filled in; the logits each computed."""
    logits = []
    for block in re.findall(r"```python\n(.*?)```", card, flags=re.S):
        if ("load_exported" not in block and "model.pt2" not in block) or (
            "space=space" in block and "space = " not in block  # the caller's own instance
        ):
            continue
        code = block.replace("path/to/this/directory", str(out))
        if study_file is not None:
            code = code.replace(f"path/to/{study_file.name}", str(study_file))
        namespace: dict = {}
        torch.manual_seed(0)  # (each block draws its sample input)
        exec(compile(code, "README.md", "exec"), namespace)
        logits.append(namespace["logits"])
    return logits


def test_a_space_from_a_study_file_gets_snippets_that_load(tmp_path: Path) -> None:
    study_file = tmp_path / "my_study.py"
    study_file.write_text(STUDY)
    space = load_study_file(study_file).space
    assert not is_registered(space)
    out = tmp_path / "export"
    card = _export(space, out, (1, 16))
    with pytest.raises(ExportError, match="unknown space 'file-space'"):
        nasflow.load_exported(out)  # what the card used to offer
    assert "is not registered with nasflow" in card
    assert 'space = load_study_file("path/to/my_study.py").space' in card
    assert "--study path/to/my_study.py" in card  # the retrain command that works
    outputs = _run_python_blocks(card, out, study_file)
    assert len(outputs) == 3  # the program twice (its own section too), load_exported once
    assert all(y.shape == (8, 2) for y in outputs)
    torch.testing.assert_close(outputs[0], outputs[2])  # one network, loaded two ways


def test_an_importable_unregistered_space_is_imported_by_the_snippet(tmp_path: Path) -> None:
    space = CellSpace()
    assert not is_registered(space)
    out = tmp_path / "export"
    card = _export(space, out, (1, 16))
    assert "from tests._spaces import CellSpace" in card
    assert 'nasflow.load_exported("path/to/this/directory", space=CellSpace)' in card
    outputs = _run_python_blocks(card, out, None)
    assert len(outputs) == 3 and all(y.shape == (8, 10) for y in outputs)


def test_a_space_its_class_cannot_rebuild_is_passed_as_the_instance(tmp_path: Path) -> None:
    space = CellSpace(with_hypers=False)  # its config does not say with_hypers=False
    out = tmp_path / "export"
    card = _export(space, out, (1, 16))
    assert "from tests._spaces import" not in card
    assert "`CellSpace.from_config` does not rebuild it" in card
    block = next(
        b for b in re.findall(r"```python\n(.*?)```", card, flags=re.S) if "space=space" in b
    )
    namespace = {"space": space}
    exec(
        compile(block.replace("path/to/this/directory", str(out)), "README.md", "exec"), namespace
    )
    assert namespace["logits"].shape == (8, 10)
    with pytest.raises(ExportError, match="fingerprint"):  # the class alone would not do
        nasflow.load_exported(out, space=CellSpace)


def test_a_registered_space_keeps_the_plain_loader(tmp_path: Path) -> None:
    space = MNIST1DSpace(base_channels=4, layers_per_stage=1)
    assert is_registered(space)
    out = tmp_path / "export"
    card = _export(space, out, (1, 40))
    assert "not registered" not in card and "--study" not in card
    assert 'nasflow.load_exported("path/to/this/directory")  # eval mode' in card
    outputs = _run_python_blocks(card, out, None)
    assert len(outputs) == 2 and all(y.shape == (8, 10) for y in outputs)
