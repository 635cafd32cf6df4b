"""A study whose space is defined in its own file (registered nowhere) works in every
command: search, worker-free show and report, export from the study file, retrain."""

from __future__ import annotations

import json

import pytest

from nasflow.cli import main

STUDY = """
import torch
from torch import nn
from torch.utils.data import TensorDataset

from nasflow.data import DataBundle
from nasflow.search import StudySpec
from nasflow.space import SearchSpace, op_choice, value_choice
from nasflow.supernet import (
    Channels, ElasticBatchNorm1d, ElasticConv1d, ElasticLinear, LayerChoice, Supernet,
    SuperResidual, SuperSequential,
)
from nasflow.train import SupernetConfig, TrainConfig


class FileSpace(SearchSpace):
    def __init__(self, channels: int = 4) -> None:
        super().__init__(
            [op_choice("layer", ("conv3", "skip")), value_choice("width", (0.5, 1.0))],
            name="file-space",
            config={"channels": channels, "input_shape": [1, 16]},
        )
        self.channels = channels

    def supernet(self) -> Supernet:
        ch = Channels.scaled("width", self.channels, (0.5, 1.0))
        conv = SuperSequential(ElasticConv1d(ch, ch, 3), ElasticBatchNorm1d(ch), nn.ReLU())
        return Supernet(self, SuperSequential(
            ElasticConv1d(Channels.fixed(1), ch, 3),
            LayerChoice("layer", {"conv3": SuperResidual(conv), "skip": nn.Identity()}),
            nn.AdaptiveAvgPool1d(1),  # (B, C, 16) -> (B, C, 1)
            nn.Flatten(),  # (B, C, 1) -> (B, C)
            ElasticLinear(ch, Channels.fixed(2)),
        ))


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 1, 16, generator=g)
    y = (x[:, 0, :8].sum(1) > 0).long()
    ds = lambda a, b: TensorDataset(x[a:b], y[a:b])
    return DataBundle(ds(0, 200), ds(200, 250), ds(250, 300), (1, 16), 2, "synthetic")


study = StudySpec(
    name="filespace",
    space=FileSpace(),
    data=data,
    supernet=SupernetConfig(epochs=1, batch_size=50),
    n_trials=3,
    bn_batches=1,
    train=TrainConfig(epochs=1, batch_size=50),
)
"""


@pytest.mark.slow
def test_every_command_works_with_a_space_defined_in_the_study_file(tmp_path, capsys) -> None:
    study_file = tmp_path / "my_study.py"
    study_file.write_text(STUDY)
    runs = ["--runs", str(tmp_path / "runs")]
    assert main(["search", str(study_file), *runs, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["show", "filespace", *runs, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and rows[0]["retrained"] is not None
    assert main(["report", "filespace", *runs]) == 0
    assert (tmp_path / "runs" / "filespace" / "report.html").is_file()
    out = tmp_path / "export"
    # The study file names the study and brings its space: no registry involved.
    assert main(["export", str(study_file), "--best", *runs, "--out", str(out), "--no-onnx"]) == 0
    assert json.loads((out / "arch.json").read_text())["space"]["name"] == "file-space"
    # So does --study with the study's name.
    again = tmp_path / "again"
    argv = ["export", "filespace", *runs, "--study", str(study_file), "--out", str(again)]
    assert main([*argv, "--no-onnx", "--weights", "supernet"]) == 0
    argv = ["retrain", str(again), "--study", str(study_file), "--out", str(tmp_path / "re")]
    assert main([*argv, "--quiet", "--no-onnx"]) == 0
