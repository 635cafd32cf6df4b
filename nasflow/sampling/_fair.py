"""Strictly fair sampling (FairNAS, Chu et al. 2019)."""

from __future__ import annotations

import numpy as np

from nasflow.errors import ConfigError
from nasflow.sampling._base import PathSampler
from nasflow.space import Arch, SearchSpace


def fair_sequence(num_choices: int, num_paths: int, rng: np.random.Generator) -> np.ndarray:
    """Indices ``0..m-1`` in a shuffled sequence of length ``M`` where each appears
    ``floor(M/m)`` or ``ceil(M/m)`` times.

    With ``M == m`` this is a random permutation: the strict-fairness case.
    """
    if num_choices < 1 or num_paths < num_choices:
        raise ConfigError(
            f"need 1 <= num_choices <= num_paths, got m={num_choices!r}, M={num_paths!r}"
        )
    q, r = divmod(num_paths, num_choices)
    extra = rng.choice(num_choices, size=r, replace=False)  # which choices get ceil(M/m)
    seq = np.concatenate([np.repeat(np.arange(num_choices), q), extra])
    rng.shuffle(seq)
    return seq


def fair_paths(space: SearchSpace, rng: np.random.Generator) -> list[Arch]:
    """The ``M = max_l m_l`` paths of one strictly fair step.

    Every layer gets an independent shuffled sequence (a permutation when it has ``M``
    choices); path ``i`` takes the ``i``-th entry of every layer's sequence. Within the
    step, every choice of a layer with ``m_l`` choices is trained ``floor(M/m_l)`` or
    ``ceil(M/m_l)`` times, so with equal choice counts every op is trained exactly once.
    """
    choices = space.path_choices
    num_paths = max(len(c.values) for c in choices)
    columns = {c.label: fair_sequence(len(c.values), num_paths, rng) for c in choices}
    return [
        Arch({c.label: c.values[int(columns[c.label][i])] for c in choices})
        for i in range(num_paths)
    ]


class FairSampler(PathSampler):
    """``M`` complementary paths per step that train every op equally (FairNAS)."""

    name = "fair"

    @staticmethod
    def draw(space: SearchSpace, rng: np.random.Generator) -> list[Arch]:
        return fair_paths(space, rng)
