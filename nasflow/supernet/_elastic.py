"""Elastic-width layers: smaller widths use leading slices of the largest weights.

Channel counts are read from the path through a ``Channels`` rule, so a width choice is
one value in the arch, and ``extract`` materialises plain ``nn.Conv1d``/``nn.Conv2d`` /
``nn.Linear`` / ``nn.BatchNorm1d``/``nn.BatchNorm2d`` modules of exactly the chosen size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nasflow.errors import ConfigError
from nasflow.supernet._base import Channels, SuperModule


class _ElasticConv(SuperModule):
    """``nn.ConvNd`` whose input and output widths follow the path (``dims`` 1 or 2).

    Args:
        in_channels: Input width rule.
        out_channels: Output width rule.
        kernel_size: Odd kernel size ("same" padding).
        bias: Whether the layer has a bias.
        groups: ``1`` (dense) or ``"depthwise"`` (one filter per channel: the input and
            output rules must then be the same).
    """

    dims = 1
    _conv: type[nn.Conv1d] | type[nn.Conv2d] = nn.Conv1d

    def __init__(
        self,
        in_channels: Channels,
        out_channels: Channels,
        kernel_size: int,
        bias: bool = False,
        groups: int | str = 1,
    ) -> None:
        super().__init__()
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ConfigError(f"kernel_size must be a positive odd int, got {kernel_size!r}")
        if groups not in (1, "depthwise"):
            raise ConfigError(f"groups must be 1 or 'depthwise', got {groups!r}")
        if groups == "depthwise" and in_channels != out_channels:
            raise ConfigError("a depthwise conv needs the same input and output width rule")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = kernel_size
        self.depthwise = groups == "depthwise"
        self.conv: nn.Conv1d | nn.Conv2d = self._conv(
            in_channels.max,
            out_channels.max,
            kernel_size,
            padding=kernel_size // 2,
            bias=bias,
            groups=out_channels.max if self.depthwise else 1,
        )

    def _weights(self, arch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        cin, cout = self.in_channels(arch), self.out_channels(arch)
        # (cout, cin, *kernel); a depthwise weight is (cout, 1, *kernel)
        w = self.conv.weight[:cout] if self.depthwise else self.conv.weight[:cout, :cin]
        b = self.conv.bias[:cout] if self.conv.bias is not None else None
        return w, b

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        w, b = self._weights(arch)
        fn = F.conv1d if self.dims == 1 else F.conv2d
        groups = w.shape[0] if self.depthwise else 1
        return fn(x, w, b, padding=self.kernel_size // 2, groups=groups)

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        w, b = self._weights(arch)
        cout = w.shape[0]
        out = self._conv(
            cout if self.depthwise else w.shape[1],
            cout,
            self.kernel_size,
            padding=self.kernel_size // 2,
            bias=b is not None,
            groups=cout if self.depthwise else 1,
        )
        with torch.no_grad():
            out.weight.copy_(w)
            if b is not None and out.bias is not None:
                out.bias.copy_(b)
        return out.to(w.device)


class ElasticConv1d(_ElasticConv):
    """``nn.Conv1d`` whose input and output widths follow the path (see ``_ElasticConv``)."""


class ElasticConv2d(_ElasticConv):
    """``nn.Conv2d`` whose input and output widths follow the path (see ``_ElasticConv``)."""

    dims = 2
    _conv = nn.Conv2d


class ElasticLinear(SuperModule):
    """``nn.Linear`` whose input and output widths follow the path."""

    def __init__(self, in_features: Channels, out_features: Channels, bias: bool = True) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.linear = nn.Linear(in_features.max, out_features.max, bias=bias)

    def _weights(self, arch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        fin, fout = self.in_features(arch), self.out_features(arch)
        b = self.linear.bias[:fout] if self.linear.bias is not None else None
        return self.linear.weight[:fout, :fin], b  # (fout, fin)

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        w, b = self._weights(arch)
        return F.linear(x, w, b)

    def extract(self, arch: Mapping[str, Any]) -> nn.Linear:
        w, b = self._weights(arch)
        out = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
        with torch.no_grad():
            out.weight.copy_(w)
            if b is not None:
                out.bias.copy_(b)
        return out.to(w.device)


class ElasticBatchNorm1d(nn.BatchNorm1d, SuperModule):
    """``nn.BatchNorm1d`` over the leading ``channels(arch)`` features.

    Running statistics of a narrower path are slices of the full buffers; BN
    recalibration (``recalibrate_bn``) resets and re-estimates them per path.
    """

    #: The plain layer ``extract`` returns.
    _plain: type[nn.BatchNorm1d] | type[nn.BatchNorm2d] = nn.BatchNorm1d

    def __init__(self, channels: Channels, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__(channels.max, eps=eps, momentum=momentum)
        self.channels = channels

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:  # type: ignore[override]
        c = self.channels(arch)
        if self.training and self.track_running_stats:
            tracked = self.num_batches_tracked
            assert tracked is not None  # (track_running_stats)
            tracked.add_(1)
            momentum = 1.0 / float(tracked) if self.momentum is None else self.momentum
        else:
            momentum = 0.0 if self.momentum is None else self.momentum
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(  # any number of spatial dimensions
            x,
            self.running_mean[:c] if self.running_mean is not None else None,
            self.running_var[:c] if self.running_var is not None else None,
            self.weight[:c],
            self.bias[:c],
            use_batch,
            momentum,
            self.eps,
        )

    def extract(self, arch: Mapping[str, Any]) -> nn.BatchNorm1d | nn.BatchNorm2d:
        c = self.channels(arch)
        out = self._plain(c, eps=self.eps, momentum=self.momentum)
        with torch.no_grad():
            out.weight.copy_(self.weight[:c])
            out.bias.copy_(self.bias[:c])
            assert self.running_mean is not None and self.running_var is not None
            assert out.running_mean is not None and out.running_var is not None
            out.running_mean.copy_(self.running_mean[:c])
            out.running_var.copy_(self.running_var[:c])
            if out.num_batches_tracked is not None and self.num_batches_tracked is not None:
                out.num_batches_tracked.copy_(self.num_batches_tracked)
        return out.to(self.weight.device)


class ElasticBatchNorm2d(ElasticBatchNorm1d):
    """``nn.BatchNorm2d`` over the leading ``channels(arch)`` channels (the same
    computation: ``F.batch_norm`` normalizes dimension 1 whatever follows it)."""

    _plain = nn.BatchNorm2d
