"""What the batched screening proposes in place of the sampler's repeats (used by
:class:`~nasflow.pipeline._phases._screening.BatchedScreening`): how often a repeating
sampler is asked again, and the unseen architecture drawn at random or mutated from the
repeat (``StudySpec.repeat_fallback``)."""

from __future__ import annotations

from collections.abc import Set

import numpy as np

from nasflow.errors import NasflowError
from nasflow.space import Arch, FloatRange, SearchSpace

#: Times the sampler is asked again when it proposes an architecture already scored,
#: before a uniformly random unseen one is drawn instead.
REASKS = 3

#: Re-asking is judged on the outcomes of the last this many re-asks: when none of them
#: proposed an unseen architecture, a repeat goes straight to the random draw (and only
#: every ``REASK_PROBE``-th repeat is re-asked, to notice when re-asking pays again).
#: Measured (benchmarks/RESULTS.md, "B4, third round"): with univariate multi-objective
#: TPE not one of ~750 (300 candidates) or ~2,800 (1,000) re-asks per run found an unseen
#: architecture (3 seeds), while each costs a full TPE proposal; NSGA-II, evolution and
#: multivariate TPE do find new ones on re-asking (1.1 to 1.8 asks per proposal).
REASK_WINDOW = 64
REASK_PROBE = 16

#: Spaces of at most this many points are listed to draw an unseen one when random
#: draws keep hitting scored ones (and to know when the space is exhausted).
LIST_LIMIT = 1_000_000

#: Random draws tried for an unseen architecture before listing the space.
RANDOM_DRAWS = 64


class SpaceExhausted(NasflowError):
    """Every architecture of the space is scored (internal: ends the batched loop)."""


def unseen_random(space: SearchSpace, seen: Set[str], rng: np.random.Generator) -> Arch:
    """A uniformly random architecture of ``space`` not in ``seen`` (``Arch.to_json``).

    Raises:
        SpaceExhausted: None is left.
    """
    for _ in range(RANDOM_DRAWS):
        arch = space.sample(rng)
        if arch.to_json() not in seen:
            return arch
    if space.size <= LIST_LIMIT:
        unseen = [a for a in space.enumerate(LIST_LIMIT) if a.to_json() not in seen]
        if not unseen:
            raise SpaceExhausted
        return unseen[int(rng.integers(len(unseen)))]
    for _ in range(100 * RANDOM_DRAWS):  # a huge space: an unseen point is near-certain
        arch = space.sample(rng)
        if arch.to_json() not in seen:
            return arch
    raise SpaceExhausted


def unseen_neighbour(
    space: SearchSpace, arch: Arch, seen: Set[str], rng: np.random.Generator
) -> Arch | None:
    """An architecture of ``space`` not in ``seen`` (``Arch.to_json``) one discrete choice
    away from ``arch`` (every such change tried, in random order), else two away
    (``RANDOM_DRAWS`` random pairs of changes); ``None`` where none was found. A
    continuous hyper-parameter keeps its value."""
    singles = [
        (c.label, v)
        for c in space.choices
        if not isinstance(c, FloatRange)
        for v in c.values
        if v != arch[c.label]
    ]
    for i in rng.permutation(len(singles)):
        near = arch.replace(dict([singles[i]]))
        if near.to_json() not in seen:
            return near
    for _ in range(RANDOM_DRAWS if len(singles) > 1 else 0):
        i, j = rng.choice(len(singles), size=2, replace=False)
        if singles[i][0] == singles[j][0]:
            continue  # two values of one choice: one change, already tried
        near = arch.replace(dict([singles[i], singles[j]]))
        if near.to_json() not in seen:
            return near
    return None
