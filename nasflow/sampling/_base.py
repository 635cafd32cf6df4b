"""The path-sampler interface."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from nasflow._checks import check_int
from nasflow.errors import ConfigError
from nasflow.space import Arch, SearchSpace


class PathSampler(ABC):
    """Draws the supernet paths to train at each step.

    A sampler's randomness is a pure function of ``(seed, step)``: every DDP rank that
    asks for the same step gets the same paths, and a resumed run continues exactly where
    it stopped without saving generator state.

    Args:
        space: The space whose paths are drawn.
        seed: Seed of the per-step generators.
    """

    name: str = ""

    def __init__(self, space: SearchSpace, seed: int = 0) -> None:
        check_int("seed", seed, 0)
        if not space.path_choices:
            raise ConfigError(f"space {space.name!r} has no path choices to sample")
        self.space = space
        self.seed = seed

    def generator(self, step: int) -> np.random.Generator:
        """The generator for ``step`` (independent streams per step)."""
        if step < 0:
            raise ConfigError(f"step must be >= 0, got {step!r}")
        return np.random.default_rng([self.seed, step])

    def paths(self, step: int) -> list[Arch]:
        """The paths to train, with one shared batch, before one optimizer step."""
        return self.draw(self.space, self.generator(step))

    @staticmethod
    @abstractmethod
    def draw(space: SearchSpace, rng: np.random.Generator) -> list[Arch]:
        """The pure sampling rule."""

    @property
    def paths_per_step(self) -> int:
        return len(self.draw(self.space, np.random.default_rng(0)))
