"""Tiny spaces shared by the tests: a chain (the default space, shrunk) and a DAG cell."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import FloatRange, SearchSpace, edge_choices, hyper_choice
from nasflow.supernet import (
    LayerChoice,
    SuperModule,
    Supernet,
    SuperSequential,
    extract_module,
)

CELL_OPS = ("none", "skip", "conv1", "conv3", "pool3")


def tiny_mnist1d() -> MNIST1DSpace:
    """The default space with 8 base channels and 2 layers per stage (375 paths)."""
    return MNIST1DSpace(base_channels=8, layers_per_stage=2, ops=("k3_e2", "k5_e2", "skip"))


class _Zero(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0.0


def _cell_op(name: str, c: int) -> nn.Module:
    return {
        "none": lambda: _Zero(),
        "skip": lambda: nn.Identity(),
        "conv1": lambda: nn.Sequential(nn.ReLU(), nn.Conv1d(c, c, 1), nn.BatchNorm1d(c)),
        "conv3": lambda: nn.Sequential(
            nn.ReLU(), nn.Conv1d(c, c, 3, padding=1), nn.BatchNorm1d(c)
        ),
        "pool3": lambda: nn.AvgPool1d(3, 1, 1, count_include_pad=False),
    }[name]()


class _PlainCell(nn.Module):
    """What a ``SuperCell`` extracts to: a DAG of fixed ops."""

    def __init__(self, num_nodes: int, edges: dict[str, nn.Module]) -> None:
        super().__init__()
        self.num_nodes = num_nodes
        self.edges = nn.ModuleDict(edges)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        for i in range(1, self.num_nodes):
            nodes.append(sum(self.edges[f"{i}_{j}"](nodes[j]) for j in range(i)))
        return nodes[-1]


class SuperCell(SuperModule):
    """A NAS-Bench-201-style cell: node i sums one chosen op on each earlier node."""

    def __init__(self, prefix: str, num_nodes: int, c: int) -> None:
        super().__init__()
        self.prefix, self.num_nodes = prefix, num_nodes
        self.edges = nn.ModuleDict(
            {
                f"{i}_{j}": LayerChoice(
                    f"{prefix}/{i}<-{j}", {op: _cell_op(op, c) for op in CELL_OPS}
                )
                for i in range(1, num_nodes)
                for j in range(i)
            }
        )

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        nodes = [x]
        for i in range(1, self.num_nodes):
            nodes.append(sum(self.edges[f"{i}_{j}"](nodes[j], arch) for j in range(i)))
        return nodes[-1]

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        return _PlainCell(
            self.num_nodes, {k: extract_module(m, arch) for k, m in self.edges.items()}
        )


class CellSpace(SearchSpace):
    """One 4-node cell (6 edges x 5 ops = 15,625 paths) plus a batch-size choice and LR."""

    def __init__(self, channels: int = 4, with_hypers: bool = True) -> None:
        choices: list = edge_choices("cell", 4, CELL_OPS)
        if with_hypers:
            choices += [
                hyper_choice("batch_size", (32, 64)),
                FloatRange("lr", 1e-4, 1e-1, log=True),
            ]
        super().__init__(choices, name="test-cell", config={"channels": channels})
        self.channels = channels

    def supernet(self) -> Supernet:
        c = self.channels
        stem = nn.Sequential(nn.Conv1d(1, c, 3, padding=1), nn.BatchNorm1d(c))
        head = nn.Sequential(nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(c, 10))
        body = SuperSequential(stem, SuperCell("cell", 4, c), head)
        return Supernet(self, body)


def train_a_little(
    supernet: nn.Module, space: SearchSpace, input_shape: tuple[int, ...], steps: int = 3
) -> None:
    """A few fair supernet steps on random data (batch 8, 10 classes), so that weights and
    BN statistics move away from their init and extract-equality is not trivial."""
    from nasflow.sampling import FairSampler
    from nasflow.train import supernet_step

    opt = torch.optim.SGD(supernet.parameters(), lr=0.05)
    sampler = FairSampler(space, seed=0)
    supernet.train()
    g = torch.Generator().manual_seed(0)
    for step in range(steps):
        x = torch.randn(8, *input_shape, generator=g)
        y = torch.randint(0, 10, (8,), generator=g)
        supernet_step(supernet, sampler.paths(step), x, y, opt)
