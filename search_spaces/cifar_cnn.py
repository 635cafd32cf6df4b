"""A residual 2-D CNN space for small images, sized for a CPU (the image proving ground).

Network: stem conv (k3) -> stage 1 (3 searchable layers at C channels, full resolution) ->
max-pool -> transition conv to 2C -> stage 2 (3 searchable layers at 2C, half resolution)
-> global average pool -> linear. Every searchable layer picks one of ``OPS``; a residual
op is ``relu(x + BN(conv1x1(relu(BN(conv_kxk(x))))))`` with ``e * channels`` inner
channels, ``skip`` is the identity. A global width multiplier scales C. It is the MNIST-1D
proving ground's space (``search_spaces/mnist1d.py``) in two dimensions. Size:
5 ops ** 6 layers * 4 widths = 62,500 architectures.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from nasflow.errors import ConfigError
from nasflow.space import SearchSpace, op_choice, value_choice
from nasflow.supernet import (
    Channels,
    ElasticBatchNorm2d,
    ElasticConv2d,
    ElasticLinear,
    LayerChoice,
    Supernet,
    SuperResidual,
    SuperSequential,
)

OPS: tuple[str, ...] = ("k3_e1", "k3_e2", "k5_e1", "k5_e2", "skip")
WIDTHS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)


def _parse_op(op: str) -> tuple[int, int]:
    """``"k5_e2"`` -> (kernel 5, expansion 2)."""
    k, e = op.split("_")
    return int(k[1:]), int(e[1:])


def _conv_bn(cin: Channels, cout: Channels, kernel: int, relu: bool) -> list[nn.Module]:
    layers: list[nn.Module] = [ElasticConv2d(cin, cout, kernel), ElasticBatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU())
    return layers


def _op(name: str, ch: Channels) -> nn.Module:
    if name == "skip":
        return nn.Identity()
    kernel, expand = _parse_op(name)
    inner = ch.times(expand)
    body = SuperSequential(*_conv_bn(ch, inner, kernel, True), *_conv_bn(inner, ch, 1, False))
    return SuperResidual(body, nn.ReLU())


class CIFARCNNSpace(SearchSpace):
    """Residual 2-D CNN space for CIFAR-sized images.

    Args:
        base_channels: Channels of stage 1 at width multiplier 1.0 (stage 2 has twice).
        layers_per_stage: Searchable layers in each of the two stages.
        ops: Candidate ops of every searchable layer (``"kK_eE"`` or ``"skip"``).
        widths: Width multipliers.
        image_size: Height and width of the input images.
        num_classes: Output classes.
    """

    space_name = "cifar_cnn"
    description = "residual 2-D CNN for small images: kernel/expansion/skip per layer, width"

    def __init__(
        self,
        base_channels: int = 32,
        layers_per_stage: int = 3,
        ops: Sequence[str] = OPS,
        widths: Sequence[float] = WIDTHS,
        image_size: int = 16,
        num_classes: int = 10,
    ) -> None:
        for op in ops:
            if op != "skip":
                try:
                    _parse_op(op)
                except (ValueError, IndexError):
                    raise ConfigError(f"op {op!r} is not 'skip' or of the form 'k5_e2'") from None
                if _parse_op(op)[0] % 2 == 0:
                    raise ConfigError(f"op {op!r} needs an odd kernel size")
        if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 2:
            raise ConfigError(f"image_size must be an int >= 2, got {image_size!r}")
        self.layers_per_stage = layers_per_stage
        choices = [op_choice(f"s{s}/l{i}", ops) for s in (1, 2) for i in range(layers_per_stage)]
        choices.append(value_choice("width", widths))
        super().__init__(
            choices,
            name=self.space_name,
            description=self.description,
            config={
                "base_channels": base_channels,
                "layers_per_stage": layers_per_stage,
                "ops": list(ops),
                "widths": list(widths),
                "image_size": image_size,
                "num_classes": num_classes,
                "input_shape": [3, image_size, image_size],
            },
        )
        self.base_channels = base_channels
        self.image_size = image_size
        self.num_classes = num_classes
        self.ops = tuple(ops)
        self.widths = tuple(widths)

    def supernet(self) -> Supernet:
        c1 = Channels.scaled("width", self.base_channels, self.widths)
        c2 = c1.times(2)
        layers: list[nn.Module] = _conv_bn(Channels.fixed(3), c1, 3, True)
        for s, ch in ((1, c1), (2, c2)):
            if s == 2:
                layers.append(nn.MaxPool2d(2))  # (B, C, H, W) -> (B, C, H/2, W/2)
                layers.extend(_conv_bn(c1, c2, 3, True))
            for i in range(self.layers_per_stage):
                label = f"s{s}/l{i}"
                layers.append(LayerChoice(label, {op: _op(op, ch) for op in self.ops}))
        layers += [
            nn.AdaptiveAvgPool2d(1),  # (B, C, H/2, W/2) -> (B, C, 1, 1)
            nn.Flatten(),  # (B, C, 1, 1) -> (B, C)
            ElasticLinear(c2, Channels.fixed(self.num_classes)),
        ]
        return Supernet(self, SuperSequential(*layers))
