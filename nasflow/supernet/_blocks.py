"""Small structural blocks shared by spaces, in a plain and a super version."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nasflow.supernet._base import SuperModule, call, extract_module


class Residual(nn.Module):
    """``post(x + body(x))``: a plain residual block (what ``SuperResidual`` extracts to)."""

    def __init__(self, body: nn.Module, post: nn.Module | None = None) -> None:
        super().__init__()
        self.body = body
        self.post = post if post is not None else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.post(x + self.body(x))


class SuperResidual(SuperModule):
    """``post(x + body(x, arch))`` with a super body; extracts to ``Residual``."""

    def __init__(self, body: nn.Module, post: nn.Module | None = None) -> None:
        super().__init__()
        self.body = body
        self.post = post if post is not None else nn.Identity()

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        return self.post(x + call(self.body, x, arch))

    def extract(self, arch: Mapping[str, Any]) -> Residual:
        return Residual(extract_module(self.body, arch), extract_module(self.post, arch))
