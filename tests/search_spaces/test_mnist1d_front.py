"""The proving ground: the front space, its study and its committed ground truth."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import torch

from nasflow.search import load_study_file
from nasflow.search_spaces.mnist1d import MNIST1DFrontSpace, MNIST1DSpace
from nasflow.space import Arch, space_class

ROOT = Path(__file__).resolve().parents[2]
TABLES = [
    ROOT / "benchmarks/data/mnist1d_front_ground_truth.csv",
    ROOT / "benchmarks/data/mnist1d_front_ground_truth_seed1.csv",
]


def test_the_front_space_reaches_down_to_eight_channels() -> None:
    space = MNIST1DFrontSpace()
    assert space_class("mnist1d_front") is MNIST1DFrontSpace and space.name == "mnist1d_front"
    assert space.size == 5**6 * 4 and space.widths == (0.25, 0.5, 0.75, 1.0)
    assert space.fingerprint() != MNIST1DSpace().fingerprint()
    arch = Arch({**{f"s{s}/l{i}": "k3_e2" for s in (1, 2) for i in range(3)}, "width": 0.25})
    net = space.build(arch)
    assert net(torch.randn(2, 1, 40)).shape == (2, 10)
    widths = {m.out_channels for m in net.modules() if isinstance(m, torch.nn.Conv1d)}
    assert min(widths) == 8  # 32 * 0.25 in stage 1


def test_the_study_uses_scarce_data_a_large_test_set_and_pure_screening() -> None:
    spec = load_study_file(ROOT / "studies/mnist1d_front.py")
    assert spec.finetune_epochs == 0 and spec.n_trials >= 200
    data = spec.data()
    assert (len(data.train), len(data.val), len(data.test)) == (1500, 500, 10_000)


def test_the_committed_ground_truth_is_of_this_space_and_recipe() -> None:
    space = MNIST1DFrontSpace()
    spec = load_study_file(ROOT / "studies/mnist1d_front.py")
    tables = []
    for path in TABLES:
        with path.open(newline="") as f:
            tables.append({int(r["index"]): r for r in csv.DictReader(f)})
    common = set(tables[0]) & set(tables[1])
    assert len(common) >= 200
    for i in common:
        row, other = tables[0][i], tables[1][i]
        assert row["arch"] == other["arch"]
        space.validate(Arch.from_json(row["arch"]))
        for r in (row, other):
            assert len(json.loads(r["val_curve"])) == spec.train.epochs
            assert len(json.loads(r["cpu_curve"])) == spec.train.epochs
            assert json.loads(r["test_curve"])[str(spec.train.epochs)] == float(r["test_accuracy"])


def test_plain_nasflow_search_runs_the_proving_ground_through_the_calibrated_stack() -> None:
    from nasflow.cli._common import study_path

    assert study_path(None).resolve() == (ROOT / "studies/mnist1d_front.py").resolve()
    spec = load_study_file(study_path(None))
    assert spec.name == "mnist1d_front" and spec.stack == "auto" and spec.baseline
