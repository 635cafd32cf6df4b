"""Weight-sharing modules whose forward takes the path explicitly.

There is no hidden "active path" state anywhere: every ``SuperModule.forward`` receives the
architecture it must run, so two paths can be evaluated back to back (or on two threads)
without one leaking into the other, and ``extract(arch)`` turns the path into ordinary
PyTorch modules with copied weights.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nasflow.errors import ConfigError

if TYPE_CHECKING:
    from nasflow.space import Arch, Scalar, SearchSpace


class SuperModule(nn.Module, ABC):
    """A module that runs one path of a search space: ``forward(x, arch)``."""

    @abstractmethod
    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        """Run the path ``arch`` on ``x``."""

    @abstractmethod
    def extract(self, arch: Mapping[str, Any]) -> nn.Module:
        """A stand-alone module (no supernet code) with copies of this path's weights."""


@dataclass(frozen=True)
class Channels:
    """A channel count that may depend on a value choice of the path.

    Attributes:
        label: The value choice it depends on, or ``None`` for a fixed count.
        table: Pairs of (choice value, channel count).
    """

    label: str | None
    table: tuple[tuple[Scalar, int], ...]

    @classmethod
    def fixed(cls, n: int) -> Channels:
        if n < 1:
            raise ConfigError(f"channel count must be >= 1, got {n!r}")
        return cls(None, ((None, int(n)),))

    @classmethod
    def scaled(cls, label: str, base: int, multipliers: Sequence[float]) -> Channels:
        """``round(base * m)`` channels (at least 1) for each multiplier value ``m``."""
        return cls(label, tuple((m, max(1, round(base * m))) for m in multipliers))

    def times(self, factor: int) -> Channels:
        """The same rule with every count multiplied (an expansion ratio)."""
        return Channels(self.label, tuple((v, n * factor) for v, n in self.table))

    @property
    def max(self) -> int:
        return max(n for _, n in self.table)

    def __call__(self, arch: Mapping[str, Any]) -> int:
        if self.label is None:
            return self.table[0][1]
        value = arch[self.label]
        for v, n in self.table:
            if v == value:
                return n
        raise ConfigError(f"{value!r} is not a value of {self.label!r} known to this layer")


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
            raise ConfigError(f"LayerChoice {label!r} has no candidates")
        self.label = label
        self.candidates = nn.ModuleDict(dict(candidates))

    def _pick(self, arch: Mapping[str, Any]) -> nn.Module:
        try:
            name = arch[self.label]
        except KeyError:
            raise ConfigError(f"path has no value for {self.label!r}") from None
        if name not in self.candidates:
            raise ConfigError(
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


def check_labels(space: SearchSpace, body: nn.Module) -> None:
    """Check the labels a supernet's modules read against the choices its space declares.

    Every ``LayerChoice`` must read a declared op or edge choice and hold exactly one
    candidate per value of it; every declared op or edge choice must be read by some
    ``LayerChoice`` (or trials that differ only in it would train the same network),
    unless the body holds a ``SuperModule`` of the user's own (which may read it);
    every elastic width must read a declared value choice and cover each of its values.

    Raises:
        ValueError: The first mismatch, naming the label.
    """
    declared = {c.label: c for c in space.path_choices}
    read: set[str] = set()
    for name, module in body.named_modules():
        where = f"the supernet's module {name or 'body'!r}"
        if isinstance(module, LayerChoice):
            choice = declared.get(module.label)
            if choice is None or choice.kind not in ("op", "edge"):
                raise ConfigError(
                    f"{where} is a LayerChoice({module.label!r}), but space {space.name!r} "
                    f"declares no op_choice {module.label!r} (its op choices: "
                    f"{[c.label for c in declared.values() if c.kind in ('op', 'edge')]})"
                )
            values = [str(v) for v in choice.values]
            if sorted(values) != sorted(module.candidates):
                raise ConfigError(
                    f"{where}: LayerChoice({module.label!r}) holds candidates "
                    f"{list(module.candidates)}, but the space's op_choice {module.label!r} "
                    f"declares {values}"
                )
            read.add(module.label)
        for attr in vars(module).values():
            if isinstance(attr, Channels) and attr.label is not None:
                choice = declared.get(attr.label)
                if choice is None or not hasattr(choice, "values"):
                    raise ConfigError(
                        f"{where} sizes its channels by {attr.label!r}, which space "
                        f"{space.name!r} does not declare as a value_choice"
                    )
                missing = [v for v in choice.values if not any(v == k for k, _ in attr.table)]
                if missing:
                    raise ConfigError(
                        f"{where} sizes its channels by {attr.label!r} but has no width for "
                        f"its values {missing}"
                    )
    # A SuperModule of the user's own may read any label in its forward and extract: then
    # only what nasflow's modules read can be checked.
    custom = any(
        isinstance(m, SuperModule) and not type(m).__module__.startswith("nasflow.supernet")
        for m in body.modules()
    )
    unread = [
        c.label for c in declared.values() if c.kind in ("op", "edge") and c.label not in read
    ]
    if unread and not custom:
        raise ConfigError(
            f"space {space.name!r} declares op_choice {unread[0]!r}, but no LayerChoice of its "
            "supernet reads it: trials differing only in it would train the same network"
        )


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
        check_labels(space, body)

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
