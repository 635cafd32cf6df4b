"""The learned ranker's leave-one-ground-out benchmark (``benchmarks/ranker.py``): what
choosing the best-ranked architectures as finalists would give. No training here."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.benchmarks._load import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


_load = load_benchmark


ranker = _load("ranker.py")


def _rows(n: int = 20) -> list[dict]:
    """One supernet's rows: the truth rises with the parameters; the supernet's accuracy
    ranks them backwards."""
    return [
        {
            "ground": "toy",
            "supernet_seed": 0,
            "index": i,
            "supernet_accuracy": 1.0 - i / n,
            "supernet_loss": i / n,
            "params": 100.0 * (i + 1),
            "flops": 1e6 * (i + 1),
            "width": 1.0,
            "predicted_cost": 1.0 + i,
            "test_mean": 0.5 + i / (2 * n),
            "test_seed0": 0.5 + i / (2 * n),
            "test_seed1": 0.5 + i / (2 * n),
        }
        for i in range(n)
    ]


def test_top_k_reports_the_best_and_mean_share_of_the_chosen_architectures() -> None:
    ground = ranker.Ground("toy", _rows())
    line = ranker.top_k(ground, ["log_params"], np.array([1.0]), k=3)
    # By parameters: architectures 17, 18, 19 of 20, which beat 85%, 90%, 95% of the table.
    assert "ranker 95% / 90%" in line
    assert "params 95% / 90%" in line
    # The study's rank sum (accuracy and cross-entropy both backwards): 0, 1, 2.
    assert "rank sum 10% / 5%" in line


def test_the_depth_feature_counts_the_layers_that_are_not_a_skip() -> None:
    read = ranker.READERS["depth"]
    arch = '{"s1/l0": "skip", "s1/l1": "k3_e2", "s2/l0": "k5_e4", "width": 0.5}'
    assert read({"arch": arch}) == 2.0
    assert read({"arch": {"a": "k3_e2", "b": "k3_e2", "width": 1.0}}) == 2.0
    # Missing where a row has no architecture, or none of its choices is a layer.
    assert read({}) is None
    assert read({"arch": '{"width": 0.5, "n_layer": 4}'}) is None
    ground = ranker.Ground("toy", [{**r, "arch": arch} for r in _rows()])
    assert "depth" in ground.available()
    assert "depth" not in ranker.Ground("toy", _rows()).available()
    assert read({"arch": '{"a": "skip", "b": "skip", "width": 0.5}'}) == 0.0  # all skipped
