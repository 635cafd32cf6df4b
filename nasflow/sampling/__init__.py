"""Path samplers for supernet training: uniform (SPOS) and strictly fair (FairNAS)."""

from __future__ import annotations

from nasflow.errors import ConfigError
from nasflow.sampling._base import PathSampler
from nasflow.sampling._fair import FairSampler, fair_paths
from nasflow.sampling._uniform import UniformSampler

SAMPLERS: dict[str, type[PathSampler]] = {"fair": FairSampler, "uniform": UniformSampler}


def make_sampler(name: str, space, seed: int = 0) -> PathSampler:
    """The sampler called ``name`` (``"fair"`` or ``"uniform"``)."""
    try:
        cls = SAMPLERS[name]
    except KeyError:
        raise ConfigError(
            f"unknown path sampler {name!r}; choose one of {sorted(SAMPLERS)}"
        ) from None
    return cls(space, seed)


__all__ = [
    "SAMPLERS",
    "FairSampler",
    "PathSampler",
    "UniformSampler",
    "fair_paths",
    "make_sampler",
]
