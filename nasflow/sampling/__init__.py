"""Path samplers for supernet training: uniform (SPOS), strictly fair (FairNAS) and strictly
fair with the skips spread over the paths' depths."""

from __future__ import annotations

from nasflow.errors import ConfigError
from nasflow.sampling._base import PathSampler
from nasflow.sampling._fair import FairSampler, fair_paths
from nasflow.sampling._fair_depth import FairDepthSampler, fair_depth_paths
from nasflow.sampling._uniform import UniformSampler

SAMPLERS: dict[str, type[PathSampler]] = {
    "fair": FairSampler,
    "fair-depth": FairDepthSampler,
    "uniform": UniformSampler,
}

#: The samplers that train every choice of a layer equally often within each step: the fair
#: sampler and its variants.
STRICTLY_FAIR = tuple(n for n, cls in SAMPLERS.items() if issubclass(cls, FairSampler))


def make_sampler(name: str, space, seed: int = 0) -> PathSampler:
    """The sampler called ``name`` (``"fair"``, ``"fair-depth"`` or ``"uniform"``)."""
    try:
        cls = SAMPLERS[name]
    except KeyError:
        raise ConfigError(
            f"unknown path sampler {name!r}; choose one of {sorted(SAMPLERS)}"
        ) from None
    return cls(space, seed)


__all__ = [
    "SAMPLERS",
    "STRICTLY_FAIR",
    "FairDepthSampler",
    "FairSampler",
    "PathSampler",
    "UniformSampler",
    "fair_depth_paths",
    "fair_paths",
    "make_sampler",
]
