"""The default space: a residual 1-D CNN for MNIST-1D (sequences of length 40).

Network: stem conv (k5) -> stage 1 (3 searchable layers at C channels, length 40) ->
max-pool -> transition conv to 2C -> stage 2 (3 searchable layers at 2C, length 20) ->
global average pool -> linear. Every searchable layer picks one of ``OPS``; a residual
op is ``relu(x + BN(conv1x1(relu(BN(conv_k(x))))))`` with ``e * channels`` inner
channels, ``skip`` is the identity. A global width multiplier scales C. Size:
5 ops ** 6 layers * 3 widths = 46,875 architectures.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from nasflow.errors import ConfigError
from nasflow.space import SearchSpace, op_choice, value_choice
from nasflow.supernet import (
    Channels,
    ElasticBatchNorm1d,
    ElasticBatchNorm2d,
    ElasticConv1d,
    ElasticConv2d,
    ElasticLinear,
    LayerChoice,
    Supernet,
    SuperResidual,
    SuperSequential,
)

OPS: tuple[str, ...] = ("k3_e2", "k5_e2", "k7_e2", "k5_e4", "skip")
WIDTHS: tuple[float, ...] = (0.5, 0.75, 1.0)


def _parse_op(op: str) -> tuple[int, int]:
    """``"k5_e2"`` -> (kernel 5, expansion 2)."""
    k, e = op.split("_")
    return int(k[1:]), int(e[1:])


def check_ops(ops: Sequence[str]) -> None:
    """Refuse an op that is neither ``"skip"`` nor ``"kK_eE"`` with an odd kernel."""
    for op in ops:
        if op == "skip":
            continue
        try:
            kernel, _ = _parse_op(op)
        except (ValueError, IndexError):
            raise ConfigError(f"op {op!r} is not 'skip' or of the form 'k5_e2'") from None
        if kernel % 2 == 0:
            raise ConfigError(f"op {op!r} needs an odd kernel size")


def conv_bn(
    cin: Channels, cout: Channels, kernel: int, relu: bool, dims: int = 1
) -> list[nn.Module]:
    """An elastic conv (1-D or 2-D), its batch norm and optionally a ReLU."""
    two_d = (ElasticConv2d, ElasticBatchNorm2d)
    conv, bn = (ElasticConv1d, ElasticBatchNorm1d) if dims == 1 else two_d
    layers: list[nn.Module] = [conv(cin, cout, kernel), bn(cout)]
    if relu:
        layers.append(nn.ReLU())
    return layers


def residual_op(name: str, ch: Channels, dims: int = 1) -> nn.Module:
    """``skip`` (identity) or ``relu(x + BN(conv1x1(relu(BN(conv_k(x))))))`` with ``e * ch``
    inner channels, for ``"kK_eE"``."""
    if name == "skip":
        return nn.Identity()
    kernel, expand = _parse_op(name)
    inner = ch.times(expand)
    body = SuperSequential(
        *conv_bn(ch, inner, kernel, True, dims), *conv_bn(inner, ch, 1, False, dims)
    )
    return SuperResidual(body, nn.ReLU())


class MNIST1DSpace(SearchSpace):
    """Residual 1-D CNN space for MNIST-1D.

    Args:
        base_channels: Channels of stage 1 at width multiplier 1.0 (stage 2 has twice).
        layers_per_stage: Searchable layers in each of the two stages.
        ops: Candidate ops of every searchable layer (``"kK_eE"`` or ``"skip"``).
        widths: Width multipliers.
        num_classes: Output classes.
    """

    #: Registry name; a subclass with other defaults registers under its own.
    space_name = "mnist1d"
    description = "residual 1-D CNN for MNIST-1D: kernel/expansion/skip per layer, width"

    def __init__(
        self,
        base_channels: int = 32,
        layers_per_stage: int = 3,
        ops: Sequence[str] = OPS,
        widths: Sequence[float] = WIDTHS,
        num_classes: int = 10,
    ) -> None:
        check_ops(ops)
        self.layers_per_stage = layers_per_stage
        choices = [op_choice(f"s{s}/l{i}", ops) for s in (1, 2) for i in range(layers_per_stage)]
        choices.append(value_choice("width", widths))
        super().__init__(
            choices,
            name=self.space_name,
            description=self.description,
            # Every constructor argument, so that ``from_config`` re-creates the space.
            config={
                "base_channels": base_channels,
                "layers_per_stage": layers_per_stage,
                "ops": list(ops),
                "widths": list(widths),
                "num_classes": num_classes,
                "input_shape": [1, 40],
            },
        )
        self.base_channels = base_channels
        self.num_classes = num_classes
        self.ops = tuple(ops)
        self.widths = tuple(widths)

    def supernet(self) -> Supernet:
        c1 = Channels.scaled("width", self.base_channels, self.widths)
        c2 = c1.times(2)
        layers: list[nn.Module] = conv_bn(Channels.fixed(1), c1, 5, True)
        for s, ch in ((1, c1), (2, c2)):
            if s == 2:
                layers.append(nn.MaxPool1d(2))  # (B, C, 40) -> (B, C, 20)
                layers.extend(conv_bn(c1, c2, 3, True))
            for i in range(self.layers_per_stage):
                label = f"s{s}/l{i}"
                layers.append(LayerChoice(label, {op: residual_op(op, ch) for op in self.ops}))
        layers += [
            nn.AdaptiveAvgPool1d(1),  # (B, C, 20) -> (B, C, 1)
            nn.Flatten(),  # (B, C, 1) -> (B, C)
            ElasticLinear(c2, Channels.fixed(self.num_classes)),
        ]
        return Supernet(self, SuperSequential(*layers))


#: Widths of the proving-ground space: 8 to 32 channels in stage 1 (16 to 64 in stage 2).
FRONT_WIDTHS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)


class MNIST1DFrontSpace(MNIST1DSpace):
    """The proving ground: the default space's ops with widths down to 4 channels.

    Where the default space is saturated (100 random architectures test at 98.5-99.7% on
    MNIST-1D, inside one training's noise), narrow widths put capacity and receptive field
    in short supply, so architectures differ by far more than the noise and the accuracy
    vs training-cost front has a real shape (a measured probe: 70-98.6% over ten random
    architectures on 2,000 training sequences, ``benchmarks/RESULTS.md``). Size:
    5 ops ** 6 layers * 4 widths = 62,500 architectures.
    """

    space_name = "mnist1d_front"
    description = "residual 1-D CNN for MNIST-1D, widths 4-32 channels: a real accuracy/cost front"

    def __init__(
        self,
        base_channels: int = 32,
        layers_per_stage: int = 3,
        ops: Sequence[str] = OPS,
        widths: Sequence[float] = FRONT_WIDTHS,
        num_classes: int = 10,
    ) -> None:
        super().__init__(base_channels, layers_per_stage, ops, widths, num_classes)
