"""The MobileNetV2 MBConv space of FairNAS / SPOS (Chu et al. 2019, Guo et al. 2019).

Backbone: MobileNetV2 (Sandler et al. 2018) as torchvision builds it. A 3x3 conv stem with
32 channels, then the inverted-residual stages ``STAGES`` in ``(c, n, s)`` form (channels,
blocks, stride of the stage's first block), a 1x1 conv to 1280 channels, global average
pooling, dropout and a linear classifier. All channel counts are scaled by ``width_mult``
and rounded to a multiple of 8, as MobileNetV2 does; the head keeps at least 1280.

Searchable layers: every block of stages 2 to 7 (16 layers at ``depth=1``). Each picks one
MBConv op ``kK_eE``: a 1x1 expansion to ``E`` times the input channels, a ``K`` x ``K``
depthwise conv (carrying the block's stride), a linear 1x1 projection, and the residual
connection when input and output shapes match. The default ops are kernels 3/5/7 x
expansions 3/6 (6 ops). A layer whose input and output shapes match (stride 1, same
channels) also offers ``skip`` (identity), which removes the block and so makes the depth
searchable: at full width that is every block but the first of a stage (10 of the 16
layers have 7 choices, the others 6). The first block (16 channels, expansion 1, kernel 3)
is fixed, as in MobileNetV2, ProxylessNAS and FairNAS.

Every candidate op has its own weights (no sharing across kernel sizes or expansions, as in
SPOS and FairNAS). With layers of 6 and 7 choices, strictly fair sampling runs 7 paths per
step and each op of a 6-choice layer is trained once or twice per step (see
``nasflow.sampling.fair_paths``).

Input resolution: ``image_size`` of 224 (ImageNet-style folders) keeps MobileNetV2's
strides, a total downsampling of 32 (224 -> 7). Small inputs (``small_input``, by default
``image_size <= 64``, e.g. 32 for CIFAR-10) use the common CIFAR adaptation of
MobileNetV2 (kuangliu/pytorch-cifar): the stem and the first block of the 24-channel stage
get stride 1 instead of 2, a total downsampling of 8 (32 -> 4).

``width_mult`` and ``depth`` (blocks per stage ``ceil(n * depth)``, EfficientNet-style)
shrink the network for tests: ``width_mult=0.25, depth=0.25`` has one block per stage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn
from torchvision.ops import Conv2dNormActivation

from nasflow.errors import ConfigError
from nasflow.space import SearchSpace, op_choice
from nasflow.supernet import LayerChoice, Supernet, SuperSequential

KERNELS: tuple[int, ...] = (3, 5, 7)
EXPANSIONS: tuple[int, ...] = (3, 6)
SKIP = "skip"
#: MobileNetV2's stages as (channels, blocks, stride of the first block).
STAGES: tuple[tuple[int, int, int], ...] = (
    (16, 1, 1),
    (24, 2, 2),
    (32, 3, 2),
    (64, 4, 2),
    (96, 3, 1),
    (160, 3, 2),
    (320, 1, 1),
)
STEM_CHANNELS = 32
LAST_CHANNELS = 1280
#: Conv -> BN -> ReLU6 as in MobileNetV2, but out of place: the cost model's shape pass
#: hands BN's output to the activation as a leaf tensor, which an in-place op refuses.
_BN_RELU6: dict[str, Any] = {"activation_layer": nn.ReLU6, "inplace": False}
#: Inputs up to this side use the CIFAR strides when ``small_input`` is left to ``None``.
SMALL_INPUT_MAX = 64


def op_name(kernel: int, expansion: int) -> str:
    """The op name of an MBConv with this kernel and expansion (``"k5_e6"``)."""
    return f"k{kernel}_e{expansion}"


def parse_op(name: str) -> tuple[int, int]:
    """``"k5_e6"`` -> (kernel 5, expansion 6).

    Raises:
        ValueError: ``name`` is not of the form ``kK_eE``.
    """
    k, sep, e = name.partition("_")
    if not (sep and k[:1] == "k" and e[:1] == "e" and k[1:].isdigit() and e[1:].isdigit()):
        raise ConfigError(f"MBConv op {name!r} is not of the form 'k5_e6'")
    return int(k[1:]), int(e[1:])


def make_divisible(value: float, divisor: int = 8) -> int:
    """Round ``value`` to the nearest multiple of ``divisor``, never below ``divisor`` nor
    more than 10% below ``value`` (MobileNetV2's rule, as in torchvision)."""
    out = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * value else out


class MBConv(nn.Module):
    """An inverted residual block with a kernel argument.

    The block of torchvision's ``InvertedResidual`` (1x1 expansion -> depthwise conv ->
    linear 1x1 projection, BN everywhere, ReLU6 after the first two), with the depthwise
    kernel size as a parameter. The expansion layer is left out when ``expansion == 1``.

    Args:
        c_in: Input channels.
        c_out: Output channels.
        kernel: Side of the depthwise kernel (odd).
        stride: Stride of the depthwise conv (1 or 2).
        expansion: Hidden channels are ``round(c_in * expansion)``.
    """

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, expansion: int) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ConfigError(f"stride must be 1 or 2, got {stride!r}")
        hidden = round(c_in * expansion)
        self.use_res_connect = stride == 1 and c_in == c_out
        layers: list[nn.Module] = []
        if expansion != 1:
            layers.append(Conv2dNormActivation(c_in, hidden, kernel_size=1, **_BN_RELU6))
        layers += [
            Conv2dNormActivation(
                hidden,
                hidden,
                kernel_size=kernel,
                stride=stride,
                groups=hidden,
                **_BN_RELU6,
            ),
            nn.Conv2d(hidden, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        ]
        self.conv = nn.Sequential(*layers)
        self.out_channels = c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)  # (B, c_in, H, W) -> (B, c_out, H/stride, W/stride)


def init_weights(module: nn.Module) -> nn.Module:
    """MobileNetV2's initialisation (torchvision): Kaiming fan-out convs, unit BN, small
    linear weights, zero biases. Returns ``module``."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)
    return module


@dataclass(frozen=True)
class Layer:
    """One searchable layer: its choice label, shapes and candidate ops."""

    label: str
    c_in: int
    c_out: int
    stride: int
    ops: tuple[str, ...]

    @property
    def shapes_match(self) -> bool:
        """Whether input and output have the same shape (where ``skip`` can be offered)."""
        return self.stride == 1 and self.c_in == self.c_out


def make_op(name: str, layer: Layer) -> nn.Module:
    """A fresh module for op ``name`` of ``layer`` (``skip`` is ``nn.Identity``)."""
    if name == SKIP:
        if not layer.shapes_match:
            raise ConfigError(f"op 'skip' does not fit layer {layer.label!r}: shapes differ")
        return nn.Identity()
    kernel, expansion = parse_op(name)
    return MBConv(layer.c_in, layer.c_out, kernel, layer.stride, expansion)


def _check_int(name: str, value: Any, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{name} must be an int >= {low}, got {value!r}")


def _check_positive(name: str, value: Any) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")


def _check_ints(name: str, values: Any, odd: bool) -> tuple[int, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
        raise ConfigError(f"{name} must be a non-empty list of ints, got {values!r}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1 or (odd and v % 2 == 0):
            kind = "odd ints >= 1" if odd else "ints >= 1"
            raise ConfigError(f"{name} must hold {kind}, got {v!r} in {list(values)!r}")
    if len(set(values)) != len(values):
        raise ConfigError(f"{name} has duplicates: {list(values)!r}")
    return tuple(values)


class MBConvSpace(SearchSpace):
    """The FairNAS / SPOS MobileNetV2 space: kernel x expansion (or skip) per layer.

    Args:
        image_size: Side of the input images: 224 for ImageNet-style folders, 32 for
            CIFAR-10. The network takes any size (it ends with global pooling); this sets
            the default strides and the example input used for export.
        num_classes: Output classes.
        width_mult: Multiplies every channel count (rounded to a multiple of 8).
        depth: Blocks per stage are ``ceil(n * depth)`` (at least 1).
        kernels: Depthwise kernel sizes of the ops.
        expansions: Expansion ratios of the ops.
        skip: Offer ``skip`` on the layers whose input and output shapes match.
        small_input: Use the CIFAR strides (stem and 24-channel stage at stride 1);
            ``None`` picks them for ``image_size <= 64``.
        in_channels: Channels of the input images.
        last_channels: Channels of the final 1x1 conv (scaled by ``max(1, width_mult)``).
        dropout: Dropout probability before the classifier.
    """

    def __init__(
        self,
        image_size: int = 224,
        num_classes: int = 1000,
        width_mult: float = 1.0,
        depth: float = 1.0,
        kernels: Sequence[int] = KERNELS,
        expansions: Sequence[int] = EXPANSIONS,
        skip: bool = True,
        small_input: bool | None = None,
        in_channels: int = 3,
        last_channels: int = LAST_CHANNELS,
        dropout: float = 0.2,
    ) -> None:
        for name, value in (
            ("image_size", image_size),
            ("num_classes", num_classes),
            ("in_channels", in_channels),
            ("last_channels", last_channels),
        ):
            _check_int(name, value)
        _check_positive("width_mult", width_mult)
        _check_positive("depth", depth)
        kernels = _check_ints("kernels", kernels, odd=True)
        expansions = _check_ints("expansions", expansions, odd=False)
        if not isinstance(skip, bool):
            raise ConfigError(f"skip must be a bool, got {skip!r}")
        if small_input is None:
            small_input = image_size <= SMALL_INPUT_MAX
        elif not isinstance(small_input, bool):
            raise ConfigError(f"small_input must be a bool or None, got {small_input!r}")
        if (
            isinstance(dropout, bool)
            or not isinstance(dropout, int | float)
            or not 0 <= dropout < 1
        ):
            raise ConfigError(f"dropout must be a number in [0, 1), got {dropout!r}")

        self.image_size = image_size
        self.num_classes = num_classes
        self.width_mult = width_mult
        self.in_channels = in_channels
        self.small_input = small_input
        self.dropout = float(dropout)
        self.stem_channels = make_divisible(STEM_CHANNELS * width_mult)
        self.head_channels = make_divisible(last_channels * max(1.0, width_mult))
        self.mbconv_ops = tuple(op_name(k, e) for k in kernels for e in expansions)
        self.layers = self._layers(depth, skip)
        super().__init__(
            [op_choice(layer.label, layer.ops) for layer in self.layers],
            name="mbconv",
            description=(
                f"MobileNetV2 MBConv space (FairNAS/SPOS): kernel {'/'.join(map(str, kernels))}"
                f" x expansion {'/'.join(map(str, expansions))}"
                f"{', skip where shapes match' if skip else ''} on {len(self.layers)} layers"
            ),
            config={
                "image_size": image_size,
                "num_classes": num_classes,
                "width_mult": width_mult,
                "depth": depth,
                "kernels": list(kernels),
                "expansions": list(expansions),
                "skip": skip,
                "small_input": small_input,
                "in_channels": in_channels,
                "last_channels": last_channels,
                "dropout": dropout,
                "input_shape": [in_channels, image_size, image_size],
            },
        )

    # ------------------------------------------------------------------ structure
    def stage_strides(self) -> list[int]:
        """The stride of each stage's first block (the CIFAR adaptation on small inputs)."""
        strides = [s for _, _, s in STAGES]
        if self.small_input:
            strides[1] = 1  # 24-channel stage
        return strides

    def _layers(self, depth: float, skip: bool) -> tuple[Layer, ...]:
        """The searchable layers of stages 2..7, labelled ``s{stage}/b{block}``."""
        layers: list[Layer] = []
        c_in = make_divisible(STAGES[0][0] * self.width_mult)
        for stage, ((c, n, _), stride) in enumerate(
            zip(STAGES, self.stage_strides(), strict=True), start=1
        ):
            if stage == 1:
                continue  # the fixed expansion-1 block
            c_out = make_divisible(c * self.width_mult)
            for block in range(max(1, math.ceil(n * depth))):
                s = stride if block == 0 else 1
                layer = Layer(f"s{stage}/b{block}", c_in, c_out, s, self.mbconv_ops)
                if skip and layer.shapes_match:
                    layer = replace(layer, ops=(*layer.ops, SKIP))
                layers.append(layer)
                c_in = c_out
        return tuple(layers)

    def _network(self, searchable: Callable[[Layer], nn.Module]) -> list[nn.Module]:
        """Stem, the fixed first block, the searchable layers and the head."""
        c1 = make_divisible(STAGES[0][0] * self.width_mult)
        stem_stride = 1 if self.small_input else 2
        return [
            Conv2dNormActivation(  # (B, 3, H, W) -> (B, 32w, H/2, W/2), or H, W if small
                self.in_channels, self.stem_channels, stride=stem_stride, **_BN_RELU6
            ),
            MBConv(self.stem_channels, c1, kernel=3, stride=1, expansion=1),
            *(searchable(layer) for layer in self.layers),
            Conv2dNormActivation(
                self.layers[-1].c_out, self.head_channels, kernel_size=1, **_BN_RELU6
            ),
            nn.AdaptiveAvgPool2d(1),  # (B, 1280, h, w) -> (B, 1280, 1, 1)
            nn.Flatten(),  # (B, 1280, 1, 1) -> (B, 1280)
            nn.Dropout(self.dropout),
            nn.Linear(self.head_channels, self.num_classes),
        ]

    # ------------------------------------------------------------------ networks
    def supernet(self) -> Supernet:
        """One ``LayerChoice`` per searchable layer, one module per candidate op."""
        body = SuperSequential(
            *self._network(
                lambda layer: LayerChoice(
                    layer.label, {op: make_op(op, layer) for op in layer.ops}
                )
            )
        )
        return Supernet(self, init_weights(body))

    def build(self, arch: Mapping[str, Any]) -> nn.Module:
        """The stand-alone network of ``arch``, freshly initialised (no supernet built).

        It has the same modules and parameter names as ``supernet().extract(arch)``.
        """
        path = self.path(arch)
        net = nn.Sequential(*self._network(lambda layer: make_op(str(path[layer.label]), layer)))
        return init_weights(net)
