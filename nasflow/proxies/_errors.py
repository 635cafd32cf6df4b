"""The error a zero-cost proxy raises when it cannot be computed on a network."""

from __future__ import annotations

from nasflow.errors import NasflowError


class ProxyError(NasflowError, RuntimeError):
    """A proxy cannot be computed on this network (no activation to read codes from, token
    inputs without an embedding, an output that is not a tensor). ``zero_cost_scores``
    records it as that architecture's failure and goes on."""
