"""Weight-sharing modules whose forward takes the path explicitly.

There is no hidden "active path" state anywhere: every ``SuperModule.forward`` receives the
architecture it must run, so two paths can be evaluated back to back (or on two threads)
without one leaking into the other, and ``extract(arch)`` turns the path into ordinary
PyTorch modules with copied weights.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from nasflow.space import Arch, SearchSpace


class SuperModule(nn.Module, ABC):
    """A module that runs one path of a search space: ``forward(x, arch)``."""

    @abstractmethod
    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        """Run the path ``arch`` on ``x``."""

    @abstractmethod
    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        """A stand-alone module (no supernet code) with copies of this path's weights."""


def call(module: nn.Module, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
    """Run ``module`` on ``x``, passing ``arch`` only to modules that take a path."""
    if isinstance(module, SuperModule):
        return module(x, arch)
    return module(x)


def extract_module(module: nn.Module, arch: Mapping[str, Any]) -> nn.Module:
    """Extract a path from a super module, or deep-copy a plain one."""
    if isinstance(module, SuperModule):
        return module.extract(arch)
    return copy.deepcopy(module)


class LayerChoice(SuperModule):
    """One of several candidate modules, selected by ``arch[label]``.

    Args:
        label: The op or edge choice that selects the candidate.
        candidates: Candidate name (the choice's value) to module.
    """

    def __init__(self, label: str, candidates: Mapping[str, nn.Module]) -> None:
        super().__init__()
        if not candidates:
            raise ValueError(f"LayerChoice {label!r} has no candidates")
        self.label = label
        self.candidates = nn.ModuleDict(dict(candidates))

    def _pick(self, arch: Mapping[str, Any]) -> nn.Module:
        try:
            name = arch[self.label]
        except KeyError:
            raise ValueError(f"path has no value for {self.label!r}") from None
        if name not in self.candidates:
            raise ValueError(
                f"{name!r} is not a candidate of {self.label!r}; "
                f"candidates: {list(self.candidates)}"
            )
        return self.candidates[name]

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        return call(self._pick(arch), x, arch)

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        return extract_module(self._pick(arch), arch)


class SuperSequential(SuperModule):
    """``nn.Sequential`` for a mix of super and plain modules."""

    def __init__(self, *modules: nn.Module) -> None:
        super().__init__()
        self.layers = nn.ModuleList(modules)

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        for m in self.layers:
            x = call(m, x, arch)
        return x

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        return nn.Sequential(*(extract_module(m, arch) for m in self.layers))


class Supernet(SuperModule):
    """The top of a weight-sharing network: checks each path against its space.

    Args:
        space: The space whose paths this supernet runs.
        body: The network; its super modules read the path's labels.
    """

    def __init__(self, space: SearchSpace, body: nn.Module) -> None:
        super().__init__()
        self.space = space
        self.body = body

    def _check(self, arch: Mapping[str, Any]) -> Arch:
        """Validate a path, or reduce a full arch (with hyper-parameters) to its path."""
        if len(arch) == len(self.space.path_choices):
            return self.space.validate(arch, path_only=True)
        return self.space.path(arch)

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        return call(self.body, x, self._check(arch))

    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        """The stand-alone network of ``arch`` with copies of the supernet's weights.

        The copy is put in the supernet's current train/eval mode.
        """
        net = extract_module(self.body, self._check(arch))
        net.train(self.training)
        return net
