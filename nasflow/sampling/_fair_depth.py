"""Strictly fair sampling with the skips of a step spread over its paths' depths."""

from __future__ import annotations

import numpy as np

from nasflow.sampling._fair import FairSampler, fair_sequence
from nasflow.space import Arch, SearchSpace

#: The op value read as "no layer": a path's depth is its layers whose op is not this.
SKIP = "skip"


def spread_counts(total: int, parts: int, rng: np.random.Generator) -> np.ndarray:
    """A composition of ``total`` into ``parts`` non-negative counts, uniform over all
    ``C(total + parts - 1, parts - 1)`` of them (stars and bars).

    Independent per-layer permutations give the skips per path a multinomial law; a
    uniform composition has the same mean and more spread (more paths with no skip and more
    with several), so a step trains shallow paths as well as full-depth ones.
    """
    slots = total + parts - 1
    bars = np.sort(rng.choice(slots, size=parts - 1, replace=False))
    edges = np.concatenate([[-1], bars, [slots]])
    # (parts + 1,) edges -> (parts,) counts: the stars between consecutive bars.
    return np.diff(edges) - 1


def fair_depth_paths(space: SearchSpace, rng: np.random.Generator) -> list[Arch]:
    """The ``M = max_l m_l`` paths of one strictly fair step, the skips coupled.

    Every layer trains each of its choices exactly as :func:`nasflow.sampling.fair_paths`
    does (a permutation where it has ``M`` choices), so strict fairness holds per layer and
    per step. What changes is the joint law: over the op layers that have ``M`` choices,
    one of which is ``"skip"``, the number of skips each path receives is a uniform
    composition (:func:`spread_counts`) and the layers are dealt to the paths at random;
    each layer's skip still lands on every path with probability ``1/M``. The other
    choices of such a layer are a random permutation over its remaining paths; every other
    layer is drawn as in the fair sampler.
    """
    choices = space.path_choices
    num_paths = max(len(c.values) for c in choices)
    coupled = [
        c for c in choices if c.kind == "op" and SKIP in c.values and len(c.values) == num_paths
    ]
    columns = {c.label: fair_sequence(len(c.values), num_paths, rng) for c in choices}
    if len(coupled) > 1:
        counts = spread_counts(len(coupled), num_paths, rng)
        owners = rng.permutation(np.repeat(np.arange(num_paths), counts))
        for c, owner in zip(coupled, owners, strict=True):
            skip = c.values.index(SKIP)
            others = rng.permutation([i for i in range(num_paths) if i != skip])
            paths = [p for p in range(num_paths) if p != owner]
            column = np.empty(num_paths, dtype=int)
            column[owner] = skip
            column[paths] = others
            columns[c.label] = column
    return [
        Arch({c.label: c.values[int(columns[c.label][i])] for c in choices})
        for i in range(num_paths)
    ]


class FairDepthSampler(FairSampler):
    """``M`` complementary paths per step that train every op equally (FairNAS), their
    skips spread so that one step's paths range from shallow to full depth: a fair sampler
    (the report holds its counts to the same rule), with another joint law."""

    name = "fair-depth"

    @staticmethod
    def draw(space: SearchSpace, rng: np.random.Generator) -> list[Arch]:
        return fair_depth_paths(space, rng)
