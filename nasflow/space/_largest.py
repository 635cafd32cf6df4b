"""The space's largest architecture: the trivial baseline a search has to beat.

On every ground of the generalisation suite the parameter count alone ranks the random
architectures at least as well as the supernet does (``benchmarks/results/b2-ranking.md``),
so "train the biggest network the space allows" is what a user would try first (B7,
``benchmarks/results/b7-largest.md``). The supernet's distillation teacher and the
anchors' fallback (``Anchors(fallback="largest")``) are this architecture."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from nasflow.space._arch import Arch
from nasflow.space._space import SearchSpace


def n_params(space: SearchSpace, arch: Arch) -> int:
    """Trainable parameters of ``arch``'s stand-alone network, built on the ``meta``
    device (no memory, no initialisation)."""
    import torch  # here, not at the top: ``nasflow.space`` loads without torch (light CLI)

    with torch.device("meta"):
        return sum(p.numel() for p in space.build(arch).parameters() if p.requires_grad)


def largest_arch(space: SearchSpace, fixed: Mapping[str, Any] | None = None) -> Arch:
    """The architecture with the most parameters, by coordinate ascent over the path
    choices: every choice set, one at a time and repeatedly until nothing changes, to the
    value that gives the stand-alone network the most parameters, from the choices' first
    values. The choices in ``fixed`` (label -> value) keep their value (the param ladder
    fixes the width). Choices off the path (training hyper-parameters) take the value of
    the space's first random draw (seed 0): they do not change the network.

    Coordinate ascent, not a search over the product: the spaces' parameter counts grow
    with each choice's value independently of the others (kernel, expansion, width,
    depth), where it finds the maximum in a few passes; a space whose counts interact
    may stop at a local maximum, which is still the largest a single change can reach.
    """
    current = dict(space.sample(np.random.default_rng(0)))
    current.update({c.label: c.values[0] for c in space.path_choices})
    current.update(fixed or {})
    best = n_params(space, Arch(current))
    changed = True
    while changed:
        changed = False
        for c in space.path_choices:
            if fixed and c.label in fixed:
                continue
            for v in c.values:
                if v == current[c.label]:
                    continue
                trial = {**current, c.label: v}
                n = n_params(space, Arch(trial))
                if n > best:
                    current, best, changed = trial, n, True
    return Arch(current)
