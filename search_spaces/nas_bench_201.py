"""NAS-Bench-201 (Dong & Yang, ICLR 2020): the cell space and its CIFAR macro network.

A cell is a DAG of 4 nodes: node 0 is the cell input and node ``i`` sums one operation
applied to every earlier node ``j``, so a cell has 6 edges, each one of ``OPS``:

- ``none``: the edge is absent (contributes zero);
- ``skip_connect``: identity;
- ``nor_conv_1x1`` / ``nor_conv_3x3``: ReLU -> Conv (no bias) -> BN;
- ``avg_pool_3x3``: 3x3 average pooling, stride 1, padding excluded from the average.

One architecture is one cell genotype, shared by every cell of the network (5**6 = 15,625
architectures). The macro network: 3x3 conv stem with ``C`` channels + BN, three stages of
``N`` cells at ``C``, ``2C`` and ``4C`` channels separated by residual reduction blocks
(ResNet basic block with stride 2 and an avg-pool + 1x1 conv shortcut), then BN-ReLU,
global average pooling and a linear classifier. ``C=16, N=5`` is the published network.

Architectures convert to and from the benchmark's canonical string
``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|`` (``op~j`` is the edge from node ``j`` into the
node of that group) with :meth:`NASBench201Space.to_string` and
:meth:`NASBench201Space.from_string`.

Batch norms keep affine weights and running statistics (the published stand-alone
network); the supernet is scored after BN recalibration, as every nasflow supernet is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any

import torch
from torch import nn

from nasflow.errors import ConfigError
from nasflow.space import Arch, SearchSpace, edge_choices
from nasflow.supernet import LayerChoice, SuperModule, Supernet, SuperSequential, extract_module

OPS: tuple[str, ...] = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
NUM_NODES = 4
PREFIX = "cell"
#: The 6 edges as (target node, source node), in the order of the canonical string.
EDGES: tuple[tuple[int, int], ...] = tuple((i, j) for i in range(1, NUM_NODES) for j in range(i))


def edge_label(i: int, j: int) -> str:
    """The choice label of the edge from node ``j`` into node ``i`` (``"cell/2<-0"``)."""
    return f"{PREFIX}/{i}<-{j}"


def arch_to_string(arch: Mapping[str, Any]) -> str:
    """The canonical NAS-Bench-201 string of a cell genotype (no validation)."""
    groups = (
        "|" + "|".join(f"{arch[edge_label(i, j)]}~{j}" for j in range(i)) + "|"
        for i in range(1, NUM_NODES)
    )
    return "+".join(groups)


def string_to_arch(text: str) -> Arch:
    """Parse a canonical NAS-Bench-201 string into an ``Arch``.

    Raises:
        ValueError: The string is not canonical (wrong node count, edge order or op name);
            the message quotes it.
    """
    if not isinstance(text, str):
        raise ConfigError(f"a NAS-Bench-201 string must be a str, got {text!r}")
    groups = text.split("+")
    if len(groups) != NUM_NODES - 1:
        raise ConfigError(
            f"NAS-Bench-201 string {text!r} has {len(groups)} node groups; expected "
            f"{NUM_NODES - 1} like '|op~0|+|op~0|op~1|+|op~0|op~1|op~2|'"
        )
    out: dict[str, str] = {}
    for i, group in enumerate(groups, start=1):
        tokens = group.split("|")  # "|a~0|b~1|" -> ["", "a~0", "b~1", ""]
        if len(tokens) != i + 2 or tokens[0] or tokens[-1]:
            raise ConfigError(
                f"NAS-Bench-201 string {text!r}: node group {group!r} must hold {i} edges "
                "as '|op~j|...|'"
            )
        for j, token in enumerate(tokens[1:-1]):
            op, sep, source = token.partition("~")
            if not sep or source != str(j):
                raise ConfigError(
                    f"NAS-Bench-201 string {text!r}: edge {token!r} must be '{op or 'op'}~{j}'"
                )
            if op not in OPS:
                raise ConfigError(
                    f"NAS-Bench-201 string {text!r}: unknown op {op!r}; accepted: {list(OPS)}"
                )
            out[edge_label(i, j)] = op
    return Arch(out)


# ---------------------------------------------------------------------------- operations
class ReLUConvBN(nn.Sequential):
    """ReLU -> Conv2d (no bias, "same" padding) -> BatchNorm2d."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1) -> None:
        super().__init__(
            nn.ReLU(),
            nn.Conv2d(c_in, c_out, kernel, stride, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
        )


class Zero(nn.Module):
    """The ``none`` op: zeros shaped like the input. Cells skip ``none`` edges instead of
    running it; it exists so every edge's ``LayerChoice`` holds every op."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


def make_op(name: str, channels: int) -> nn.Module:
    """A fresh module for cell op ``name`` at ``channels`` channels (stride 1)."""
    factories: dict[str, Callable[[], nn.Module]] = {
        "none": Zero,
        "skip_connect": nn.Identity,
        "nor_conv_1x1": lambda: ReLUConvBN(channels, channels, 1),
        "nor_conv_3x3": lambda: ReLUConvBN(channels, channels, 3),
        "avg_pool_3x3": lambda: nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
    }
    if name not in factories:
        raise ConfigError(f"unknown NAS-Bench-201 op {name!r}; accepted: {list(OPS)}")
    return factories[name]()


class ResidualReduction(nn.Module):
    """The reduction block between stages: a ResNet basic block with stride 2.

    ``shortcut(x) + conv_b(conv_a(x))`` where ``conv_a`` is a strided 3x3 ReLU-Conv-BN,
    ``conv_b`` a 3x3 ReLU-Conv-BN and the shortcut a 2x2 average pool then a 1x1 conv.
    """

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv_a = ReLUConvBN(c_in, c_out, 3, stride=2)
        self.conv_b = ReLUConvBN(c_out, c_out, 3)
        self.shortcut = nn.Sequential(
            nn.AvgPool2d(2, stride=2), nn.Conv2d(c_in, c_out, 1, bias=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shortcut(x) + self.conv_b(self.conv_a(x))  # (B, c_out, H/2, W/2)


def _node_sum(terms: list[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    """Sum of a node's inputs in edge order; zeros when every in-edge is ``none``."""
    if not terms:
        return torch.zeros_like(like)
    return reduce(torch.add, terms)


# ---------------------------------------------------------------------------- cells
class NB201Cell(nn.Module):
    """A fixed cell: the stand-alone form, holding modules for its non-``none`` edges.

    Args:
        edges: ``"i_j"`` (edge from node ``j`` into node ``i``) to its op module; absent
            edges are ``none``.
        genotype: The canonical string, kept for ``repr``.
    """

    def __init__(self, edges: Mapping[str, nn.Module], genotype: str = "") -> None:
        super().__init__()
        self.edges = nn.ModuleDict(dict(edges))
        self.genotype = genotype

    @classmethod
    def build(cls, arch: Mapping[str, Any], channels: int) -> NB201Cell:
        """A freshly initialised cell for a validated genotype."""
        edges = {
            f"{i}_{j}": make_op(str(arch[edge_label(i, j)]), channels)
            for i, j in EDGES
            if arch[edge_label(i, j)] != "none"
        }
        return cls(edges, arch_to_string(arch))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        for i in range(1, NUM_NODES):
            terms = [
                self.edges[f"{i}_{j}"](nodes[j]) for j in range(i) if f"{i}_{j}" in self.edges
            ]
            nodes.append(_node_sum(terms, x))
        return nodes[-1]

    def extra_repr(self) -> str:
        return self.genotype


class SuperNB201Cell(SuperModule):
    """The weight-sharing cell: one ``LayerChoice`` per edge, reading ``arch["cell/i<-j"]``.

    Every cell of the network reads the same labels: one genotype for all cells, each
    cell with its own weights.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.edges = nn.ModuleDict(
            {
                f"{i}_{j}": LayerChoice(
                    edge_label(i, j), {op: make_op(op, channels) for op in OPS}
                )
                for i, j in EDGES
            }
        )

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        nodes = [x]
        for i in range(1, NUM_NODES):
            terms = [
                self.edges[f"{i}_{j}"](nodes[j], arch)
                for j in range(i)
                if arch[edge_label(i, j)] != "none"
            ]
            nodes.append(_node_sum(terms, x))
        return nodes[-1]

    def extract(self, arch: Mapping[str, Any]) -> NB201Cell:
        edges = {
            f"{i}_{j}": extract_module(self.edges[f"{i}_{j}"], arch)
            for i, j in EDGES
            if arch[edge_label(i, j)] != "none"
        }
        return NB201Cell(edges, arch_to_string(arch))


# ---------------------------------------------------------------------------- space
class NASBench201Space(SearchSpace):
    """The NAS-Bench-201 cell space on its CIFAR macro network.

    Args:
        channels: ``C``, the channels of the first stage (the others have 2C and 4C).
        cells_per_stage: ``N``, cells in each of the three stages.
        num_classes: Output classes.
        in_channels: Channels of the input images.
        image_size: Side of the input images (32 for CIFAR). The network takes any size
            (it ends with global pooling); this is the example input used for export.
    """

    def __init__(
        self,
        channels: int = 16,
        cells_per_stage: int = 5,
        num_classes: int = 10,
        in_channels: int = 3,
        image_size: int = 32,
    ) -> None:
        for name, value in (
            ("channels", channels),
            ("cells_per_stage", cells_per_stage),
            ("num_classes", num_classes),
            ("in_channels", in_channels),
            ("image_size", image_size),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")
        super().__init__(
            edge_choices(PREFIX, NUM_NODES, OPS),
            name="nb201",
            description="NAS-Bench-201 cell (4 nodes, 6 edges, 5 ops) shared by 3x5 cells "
            "of a CIFAR ResNet-style network",
            config={
                "channels": channels,
                "cells_per_stage": cells_per_stage,
                "num_classes": num_classes,
                "in_channels": in_channels,
                "image_size": image_size,
                "input_shape": [in_channels, image_size, image_size],
            },
        )
        self.channels = channels
        self.cells_per_stage = cells_per_stage
        self.num_classes = num_classes
        self.in_channels = in_channels

    # ------------------------------------------------------------------ canonical strings
    def to_string(self, arch: Mapping[str, Any]) -> str:
        """The canonical string ``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|`` of ``arch``.

        Raises:
            ValueError: ``arch`` is not a point of this space.
        """
        return arch_to_string(self.validate(arch))

    def from_string(self, text: str) -> Arch:
        """The ``Arch`` of a canonical string (the inverse of :meth:`to_string`)."""
        return self.validate(string_to_arch(text))

    # ------------------------------------------------------------------ networks
    def _macro(self, make_cell: Callable[[int], nn.Module]) -> list[nn.Module]:
        """Stem, three stages of cells with reductions between them, and the head."""
        c = self.channels
        layers: list[nn.Module] = [
            nn.Conv2d(self.in_channels, c, 3, padding=1, bias=False),
            nn.BatchNorm2d(c),
        ]
        for stage in range(3):
            if stage:
                layers.append(ResidualReduction(c, 2 * c))  # (B, c, H, W) -> (B, 2c, H/2, W/2)
                c *= 2
            layers.extend(make_cell(c) for _ in range(self.cells_per_stage))
        layers += [
            nn.BatchNorm2d(c),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),  # (B, 4C, H/4, W/4) -> (B, 4C, 1, 1)
            nn.Flatten(),  # (B, 4C, 1, 1) -> (B, 4C)
            nn.Linear(c, self.num_classes),
        ]
        return layers

    def supernet(self) -> Supernet:
        return Supernet(self, SuperSequential(*self._macro(SuperNB201Cell)))

    def build(self, arch: Mapping[str, Any]) -> nn.Module:
        """The stand-alone network of ``arch``, freshly initialised (no supernet built).

        It has the same modules and parameter names as ``supernet().extract(arch)``.
        """
        path = self.path(arch)
        return nn.Sequential(*self._macro(lambda c: NB201Cell.build(path, c)))
