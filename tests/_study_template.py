"""A tiny study file used by the search tests (written to a temp folder and run by path)."""

from __future__ import annotations

from pathlib import Path

TEMPLATE = """
import torch
from torch.utils.data import TensorDataset

from nasflow.data import DataBundle
from nasflow.search import Budget, StudySpec
from nasflow.train import SupernetConfig, TrainConfig
from nasflow.search_spaces.mnist1d import MNIST1DSpace


def data():
    n = {train_samples}
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n + 200, 1, 40, generator=g)
    y = (x[:, 0, :20].sum(1) > x[:, 0, 20:].sum(1)).long() + 2 * (x[:, 0, ::2].sum(1) > 0).long()
    ds = lambda a, b: TensorDataset(x[a:b], y[a:b])
    return DataBundle(ds(0, n), ds(n, n + 100), ds(n + 100, n + 200), (1, 40), 10, "synthetic")


study = StudySpec(
    name={name!r},
    space=MNIST1DSpace(
        base_channels={channels}, layers_per_stage=2, ops=("k3_e2", "k5_e2", "skip")
    ),
    data=data,
    objectives={objectives!r},
    supernet=SupernetConfig(epochs=1, batch_size=50),
    n_trials={n_trials},
    bn_batches=2,
    finetune=TrainConfig(epochs={finetune}, batch_size=50, lr=1e-3) if {finetune} else None,
    train=TrainConfig(epochs=2, batch_size=50),
    budget=Budget(max_params={max_params!r}),
    seed=0,
)
{extra}
"""


def write_study(
    folder: Path,
    name: str = "tiny",
    channels: int = 4,
    objectives: tuple[str, ...] = ("accuracy", "train_cost"),
    n_trials: int = 6,
    finetune: int = 2,
    max_params: int | None = None,
    extra: str = "",
    train_samples: int = 400,
) -> Path:
    """Write a study file and return its path (``train_samples``: the synthetic training
    split's size; validation and test have 100 each)."""
    path = folder / f"{name}_{channels}_{len(objectives)}.py"
    path.write_text(
        TEMPLATE.format(
            name=name,
            channels=channels,
            objectives=objectives,
            n_trials=n_trials,
            finetune=finetune,
            max_params=max_params,
            extra=extra,
            train_samples=train_samples,
        )
    )
    return path
