"""Zero-cost proxies: scores of an untrained network that are meant to predict how well it
trains, computed at initialisation on the stand-alone network ``space.build(arch)``.

- ``synflow`` (Tanaka et al. 2020; as a NAS proxy, Abdelfattah et al. 2021): the synaptic
  flow of an all-ones input through the network with positive weights, in float64.
- ``nwot`` (Mellor et al. 2021, NASWOT): the log-determinant of the Hamming kernel of the
  activation codes of one batch.

One entry point, ``zero_cost_scores(space, archs, batch)``, returns a ``ProxyScores``
record; a proxy that fails on an architecture is recorded with one line and ranks that
architecture last (``ProxyScores.ranking``). The module docstrings of ``_synflow`` and
``_nwot`` say how each follows its reference code on batch norm, layer norm, GELU and
token inputs.
"""

from __future__ import annotations

from nasflow.proxies._nwot import nwot
from nasflow.proxies._scores import PROXIES, rank_last, zero_cost_scores
from nasflow.proxies._synflow import synflow

__all__ = [
    "PROXIES",
    "nwot",
    "rank_last",
    "synflow",
    "zero_cost_scores",
]
