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

from nasflow._checks import check_int
from nasflow.search_spaces.mnist1d import check_ops, conv_bn, residual_op
from nasflow.space import SearchSpace, op_choice, value_choice
from nasflow.supernet import (
    Channels,
    ElasticLinear,
    LayerChoice,
    Supernet,
    SuperSequential,
)

OPS: tuple[str, ...] = ("k3_e1", "k3_e2", "k5_e1", "k5_e2", "skip")
WIDTHS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)


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
        check_ops(ops)
        check_int("image_size", image_size, 2)
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
        layers: list[nn.Module] = conv_bn(Channels.fixed(3), c1, 3, True, dims=2)
        for s, ch in ((1, c1), (2, c2)):
            if s == 2:
                layers.append(nn.MaxPool2d(2))  # (B, C, H, W) -> (B, C, H/2, W/2)
                layers.extend(conv_bn(c1, c2, 3, True, dims=2))
            for i in range(self.layers_per_stage):
                label = f"s{s}/l{i}"
                layers.append(
                    LayerChoice(label, {op: residual_op(op, ch, dims=2) for op in self.ops})
                )
        layers += [
            nn.AdaptiveAvgPool2d(1),  # (B, C, H/2, W/2) -> (B, C, 1, 1)
            nn.Flatten(),  # (B, C, 1, 1) -> (B, C)
            ElasticLinear(c2, Channels.fixed(self.num_classes)),
        ]
        return Supernet(self, SuperSequential(*layers))
