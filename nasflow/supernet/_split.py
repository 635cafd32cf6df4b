"""Few-shot splitting: one sub-supernet per value of a choice (Zhao et al., ICML 2021).

A one-shot supernet shares every weight between all paths. Where one choice changes what
the shared weights must do for every other layer, the sharing distorts the ranking across
that choice's values. Elastic width is the measured case: a narrow path's channels are the
first channels of every wider path, so those channels are trained to serve four networks
at once, and the widest paths score close to the next-narrower ones although, trained
stand-alone, they test higher on every ground of the suite. Splitting the supernet on the
width gives each width its own weights (ops still shared within it) with the same paths
and FLOPs per step: every fair step's paths still run once each, each in its own
sub-supernet (the optimizer steps over four times the parameters: up to x1.09 CPU per
epoch measured, ``benchmarks/split_cost.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nasflow.errors import ConfigError
from nasflow.supernet._base import SuperModule, call, extract_module


class Split(SuperModule):
    """One copy of ``body`` per value of the choice ``label``; a path runs in its copy.

    Args:
        label: The choice split on (a value or op choice of the space).
        values: The choice's values (one sub-supernet each).
        body: The network copied once per value (its initial weights are shared, then
            each copy trains on its own paths only).
    """

    def __init__(self, label: str, values: tuple[Any, ...], body: nn.Module) -> None:
        super().__init__()
        if not values:
            raise ConfigError(f"cannot split on {label!r}: it has no values")
        self.label = label
        self.values = tuple(values)
        self.parts = nn.ModuleList(copy.deepcopy(body) for _ in self.values)

    def _part(self, arch: Mapping[str, Any]) -> nn.Module:
        try:
            value = arch[self.label]
        except KeyError:
            raise ConfigError(f"path has no value for {self.label!r}") from None
        for v, part in zip(self.values, self.parts, strict=True):
            if v == value:
                return part
        raise ConfigError(f"{value!r} is not a value of {self.label!r}; values: {self.values}")

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        return call(self._part(arch), x, arch)

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        return extract_module(self._part(arch), arch)


def split_supernet(net: nn.Module, label: str) -> nn.Module:
    """``net`` (a :class:`~nasflow.supernet.Supernet`) split on the choice ``label``.

    Raises:
        ConfigError: ``label`` is not one of the space's path choices.
    """
    from nasflow.supernet._base import Supernet

    if not isinstance(net, Supernet):
        raise ConfigError(f"can only split a Supernet, got {type(net).__name__}")
    choices = {c.label: c for c in net.space.path_choices}
    if label not in choices:
        raise ConfigError(
            f"cannot split on {label!r}: space {net.space.name!r} has no path choice of that "
            f"name (its path choices: {sorted(choices)})"
        )
    return Supernet(net.space, Split(label, tuple(choices[label].values), net.body))
