"""Uniform single-path sampling (SPOS, Guo et al. 2019)."""

from __future__ import annotations

import numpy as np

from nasflow.sampling._base import PathSampler
from nasflow.space import Arch, SearchSpace


def uniform_path(space: SearchSpace, rng: np.random.Generator) -> Arch:
    """One path with every choice drawn uniformly and independently."""
    return Arch({c.label: c.values[int(rng.integers(len(c.values)))] for c in space.path_choices})


class UniformSampler(PathSampler):
    """One uniformly random path per step (single-path one-shot, SPOS)."""

    name = "uniform"

    @staticmethod
    def draw(space: SearchSpace, rng: np.random.Generator) -> list[Arch]:
        return [uniform_path(space, rng)]
